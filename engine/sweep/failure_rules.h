// Failures inside a sweep and what the runbooks do about them (xla-tuning "Autonomous failure
// recovery", batch-sweep "Fail-fast"; maxtext-slurm-formats.md §4.9-4.10), applied to the jobs of
// one variant in submission (job id) order:
//   RCCL init flake (no completed step, communicator-init waves, killed or hung) -> resubmit;
//     3 consecutive on one profile -> infra-flake, the profile is dropped;
//   JAX coordination timeout -> resubmit; 2 consecutive on one profile -> stop the sweep;
//   Unknown XLA flag -> fix the flag and resubmit; the same flag failing again -> dropped (obsolete);
//   OOM -> dropped, no retry, the allocation recorded;
//   cleanup exit=143 after the last step -> a success (triage's soft success).
#pragma once

#include <string>
#include <vector>

#include "engine/core/log_ref.h"
#include "engine/report/job_facts.h"

namespace diagnose::sweep {

enum class JobOutcome {
  kSucceeded,
  kRunning,
  kOom,
  kUnknownFlag,
  kRcclInitFlake,
  kCoordinationTimeout,
  kOtherFailure,
};
const char* JobOutcomeName(JobOutcome o);   // "ok", "running", "oom", "unknown-flag", ...

struct JobFailure {
  JobOutcome outcome = JobOutcome::kSucceeded;
  std::string detail;      // the OOM allocation, the unknown flag, the failure class
  LogRef evidence;         // the line that decided it
};

// What one job's facts say; a job whose steady window has steps counts as succeeded even when
// teardown failed (the runbook's cleanup exit=143 rule).
JobFailure ClassifyJob(const JobFacts& facts, bool steady_window_measured);

enum class RecoveryRule { kNone, kRetried, kRetryPending, kInfraFlake, kFixFlag, kDroppedObsoleteFlag, kDroppedOom,
                          kStopSweep, kFailed };
const char* RecoveryRuleName(RecoveryRule r);

struct VariantFailures {
  RecoveryRule rule = RecoveryRule::kNone;   // the decisive rule for the variant
  std::string explanation;                   // one sentence, names the jobs
  std::vector<std::string> deciding_jobs;
  bool dropped = false;                      // the variant leaves the leaderboard
  bool stop_sweep = false;
};

struct OrderedJobOutcome {
  std::string job_id;
  JobFailure failure;
};

// `jobs`: one variant's jobs in submission order.
VariantFailures ApplyRecoveryRules(const std::vector<OrderedJobOutcome>& jobs);

}  // namespace diagnose::sweep
