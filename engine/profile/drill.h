// The profile drill (issue 33, after the runbook skills/profile-drill): one profiling window's
// trace files reduced to time per GPU per step by kernel family, the per-GPU step-time
// decomposition (busy union across streams, compute, exposed communication, idle, overlap), the
// main-stream blocker, the GPU slower than its peers, and the checks the runbook demands before any
// number is trusted (GPUs detected, launcher mode, a window split over timestamp directories, a
// stale window, truncation at the exporter's cap). Every figure is computed from the files alone,
// divided by what was found in them, never by an assumed count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/profile/kernel_families.h"
#include "engine/profile/trace_reader.h"

namespace diagnose::profile {

struct DrillOptions {
  // Used only when the host's step annotations name no step (the runbook's default is 3).
  int profile_steps = 3;
  bool profile_steps_given = false;
  // The healthy step time from outside the window (the log's steady state, or a companion run
  // without profiler); 0: the median of the host's step annotations inside the window.
  double step_seconds = 0;
  std::string step_source;        // where step_seconds came from, for the report
  int expected_gpus = 0;          // nodes × GPUs per node from the log; 0 unknown
  int threads = 0;                // 0: hardware concurrency, at most 2 (memory: one file per thread)
  TraceReadOptions read;
};

struct KernelRow {
  std::string name;
  double seconds = 0;   // per GPU per step
  int64_t launches = 0;
};

struct FamilyRow {
  std::string id;
  std::string label;
  KernelKind kind = KernelKind::kCompute;
  double seconds = 0;   // per GPU per step
  int64_t launches = 0;
  std::vector<KernelRow> kernels;   // itemised families only, largest first
};

// Seconds per step on one GPU.
struct GpuBreakdown {
  std::string file;
  std::string host;
  int device = 0;
  double kernel = 0;          // summed over streams
  double busy = 0;            // union over streams
  double compute = 0;         // union of compute kernels
  double exposed_comm = 0;    // communication not under compute
  double overlap = 0;         // kernel − busy
  double idle = 0;            // step − busy, when the step time is known
};

struct Blocker {
  std::string kernel;
  std::string family;
  double gap_seconds = 0;      // main-stream gap after it, per GPU per step
  double kernel_seconds = 0;   // its own time, per GPU per step
  std::string file;            // the GPU where its gap is largest
  int device = 0;
  double worst_gap_seconds = 0;
  std::string remedy;
};

struct Outlier {
  std::string what;     // "GPU 3 of host-07" or "host-07"
  std::string file;
  double value = 0;     // compute seconds per step
  double median = 0;
  double mad = 0;
  double robust_z = 0;
};

struct ProfileDrill {
  std::vector<std::string> files;
  std::vector<std::string> window_dirs;
  int gpus = 0;
  double gpus_per_file = 0;
  std::string launcher_mode;   // "1-node/proc" | "1-GPU/proc" | "mixed"
  int steps = 0;
  std::string steps_source;
  std::vector<int64_t> step_numbers;
  std::optional<int64_t> writeback_step;
  int divisor = 0;
  std::optional<double> step_seconds;
  std::string step_source;
  std::vector<FamilyRow> families;   // in the rules' order, then "other"
  double total_kernel = 0;           // per GPU per step, all streams
  std::optional<double> step_minus_total;
  GpuBreakdown median;               // the per-GPU medians
  std::vector<GpuBreakdown> per_gpu;
  std::optional<Blocker> blocker;
  std::optional<Outlier> slow_gpu;
  std::optional<Outlier> slow_host;
  int64_t events = 0;
  int64_t largest_file_bytes = 0;
  std::vector<std::string> warnings;   // the checks that failed, one line each
};

// Trace files under each PATH: a file as given; a directory searched for *.trace.json.gz up to
// <job>/<run>/tensorboard/plugins/profile/<ts>/ depth, every timestamp directory included.
StatusOr<std::vector<std::string>> FindTraceFiles(const std::vector<std::string>& paths);

// Reads the files in parallel (at most options.threads at once) and drills them.
StatusOr<ProfileDrill> RunDrill(const std::vector<std::string>& files, const KernelFamilies& families,
                                const DrillOptions& options);

// The drill over files already read.
ProfileDrill AnalyzeTraces(const std::vector<TraceFile>& traces, const KernelFamilies& families,
                           const DrillOptions& options);

// Plain text: header, family table, decomposition, blocker, outliers, warnings.
std::string FormatDrillText(const ProfileDrill& drill);
// Variants side by side, computed identically, with deltas against the first.
std::string FormatComparisonText(const std::vector<std::string>& labels, const std::vector<ProfileDrill>& drills);
// The warning lines of a comparison whose variants differ in launcher mode or GPU count.
std::vector<std::string> ComparisonWarnings(const std::vector<std::string>& labels,
                                            const std::vector<ProfileDrill>& drills);

nlohmann::json DrillJson(const ProfileDrill& drill);

// How the runbook reads the sign of step − total kernel.
std::string ReadStepMinusTotal(double seconds);

}  // namespace diagnose::profile
