// The runbook's two worked examples (skills/profile-drill, DeepSeek-V3 671B on 8 × 8 MI355X,
// profiler_steps=3) as trace windows: per GPU and step, the kernels whose sums give its tables.
#pragma once

#include <string>
#include <vector>

#include "tools/fixturegen/trace_writer.h"

namespace diagnose::profile::worked {

struct WorkedVariant {
  std::string label;
  fixturegen::TraceWindowSpec spec;
};

// sparse-gmm 1-node/proc, sparse-gmm 1-GPU/proc, sparse-gmm-deepep 1-node/proc.
std::vector<WorkedVariant> SparseGmmVariants();
// The v1, v2, v3 MoE patches (v1 is sparse-gmm-deepep).
std::vector<WorkedVariant> MoeVariants();

std::vector<std::string> Hosts(int count, const std::string& prefix = "node");

}  // namespace diagnose::profile::worked
