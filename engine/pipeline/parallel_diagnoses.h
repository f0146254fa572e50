// How many diagnoses of snapshots a command runs at once by default (`summary`, `watch`,
// `fleet import --parallel`): each holds a private Prometheus serving its copy of the job's TSDB, so
// the count is bounded by memory as well as by cores.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace diagnose {

// One diagnosis's peak resident memory at 128 nodes, measured (README "Many jobs at once"): its
// private Prometheus (the larger part) plus what the diagnosis holds in the diagnose process. A
// 24-node job takes less; the bound uses the larger so a sweep of big jobs stays inside it.
inline constexpr int64_t kDiagnosisPeakBytes = int64_t{400} << 20;

struct ParallelismBound {
  int parallel = 1;                      // min(cores, memory budget / per diagnosis), at least 1
  int cores = 1;
  std::optional<int64_t> available_bytes;   // MemAvailable, or the cgroup's headroom when lower
  std::string reason;                    // "2 cores, 7.1 GiB available: 2 at a time"
};

// Half of the available memory is the budget: the machine (a login node, an epilog's cgroup) is
// shared, and a diagnosis's peak is an estimate.
ParallelismBound DefaultParallelDiagnoses(int64_t per_diagnosis_bytes = kDiagnosisPeakBytes);

// The same from given figures (for tests): `available_bytes` unknown bounds by cores only.
ParallelismBound BoundParallelDiagnoses(int cores, std::optional<int64_t> available_bytes,
                                        int64_t per_diagnosis_bytes);

// MemAvailable of a /proc/meminfo text, in bytes; nullopt when absent or malformed.
std::optional<int64_t> MemAvailableBytes(const std::string& meminfo);

}  // namespace diagnose
