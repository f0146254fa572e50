#include "engine/watch/watcher.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "engine/core/logging.h"
#include "engine/core/text.h"
#include "engine/decision/sweep_history.h"
#include "engine/sweep/tuning_sweep.h"

namespace diagnose {

namespace {

namespace fs = std::filesystem;

int64_t WallClockSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string JobIdFromName(const std::string& name) {
  // k8s/local ids carry dashes/underscores of their own: k8s-YYYYMMDD-HHMMSS-xxxx, local_YYYYMMDD_HHMMSS_xxxx.
  if (name.rfind("k8s-", 0) == 0) {
    size_t pos = 0;
    for (int dashes = 0; dashes < 4 && pos != std::string::npos; ++dashes) pos = name.find('-', pos + 1);
    return pos == std::string::npos ? name : name.substr(0, pos);
  }
  if (name.rfind("local_", 0) == 0) {
    size_t pos = 0;
    for (int parts = 0; parts < 4 && pos != std::string::npos; ++parts) pos = name.find('_', pos + 1);
    const size_t dash = name.find('-');
    const size_t end = std::min(pos, dash);
    return end == std::string::npos ? name : name.substr(0, end);
  }
  const size_t dash = name.find('-');
  return dash == std::string::npos ? name : name.substr(0, dash);
}

std::string ShortCause(const DecisionRules& rules, const std::string& root_cause, const std::string& hang_phase) {
  auto named = rules.progress_labels.find(root_cause);
  if (named != rules.progress_labels.end()) {
    if (hang_phase.empty()) return named->second.label;
    if (!named->second.hung.empty()) {
      std::string s = named->second.hung;
      if (auto at = s.find("{phase}"); at != std::string::npos) s.replace(at, 7, hang_phase);
      return s;
    }
  }
  if (!hang_phase.empty()) return "hang " + hang_phase + " (" + root_cause + ")";
  return root_cause;
}

}  // namespace

StatusOr<std::vector<WatchedJob>> ScanOutputsForJobLogs(const std::string& outputs_dir) {
  std::vector<WatchedJob> jobs;
  std::error_code ec;
  fs::directory_iterator it(outputs_dir, ec);
  if (ec) return NotFoundError("cannot list outputs directory " + outputs_dir + ": " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return InternalError("while listing " + outputs_dir + ": " + ec.message());
    const fs::path path = it->path();
    if (path.extension() != ".log") continue;
    std::error_code type_ec;
    if (!fs::is_regular_file(path, type_ec)) continue;
    WatchedJob job;
    job.name = path.stem().string();
    job.id = JobIdFromName(job.name);
    job.log_path = path.string();
    jobs.push_back(std::move(job));
  }
  std::sort(jobs.begin(), jobs.end(), [](const WatchedJob& a, const WatchedJob& b) { return a.name < b.name; });
  return jobs;
}

std::string FormatResultLine(const DecisionRules& rules, const WatchEvent& event, const std::string& root_cause,
                             const std::string& hang_phase, const Decision& decision, LineOutcome outcome,
                             const sweep::SteadyState& steady, std::optional<double> recent_tgs) {
  const LogProgress& p = event.progress;
  std::string model = p.model.empty() ? event.job.name : p.model;
  const int nodes = p.nnodes > 0 ? p.nnodes : static_cast<int>(p.hosts.size());
  std::string line = model + (nodes > 0 ? " " + std::to_string(nodes) + "N" : "") + " (job " + event.job.id + "): ";
  const std::string dash = " \xE2\x80\x94 ";
  const std::string action(ToString(decision.action));
  if (outcome != LineOutcome::kFail) {
    if (steady.measured()) {
      std::string throughput = sweep::ThroughputText(steady);
      // "2,036 → 1,612 TGS/device": the level the job fell to, right after the steady one.
      if (recent_tgs) throughput.insert(WithThousands(steady.mean_tgs).size(), " \xE2\x86\x92 " + WithThousands(*recent_tgs));
      line += throughput;
    } else {
      line += p.last_step ? "completed step " + std::to_string(*p.last_step) : "completed";
    }
    if (outcome == LineOutcome::kPass) {
      line += dash + "PASS";
      if (decision.action == DecisionAction::kNone) return line;
      line += dash + action;
    } else {
      line += dash + ShortCause(rules, root_cause, hang_phase) + dash + "DEGRADED" + dash + action;
    }
  } else {
    line += ShortCause(rules, root_cause, hang_phase) + dash + "FAIL" + dash + action;
  }
  if (decision.action == DecisionAction::kRetryExcludingNodes) {
    std::string hosts;
    for (const auto& x : decision.exclude) hosts += (hosts.empty() ? "" : ",") + x.host;
    line += " " + hosts;
  }
  // A sweep limit that changed the action is the line's reason: the cause alone does not stop a sweep.
  if (const ActionOverride* limit = DecidingLimit(decision)) line += dash + "why: " + PolicyStepText(*limit);
  return line;
}

StatusOr<std::unique_ptr<Watcher>> Watcher::Create(WatchOptions options) {
  if (options.rules == nullptr) return InvalidArgumentError("watch: no decision rules given");
  if (!options.diagnose) return InvalidArgumentError("watch: no diagnosis function given");
  if (options.stall_seconds <= 0) return InvalidArgumentError("watch: --stall-seconds must be positive");
  if (options.poll_seconds <= 0) return InvalidArgumentError("watch: --poll-seconds must be positive");
  if (options.parallel < 1) return InvalidArgumentError("watch: --parallel must be at least 1");
  if (!options.list_jobs) options.list_jobs = ScanOutputsForJobLogs;
  if (!options.now) options.now = WallClockSeconds;
  if (options.sweep.empty() && !options.history_file.empty()) options.sweep = DefaultSweepId(options.history_file);
  std::unique_ptr<Watcher> watcher(new Watcher(std::move(options)));
  // Jobs already decided in this history are never diagnosed again (restart safety).
  if (!watcher->options_.history_file.empty()) {
    ASSIGN_OR_RETURN(SweepHistory history, LoadSweepHistory(watcher->options_.history_file));
    for (const auto& e : history.entries)
      if (e.sweep == watcher->options_.sweep) {
        watcher->handled_.insert(e.job);
        watcher->latest_decision_time_ = std::max(watcher->latest_decision_time_, e.time);
      }
  }
  return watcher;
}

WatchResult Watcher::Handle(const Followed& followed, const std::string& trigger,
                            const AwaitEarlierFn& await_turn_to_decide) {
  WatchResult result;
  result.event = {followed.job, trigger, followed.follower.progress()};
  const LogProgress& p = result.event.progress;
  const SweepContext context{options_.sweep, options_.variant, options_.now(), trigger == "stalled",
                             /*in_sweep=*/true};

  // Every ended job is diagnosed, a clean SUCCESS too: a completed run can still have lost a
  // quarter of its throughput to one bad link, and the line must say what `diagnose JOB` says.
  const bool completed = trigger == "ended" && p.summary_status == "SUCCESS" && p.exit_code == 0;
  Stage("watch: job {} {}; diagnosing", followed.job.id, trigger);
  StatusOr<DecidedReport> decided = options_.diagnose(result.event, context, options_.history_file, await_turn_to_decide);
  if (!decided.ok()) {
    result.status = decided.status();
    result.line = FormatResultLine(*options_.rules, result.event, "diagnosis failed: " + decided.status().message(), "",
                                   Decision{}, LineOutcome::kFail);
    return result;
  }
  result.diagnosed = true;
  result.report = std::move(decided->report);
  if (!decided->sweep) {
    // diagnose could not read the metrics: no sweep decision was made from it, and none recorded.
    result.line = FormatResultLine(*options_.rules, result.event,
                                   result.report.incomplete.value_or("no sweep decision was made"), "",
                                   result.report.decision, LineOutcome::kFail);
    return result;
  }
  result.sweep = std::move(*decided->sweep);
  // A cause the diagnosis names is the line's, as `diagnose JOB` shows it. Where it names none
  // (unknown, no telemetry), the sweep rules' reading is shown: diagnose's decision cites the same
  // rule in its notes.
  const std::string& verdict_cause = result.report.verdict.root_cause;
  const std::string& root_cause =
      !verdict_cause.empty() && options_.rules->NamesMechanism(verdict_cause) ? verdict_cause : result.sweep.root_cause;
  const bool found_nothing = root_cause == "none";
  const LineOutcome outcome = found_nothing && (completed || result.report.decision.action == DecisionAction::kNone) ? LineOutcome::kPass
                              : completed                                                          ? LineOutcome::kDegraded
                                                                                                   : LineOutcome::kFail;
  std::optional<double> recent_tgs;
  sweep::SteadyState steady;
  if (const JobFacts* facts = SubjectFacts(result.report); facts != nullptr) {
    steady = sweep::MeasureSteadyState(*facts);
    if (facts->tgs.degradation_onset_step && facts->tgs.recent_tgs > 0) recent_tgs = facts->tgs.recent_tgs;
  }
  result.line = FormatResultLine(*options_.rules, result.event, root_cause, result.sweep.hang_phase,
                                 result.report.decision, outcome, steady, recent_tgs);
  return result;
}

StatusOr<std::vector<WatchResult>> Watcher::PollOnce() {
  ASSIGN_OR_RETURN(std::vector<WatchedJob> jobs, options_.list_jobs(options_.outputs_dir));
  const int64_t now = options_.now();
  for (const auto& job : jobs) {
    if (job.log_path.empty() || handled_.count(job.id) || followed_.count(job.id)) continue;
    // A job first seen mid-run gets the benefit of the doubt from its log's mtime: a log untouched
    // for the whole stall window cannot have printed a step in it either.
    int64_t first_seen = now;
    std::optional<int64_t> mtime_seconds;
    std::error_code ec;
    const auto mtime = fs::last_write_time(job.log_path, ec);
    if (!ec) {
      mtime_seconds = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::file_clock::to_sys(mtime).time_since_epoch())
                          .count();
      first_seen = std::min<int64_t>(now, *mtime_seconds);
    }
    Followed f{job, LogFollower(job.log_path), first_seen};
    const bool ended_while_away =
        latest_decision_time_ > 0 && mtime_seconds && *mtime_seconds > latest_decision_time_;
    if (first_scan_ && !options_.include_already_ended && !ended_while_away) {
      StatusOr<bool> polled = f.follower.Poll();
      if (polled.ok() && f.follower.progress().summary_seen) {
        handled_.insert(job.id);
        continue;
      }
    }
    followed_.emplace(job.id, std::move(f));
  }
  if (first_scan_ && options_.on_first_scan) options_.on_first_scan(followed_.size(), handled_.size());
  first_scan_ = false;

