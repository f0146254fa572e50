// The profile drill inside `diagnose JOB`: when the job directory holds a JAX profiler window
// (<job>/<run>/tensorboard/plugins/profile/<ts>/*.trace.json.gz), the drill runs on it with what
// the log knows and the window cannot: the healthy step time outside the window (the profiled steps
// and the writeback step after them excluded), TGS and MFU, and the GPUs the job ran.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/profile/drill.h"
#include "engine/report/job_facts.h"

namespace diagnose {

struct JobProfile {
  std::optional<profile::ProfileDrill> drill;
  std::string error;                    // the window could not be read: why, naming the file
  std::optional<double> tgs;            // median outside the window
  std::optional<double> mfu_pct;
  std::vector<int64_t> steps_used;      // the log steps the step time is taken from
};

// The job's trace files, every timestamp directory of every run; empty when it has none.
std::vector<std::string> FindJobTraceFiles(const std::string& job_dir);

// Nothing when the job has no profile window.
std::optional<JobProfile> DrillJobProfile(const JobFacts& facts, const std::string& data_dir);

// The first screen's lines: TGS and MFU, the step-time decomposition, the kernel table, the blocker.
std::vector<std::string> JobProfileLines(const JobProfile& profile);
nlohmann::json JobProfileJson(const JobProfile& profile);

}  // namespace diagnose
