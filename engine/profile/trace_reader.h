// One JAX/xprof profile trace (`<host>[.procN].trace.json.gz`, Chrome trace-event JSON) read into the
// kernels of each GPU it holds and the host's step annotations. The file is written by others and
// may be cut short, corrupt or huge: every failure is one Status naming the file and, where the
// fault lies in the bytes, the offset. The format and its traps are in
// the README's "Profile drill" section (device pids 1+plane or remapped 1001+, the 1,000,000-event cap, ROCm slices that
// overrun the next one on the same stream).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace diagnose::profile {

// TF_PROFILER_TRACE_VIEWER_MAX_EVENTS's default: the exporter keeps the earliest this many events
// and drops the rest without a word, so a file holding exactly this many is a truncated window.
inline constexpr int64_t kExporterEventCap = 1'000'000;

struct TraceKernel {
  double start_us = 0;
  double end_us = 0;    // after clipping at the next slice on the same stream
  uint32_t name = 0;    // index into TraceFile::names
  uint32_t stream = 0;  // index into TraceGpu::streams
};

struct TraceStream {
  int64_t tid = 0;
  std::string name;        // "Stream #7(Kernel,MemcpyD2D)"; "" when the file gave no thread_name
  bool named = false;
};

struct TraceGpu {
  int64_t pid = 0;
  int device = 0;          // N of /device:GPU:N
  std::vector<TraceStream> streams;
  std::vector<TraceKernel> kernels;   // sorted by start within each stream
};

struct TraceStep {
  int64_t step = 0;
  double start_us = 0;
  double dur_us = 0;
};

enum class PidNumbering { kUnknown, kRaw, kRemapped, kMixed };
const char* PidNumberingName(PidNumbering numbering);

struct TraceFile {
  std::string path;
  std::string host;          // the file name before .procN / .trace.json.gz
  std::string window_dir;    // the <YYYY_MM_DD_HH_MM_SS> directory holding it
  std::vector<std::string> names;   // kernel names, interned
  std::vector<TraceGpu> gpus;
  std::vector<TraceStep> steps;     // host `train` annotations carrying step_num
  int64_t events = 0;               // X events of every process
  int64_t uncompressed_bytes = 0;
  bool truncated = false;           // events reached the exporter's cap
  PidNumbering numbering = PidNumbering::kUnknown;
  int64_t clipped_slices = 0;       // same-stream slices that ran past the next one's start
  double clipped_us = 0;
  std::vector<std::string> warnings;   // one line each, naming the file
};

struct TraceReadOptions {
  int64_t event_cap = kExporterEventCap;
  // Decompressed bytes parsed at a time: what a file costs in memory besides its events. A piece
  // that stays in cache between the inflate writing it and simdjson reading it: 1 MiB parsed a
  // 1 M-event file in 0.22 s of CPU where 8 MiB took 0.29 s (the README's "Reading a trace").
  size_t piece_bytes = 1 << 20;
  // The run's --deadline: inflating stops there with kDeadlineExceeded naming the file. A window of
  // traces under the 1 GiB limit each can take minutes; the clock is read once per piece.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// The decompressed bytes of a gzip file (concatenated members too), handed to `sink` a piece at a
// time, bounded in total by the limit profile.trace_bytes. kDataLoss names the byte offset where a
// truncated or corrupt stream ends; an error from `sink` stops the inflate and is returned.
Status InflateGzipStream(const std::string& path, const std::function<Status(std::string_view)>& sink,
                         size_t piece_bytes = 1 << 20);
// The same, whole (benchmarks, tests).
StatusOr<std::string> InflateGzipFile(const std::string& path);

// Parses decompressed trace JSON (the same streaming parser ReadTraceFile feeds). `path` only names
// the source in errors and warnings.
StatusOr<TraceFile> ParseTraceJson(std::string json, const std::string& path, const TraceReadOptions& options = {});

// InflateGzipFile then ParseTraceJson; a file not ending in .gz is read as plain JSON.
StatusOr<TraceFile> ReadTraceFile(const std::string& path, const TraceReadOptions& options = {});

// "host1.proc3" from ".../host1.proc3.trace.json.gz" (or .trace.json); "" for a name that is no trace.
std::string TraceFileStem(std::string_view path);

// "host1" from ".../host1.proc3.trace.json.gz".
std::string HostOfTraceFile(std::string_view path);

}  // namespace diagnose::profile