  std::vector<std::string> finished;
  std::vector<std::pair<const Followed*, std::string>> triggered;   // in job order, with the trigger
  for (auto& [id, f] : followed_) {
    StatusOr<bool> progressed = f.follower.Poll();
    if (!progressed.ok()) {
      // Log gone (deleted or moved): nothing left to diagnose from.
      if (progressed.status().code() == StatusCode::kNotFound) finished.push_back(id);
      continue;
    }
    // The first read only catches up with what was already there; progress counts from then on.
    if (*progressed && f.caught_up) f.last_progress_time = now;
    f.caught_up = true;
    std::string trigger;
    if (f.follower.progress().summary_seen) trigger = "ended";
    else if (static_cast<double>(now - f.last_progress_time) >= options_.stall_seconds) trigger = "stalled";
    if (!trigger.empty()) triggered.emplace_back(&f, std::move(trigger));
  }
  // Handed on in job order, as each and every job before it is done (on_result under the runner's
  // lock, so never two at once).
  std::vector<WatchResult> results = RunInOrder<WatchResult>(
      triggered.size(), options_.parallel,
      [&](size_t i, const AwaitEarlierFn& await_turn_to_decide) {
        return Handle(*triggered[i].first, triggered[i].second, await_turn_to_decide);
      },
      [&](size_t i, const WatchResult& result) {
        const std::string& id = triggered[i].first->job.id;
        handled_.insert(id);
        finished.push_back(id);
        ++results_;
        if (options_.on_result) options_.on_result(result);
      });
  for (const auto& id : finished) followed_.erase(id);
  Log().debug("watch: scanned {}: {} job(s) followed, {} handled", options_.outputs_dir, followed_.size(),
              handled_.size());
  return results;
}

Status Watcher::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    StatusOr<std::vector<WatchResult>> polled = PollOnce();
    if (!polled.ok() && polled.status().code() != StatusCode::kNotFound) return polled.status();
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(options_.poll_seconds * 1000));
    while (!stop.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Status::Ok();
}

}  // namespace diagnose
