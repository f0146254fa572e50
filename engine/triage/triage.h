// Triage: job logs -> JobFacts (status, failure class, progress, TGS timeline). Streaming; memory
// follows the number of steps, not the log size.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "engine/core/status.h"
#include "engine/job/job_location.h"
#include "engine/report/job_facts.h"
#include "engine/triage/signature_table.h"

namespace diagnose {

struct TriageOptions {
  // Where rules/triage/failure-signatures.yaml lives (the rules/ directory).
  std::string rules_dir;
  // The table already parsed (the pipeline's rulebook); read from rules_dir when null.
  const SignatureTable* signatures = nullptr;
  // "now" for running/hanging decisions (seconds since epoch); unset = the wall clock. Tests pin it.
  std::optional<int64_t> now;
  // Is the job still known to the scheduler as running? Unknown when unset (no squeue here).
  std::optional<bool> scheduler_running;
  // Threads for scanning one large log (split at a step-line boundary, results merged in order);
  // 0 = automatic (2 when the machine has 2+ cores). Logs below split_min_bytes use one thread.
  int scan_threads = 0;
  int64_t split_min_bytes = int64_t{64} << 20;
  // The run's --deadline: reading logs stops there with kDeadlineExceeded (a log of many GB on a
  // slow file server must not hold an epilog past it).
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

StatusOr<JobFacts> TriageJob(const JobLocation& job, const TriageOptions& options);

// The job log's own word that the job ended (a JOB SUMMARY, or a final status): evidence of
// liveness that does not depend on this host's clock agreeing with the file server's. Unset when
// the log cannot tell.
std::optional<bool> LogShowsFinished(const JobFacts& facts);

}  // namespace diagnose
