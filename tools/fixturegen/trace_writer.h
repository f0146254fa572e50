// Writes a JAX/xprof profile window (<dir>/<host>[.procN].trace.json.gz) in the exporter's format:
// process and thread metadata first, X events with fractional-µs ts/dur and string args, a closing
// {}. One step's kernels are laid out per GPU and repeated for every profiled step, so a test knows
// the exact time per GPU per step the drill must find.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace diagnose::fixturegen {

// One kernel on every GPU in every step, `launches` back-to-back pieces from start_s.
struct TraceSlice {
  std::string name;
  int stream = 0;      // 0 is the main (compute) stream
  double start_s = 0;  // from the step's start
  double dur_s = 0;    // all launches together
  int launches = 1;
};

struct TraceWindowSpec {
  std::vector<std::string> hosts;
  int gpus_per_host = 8;
  bool one_file_per_gpu = false;   // 1-GPU/proc: <host>.proc<N>.trace.json.gz, one device each
  int64_t first_step = 5;
  int steps = 3;
  double step_seconds = 1;         // the host's `train` annotation per step
  std::vector<TraceSlice> slices;
  int64_t device_pid_base = 1;     // 1001 for a trace remapped by xprof
  bool thread_names = true;
  bool host_steps = true;
  // One slow GPU: its kernels on the main stream last this much longer.
  std::string slow_host;
  int slow_device = -1;
  double slow_factor = 1;
  // Extra short kernels per GPU per step (benchmarks: a file of a given event count).
  int64_t filler_kernels_per_gpu_step = 0;
  int compression_level = 1;
};

struct TraceWindowReport {
  std::vector<std::string> files;
  int64_t events = 0;
  int64_t json_bytes = 0;   // largest file, uncompressed
};

// Writes into `dir` (created if needed).
StatusOr<TraceWindowReport> WriteTraceWindow(const TraceWindowSpec& spec, const std::string& dir);

}  // namespace diagnose::fixturegen
