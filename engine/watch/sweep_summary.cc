#include "engine/core/text.h"
#include "engine/watch/sweep_summary.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <regex>

#include "engine/core/bounded_regex.h"
#include "engine/core/iso_time.h"
#include "engine/core/logging.h"
#include "engine/core/ordered_parallel.h"
#include "engine/core/utf8.h"
#include "engine/decision/refine.h"
#include "engine/decision/sweep_history.h"
#include "engine/watch/log_follow.h"
#include "engine/watch/watcher.h"

namespace diagnose {

namespace {

namespace fs = std::filesystem;

// lstat: an entry that points outside the outputs dir is not followed, not even to read its time.
int64_t ModificationTime(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::lstat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtime);
}

// Model, nodes and TGS from one streaming pass over the log (the watcher's follower: no signature
// table, no worker logs), so a job the history decided costs a read, never a diagnosis.
void FillFromLog(const JobLocation& job, SummaryRow* row) {
  if (!job.log_path) return;
  LogFollower follower(*job.log_path);
  if (!follower.Poll().ok()) return;   // the history or the diagnosis still says what it knows
  const LogProgress& p = follower.progress();
  row->model = p.model;
  row->nodes = p.nnodes > 0 ? p.nnodes : static_cast<int>(p.hosts.size());
  if (p.steady_steps > 0) row->tgs = p.steady_tgs_sum / p.steady_steps;
}

void FillFromHistory(const HistoryEntry& entry, SummaryRow* row) {
  row->source = "history";
  if (row->model.empty()) row->model = entry.config.model;
  if (row->nodes == 0) row->nodes = static_cast<int>(entry.nodes.size());
  if (row->time == 0) row->time = entry.time;
  row->status = entry.status;
  row->root_cause = entry.root_cause;
  row->action = entry.action;
  row->exclude = entry.exclude;
}

void FillFromReport(const Report& report, SummaryRow* row) {
  row->source = "diagnosis";
  if (!report.jobs.empty()) row->status = report.jobs.front().status;
  row->root_cause = ActedOnRootCause(report);
  row->action = report.decision.action;
  row->exclude = report.decision.exclude;
  if (report.incomplete) row->note = *report.incomplete;
  // Triage reads what the follower does not (k8s rank logs, Ray worker logs).
  if (!row->model.empty() && row->nodes > 0 && row->tgs) return;
  const JobFacts* facts = SubjectFacts(report);
  if (facts == nullptr) return;
  if (row->model.empty()) row->model = facts->header.model_name;
  if (row->nodes == 0)
    row->nodes = facts->header.nnodes > 0 ? facts->header.nnodes : static_cast<int>(facts->header.hosts.size());
  if (!row->tgs && facts->tgs.steady_tgs > 0) row->tgs = facts->tgs.steady_tgs;
}

SummaryRow Unreadable(const std::string& id, const std::string& name, int64_t time, const Status& status) {
  SummaryRow row;
  row.id = id.empty() ? name : id;
  row.name = name;
  row.time = time;
  row.source = "unreadable";
  row.note = status.message();
  return row;
}

// Slurm ids in numeric order (9 before 10), other ids after them by name.
bool IdBefore(const std::string& a, const std::string& b) {
  auto numeric = [](const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
  };
  const bool na = numeric(a), nb = numeric(b);
  if (na != nb) return na;
  if (na && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

}  // namespace

std::string DefaultSummaryHistory(const std::string& outputs_dir) {
  if (const char* env = std::getenv("DIAGNOSE_SWEEP_HISTORY"); env != nullptr && *env != '\0') return env;
  fs::path outputs = fs::path(outputs_dir).lexically_normal();
  if (outputs.filename().empty()) outputs = outputs.parent_path();   // "outputs/" names "outputs"
  std::error_code ec;
  const fs::path beside = fs::absolute(outputs, ec).parent_path() / "sweep-history.jsonl";
  return !ec && fs::is_regular_file(beside, ec) ? beside.string() : "";
}

StatusOr<int64_t> ParseSince(const std::string& text, int64_t now) {
  // At most six digits a part: no count of weeks overflows, and nothing longer is meant.
  static const std::regex duration(R"(^(\d{1,6}[smhdw])+$)");
  if (BoundedRegexMatch(text, duration)) {
    static const std::regex part(R"((\d{1,6})([smhdw]))");
    int64_t seconds = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), part), end; it != end; ++it) {
      static const std::map<char, int64_t> unit{{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
      seconds += std::stoll((*it)[1]) * unit.at((*it)[2].str()[0]);
    }
    return now - seconds;
  }
  StatusOr<int64_t> epoch = ParseIsoTime(text);
  if (!epoch.ok())
    return InvalidArgumentError("--since '" + OneLine(text) +
                                "' is neither an ISO-8601 date/time (2026-02-24, 2026-02-24T19:21Z) nor a "
                                "duration (90m, 6h, 2d, 1w)");
  return epoch;
}

StatusOr<SweepSummary> SummarizeSweep(const SummaryOptions& options) {
  if (!options.diagnose) return InvalidArgumentError("summary: no diagnosis function given");
  SweepSummary summary;
  std::vector<RefusedJob> refused;
  ASSIGN_OR_RETURN(std::vector<JobLocation> jobs, ListJobs(options.outputs_dir, &refused));

  std::map<std::string, HistoryEntry> decided;
  if (!options.history_file.empty()) {
    std::error_code ec;
    if (!fs::exists(options.history_file, ec))
      summary.warnings.push_back("sweep history " + options.history_file + " does not exist (yet): every job is diagnosed");
    ASSIGN_OR_RETURN(SweepHistory history, LoadSweepHistory(options.history_file));
    for (auto& warning : history.warnings) summary.warnings.push_back(std::move(warning));
    // A job decided twice (a stall, then its end) is summarised by its latest decision.
    for (auto& entry : history.entries) decided[entry.job] = std::move(entry);
  }

  auto in_window = [&](int64_t time) { return !options.since || time == 0 || time >= *options.since; };
  for (const auto& r : refused) {
    const int64_t time = ModificationTime((fs::path(options.outputs_dir) / r.name).string());
    if (in_window(time)) summary.rows.push_back(Unreadable(r.id, r.name, time, r.status));
  }
  std::vector<std::pair<const JobLocation*, int64_t>> selected;   // with the job's time
  size_t to_diagnose = 0;
  for (const auto& job : jobs) {
    const int64_t time = ModificationTime(job.log_path.value_or(job.job_dir.value_or("")));
    if (!in_window(time)) continue;
    selected.emplace_back(&job, time);
    if (!decided.count(job.id)) ++to_diagnose;
  }
  Stage("summary: {} job(s) in {}: {} decided in the history, {} to diagnose", selected.size() + summary.rows.size(),
        options.outputs_dir, selected.size() - to_diagnose, to_diagnose);

  // Jobs are diagnosed `parallel` at a time; each row is its job's alone, and the rows are sorted
  // afterwards, so the summary is the same whatever the order the diagnoses finish in.
  std::atomic<size_t> diagnosed{0};
  std::vector<SummaryRow> rows = RunInOrder<SummaryRow>(selected.size(), options.parallel, [&](size_t i) {
    const auto& [job, time] = selected[i];
    SummaryRow row;
    row.id = job->id;
    row.name = job->name;
    row.time = time;
    FillFromLog(*job, &row);
    if (auto entry = decided.find(job->id); entry != decided.end()) {
      FillFromHistory(entry->second, &row);
      return row;
    }
    Stage("summary: diagnosing {} ({} of {})", job->id, ++diagnosed, to_diagnose);
    StatusOr<Report> report = options.diagnose(*job);
    if (report.ok()) FillFromReport(*report, &row);
    else row = Unreadable(job->id, job->name, row.time, report.status());
    return row;
  });
  for (auto& row : rows) summary.rows.push_back(std::move(row));
  std::sort(summary.rows.begin(), summary.rows.end(), [](const SummaryRow& a, const SummaryRow& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.id != b.id) return IdBefore(a.id, b.id);
    return a.name < b.name;
  });
  return summary;
}

