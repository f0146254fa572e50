#include "engine/triage/triage.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>
#include <thread>

#include "engine/core/data_dir.h"
#include "engine/core/clock_skew.h"
#include "engine/core/iso_time.h"
#include "engine/core/limits.h"
#include "engine/core/text.h"
#include "engine/log/line_reader.h"
#include "engine/log/log_line.h"
#include "engine/triage/hostlist.h"
#include "engine/triage/log_scanner.h"
#include "engine/triage/progress.h"
#include "engine/triage/signature_table.h"
#include "engine/triage/tgs_analysis.h"

namespace diagnose {

namespace fs = std::filesystem;

namespace {

std::string DisplayPath(const std::string& path, const std::string& outputs_dir) {
  std::error_code ec;
  fs::path rel = fs::relative(path, outputs_dir, ec);
  if (!ec && !rel.empty() && rel.native().rfind("..", 0) != 0) return rel.string();
  return path;
}

std::map<std::string, std::string> ParsePassthrough(const std::string& args) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < args.size()) {
    while (i < args.size() && args[i] == ' ') ++i;
    size_t j = args.find(' ', i);
    std::string tok = args.substr(i, j == std::string::npos ? std::string::npos : j - i);
    i = j == std::string::npos ? args.size() : j;
    while (!tok.empty() && tok[0] == '-') tok.erase(0, 1);
    size_t eq = tok.find('=');
    if (tok.empty()) continue;
    if (eq == std::string::npos) out[tok] = "";
    else out[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return out;
}

std::optional<int64_t> AsInt(const std::string& v) {
  try {
    size_t used = 0;
    long long x = std::stoll(v, &used);
    if (used == 0) return std::nullopt;
    return x;
  } catch (...) {
    return std::nullopt;
  }
}

bool IsTrue(const std::string& v) { return v == "true" || v == "True" || v == "1" || v == "yes"; }

// Year from an id like k8s-YYYYMMDD-... / local_YYYYMMDD_...
int YearFromId(const std::string& id) {
  for (const char* prefix : {"k8s-", "local_"}) {
    if (id.rfind(prefix, 0) == 0) {
      auto y = AsInt(id.substr(std::string(prefix).size(), 4));
      if (y && *y >= 1990 && *y <= 2200) return static_cast<int>(*y);
    }
  }
  return 0;
}

int64_t EpochOf(int year, const AbslStamp& s) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = s.month - 1;
  tm.tm_mday = s.day;
  tm.tm_hour = s.hour;
  tm.tm_min = s.minute;
  tm.tm_sec = s.second;
  return static_cast<int64_t>(timegm(&tm));
}

// The end is the most direct evidence of it: the crash line, else (a job that is not running)
// the log's last write on a clock that agrees with ours, else the submit plus the wall time. The
// start is the end minus the JOB SUMMARY's wall time, else the submit (queue time included).
RunWindow RunWindowOf(const JobFacts& f, int64_t artifact_epoch, std::optional<int64_t> log_mtime, int64_t now) {
  RunWindow w;
  const int64_t wall = f.summary.present ? f.summary.wall_seconds : 0;
  if (artifact_epoch > 0) {
    w.start = artifact_epoch;
    w.start_source = "artifact-id";
  }
  if (f.heartbeat.crash_time && f.heartbeat.crash_time->epoch > 0) {
    w.end = f.heartbeat.crash_time->epoch;
    w.end_source = "crash-time";
  } else if (f.status == JobStatus::kRunning || f.status == JobStatus::kHanging) {
    w.end = now;
    w.end_source = "now";
  } else if (log_mtime && f.log_clock_skew_seconds == 0) {
    w.end = *log_mtime;
    w.end_source = "log-mtime";
  } else if (w.start && wall > 0) {
    w.end = *w.start + wall;
    w.end_source = "start-plus-wall";
  }
  if (w.end && wall > 0 && (!w.start || *w.end - wall > *w.start)) {
    w.start = *w.end - wall;
    w.start_source = "end-minus-wall";
  }
  if (w.start && w.end && *w.end < *w.start) w = RunWindow{};   // contradicting clocks: trust neither
  return w;
}

Status ScanRange(const std::string& path, int64_t begin, int64_t end, const std::string& display, int default_task,
                 int file_index, const SignatureTable& table, const SignatureMatcher& matcher,
                 const ScanLimits& limits, std::optional<std::chrono::steady_clock::time_point> deadline,
                 ScanResult* out, int64_t* lines) {
  LineReader reader(LineReaderOptions{.deadline = deadline});
  RETURN_IF_ERROR(reader.Open(path, begin, end));
  LogScanner scanner(table, matcher, limits, display, default_task, file_index);
  std::string_view line;
  while (reader.Next(&line)) {
    scanner.Feed(line, reader.line_number());
    // The clock every 64Ki lines: a few milliseconds of scanning between reads of it.
    if (deadline && (reader.line_number() & 0xffff) == 0 && std::chrono::steady_clock::now() >= *deadline)
      return DeadlineExceededError("the run's deadline passed while reading " + display + " (at line " +
                                   std::to_string(reader.line_number()) + ")");
  }
  // The reader's own look at the deadline, every few MiB, ends a line of gigabytes (a NUL hole).
  if (reader.status().code() == StatusCode::kDeadlineExceeded)
    return DeadlineExceededError("the run's deadline passed while reading " + display + " (in line " +
                                 std::to_string(reader.line_number() + 1) + ")");
  RETURN_IF_ERROR(reader.status());
  scanner.result().truncated_lines += reader.truncated_lines();
  *out = std::move(scanner.result());
  *lines = reader.line_number();
  return Status::Ok();
}

// A split point near the middle that starts a step line: step lines end NCCL bursts and never sit
// inside the header, git-summary or JOB SUMMARY blocks, so the two halves need no shared state.
std::optional<int64_t> FindSplit(const std::string& path, int64_t size) {
  LineReader reader;
  if (!reader.Open(path, size / 2, std::min(size, size / 2 + (int64_t{8} << 20))).ok()) return std::nullopt;
  std::string scratch;
  std::string_view raw;
  while (reader.Next(&raw)) {
    LogLine l = ParseLogLine(raw, &scratch);
    if (l.text.rfind("completed step: ", 0) == 0) return reader.line_offset();
  }
  return std::nullopt;
}

Status ScanFile(const std::string& path, const std::string& display, int default_task, int file_index,
                const SignatureTable& table, const SignatureMatcher& matcher, const ScanLimits& limits,
                const TriageOptions& options, ScanResult* out) {
  std::error_code ec;
  int64_t size = static_cast<int64_t>(fs::file_size(path, ec));
  int threads = options.scan_threads > 0 ? options.scan_threads
                                         : (std::thread::hardware_concurrency() >= 2 ? 2 : 1);
  std::optional<int64_t> split;
  if (!ec && threads >= 2 && size >= options.split_min_bytes && size > 0) split = FindSplit(path, size);
  if (!split) {
    ScanResult r;
    int64_t lines = 0;
    RETURN_IF_ERROR(ScanRange(path, 0, -1, display, default_task, file_index, table, matcher, limits,
                              options.deadline, &r, &lines));
    out->Merge(std::move(r), limits);
    return Status::Ok();
  }
  ScanResult second;
  int64_t second_lines = 0;
  Status second_status;
  std::thread worker([&] {
    second_status = ScanRange(path, *split, -1, display, default_task, file_index, table, matcher, limits,
                              options.deadline, &second,
                              &second_lines);
  });
  ScanResult first;
  int64_t first_lines = 0;
  Status first_status =
      ScanRange(path, 0, *split, display, default_task, file_index, table, matcher, limits, options.deadline, &first,
                &first_lines);
  worker.join();
  RETURN_IF_ERROR(first_status);
  RETURN_IF_ERROR(second_status);
  second.ShiftLines(first_lines);
  first.Merge(std::move(second), limits);
  out->Merge(std::move(first), limits);
  return Status::Ok();
}

// The host a Ray worker log belongs to: ray_logs/<host>/...
std::string WorkerHost(const std::string& path) {
  fs::path p(path);
  for (fs::path cur = p.parent_path(); !cur.empty() && cur != cur.parent_path(); cur = cur.parent_path()) {
    if (cur.parent_path().filename() == "ray_logs") return cur.filename().string();
  }
  return "";
}

void AddClass(JobFacts* f, std::map<std::string, ClassHit>* hits, const SignatureTable& table, const std::string& id,
              const LogRef& where, int64_t ordinal) {
  const FailureSignature* sig = table.Find(id);
  if (sig == nullptr || hits->count(id)) return;
  ClassHit h;
  h.match.failure_class = id;
  h.match.priority = sig->priority;
  h.match.stage = sig->stage;
  h.match.where = where;
  h.ordinal = ordinal;
  hits->emplace(id, h);
}

// The signature table's numbers TriageJob decides with, read (and checked present) once, in the order
// a missing one is reported.
struct TriageThresholds {
  ScanLimits limits;
  TgsOptions tgs;
  double running_mtime = 0;
  double hang_silence = 0;
  double hang_behind = 0;
  double hang_trailing = 0;
  double hang_gap = 0;
  std::optional<double> hang_max_silence;
  double setup_allowance = 0;
  double init_hang = 0;
  double skip_steps = 0;
  double default_period = 0;
  double cancel_exit_min = 0;   // 130/143: torn down, not failed
  double log_step_gap = 0;      // seconds of training whose step lines the log lost
};

StatusOr<TriageThresholds> ReadTriageThresholds(const SignatureTable& table) {
  TriageThresholds t;
  ASSIGN_OR_RETURN(t.limits, ScanLimitsFromTable(table));
  ASSIGN_OR_RETURN(t.tgs, TgsOptionsFromTable(table));
  auto th = [&](const char* name) -> StatusOr<double> { return table.Threshold(name); };
  ASSIGN_OR_RETURN(t.running_mtime, th("running_mtime_seconds"));
  ASSIGN_OR_RETURN(t.hang_silence, th("hang_min_silence_seconds"));
  ASSIGN_OR_RETURN(t.hang_behind, th("hang_steps_behind"));
  ASSIGN_OR_RETURN(t.hang_trailing, th("hang_trailing_lines"));
  ASSIGN_OR_RETURN(t.hang_gap, th("hang_unexplained_gap_seconds"));
  if (auto it = table.thresholds.find("hang_max_silence_seconds"); it != table.thresholds.end())
    t.hang_max_silence = it->second;
  ASSIGN_OR_RETURN(t.setup_allowance, th("setup_allowance_seconds"));
  ASSIGN_OR_RETURN(t.init_hang, th("init_hang_seconds"));
  ASSIGN_OR_RETURN(t.skip_steps, th("progress_skip_steps"));
  ASSIGN_OR_RETURN(t.default_period, th("default_checkpoint_period"));
  ASSIGN_OR_RETURN(t.cancel_exit_min, th("cancel_exit_codes_min"));
  ASSIGN_OR_RETURN(t.log_step_gap, th("log_step_gap_min_seconds"));
  return t;
}

// Everything one job's scan reads, held together so each step below takes one argument for it.
struct TriageScan {
  const SignatureTable& table;
  const SignatureMatcher& matcher;
  const TriageThresholds& thresholds;
  const TriageOptions& options;
  ScanResult result;
  std::optional<int64_t> log_mtime;
  int64_t now = 0;
};

std::string HostOfTask(const JobHeader& h, int task) {
  return task >= 0 && static_cast<size_t>(task) < h.hosts.size() ? h.hosts[task] : "";
}

// A run parameter: PASSTHROUGH_ARGS win over the logged config.
std::string RunParameter(const JobFacts& f, const std::string& k) {
  auto it = f.header.passthrough.find(k);
  if (it != f.header.passthrough.end()) return it->second;
  auto c = f.config.find(k);
  return c != f.config.end() ? c->second : "";
}

// The job log, then the per-rank logs; an unreadable rank log is a note, a deadline is the job's end.
Status ScanJobAndRankLogs(const JobLocation& job, TriageScan* scan, JobFacts* f) {
  if (job.log_path) {
    struct stat st {};
    if (::stat(job.log_path->c_str(), &st) == 0) scan->log_mtime = static_cast<int64_t>(st.st_mtime);
    if (scan->log_mtime && static_cast<double>(*scan->log_mtime - scan->now) > kClockSkewToleranceSeconds) {
      f->log_clock_skew_seconds = static_cast<double>(*scan->log_mtime - scan->now);
    }
    Status s = ScanFile(*job.log_path, DisplayPath(*job.log_path, job.outputs_dir), -1, 0, scan->table, scan->matcher,
                        scan->thresholds.limits, scan->options, &scan->result);
    if (!s.ok()) return s.WithContext("job " + job.id);
  }
  for (size_t i = 0; i < job.rank_logs.size(); ++i) {
    std::string name = fs::path(job.rank_logs[i]).filename().string();
    int rank = static_cast<int>(AsInt(name.substr(5)).value_or(-1));
    Status s = ScanFile(job.rank_logs[i], DisplayPath(job.rank_logs[i], job.outputs_dir), rank,
                        static_cast<int>(i) + 1, scan->table, scan->matcher, scan->thresholds.limits, scan->options,
                        &scan->result);
    if (s.code() == StatusCode::kDeadlineExceeded) return s.WithContext("job " + job.id);
    if (!s.ok()) f->notes.push_back("rank log unreadable: " + s.message());
  }
  return Status::Ok();
}

// The launcher header's keys (current names first, the legacy SLURM_* ones second) and the hosts its
// nodelist expands to.
void ReadLauncherHeader(const ScanResult& scan, JobFacts* f) {
  auto key = [&](const char* k, const char* legacy) -> std::string {
    auto it = scan.header_keys.find(k);
    if (it != scan.header_keys.end()) return it->second;
    it = legacy ? scan.header_keys.find(legacy) : scan.header_keys.end();
    return it != scan.header_keys.end() ? it->second : "";
  };
  JobHeader& h = f->header;
  h.job_id = key("JOB_ID", "SLURM_JOB_ID");
  h.job_name = key("JOB_NAME", "SLURM_JOB_NAME");
  h.model_name = key("MODEL_NAME", nullptr);
  h.model_alias = key("MODEL_NAME_ALIAS", nullptr);
  h.exp_tag = key("EXP_TAG", nullptr);
  h.nnodes = static_cast<int>(AsInt(key("NNODES", "SLURM_JOB_NUM_NODES")).value_or(0));
  h.nodelist = key("JOB_NODELIST", "SLURM_JOB_NODELIST");
  if (auto p = AsInt(key("JAX_COORDINATOR_PORT", nullptr))) h.coordinator_port = static_cast<int>(*p);
  if (auto p = AsInt(key("RAY_PORT", nullptr))) h.ray_port = static_cast<int>(*p);
  h.passthrough = ParsePassthrough(key("PASSTHROUGH_ARGS", nullptr));
  if (f->id.empty()) f->id = h.job_id;
  if (!h.nodelist.empty()) {
    auto hosts = ExpandHostlist(h.nodelist);
    if (hosts.ok()) h.hosts = *hosts;
    else f->notes.push_back("nodelist not expanded: " + hosts.status().message());
  }
  if (h.hosts.empty() && !scan.nodelist_expanded.empty()) {
    auto hosts = ExpandHostlist(scan.nodelist_expanded);
    if (hosts.ok()) h.hosts = *hosts;
  }
}

struct HostConfirmation {
  size_t tasks_that_said = 0;
  int mismatches = 0;
};

// Confirm task -> host with what each task said about itself: a task's own report wins over the
// nodelist.
HostConfirmation ConfirmTaskHosts(const ScanResult& scan, JobFacts* f) {
  JobHeader& h = f->header;
  std::map<int, std::string> said = scan.confirmed_hosts;
  for (const auto& [label, host] : scan.env_hostname) {
    auto r = scan.env_node_rank.find(label);
    if (r == scan.env_node_rank.end()) continue;
    if (auto rank = AsInt(r->second); rank && *rank >= 0) said[static_cast<int>(*rank)] = host;
  }
  HostConfirmation confirmation{said.size(), 0};
  for (const auto& [rank, host] : said) {
    if (rank < 0 || rank > 100000) continue;
    if (static_cast<size_t>(rank) >= h.hosts.size()) {
      if (h.hosts.empty() || static_cast<size_t>(rank) == h.hosts.size()) {
        h.hosts.resize(rank + 1);
        h.hosts[rank] = host;
      }
      continue;
    }
    if (h.hosts[rank].empty()) h.hosts[rank] = host;
    else if (h.hosts[rank] != host) {
      ++confirmation.mismatches;
      f->notes.push_back("task " + std::to_string(rank) + " reported host " + host + " but the nodelist gives " +
                         h.hosts[rank] + "; using the task's own report");
      h.hosts[rank] = host;
    }
  }
  if (h.nnodes == 0) h.nnodes = static_cast<int>(h.hosts.size());
  if (h.nnodes > 0 && !h.hosts.empty() && static_cast<int>(h.hosts.size()) != h.nnodes)
    f->notes.push_back("NNODES=" + std::to_string(h.nnodes) + " but " + std::to_string(h.hosts.size()) +
                       " hosts are known");
  return confirmation;
}

// Each task's own address, named by the task's confirmed host; an address claimed for two hosts
// names neither.
void ReadNodeAddresses(const ScanResult& scan, JobHeader* h) {
  std::set<std::string> claimed_twice;
  for (const auto& [task, address] : scan.task_addresses) {
    if (task < 0 || static_cast<size_t>(task) >= h->hosts.size() || h->hosts[static_cast<size_t>(task)].empty()) continue;
    const std::string& host = h->hosts[static_cast<size_t>(task)];
    auto [it, added] = h->node_addresses.emplace(address, host);
    if (!added && it->second != host) claimed_twice.insert(address);
  }
  for (const auto& address : claimed_twice) h->node_addresses.erase(address);
}

// Ray worker logs are authoritative for steps when the Slurm log stops short (formats §2.5).
Status ScanRayWorkerLogs(const JobLocation& job, TriageScan* scan, JobFacts* f) {
  const JobHeader& h = f->header;
  std::map<int64_t, StepRecord>& steps = scan->result.steps;
  for (size_t i = 0; i < job.ray_worker_logs.size(); ++i) {
    const std::string& w = job.ray_worker_logs[i];
    std::string host = WorkerHost(w);
    int task = -1;
    for (size_t t = 0; t < h.hosts.size(); ++t)
      if (h.hosts[t] == host) task = static_cast<int>(t);
    int64_t before = steps.empty() ? -1 : steps.rbegin()->first;
    Status s = ScanFile(w, DisplayPath(w, job.outputs_dir), task, static_cast<int>(1000 + i), scan->table,
                        scan->matcher, scan->thresholds.limits, scan->options, &scan->result);
    if (s.code() == StatusCode::kDeadlineExceeded) return s.WithContext("job " + job.id);
    if (!s.ok()) {
      f->notes.push_back("worker log unreadable: " + s.message());
      continue;
    }
    f->worker_logs.push_back(DisplayPath(w, job.outputs_dir));
    int64_t after = steps.empty() ? -1 : steps.rbegin()->first;
    if (after > before && before >= 0)
      f->notes.push_back("worker log " + DisplayPath(w, job.outputs_dir) + " extends the step record from " +
                         std::to_string(before) + " to " + std::to_string(after));
  }
  f->header.ray = scan->result.ray || !job.ray_worker_logs.empty();
  return Status::Ok();
}

// A file without one of the launcher's marks is not a job log (`diagnose /etc/passwd`): refuse it
// rather than read its silence as a hang and send a sweep to retry.
Status RefuseWithoutLauncherMarks(const JobLocation& job, const ScanResult& scan) {
  const bool launcher_marks = !scan.header_keys.empty() || !scan.steps.empty() || scan.summary.present ||
                              !scan.node_exits.empty() || scan.ray || scan.labelled_lines > 0 ||
                              !scan.env_hostname.empty() || !scan.confirmed_hosts.empty() ||
                              !scan.memstats.empty() || scan.barrier_passed;
  if (job.log_path && scan.lines > 0 && !launcher_marks) {
    return InvalidArgumentError(DisplayPath(*job.log_path, job.outputs_dir) + ": not a maxtext-slurm job log (" +
                                std::to_string(scan.lines) +
                                " lines without a launcher header, srun task label, Ray prefix, step line or "
                                "JOB SUMMARY)");
  }
  return Status::Ok();
}

// The scan's records become the job's facts; lines cut or skipped are said in a note.
void TakeScannedRecords(ScanResult* scan, JobFacts* f) {
  f->header.gpu_device = scan->gpu_device;
  f->config = std::move(scan->config);
  f->steps.reserve(scan->steps.size());
  while (!scan->steps.empty()) f->steps.push_back(std::move(scan->steps.extract(scan->steps.begin()).mapped()));
  f->memstats = std::move(scan->memstats);
  f->barrier_passed = scan->barrier_passed;
  f->checkpoint_saves.assign(scan->checkpoint_saves.begin(), scan->checkpoint_saves.end());
  f->nccl_init_bursts = scan->nccl_bursts;
  f->summary = scan->summary;
  f->node_exits = scan->node_exits;
  for (auto& n : f->node_exits)
    if (n.host.empty()) n.host = HostOfTask(f->header, n.task);
  f->tunnel = scan->tunnel;
  f->oom_allocation = scan->oom_allocation;
  if (scan->truncated_lines > 0)
    f->notes.push_back(std::to_string(scan->truncated_lines) + " line(s) longer than the limit log.line_bytes (" +
                       FormatLimitValue(LimitId::kLogLineBytes, GetLimit(LimitId::kLogLineBytes)) +
                       ") were cut there; raise it with --limit log.line_bytes=N");
  if (scan->damaged_lines > 0)
    f->notes.push_back(std::to_string(scan->damaged_lines) +
                       " damaged log line(s) (NUL bytes, or a step field that is not a number) were skipped, "
                       "not read as values; the first at " + scan->first_damaged.file + ":" +
                       std::to_string(scan->first_damaged.line));
}

// Restore (the first step after 0 implies one), progress and TGS; returns the progress inputs the
// status decision reads too.
ProgressInputs ReadRestoreProgressAndTgs(const ScanResult& scan, const TriageThresholds& t, JobFacts* f) {
  f->restore = scan.restore;
  f->restore.single_replica_restore = IsTrue(RunParameter(*f, "enable_single_replica_ckpt_restoring"));
  if (!f->restore.restored && !f->steps.empty() && f->steps.front().step > 0) {
    f->restore.restored = true;
    f->restore.restore_step = f->steps.front().step - 1;
    f->restore.where = f->steps.front().where;
  }
  ProgressInputs pin;
  pin.total_steps = AsInt(RunParameter(*f, "steps"));
  if (auto p = AsInt(RunParameter(*f, "checkpoint_period"))) pin.checkpoint_period = *p;
  else if (IsTrue(RunParameter(*f, "enable_checkpointing"))) pin.checkpoint_period = static_cast<int64_t>(t.default_period);
  if (f->summary.present) pin.wall_seconds = f->summary.wall_seconds;
  pin.skip_steps = static_cast<int>(t.skip_steps);
  pin.setup_allowance_seconds = t.setup_allowance;
  f->progress = ComputeProgress(f->steps, pin);
  f->tgs = AnalyzeTgs(f->steps, pin.checkpoint_period, t.tgs);
  return pin;
}

// absl stamps carry no year: the year comes from the artifact id, the job id, an ISO stamp or the
// log's mtime, in that order, and says which.
struct StampYear {
  int year = 0;
  std::string source;
};

StampYear YearOfStamps(const ScanResult& scan, const std::string& job_id, std::optional<int64_t> log_mtime) {
  if (scan.artifact_year) return {scan.artifact_year, "artifact-id"};
  if (int y = YearFromId(job_id)) return {y, "job-id"};
  if (scan.iso_year) return {scan.iso_year, "iso-timestamp"};
  if (!log_mtime) return {};
  std::time_t t = static_cast<std::time_t>(*log_mtime);
  std::tm tm{};
  gmtime_r(&t, &tm);
  int year = tm.tm_year + 1900;
  if (scan.crash_stamp.valid() && scan.crash_stamp.month > tm.tm_mon + 1) --year;   // crash in Dec, mtime in Jan
  return {year, "log-mtime"};
}

void ReadHeartbeat(const ScanResult& scan, const StampYear& year, JobFacts* f) {
  HeartbeatFacts& hb = f->heartbeat;
  hb.present = scan.heartbeat_present;
  if (!hb.present) return;
  hb.accused_tasks = scan.accused_tasks;
  for (int t : hb.accused_tasks) {
    hb.accused_hosts.push_back(HostOfTask(f->header, t));
    if (scan.death_tasks.count(t)) hb.self_reported_death_tasks.push_back(t);
  }
  hb.timeout_seconds = AsInt(RunParameter(*f, "jax_distributed_heartbeat_timeout_seconds")).value_or(0);
  if (hb.timeout_seconds == 0) f->notes.push_back("heartbeat timeout not in PASSTHROUGH_ARGS or config; stop time unknown");
  if (scan.crash_stamp.valid() && year.year > 0) {
    LogTime crash{EpochOf(year.year, scan.crash_stamp), scan.crash_stamp.text, year.source};
    hb.crash_time = crash;
    if (hb.timeout_seconds > 0) {
      LogTime stop{crash.epoch - hb.timeout_seconds, IsoUtc(crash.epoch - hb.timeout_seconds), year.source};
      hb.heartbeat_stop_time = stop;
    }
  }
  hb.last_step_before = scan.last_step_before_heartbeat;
  if (!hb.last_step_before && !f->steps.empty()) hb.last_step_before = f->steps.back().step;
  hb.evidence = scan.heartbeat_evidence;
}

// Events (bounded per kind), with hosts and times.
void PlaceEvents(ScanResult* scan, const StampYear& year, JobFacts* f) {
  for (auto& [kind, list] : scan->events)
    for (auto& e : list) {
      e.host = HostOfTask(f->header, e.task);
      if (e.time && year.year > 0 && e.time->text.size() >= 13) {
        const std::string& t = e.time->text;   // "MMDD HH:MM:SS[.uuuuuu]"
        AbslStamp st{std::atoi(t.substr(0, 2).c_str()), std::atoi(t.substr(2, 2).c_str()),
                     std::atoi(t.substr(5, 2).c_str()), std::atoi(t.substr(8, 2).c_str()),
                     std::atoi(t.substr(11, 2).c_str()), t};
        e.time->epoch = EpochOf(year.year, st);
        e.time->year_source = year.source;
      } else if (e.time) {
        e.time.reset();   // no year anywhere: the stamp alone cannot be placed in time
      }
      f->events.push_back(std::move(e));
    }
}

// A hang the status decision found, and why (the `hang` class's evidence text).
struct HangFinding {
  bool hang = false;
  std::string reason;
};

// Status from the JOB SUMMARY (formats §4.2): success, cancelled or failed, a soft success after the
// final step, and a stall the summary alone does not show.
HangFinding StatusFromSummary(const ScanResult& scan, const TriageThresholds& t, std::optional<int64_t> total_steps,
                              JobFacts* f) {
  HangFinding found;
  const JobSummary& s = f->summary;
  const int64_t last_step = f->steps.empty() ? -1 : f->steps.back().step;
  const bool final_step_reached = total_steps && last_step == *total_steps - 1;
  bool cancelled_reason = s.reason.find("CANCELLED") != std::string::npos ||
                          s.reason.find("exit=143") != std::string::npos ||
                          s.reason.find("exit=130") != std::string::npos;
  if (s.status == "SUCCESS" || s.status.empty()) f->status = JobStatus::kCompleted;
  else if (s.exit_code == 130 || s.exit_code == 143 || cancelled_reason) f->status = JobStatus::kCancelled;
  else f->status = JobStatus::kFailed;
  if (s.status == "FAILED" && (s.exit_code == 1 || s.exit_code == 143) && final_step_reached) {
    f->soft_success = true;
    f->status = JobStatus::kCompleted;
    std::string variant = s.exit_code == 1 ? "one rank exited 1 after the final step (teardown race)"
                                           : "exit 143 after the final step (cleanup/teardown or walltime)";
    f->notes.push_back("soft success: completed step " + std::to_string(last_step) + " of steps=" +
                       std::to_string(*total_steps) + " is present; " + variant);
  }
  // Steps stopped long before the end of the job: a stall the summary alone does not show.
  if (!f->soft_success && f->progress.unexplained_gap_seconds && *f->progress.unexplained_gap_seconds > t.hang_gap &&
      !final_step_reached && !f->steps.empty()) {
    found.hang = true;
    found.reason = "wall " + std::to_string(s.wall_seconds) + " s exceeds the sum of step times (" +
                   std::to_string(static_cast<int64_t>(f->progress.sum_step_seconds)) + " s) plus setup by " +
                   std::to_string(static_cast<int64_t>(*f->progress.unexplained_gap_seconds)) + " s";
  }
  // Cancelled in the training stage without a single step, long after init should have produced
  // one: the job was stuck in init (RCCL init flake) when it was cancelled.
  const int64_t training_stage_seconds = s.wall_seconds - scan.pre_training_stage_seconds;
  if (f->status == JobStatus::kCancelled && f->steps.empty() && s.wall_seconds > 0 &&
      static_cast<double>(training_stage_seconds) > t.init_hang) {
    found.hang = true;
    found.reason = "cancelled after " + std::to_string(training_stage_seconds) +
                   " s in the training stage without a completed step";
  }
  return found;
}

// Without a JOB SUMMARY the log's silence, the scheduler's word and what follows the last step decide
// running, hanging or unknown death.
HangFinding StatusFromSilence(const TriageScan& scan, const std::map<std::string, ClassHit>& hits, JobFacts* f) {
  HangFinding found;
  const TriageThresholds& t = scan.thresholds;
  const int64_t last_step = f->steps.empty() ? -1 : f->steps.back().step;
  int64_t silence = scan.log_mtime ? std::max<int64_t>(scan.now - *scan.log_mtime, 0) : 0;
  double step_time = f->progress.step_time_seconds;
  double behind = step_time > 0 ? static_cast<double>(silence) / step_time : 0;
  bool stalled = silence > std::max(t.running_mtime, t.hang_silence) && (step_time <= 0 || behind >= t.hang_behind);
  bool noise_after_steps = !f->steps.empty() && scan.result.lines_after_last_step > t.hang_trailing;
  // Without the scheduler's word, a log silent for longer than a live hang lasts belongs to a
  // job that is gone; absent threshold: no upper bound.
  bool silent_beyond_live = t.hang_max_silence && static_cast<double>(silence) > *t.hang_max_silence;
  const std::optional<bool> scheduler_running = scan.options.scheduler_running;
  if (scheduler_running == false) {
    f->status = JobStatus::kUnknownDeath;
  } else if (silence <= t.running_mtime) {
    f->status = JobStatus::kRunning;
  } else if (scheduler_running == true ||
             (stalled && hits.empty() && (noise_after_steps || !silent_beyond_live))) {
    f->status = JobStatus::kHanging;
    found.hang = true;
    found.reason = "no step for " + std::to_string(silence) + " s (last step " + std::to_string(last_step) +
                   (step_time > 0 ? ", ~" + std::to_string(static_cast<int64_t>(behind)) + " steps behind" : "") + ")";
    if (!scheduler_running)
      f->notes.push_back(noise_after_steps ? "scheduler state unknown; hang inferred from output continuing after the last step"
                                           : "scheduler state unknown; hang inferred from steps stopped " +
                                                 std::to_string(silence) + " s ago, within a live hang's span");
  } else {
    f->status = JobStatus::kUnknownDeath;
  }
  if (f->status == JobStatus::kRunning || f->status == JobStatus::kHanging)
    f->notes.push_back("no JOB SUMMARY; log last written " + std::to_string(silence) + " s before now");
  return found;
}

// ---- Status (formats §4.2).
HangFinding DecideStatus(const JobLocation& job, const TriageScan& scan, std::optional<int64_t> total_steps,
                         const std::map<std::string, ClassHit>& hits, JobFacts* f) {
  if (f->summary.present) return StatusFromSummary(scan.result, scan.thresholds, total_steps, f);
  if (!job.log_path) {
    // No summary and nothing to read: the job is gone or not started (formats §4.2: unknown-death).
    f->status = JobStatus::kUnknownDeath;
    return {};
  }
  if (f->log_clock_skew_seconds > 0 && scan.options.scheduler_running != true) {
    // A log written "in the future" has no measurable silence: neither running nor hanging can be
    // read from it, and a scheduler that says the job is gone settles it the same way.
    f->status = JobStatus::kUnknownDeath;
    f->notes.push_back("no JOB SUMMARY, and the log's age cannot be measured (clock skew): whether the job still "
                       "runs is unknown without the scheduler");
    return {};
  }
  return StatusFromSilence(scan, hits, f);
}

// A TGS degradation, or else the deepest material dip (depth weighted by its length), as the
// `tgs-degradation` class's evidence; nullopt when neither.
std::optional<LogRef> TgsDegradationEvidence(const JobFacts& f, const TgsOptions& tgs_options, const LogRef& last_step_ref) {
  if (f.tgs.degradation_pct > tgs_options.degradation_pct && f.tgs.pattern != "periodic-checkpoint-spikes") {
    LogRef r = last_step_ref;
    // Rounded as every report rounds them (TGS to the unit, percentages to 1 decimal): the log's
    // evidence must not say 3292 and 23 % where the report says 3293 and 23.5 %.
    r.text = "recent TGS " + FixedDecimal(f.tgs.recent_tgs, 0) + " vs steady " + FixedDecimal(f.tgs.steady_tgs, 0) +
             " (" + FixedDecimal(f.tgs.degradation_pct, 1) + "% lower)";
    return r;
  }
  if (f.tgs.dips.empty()) return std::nullopt;
  // A material dip is a symptom wherever it lies (a dip that recovered before the end, a dip
  // among checkpoint spikes): the recent-vs-steady comparison alone sees neither.
  const TgsDip& deepest = *std::max_element(f.tgs.dips.begin(), f.tgs.dips.end(), [](const TgsDip& a, const TgsDip& b) {
    return a.depth_pct * std::sqrt(static_cast<double>(a.steps)) < b.depth_pct * std::sqrt(static_cast<double>(b.steps));
  });
  LogRef r = last_step_ref;
  for (const auto& st : f.steps)
    if (st.step == deepest.first_step) {
      r = st.where;
      break;
    }
  r.text = "TGS dip at steps " + std::to_string(deepest.first_step) + "-" + std::to_string(deepest.last_step) + ": " +
           FixedDecimal(deepest.mean_tgs, 0) + " vs healthy " + FixedDecimal(f.tgs.healthy_tgs, 0) + " (" +
           FixedDecimal(deepest.depth_pct, 1) +
           "% lower over " + std::to_string(deepest.steps) + " steps, " + FixedDecimal(deepest.seconds / 60.0, 1) +
           " min; step noise " + FixedDecimal(f.tgs.noise_pct, 2) + "%)";
  return r;
}

// The widest stretch of steps the log never printed while training went on (a stalled stdout pipe,
// a full log volume) lasting `min_seconds` or more at the step time around it: the log knows no
// TGS for it, so a fault that ran inside it has no cost the log can weigh. Steps that go back (a
// restart inside one log) are no gap.
std::optional<LogRef> LogStepGapEvidence(const JobFacts& f, double min_seconds) {
  std::optional<LogRef> widest;
  double widest_seconds = 0;
  for (size_t i = 1; i < f.steps.size(); ++i) {
    const StepRecord& before = f.steps[i - 1];
    const StepRecord& after = f.steps[i];
    const int64_t missing = after.step - before.step - 1;
    if (missing < 2) continue;
    const double seconds = static_cast<double>(missing) * (before.seconds + after.seconds) / 2;
    if (seconds < min_seconds || seconds <= widest_seconds) continue;
    widest_seconds = seconds;
    widest = after.where;
    widest->text = "steps " + std::to_string(before.step + 1) + "-" + std::to_string(after.step - 1) +
                   " missing from the log (about " + FixedDecimal(seconds / 60.0, 1) + " min of training)";
  }
  return widest;
}

// ---- Fact-based classes: what the facts show rather than a matched line (no log, a hang, a
// cancel, a soft success, a TGS drop, a death without a cause).
void AddFactClasses(const JobLocation& job, const TriageScan& scan, const HangFinding& hang, JobFacts* f,
                    std::map<std::string, ClassHit>* hits) {
  const SignatureTable& table = scan.table;
  LogRef last_step_ref = f->steps.empty() ? LogRef{} : f->steps.back().where;
  if (!job.log_path && job.log_link_dangles) {
    f->notes.push_back("the `log` symlink dangles: the job was submitted but its log is not written yet (or was removed)");
  } else if (!job.log_path) {
    AddClass(f, hits, table, "prolog-kill-no-log", LogRef{f->job_dir, 0, "no job log"}, 0);
    f->notes.push_back("no job log: the job died before writing any output (prolog) or the log was removed");
  }
  if (hang.hang) {
    // Evidence is the last progress marker reached: the last step, else the last Memstats record,
    // else the end of the log (where the silence begins).
    LogRef r = last_step_ref;
    if (r.empty() && !f->memstats.empty()) r = f->memstats.back().where;
    if (r.empty() && job.log_path) r = LogRef{DisplayPath(*job.log_path, job.outputs_dir), scan.result.lines, ""};
    r.text = hang.reason;
    AddClass(f, hits, table, "hang", r, (int64_t{0} << 40) | (r.line + 1));
    if (f->status == JobStatus::kCancelled) AddClass(f, hits, table, "cancelled-after-hang", r, (int64_t{0} << 40) | (r.line + 1));
  }
  if (f->status == JobStatus::kCancelled) AddClass(f, hits, table, "cancelled", f->summary.where, int64_t{1} << 50);
  if (f->soft_success) AddClass(f, hits, table, "soft-success", f->summary.where, int64_t{1} << 50);
  if (auto tgs = TgsDegradationEvidence(*f, scan.thresholds.tgs, last_step_ref))
    AddClass(f, hits, table, "tgs-degradation", *tgs, int64_t{1} << 50);
  if (f->status == JobStatus::kUnknownDeath && hits->empty() && job.log_path) {
    // Without a step, the evidence is where the output stops: the log's last line.
    LogRef where = last_step_ref;
    if (where.empty()) {
      if (auto last = LastNonEmptyLine(*job.log_path); last.ok() && last->has_value())
        where = LogRef{DisplayPath(*job.log_path, job.outputs_dir), (*last)->number, SanitizeForQuote((*last)->text)};
    }
    AddClass(f, hits, table, "unknown-death", where, int64_t{1} << 50);
  }
  if (auto gap = LogStepGapEvidence(*f, scan.thresholds.log_step_gap))
    AddClass(f, hits, table, "log-step-gap", *gap, int64_t{1} << 50);
}

// ---- Primary: highest priority (root of a cascade), ties broken by the earliest line; the classes
// listed primary first.
void ChoosePrimaryClass(const SignatureTable& table, const TriageThresholds& t, std::map<std::string, ClassHit>* hits,
                        JobFacts* f) {
  std::vector<ClassHit> ordered;
  for (auto& kv : *hits) {
    kv.second.match.host = HostOfTask(f->header, kv.second.match.task);
    ordered.push_back(kv.second);
  }
  std::sort(ordered.begin(), ordered.end(), [](const ClassHit& a, const ClassHit& b) {
    if (a.match.priority != b.match.priority) return a.match.priority > b.match.priority;
    return a.ordinal < b.ordinal;
  });
  auto eligible = [&](const ClassHit& c) {
    if (f->soft_success) return c.match.failure_class == "soft-success";
    if (f->status == JobStatus::kCompleted || f->status == JobStatus::kRunning) {
      const FailureSignature* sig = table.Find(c.match.failure_class);
      // error lines in a healthy run are reported, not primary, unless the class is non-fatal
      return sig && (!sig->detector.empty() || !sig->fatal);
    }
    return true;
  };
  // Tasks the cascade names as failed: accused by the coordinator, or exited non-zero on their own.
  std::set<int> failed_tasks(f->heartbeat.accused_tasks.begin(), f->heartbeat.accused_tasks.end());
  for (const auto& exit : f->node_exits)
    if (exit.exit_code != 0 && exit.exit_code < static_cast<int>(t.cancel_exit_min)) failed_tasks.insert(exit.task);
  auto is_cascade = [&](const ClassHit& c) {
    const FailureSignature* sig = table.Find(c.match.failure_class);
    return sig && sig->cascade;
  };
  for (const auto& c : ordered) {
    if (!eligible(c)) continue;
    f->failure_class = c.match.failure_class;
    if (is_cascade(c)) {
      // The cause precedes its cascade: an error logged earlier by a task the cascade names wins
      // (a Python exception on the task the coordinator then declares dead).
      for (const auto& cause : ordered)
        if (!is_cascade(cause) && eligible(cause) && table.Find(cause.match.failure_class)->detector.empty() &&
            cause.ordinal <= c.ordinal && failed_tasks.count(cause.match.task)) {
          f->failure_class = cause.match.failure_class;
          break;
        }
    }
    break;
  }
  for (const auto& c : ordered)
    if (c.match.failure_class == f->failure_class) f->classes.push_back(c.match);
  for (const auto& c : ordered)
    if (c.match.failure_class != f->failure_class) f->classes.push_back(c.match);
}

}  // namespace

