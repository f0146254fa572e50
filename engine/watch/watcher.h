// The watch loop as a library: follows an outputs directory, notices new jobs, follows their logs
// incrementally, and when a job ends (JOB SUMMARY) or stalls (no new step for `stall_seconds` while
// its log still exists) hands it once to an injected diagnosis, which decides against the sweep
// history (and appends to it) as `diagnose JOB --history` does, and reports one result line. Memory is per-job follower state plus the
// ids of jobs already handled; nothing is re-read from the start of a log.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/ordered_parallel.h"
#include "engine/core/status.h"
#include "engine/decision/decision_rules.h"
#include "engine/decision/refine.h"
#include "engine/report/report.h"
#include "engine/sweep/steady_state.h"
#include "engine/watch/log_follow.h"

namespace diagnose {

struct WatchedJob {
  std::string id;          // "9805"
  std::string name;        // JOB_DIR basename
  std::string log_path;
};

struct WatchEvent {
  WatchedJob job;
  std::string trigger;     // ended | stalled
  LogProgress progress;    // what the follower saw
};

struct WatchResult {
  WatchEvent event;
  bool diagnosed = false;          // false when the diagnosis could not run
  Status status;                   // diagnosis or history failure (the job still counts as handled)
  Report report;                   // report.decision is the sweep decision
  SweepDecision sweep;             // the sweep decision with its rule, cause and hang phase
  std::string line;                // "grok-1 8N (job 9805): OOM — FAIL — no-retry"
};

using ListJobsFn = std::function<StatusOr<std::vector<WatchedJob>>(const std::string& outputs_dir)>;
// Diagnoses the job and makes its sweep decision with `sweep` against `history_file` ("" = none),
// appending it there: the decision is made once, by the diagnosis (the pipeline in `diagnose watch`).
// Jobs of one poll are diagnosed concurrently (WatchOptions::parallel), but each decides against the
// decisions of the jobs before it: `await_turn_to_decide` must be called right before deciding (the
// pipeline's DiagnoseOptions::before_deciding), and returns once every earlier job of the poll is done.
using DiagnoseFn = std::function<StatusOr<DecidedReport>(const WatchEvent& event, const SweepContext& sweep,
                                                         const std::string& history_file,
                                                         const AwaitEarlierFn& await_turn_to_decide)>;
using ResultFn = std::function<void(const WatchResult& result)>;

struct WatchOptions {
  std::string outputs_dir;
  std::string history_file;            // "" = no history (decisions still refined, nothing appended)
  std::string sweep;                   // "" = DefaultSweepId(history_file)
  std::string variant;
  double stall_seconds = 600;          // batch-sweep: hanging = 10+ min without new output
  double poll_seconds = 60;
  // Jobs that ended or stalled in the same poll are diagnosed this many at a time; their results
  // (on_result, the history's decisions) still come in job order, each as the sequential run has it.
  int parallel = 1;
  // Jobs already in the history are always skipped. Jobs that had already ended when the watcher
  // first saw them are skipped too, unless their log changed after the sweep's latest recorded
  // decision (they ended while the watcher was down) or this is set.
  bool include_already_ended = false;
  const DecisionRules* rules = nullptr;    // required
  DiagnoseFn diagnose;                 // required
  ResultFn on_result;                  // optional
  // Called once, after the first scan: how many jobs are followed and how many had already ended
  // (skipped). Lets a caller say the watcher is live before any job ends.
  std::function<void(size_t followed, size_t skipped)> on_first_scan;   // optional
  ListJobsFn list_jobs;                // default: ScanOutputsForJobLogs
  std::function<int64_t()> now;        // default: wall clock, seconds
};

// <outputs>/<JOB_DIR>.log files (maxtext-slurm-formats.md §1): the id is the name's leading token
// up to the first '-' (k8s ids keep their "k8s-<date>-<time>-<hex>" form).
StatusOr<std::vector<WatchedJob>> ScanOutputsForJobLogs(const std::string& outputs_dir);

// How a job's line ends: PASS (completed, nothing found), DEGRADED (completed, but the diagnosis
// found a cause: the same judgement `diagnose JOB` shows), FAIL (did not complete).
enum class LineOutcome { kPass, kDegraded, kFail };

// One line in the sweep's style; `rules` name the causes the way the sweep runbook does. The
// throughput is `steady` as `diagnose sweep` measures and says it (sweep::ThroughputText): the
// runbook's window, steps 9-14 with the profiler on, outlier steps left out. `recent_tgs`, when the
// job's throughput fell during the run, is shown after it.
std::string FormatResultLine(const DecisionRules& rules, const WatchEvent& event, const std::string& root_cause,
                             const std::string& hang_phase, const Decision& decision, LineOutcome outcome,
                             const sweep::SteadyState& steady = {}, std::optional<double> recent_tgs = std::nullopt);

class Watcher {
 public:
  static StatusOr<std::unique_ptr<Watcher>> Create(WatchOptions options);

  // One scan: new jobs, log growth, ends and stalls. Returns the results it produced.
  StatusOr<std::vector<WatchResult>> PollOnce();
  // Polls every poll_seconds until `stop` is set (checked at least every 200 ms).
  Status Run(const std::atomic<bool>& stop);

  size_t followed_jobs() const { return followed_.size(); }
  size_t handled_jobs() const { return handled_.size(); }   // includes jobs skipped as already decided
  size_t results() const { return results_.load(); }        // jobs diagnosed or recorded by this watcher

 private:
  explicit Watcher(WatchOptions options) : options_(std::move(options)) {}
  struct Followed {
    WatchedJob job;
    LogFollower follower;
    int64_t last_progress_time = 0;   // when a new step (or the job) was last seen
    bool caught_up = false;           // the log's existing content has been read once
  };
  WatchResult Handle(const Followed& followed, const std::string& trigger, const AwaitEarlierFn& await_turn_to_decide);

  WatchOptions options_;
  std::map<std::string, Followed> followed_;
  std::set<std::string> handled_;      // ids diagnosed/recorded (or skipped): never handled again
  bool first_scan_ = true;
  std::atomic<size_t> results_{0};
  int64_t latest_decision_time_ = 0;   // newest history entry of this sweep (0: none)
};

}  // namespace diagnose
