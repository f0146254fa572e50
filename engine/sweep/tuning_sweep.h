// A sweep's jobs as the runbooks read them: grouped into cells (model x node count x config) and
// variants, each job's steady state, the leaderboard of each cell against its baseline with
// noise-aware verdicts, failures per variant with the recovery rule that applies, and the pinned-
// nodelist check (a job on another nodelist than the cell's is flagged and kept out of the
// leaderboard unless asked: cross-nodelist variance drowns the effects a sweep measures).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/report/job_facts.h"
#include "engine/sweep/failure_rules.h"
#include "engine/sweep/job_variant.h"
#include "engine/sweep/noise_comparison.h"
#include "engine/sweep/steady_state.h"

namespace diagnose::sweep {

struct SweepJobInput {
  JobFacts facts;
  ArtifactInfo artifact;
};

struct JobResult {
  std::string id;
  std::string log_path;
  CellKey cell;
  std::string variant;
  std::string commit;
  std::string nodelist;
  JobStatus status = JobStatus::kCompleted;   // from triage
  SteadyState steady;
  JobFailure failure;
  bool on_pinned_nodelist = true;
  bool in_leaderboard = false;
};

struct VariantResult {
  std::string name;
  std::vector<std::string> flags;    // from the artifact's train_env.sh arm, else the passthrough args
  std::vector<std::string> jobs;     // every job of the variant, submission order
  std::vector<std::string> measured_jobs;   // the ones the leaderboard uses
  std::vector<JobSample> samples;
  double mean_tgs = 0;
  double mean_step_seconds = 0;
  std::optional<double> mean_mfu_pct;
  bool is_baseline = false;
  bool is_winner = false;
  Comparison vs_baseline;
  VariantFailures failures;
  bool measured() const { return !samples.empty(); }
};

struct CellResult {
  CellKey key;
  std::string pinned_nodelist;            // the nodelist most of the cell's jobs ran on
  std::vector<std::string> off_nodelist_jobs;
  std::string baseline;                   // variant name
  std::string baseline_reason;            // "TUNE_PROFILE empty (baseline-deployed)" | "first submitted"
  NoiseModel noise;
  int family_size = 0;                    // variants compared with the baseline
  double family_critical = 0;             // Dunnett's |t| bound for the family (noise_comparison.h)
  std::vector<VariantResult> variants;    // measured by mean TGS descending, then unmeasured
  std::optional<std::string> winner;
  std::string conclusion;                 // one sentence: the winner and why, or no winner
  bool stop_sweep = false;
  std::string stop_reason;
  std::vector<std::string> commits;       // distinct commits seen, submission order
};

struct SweepOptions {
  bool include_off_nodelist = false;
};

struct SweepResult {
  std::vector<JobResult> jobs;            // submission order
  std::vector<CellResult> cells;
  std::vector<std::string> warnings;
};

SweepResult AnalyzeSweep(const std::vector<SweepJobInput>& inputs, const SweepOptions& options = {});

// A Slurm job id (digits, short enough for int64); k8s and local ids are not.
bool IsNumericJobId(const std::string& id);
// Submission order: numeric Slurm ids numerically, anything else after them by name.
bool SubmittedBefore(const std::string& a, const std::string& b);

// "2,036 TGS/device, 34.9% MFU": the steady state as every one-line result says it (sweep, watch).
// Empty when the window held no step.
std::string ThroughputText(const SteadyState& steady);

// The batch-sweep runbook's one-line result as a job lands:
// "llama2-70b 1N (job 9801): 2,036 TGS/device, 34.9% MFU — PASS" / "grok-1 8N (job 9805): OOM — FAIL".
std::string ResultLine(const JobResult& job);

}  // namespace diagnose::sweep
