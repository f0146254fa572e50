// Progress arithmetic (maxtext-slurm-formats.md §4.4): steady step time, Σ step seconds vs the
// JOB SUMMARY wall time, the last periodic checkpoint, progress lost and time remaining.
#pragma once

#include <optional>
#include <vector>

#include "engine/report/job_facts.h"

namespace diagnose {

struct ProgressInputs {
  std::optional<int64_t> total_steps;        // steps=T
  std::optional<int64_t> checkpoint_period;  // already defaulted when checkpointing is on
  std::optional<int64_t> wall_seconds;       // JOB SUMMARY wall, when present
  int skip_steps = 0;                        // leading steps left out of the step time
  double setup_allowance_seconds = 0;
};

Progress ComputeProgress(const std::vector<StepRecord>& steps, const ProgressInputs& in);

}  // namespace diagnose
