// The profile drill inside `diagnose JOB`: when the job directory holds a JAX profiler window
// (<job>/<run>/tensorboard/plugins/profile/<ts>/*.trace.json.gz), the drill runs on it with what
// the log knows and the window cannot: the healthy step time outside the window (the profiled steps
// and the writeback step after them excluded), TGS and MFU, and the GPUs the job ran.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/profile/drill.h"
#include "engine/report/job_facts.h"
#include "engine/report/report.h"

namespace diagnose {

struct JobProfile {
  std::optional<profile::ProfileDrill> drill;
  std::string error;                    // the window could not be read: why, naming the file
  std::optional<double> tgs;            // median outside the window
  std::optional<double> mfu_pct;
  std::vector<int64_t> steps_used;      // the log steps the step time is taken from
  int gpus_per_node = 0;                // for the runbook's GPUs-detected check: nodes × this
  std::string gpus_per_node_source;
};

// The job's trace files, every timestamp directory of every run; empty when it has none.
std::vector<std::string> FindJobTraceFiles(const std::string& job_dir);

// Nothing when the job has no profile window. Reading stops at `deadline` (the run's --deadline):
// the window is then left out, `error` saying the deadline passed in which file (best effort, as
// a profile is extra evidence; the verdict stands on the logs and metrics).
std::optional<JobProfile> DrillJobProfile(const JobFacts& facts, const std::string& data_dir,
                                          std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

// The first screen's lines: TGS and MFU, the step-time decomposition, the kernel table, the blocker.
std::vector<std::string> JobProfileLines(const JobProfile& profile);
nlohmann::json JobProfileJson(const JobProfile& profile);
// Per GPU (label "host-03.proc5 GPU 2"), the decomposition in seconds per step: the HTML bars.
nlohmann::json JobProfileGpuRows(const JobProfile& profile);

// Below this TGS loss against the baseline a run is within noise: no regression to explain.
inline constexpr double kRegressionNoisePct = 3.0;

// The finding `profile/main-stream-blocker` when the subject is slower than its baseline beyond
// noise and its profile has a main-stream blocker: evidence of kind `profile` naming the trace
// file, GPU, kernel and seconds, the family that grew most against the baseline's profile (when
// it has one) and how step − total kernel changed. Nothing otherwise.
std::optional<Finding> ProfileRegressionFinding(const JobFacts& subject, const JobProfile& subject_profile,
                                                const JobFacts& baseline, const JobProfile* baseline_profile);

// The same finding without a baseline, against the job's own healthy level. The rule: triage found
// a material dip (engine/triage/tgs_analysis.h) at least kRegressionNoisePct deep, and every step
// the host annotated inside the profile window lies within that dip; only then does the window show
// the slow run. A dip the window misses (or straddles) gives the finding `skipped` (evidence
// insufficient), as does a window inside it with no main-stream blocker. Nothing when triage found
// no such dip.
std::optional<Finding> SlowPhaseProfileFinding(const JobFacts& subject, const JobProfile& profile);

// What the job is slower than, as the verdict's summary and its causal chain name it.
struct ProfileReference {
  std::string summary;   // "its baseline"
  std::string chain;     // "the baseline"
};
inline const ProfileReference kAgainstBaseline{"its baseline", "the baseline"};
inline const ProfileReference kAgainstOwnHealthyLevel{"its own healthy level", "its own healthy level"};

// The verdict when the logs and playbooks named no cause: kernel-time-regression, from `finding`;
// for a subject that failed, hung or died unexplained, only a note (the profile explains speed).
Diagnosis WithProfileVerdict(Diagnosis diagnosis, const Finding& finding, const ProfileReference& reference,
                             JobStatus subject_status);

}  // namespace diagnose
