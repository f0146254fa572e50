// The profile drill (issue 33, after the runbook skills/profile-drill): one profiling window's
// trace files reduced to time per GPU per step by kernel family, the per-GPU step-time
// decomposition (busy union across streams, compute, exposed communication, idle, overlap), the
// main-stream blocker, the GPU slower than its peers, and the checks the runbook demands before any
// number is trusted (GPUs detected, launcher mode, a window split over timestamp directories, a
// stale window, truncation at the exporter's cap). Every figure is computed from the files alone,
// divided by what was found in them, never by an assumed count.
#pragma once

#include <cstdint>
#include <map>
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

// One kernel name in one file, summed over its GPUs (µs).
struct NameTotals {
  double us = 0;
  int64_t launches = 0;
  double gap_us = 0;             // main-stream gap after this kernel, all GPUs
  double worst_gpu_gap_us = 0;   // the largest of one GPU
  int worst_device = 0;
};

// One GPU over the whole window (µs).
struct GpuSummary {
  int device = 0;
  double kernel_us = 0, busy_us = 0, compute_us = 0;
  std::vector<double> family_us;   // by family index (KernelFamilies::Classify)
};

// One file reduced right after it is read, so memory holds one file's kernels at a time: all that a
// drill of the window needs, whatever its step time or expected GPU count.
struct TraceSummary {
  std::string path, host, window_dir;
  int64_t events = 0, bytes = 0;
  bool truncated = false;
  PidNumbering numbering = PidNumbering::kUnknown;
  std::vector<std::string> warnings;
  std::vector<TraceStep> steps;
  std::vector<GpuSummary> gpus;
  std::map<std::string, NameTotals> names;
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

// A family's time on one GPU against the median GPU's, seconds per step.
struct FamilyOnGpu {
  std::string label;
  double seconds = 0;
  double median = 0;
};

struct Outlier {
  std::string what;     // "GPU 3 of host-07" or "host-07"
  std::string file;
  double value = 0;     // compute seconds per step
  double median = 0;
  double mad = 0;
  double robust_z = 0;
  std::vector<FamilyOnGpu> slower_families;   // the slow GPU's families above the median GPU's, most first
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

// Reads the files in parallel (at most options.threads at once), each reduced as soon as it is read.
StatusOr<std::vector<TraceSummary>> ReadWindow(const std::vector<std::string>& files, const KernelFamilies& families,
                                               const DrillOptions& options);

// The drill of a window already read: a diagnosis that learns the step time after a first look
// drills again without reading the files again.
ProfileDrill AnalyzeWindow(const std::vector<TraceSummary>& window, const KernelFamilies& families,
                           const DrillOptions& options);

// ReadWindow then AnalyzeWindow.
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
