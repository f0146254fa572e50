// The jobs of a sweep: every job of an outputs dir (engine/job's ListJobs), narrowed by --since
// (log modification time, as `summary`) and --jobs (id ranges), each triaged from its logs alone
// (the step lines, header and failure classes a sweep needs; no TSDB) and its artifact read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/sweep/tuning_sweep.h"
#include "engine/triage/triage.h"

namespace diagnose::sweep {

// --jobs: comma-separated ids and inclusive numeric ranges, "9801-9850,9860".
struct JobIdSet {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::vector<std::string> ids;   // non-numeric ids (k8s-..., local_...) named exactly
  bool Contains(const std::string& id) const;
};
StatusOr<JobIdSet> ParseJobIdSet(const std::string& text);

struct CollectOptions {
  std::string outputs_dir;
  std::optional<int64_t> since;
  std::optional<JobIdSet> jobs;
  TriageOptions triage;
};

struct CollectedJobs {
  std::vector<SweepJobInput> jobs;
  std::vector<std::string> warnings;   // jobs that could not be read, and why
};

StatusOr<CollectedJobs> CollectSweepJobs(const CollectOptions& options);

}  // namespace diagnose::sweep