std::string FormatSummaryText(const std::vector<SummaryRow>& rows) {
  // Columns up to the action are padded to their widest cell; exclusions (free length) come last.
  constexpr size_t kAligned = 8;
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : rows) {
    std::vector<std::string> c{row.time > 0 ? IsoUtc(static_cast<double>(row.time)) : "-", OneLine(row.id)};
    if (row.source == "unreadable") {
      c.push_back("cannot read: " + OneLine(row.note));
    } else {
      std::string hosts;
      for (const auto& x : row.exclude) hosts += (hosts.empty() ? "" : ",") + OneLine(x.host);
      if (!row.note.empty()) hosts += std::string(hosts.empty() ? "" : " ") + "(diagnosis incomplete)";
      c.insert(c.end(), {row.model.empty() ? "-" : OneLine(row.model),
                         row.nodes > 0 ? std::to_string(row.nodes) + "N" : "-",
                         row.status ? std::string(ToString(*row.status)) : "-",
                         row.tgs ? WithThousands(*row.tgs) + " TGS" : "-", OneLine(row.root_cause),
                         std::string(ToString(row.action)), hosts});
    }
    cells.push_back(std::move(c));
  }
  std::vector<size_t> width(kAligned, 0);
  for (const auto& c : cells)
    for (size_t i = 0; i + 1 < c.size() && i < kAligned; ++i) width[i] = std::max(width[i], c[i].size());
  std::string out;
  for (const auto& c : cells) {
    std::string line;
    for (size_t i = 0; i < c.size(); ++i) {
      line += c[i];
      if (i + 1 < c.size()) line += std::string(i < kAligned ? width[i] - c[i].size() + 2 : 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

nlohmann::json SummaryJson(const std::vector<SummaryRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& row : rows) {
    nlohmann::json j = {{"id", ValidUtf8(row.id)},
                        {"name", ValidUtf8(row.name)},
                        {"time", row.time > 0 ? nlohmann::json(IsoUtc(static_cast<double>(row.time))) : nullptr},
                        {"source", row.source}};
    if (row.source == "unreadable") {
      j["error"] = ValidUtf8(row.note);
    } else {
      j["model"] = ValidUtf8(row.model);
      j["nodes"] = row.nodes;
      j["status"] = row.status ? std::string(ToString(*row.status)) : "";
      j["tgs"] = row.tgs ? nlohmann::json(*row.tgs) : nullptr;
      j["root_cause"] = row.root_cause;
      j["action"] = ToString(row.action);
      j["exclude"] = row.exclude;
      j["slurm_exclude"] = SlurmExcludeList(row.exclude);
      if (!row.note.empty()) j["incomplete"] = ValidUtf8(row.note);
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace diagnose
