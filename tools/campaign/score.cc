#include "tools/campaign/score.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/core/subprocess.h"
#include "tools/campaign/job_runs.h"
#include "tools/campaign/truth.h"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace diagnose::campaign {
namespace {

struct Exclusion {
  std::string host;
  int priority = 0;
};

struct Outcome {
  std::string error;   // diagnose failed or its report was unreadable
  std::string root_cause = "error", action = "error";
  std::vector<Exclusion> exclude;
  double seconds = 0;
};

Outcome RunDiagnose(const ScoreOptions& options, const JobTruth& truth, const fs::path& runs) {
  Outcome o;
  std::vector<std::string> argv = {options.diagnose_bin, truth.job_id, "--outputs",
                                   (fs::path(options.dir) / "outputs").string(), "--format", "json"};
  if (truth.baseline) argv.insert(argv.end(), {"--baseline", *truth.baseline});
  if (truth.now) argv.insert(argv.end(), {"--now", std::to_string(static_cast<int64_t>(*truth.now))});
  CommandRun run = RunJobCommand(argv, runs, truth.job_id, ".json", options.timeout_seconds);
  o.seconds = run.seconds;
  if (!run.status.ok()) {
    o.error = run.status.message();
    return o;
  }
  ordered_json report = ordered_json::parse(run.output, nullptr, false);
  try {
    o.root_cause = report.at("verdict").at("root_cause").get<std::string>();
    o.action = report.at("decision").at("action").get<std::string>();
    for (const auto& e : report.at("decision").value("exclude", ordered_json::array()))
      o.exclude.push_back({e.at("host").get<std::string>(), e.value("priority", 0)});
  } catch (const nlohmann::json::exception& e) {
    o.error = std::string("report without verdict/decision: ") + e.what();
    o.root_cause = o.action = "error";
  }
  return o;
}

struct Judged {
  bool root_cause = false, action = false, exclusion = false, priorities = false;
  int excluded = 0, excluded_faulty = 0, to_exclude = 0, to_exclude_found = 0;
  bool Right() const { return root_cause && action && exclusion && priorities; }
};

Judged Judge(const JobTruth& t, const Outcome& o) {
  Judged j;
  j.root_cause = RootCauseMatches(t.root_cause, o.root_cause);
  j.action = o.action == t.action;
  std::set<std::string> want, got;
  for (const auto& e : t.exclude) want.insert(e.host);
  for (const auto& e : o.exclude) got.insert(e.host);
  j.exclusion = want == got;
  j.excluded = static_cast<int>(got.size());
  j.to_exclude = static_cast<int>(want.size());
  for (const auto& h : got) j.excluded_faulty += want.count(h) ? 1 : 0;
  for (const auto& h : want) j.to_exclude_found += got.count(h) ? 1 : 0;
  j.priorities = true;
  for (const auto& e : t.exclude) {
    if (!e.priority) continue;
    auto it = std::find_if(o.exclude.begin(), o.exclude.end(), [&](const Exclusion& x) { return x.host == e.host; });
    if (it != o.exclude.end() && it->priority != *e.priority) j.priorities = false;
  }
  return j;
}

std::string ExpectedText(const JobTruth& t) {
  std::string s = t.root_cause + "/" + t.action + " [";
  for (size_t i = 0; i < t.exclude.size(); ++i)
    s += (i ? " " : "") + t.exclude[i].host + (t.exclude[i].priority ? ":" + std::to_string(*t.exclude[i].priority) : "");
  return s + "]";
}

std::string GotText(const Outcome& o) {
  if (!o.error.empty()) return "error: " + o.error;
  std::string s = o.root_cause + "/" + o.action + " [";
  for (size_t i = 0; i < o.exclude.size(); ++i) s += (i ? " " : "") + o.exclude[i].host + ":" + std::to_string(o.exclude[i].priority);
  return s + "]";
}

double Ratio(int num, int den) { return den > 0 ? static_cast<double>(num) / den : 1.0; }

std::string Pct(int num, int den) {
  if (den == 0) return "n/a";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * num / den);
  return buf;
}

}  // namespace