StatusOr<JobFacts> TriageJob(const JobLocation& job, const TriageOptions& options) {
  SignatureTable loaded;
  if (options.signatures == nullptr) {
    std::string rules_dir = options.rules_dir.empty() ? DefaultDataDir() + "/rules" : options.rules_dir;
    ASSIGN_OR_RETURN(loaded, LoadSignatureTable(rules_dir + "/triage/failure-signatures.yaml"));
  }
  const SignatureTable& table = options.signatures != nullptr ? *options.signatures : loaded;
  ASSIGN_OR_RETURN(const TriageThresholds thresholds, ReadTriageThresholds(table));
  SignatureMatcher matcher(table, LogScanner::Triggers());

  JobFacts f;
  f.id = job.id;
  f.job_dir = job.job_dir.value_or("");
  f.log_path = job.log_path.value_or("");
  f.notes = job.notes;
  f.header.launcher = job.id.rfind("k8s-", 0) == 0 ? "k8s" : job.id.rfind("local_", 0) == 0 ? "local" : "slurm";
  TriageScan scan{table, matcher, thresholds, options, {}, std::nullopt, 0};
  scan.now = options.now.value_or(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());

  RETURN_IF_ERROR(ScanJobAndRankLogs(job, &scan, &f));
  ReadLauncherHeader(scan.result, &f);
  const HostConfirmation confirmation = ConfirmTaskHosts(scan.result, &f);
  ReadNodeAddresses(scan.result, &f.header);
  RETURN_IF_ERROR(ScanRayWorkerLogs(job, &scan, &f));
  RETURN_IF_ERROR(RefuseWithoutLauncherMarks(job, scan.result));
  TakeScannedRecords(&scan.result, &f);
  const ProgressInputs pin = ReadRestoreProgressAndTgs(scan.result, thresholds, &f);
  const StampYear year = YearOfStamps(scan.result, f.id, scan.log_mtime);
  ReadHeartbeat(scan.result, year, &f);
  PlaceEvents(&scan.result, year, &f);

  std::map<std::string, ClassHit> hits = std::move(scan.result.classes);
  const HangFinding hang = DecideStatus(job, scan, pin.total_steps, hits, &f);
  AddFactClasses(job, scan, hang, &f, &hits);
  ChoosePrimaryClass(table, thresholds, &hits, &f);
  if (confirmation.mismatches == 0 && confirmation.tasks_that_said > 0 && !f.header.hosts.empty())
    f.notes.push_back(std::to_string(confirmation.tasks_that_said) + " task(s) confirmed their host in the log");
  f.run_window = RunWindowOf(f, scan.result.artifact_epoch, scan.log_mtime, scan.now);
  return f;
}

std::optional<bool> LogShowsFinished(const JobFacts& facts) {
  if (facts.summary.present || facts.status == JobStatus::kCompleted || facts.status == JobStatus::kFailed ||
      facts.status == JobStatus::kCancelled)
    return true;
  if (facts.status == JobStatus::kRunning || facts.status == JobStatus::kHanging) return false;
  return std::nullopt;
}

}  // namespace diagnose