StatusOr<bool> ScoreCampaign(const ScoreOptions& options) {
  const fs::path dir(options.dir);
  ASSIGN_OR_RETURN(ScoredJobs scored, LoadScoredJobs(dir, "score"));
  const std::vector<JobTruth>& truths = scored.truths;
  auto started = std::chrono::steady_clock::now();
  std::vector<Outcome> outcomes(truths.size());
  ForEachParallel(truths.size(), options.parallel, [&](size_t i) { outcomes[i] = RunDiagnose(options, truths[i], scored.runs); });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  struct KindRow {
    int jobs = 0, root_cause = 0, action = 0, found = 0;
  };
  std::map<std::string, KindRow> kinds;
  int rc = 0, act = 0, excluded = 0, excluded_faulty = 0, to_exclude = 0, found_excl = 0, healthy = 0, healthy_none = 0;
  ordered_json jobs = ordered_json::array(), wrong = ordered_json::array();
  std::vector<std::string> wrong_lines;
  for (size_t i = 0; i < truths.size(); ++i) {
    const JobTruth& t = truths[i];
    const Outcome& o = outcomes[i];
    Judged j = Judge(t, o);
    KindRow& row = kinds[t.kind];
    row.jobs++;
    row.root_cause += j.root_cause;
    row.action += j.action;
    row.found += j.Right();
    rc += j.root_cause;
    act += j.action;
    excluded += j.excluded;
    excluded_faulty += j.excluded_faulty;
    to_exclude += j.to_exclude;
    found_excl += j.to_exclude_found;
    if (t.root_cause == "none") {
      healthy++;
      healthy_none += o.root_cause == "none" && o.action == "none";
    }
    ordered_json got_excl = ordered_json::array();
    for (const auto& e : o.exclude) got_excl.push_back({{"host", e.host}, {"priority", e.priority}});
    ordered_json entry = {{"job_id", t.job_id}, {"kind", t.kind}, {"expected", ExpectedText(t)}, {"got", GotText(o)},
                          {"root_cause_right", j.root_cause}, {"action_right", j.action},
                          {"exclusion_right", j.exclusion && j.priorities}, {"seconds", std::round(o.seconds * 10) / 10}};
    jobs.push_back(entry);
    if (!j.Right()) {
      wrong.push_back(entry);
      wrong_lines.push_back(t.job_id + "  " + t.kind + "  expected " + ExpectedText(t) + "  got " + GotText(o));
    }
  }
  const int n = static_cast<int>(truths.size());
  std::printf("%-28s %5s %8s %8s %8s\n", "kind", "jobs", "cause", "action", "found");
  for (const auto& [kind, row] : kinds)
    std::printf("%-28s %5d %8s %8s %8s\n", kind.c_str(), row.jobs, Pct(row.root_cause, row.jobs).c_str(),
                Pct(row.action, row.jobs).c_str(), Pct(row.found, row.jobs).c_str());
  std::printf("\nroot cause right     %s (%d/%d)\n", Pct(rc, n).c_str(), rc, n);
  std::printf("action right         %s (%d/%d)\n", Pct(act, n).c_str(), act, n);
  std::printf("exclusion precision  %s (%d of %d excluded hosts were faulty)\n", Pct(excluded_faulty, excluded).c_str(),
              excluded_faulty, excluded);
  std::printf("exclusion recall     %s (%d of %d faulty hosts excluded)\n", Pct(found_excl, to_exclude).c_str(), found_excl,
              to_exclude);
  std::printf("healthy judged none  %s (%d/%d)\n", Pct(healthy_none, healthy).c_str(), healthy_none, healthy);
  std::printf("wall time            %.1f s for %d diagnose runs (%d in parallel)\n", wall, n, options.parallel);
  if (!wrong_lines.empty()) {
    std::printf("\nwrong (%zu):\n", wrong_lines.size());
    for (const auto& line : wrong_lines) std::printf("  %s\n", line.c_str());
  }

  const ScoreThresholds& th = options.thresholds;
  struct Gate {
    const char* name;
    std::optional<double> min;
    double value;
  };
  const Gate gates[] = {{"root cause", th.root_cause, Ratio(rc, n)},
                        {"action", th.action, Ratio(act, n)},
                        {"precision", th.precision, Ratio(excluded_faulty, excluded)},
                        {"recall", th.recall, Ratio(found_excl, to_exclude)},
                        {"healthy none", th.healthy_none, Ratio(healthy_none, healthy)}};
  bool passed = true;
  ordered_json failed_gates = ordered_json::array();
  for (const Gate& g : gates) {
    if (g.min && g.value < *g.min) {
      passed = false;
      failed_gates.push_back({{"measure", g.name}, {"value", g.value}, {"min", *g.min}});
      std::printf("BELOW THRESHOLD: %s %.3f < %.3f\n", g.name, g.value, *g.min);
    }
  }

  if (!options.json_out.empty()) {
    ordered_json kind_rows = ordered_json::array();
    for (const auto& [kind, row] : kinds)
      kind_rows.push_back({{"kind", kind}, {"jobs", row.jobs}, {"root_cause_right", Ratio(row.root_cause, row.jobs)},
                           {"action_right", Ratio(row.action, row.jobs)}, {"found", Ratio(row.found, row.jobs)}});
    ordered_json doc = {
        {"schema", "campaign-score/v1"},
        {"jobs_scored", n},
        {"measures",
         {{"root_cause_right", Ratio(rc, n)}, {"action_right", Ratio(act, n)},
          {"exclusion_precision", Ratio(excluded_faulty, excluded)}, {"exclusion_recall", Ratio(found_excl, to_exclude)},
          {"healthy_none", Ratio(healthy_none, healthy)}, {"excluded", excluded}, {"to_exclude", to_exclude},
          {"healthy_jobs", healthy}, {"wall_seconds", std::round(wall * 10) / 10}}},
        {"kinds", kind_rows},
        {"wrong", wrong},
        {"failed_thresholds", failed_gates},
        {"jobs", jobs}};
    std::ofstream out(options.json_out, std::ios::binary | std::ios::trunc);
    out << doc.dump(2) << "\n";
    if (!out) return InternalError(options.json_out + ": cannot write");
  }
  return passed;
}

}  // namespace diagnose::campaign
