#include "engine/profile/drill.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "engine/analysis/robust_statistics.h"

namespace diagnose::profile {

namespace {

constexpr double kMicros = 1e6;
// A GPU or host is named only well outside its peers: 3.5 robust z (Iglewicz-Hoaglin) and at least
// 3 % above the median, so a fleet with a near-zero MAD does not name noise.
constexpr double kOutlierZ = 3.5;
constexpr double kOutlierExcess = 0.03;
// A main-stream gap pattern is a blocker only when it costs at least this share of the step.
constexpr double kBlockerShareOfStep = 0.05;
// Timestamp directories of one window differ by the profiler's start skew, seconds to minutes;
// an hour apart they are two windows.
constexpr double kStaleWindowSeconds = 600;

struct Interval {
  double start, end;
};

// `intervals` is a run of segments each sorted by start (one per stream, `segment_ends` their ends):
// merging them costs n log(streams), where sorting the lot cost n log n.
double UnionLength(std::vector<Interval>& intervals, std::vector<size_t> segment_ends) {
  const auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  while (segment_ends.size() > 1) {
    std::vector<size_t> merged;
    for (size_t i = 0; i < segment_ends.size(); i += 2) {
      if (i + 1 == segment_ends.size()) {
        merged.push_back(segment_ends[i]);
        break;
      }
      const size_t begin = i == 0 ? 0 : segment_ends[i - 1];
      std::inplace_merge(intervals.begin() + static_cast<long>(begin),
                         intervals.begin() + static_cast<long>(segment_ends[i]),
                         intervals.begin() + static_cast<long>(segment_ends[i + 1]), by_start);
      merged.push_back(segment_ends[i + 1]);
    }
    segment_ends = std::move(merged);
  }
  double total = 0, start = 0, end = 0;
  bool open = false;
  for (const auto& i : intervals) {
    if (!open || i.start > end) {
      if (open) total += end - start;
      start = i.start;
      end = i.end;
      open = true;
    } else {
      end = std::max(end, i.end);
    }
  }
  if (open) total += end - start;
  return total;
}

TraceSummary Summarize(const TraceFile& file, const KernelFamilies& families) {
  TraceSummary s;
  s.path = file.path;
  s.host = file.host;
  s.window_dir = file.window_dir;
  s.events = file.events;
  s.bytes = file.uncompressed_bytes;
  s.truncated = file.truncated;
  s.numbering = file.numbering;
  s.warnings = file.warnings;
  s.steps = file.steps;
  std::vector<size_t> family_of(file.names.size());
  for (size_t i = 0; i < file.names.size(); ++i) family_of[i] = families.Classify(file.names[i]);
  for (const auto& gpu : file.gpus) {
    GpuSummary g;
    g.device = gpu.device;
    g.family_us.assign(families.families.size() + 1, 0);
    std::vector<Interval> all, compute;
    std::vector<size_t> all_ends, compute_ends;   // where each stream's run ends (kernels come by stream)
    std::vector<double> stream_compute(gpu.streams.size(), 0), stream_total(gpu.streams.size(), 0);
    std::vector<double> name_us(file.names.size(), 0);
    std::vector<int64_t> name_launches(file.names.size(), 0);
    uint32_t stream = UINT32_MAX;
    for (const auto& k : gpu.kernels) {
      if (k.stream != stream) {
        if (!all.empty()) all_ends.push_back(all.size());
        if (!compute.empty() && (compute_ends.empty() || compute_ends.back() != compute.size()))
          compute_ends.push_back(compute.size());
        stream = k.stream;
      }
      const double dur = k.end_us - k.start_us;
      g.kernel_us += dur;
      g.family_us[family_of[k.name]] += dur;
      name_us[k.name] += dur;
      ++name_launches[k.name];
      stream_total[k.stream] += dur;
      all.push_back({k.start_us, k.end_us});
      if (families.KindOf(family_of[k.name]) == KernelKind::kCompute) {
        compute.push_back({k.start_us, k.end_us});
        stream_compute[k.stream] += dur;
      }
    }
    all_ends.push_back(all.size());
    if (compute_ends.empty() || compute_ends.back() != compute.size()) compute_ends.push_back(compute.size());
    g.busy_us = UnionLength(all, all_ends);
    g.compute_us = UnionLength(compute, compute_ends);
    // The main stream is where the compute runs; its gaps are time the GPU's work waited.
    size_t main_stream = 0;
    for (size_t i = 1; i < gpu.streams.size(); ++i) {
      const auto key = [&](size_t s) { return std::make_pair(stream_compute[s], stream_total[s]); };
      if (key(i) > key(main_stream)) main_stream = i;
    }
    std::vector<double> gap_after(file.names.size(), 0);
    const TraceKernel* previous = nullptr;
    for (const auto& k : gpu.kernels) {
      if (k.stream != main_stream) continue;
      if (previous != nullptr && k.start_us > previous->end_us) gap_after[previous->name] += k.start_us - previous->end_us;
      previous = &k;
    }
    for (size_t n = 0; n < file.names.size(); ++n) {
      if (name_launches[n] == 0 && gap_after[n] == 0) continue;
      NameTotals& t = s.names[file.names[n]];
      t.us += name_us[n];
      t.launches += name_launches[n];
      t.gap_us += gap_after[n];
      if (gap_after[n] > t.worst_gpu_gap_us) {
        t.worst_gpu_gap_us = gap_after[n];
        t.worst_device = gpu.device;
      }
    }
    s.gpus.push_back(g);
  }
  return s;
}

// "host-03.proc5" from its path: in 1-GPU/proc every file's one GPU is GPU 0.
std::string FileLabel(const std::string& path) {
  const std::string stem = TraceFileStem(path);
  return stem.empty() ? std::filesystem::path(path).filename().string() : stem;
}

std::optional<double> WindowDirEpoch(const std::string& dir) {
  std::tm tm{};
  if (std::sscanf(dir.c_str(), "%4d_%2d_%2d_%2d_%2d_%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec) != 6)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm));
}

std::string Seconds(double value, bool sign = false) {
  char text[32];
  std::snprintf(text, sizeof text, sign ? "%+.2f" : "%.2f", value);
  return text;
}

std::string Fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::optional<Outlier> FindOutlier(const std::vector<std::pair<std::string, double>>& values,
                                   const std::vector<std::string>& files) {
  if (values.size() < 3) return std::nullopt;
  std::vector<double> v;
  for (const auto& [name, value] : values) v.push_back(value);
  const double median = analysis::Median(v);
  const double mad = analysis::Mad(v, median);
  const double scale = std::max(1.4826 * mad, 0.005 * std::abs(median));
  if (scale <= 0) return std::nullopt;
  size_t worst = 0;
  for (size_t i = 1; i < values.size(); ++i)
    if (values[i].second > values[worst].second) worst = i;
  const double z = (values[worst].second - median) / scale;
  if (z < kOutlierZ || values[worst].second < median * (1 + kOutlierExcess)) return std::nullopt;
  return Outlier{values[worst].first, files[worst], values[worst].second, median, mad, z};
}

// What the files hold before any arithmetic: their GPUs, steps, timestamp directories and pid numbering.
struct WindowInventory {
  std::set<int64_t> step_numbers;
  std::vector<double> step_durations;
  std::set<std::string> dirs;
  std::map<std::string, std::set<std::string>> dirs_of_host_file;
  std::set<PidNumbering> numberings;
};

WindowInventory TakeInventory(const std::vector<TraceSummary>& traces, ProfileDrill& d) {
  WindowInventory inventory;
  int multi_gpu_files = 0, single_gpu_files = 0;
  for (const auto& t : traces) {
    d.files.push_back(t.path);
    inventory.dirs.insert(t.window_dir);
    inventory.dirs_of_host_file[std::filesystem::path(t.path).filename().string()].insert(t.window_dir);
    d.gpus += static_cast<int>(t.gpus.size());
    (t.gpus.size() > 1 ? multi_gpu_files : single_gpu_files) += t.gpus.empty() ? 0 : 1;
    d.events += t.events;
    d.largest_file_bytes = std::max(d.largest_file_bytes, t.bytes);
    if (!t.gpus.empty()) inventory.numberings.insert(t.numbering);
    for (const auto& s : t.steps) {
      inventory.step_numbers.insert(s.step);
      inventory.step_durations.push_back(s.dur_us / kMicros);
    }
    if (t.gpus.empty()) d.warnings.push_back(t.path + ": no GPU in this file (no /device:GPU process)");
    for (const auto& w : t.warnings) d.warnings.push_back(w);
  }
  d.window_dirs.assign(inventory.dirs.begin(), inventory.dirs.end());
  d.gpus_per_file = traces.empty() ? 0 : static_cast<double>(d.gpus) / static_cast<double>(traces.size());
  d.launcher_mode = multi_gpu_files > 0 && single_gpu_files > 0 ? "mixed"
                    : multi_gpu_files > 0                       ? "1-node/proc"
                                                                : "1-GPU/proc";
  return inventory;
}

// Profiled steps: what the host annotated, not what was asked for; then the divisor and step time.
void SetStepsAndDivisor(const WindowInventory& inventory, const DrillOptions& options, ProfileDrill& d) {
  d.step_numbers.assign(inventory.step_numbers.begin(), inventory.step_numbers.end());
  if (!d.step_numbers.empty()) {
    d.steps = static_cast<int>(d.step_numbers.size());
    d.steps_source = "host step annotations (steps " + std::to_string(d.step_numbers.front()) + "-" +
                     std::to_string(d.step_numbers.back()) + ")";
    d.writeback_step = d.step_numbers.back() + 1;
    if (options.profile_steps_given && options.profile_steps != d.steps)
      d.warnings.push_back("--profile-steps " + std::to_string(options.profile_steps) + " but the host annotated " +
                           std::to_string(d.steps) + " profiled steps; the annotations are used");
  } else {
    d.steps = std::max(1, options.profile_steps);
    d.steps_source = options.profile_steps_given ? "--profile-steps" : "assumed (the runbook's default)";
    d.warnings.push_back("no host step annotation (train, step_num) in the window: " + std::to_string(d.steps) +
                         " profiled steps " + (options.profile_steps_given ? "as given" : "assumed") +
                         "; check profiler_steps");
  }
  d.divisor = d.gpus * d.steps;
  if (options.step_seconds > 0) {
    d.step_seconds = options.step_seconds;
    d.step_source = options.step_source.empty() ? "given" : options.step_source;
  } else if (!inventory.step_durations.empty()) {
    d.step_seconds = analysis::Median(inventory.step_durations);
    d.step_source = "median of the host's step annotations inside the window (profiler overhead included)";
  }
}

// The runbook's checks before any number is trusted.
void CheckWindow(const WindowInventory& inventory, const DrillOptions& options, ProfileDrill& d) {
  if (options.expected_gpus > 0 && options.expected_gpus != d.gpus) {
    d.warnings.push_back("GPUs detected " + std::to_string(d.gpus) + " but the job ran " +
                         std::to_string(options.expected_gpus) + " (nodes × GPUs per node): " +
                         (d.gpus < options.expected_gpus
                              ? "a timestamp directory of the window is missing, or traces were never written"
                              : "an unrelated profile window is included; scope to one timestamp directory"));
  }
  if (d.launcher_mode == "mixed")
    d.warnings.push_back("files with one GPU and files with several: two launcher modes in one window");
  const auto& numberings = inventory.numberings;
  if (numberings.count(PidNumbering::kMixed) > 0 ||
      (numberings.count(PidNumbering::kRaw) > 0 && numberings.count(PidNumbering::kRemapped) > 0))
    d.warnings.push_back("device pids are raw (1+) in some files and remapped (1001+) in others: files from two tools");
  const auto& dirs = inventory.dirs;
  if (dirs.size() > 1) {
    std::optional<double> lo, hi;
    for (const auto& dir : dirs)
      if (auto epoch = WindowDirEpoch(dir)) {
        lo = std::min(lo.value_or(*epoch), *epoch);
        hi = std::max(hi.value_or(*epoch), *epoch);
      }
    if (lo && hi && *hi - *lo > kStaleWindowSeconds)
      d.warnings.push_back("timestamp directories " + *dirs.begin() + " .. " + *dirs.rbegin() + " are " +
                           Fixed((*hi - *lo) / 60, 0) +
                           " min apart: a stale window from an earlier run is included; scope to one window");
  }
  for (const auto& [file, in_dirs] : inventory.dirs_of_host_file)
    if (in_dirs.size() > 1)
      d.warnings.push_back(file + " appears in " + std::to_string(in_dirs.size()) +
                           " timestamp directories: two windows of the same process; scope to one");
}

// Every kernel name over all files, with the file where its worst main-stream gap fell.
struct KernelTotals {
  std::map<std::string, NameTotals> names;
  std::map<std::string, std::string> worst_file;
};

KernelTotals MergeKernelTotals(const std::vector<TraceSummary>& traces) {
  KernelTotals totals;
  for (const auto& t : traces)
    for (const auto& [name, of_file] : t.names) {
      NameTotals& n = totals.names[name];
      n.us += of_file.us;
      n.launches += of_file.launches;
      n.gap_us += of_file.gap_us;
      if (of_file.worst_gpu_gap_us > n.worst_gpu_gap_us) {
        n.worst_gpu_gap_us = of_file.worst_gpu_gap_us;
        n.worst_device = of_file.worst_device;
      }
    }
  for (const auto& t : traces)
    for (const auto& [name, of_file] : t.names)
      if (of_file.worst_gpu_gap_us > 0 && of_file.worst_gpu_gap_us == totals.names[name].worst_gpu_gap_us)
        totals.worst_file[name] = t.path;
  return totals;
}

void FillFamilies(const std::map<std::string, NameTotals>& names, const KernelFamilies& families, double divisor_us,
                  ProfileDrill& d) {
  d.families.resize(families.families.size() + 1);
  for (size_t i = 0; i < d.families.size(); ++i) {
    FamilyRow& row = d.families[i];
    row.id = i < families.families.size() ? families.families[i].id : kOtherFamilyId;
    row.label = families.LabelOf(i);
    row.kind = families.KindOf(i);
  }
  double total_us = 0;
  for (const auto& [name, n] : names) {
    const size_t f = families.Classify(name);
    FamilyRow& row = d.families[f];
    row.seconds += n.us / divisor_us;
    row.launches += n.launches;
    total_us += n.us;
    if (f < families.families.size() && families.families[f].itemise && n.launches > 0)
      row.kernels.push_back({name, n.us / divisor_us, n.launches});
  }
  for (auto& row : d.families)
    std::sort(row.kernels.begin(), row.kernels.end(),
              [](const KernelRow& a, const KernelRow& b) { return a.seconds > b.seconds; });
  d.total_kernel = total_us / divisor_us;
  if (d.step_seconds) d.step_minus_total = *d.step_seconds - d.total_kernel;
}

// Per GPU, per step: the decomposition, its medians, and the GPU and host slower than their peers.
// The families that make the slow GPU slow: its time in each against the median GPU's, those above
// it by a material share of the slow GPU's compute, most first.
std::vector<FamilyOnGpu> SlowerFamilies(const std::vector<const GpuSummary*>& gpus, size_t slow,
                                        const KernelFamilies& families, double steps) {
  constexpr double kMaterialShare = 0.01;
  std::vector<FamilyOnGpu> slower;
  const GpuSummary& s = *gpus[slow];
  for (size_t f = 0; f < s.family_us.size(); ++f) {
    std::vector<double> v;
    for (const GpuSummary* g : gpus) v.push_back(f < g->family_us.size() ? g->family_us[f] : 0);
    const double median = analysis::Median(v);
    if (s.family_us[f] - median > kMaterialShare * s.compute_us)
      slower.push_back({families.LabelOf(f), s.family_us[f] / kMicros / steps, median / kMicros / steps});
  }
  std::sort(slower.begin(), slower.end(), [](const FamilyOnGpu& a, const FamilyOnGpu& b) {
    return a.seconds - a.median > b.seconds - b.median;
  });
  return slower;
}

void DecomposePerGpu(const std::vector<TraceSummary>& traces, const KernelFamilies& families, ProfileDrill& d) {
  const double steps = d.steps;
  std::vector<std::pair<std::string, double>> gpu_compute;
  std::vector<std::string> gpu_files;
  std::map<std::string, std::vector<double>> host_compute;
  std::map<std::string, std::string> host_file;
  std::vector<const GpuSummary*> gpus;
  for (const auto& t : traces)
    for (const auto& g : t.gpus) {
      gpus.push_back(&g);
      GpuBreakdown b;
      b.file = t.path;
      b.host = t.host;
      b.device = g.device;
      b.kernel = g.kernel_us / kMicros / steps;
      b.busy = g.busy_us / kMicros / steps;
      b.compute = g.compute_us / kMicros / steps;
      b.exposed_comm = b.busy - b.compute;
      b.overlap = b.kernel - b.busy;
      if (d.step_seconds) b.idle = *d.step_seconds - b.busy;
      d.per_gpu.push_back(b);
      gpu_compute.push_back({"GPU " + std::to_string(g.device) + " of " + FileLabel(t.path), b.compute});
      gpu_files.push_back(t.path);
      host_compute[t.host].push_back(b.compute);
      host_file.emplace(t.host, t.path);
    }
  const auto median_of = [&](double GpuBreakdown::*field) {
    std::vector<double> v;
    for (const auto& b : d.per_gpu) v.push_back(b.*field);
    return analysis::Median(v);
  };
  for (double GpuBreakdown::*field : {&GpuBreakdown::kernel, &GpuBreakdown::busy, &GpuBreakdown::compute,
                                      &GpuBreakdown::exposed_comm, &GpuBreakdown::overlap, &GpuBreakdown::idle})
    d.median.*field = median_of(field);
  d.slow_gpu = FindOutlier(gpu_compute, gpu_files);
  if (d.slow_gpu) {
    // FindOutlier's GPU: the first with the largest compute.
    const auto slow = std::max_element(gpu_compute.begin(), gpu_compute.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    d.slow_gpu->slower_families =
        SlowerFamilies(gpus, static_cast<size_t>(slow - gpu_compute.begin()), families, d.steps);
  }
  std::vector<std::pair<std::string, double>> hosts;
  std::vector<std::string> host_files;
  for (const auto& [host, values] : host_compute) {
    hosts.push_back({host, analysis::Median(values)});
    host_files.push_back(host_file[host]);
  }
  d.slow_host = FindOutlier(hosts, host_files);
}

// The main-stream blocker: the kernel whose following gaps cost the most.
void FindBlocker(const KernelTotals& totals, const KernelFamilies& families, double divisor_us, ProfileDrill& d) {
  const NameTotals* best = nullptr;
  std::string best_name;
  for (const auto& [name, n] : totals.names)
    if (best == nullptr || n.gap_us > best->gap_us) {
      best = &n;
      best_name = name;
    }
  if (best == nullptr || d.gpus == 0) return;
  const double gap = best->gap_us / divisor_us;
  const double reference = d.step_seconds.value_or(d.median.busy);
  // The runbook reads a blocker only from a positive step − total kernel: a negative one is overlap.
  const bool stalls = !d.step_minus_total || *d.step_minus_total > 0;
  if (!stalls || gap <= 0 || gap < kBlockerShareOfStep * reference) return;
  const size_t f = families.Classify(best_name);
  Blocker b;
  b.kernel = best_name;
  b.family = families.LabelOf(f);
  b.gap_seconds = gap;
  b.kernel_seconds = best->us / divisor_us;
  const auto file = totals.worst_file.find(best_name);
  if (file != totals.worst_file.end()) b.file = file->second;
  b.device = best->worst_device;
  b.worst_gap_seconds = best->worst_gpu_gap_us / kMicros / d.steps;
  if (f < families.families.size()) b.remedy = families.families[f].remedy;
  d.blocker = b;
}

ProfileDrill Analyze(const std::vector<TraceSummary>& traces, const KernelFamilies& families,
                     const DrillOptions& options) {
  ProfileDrill d;
  const WindowInventory inventory = TakeInventory(traces, d);
  SetStepsAndDivisor(inventory, options, d);
  CheckWindow(inventory, options, d);
  const double divisor_us = d.divisor > 0 ? static_cast<double>(d.divisor) * kMicros : 1;
  const KernelTotals totals = MergeKernelTotals(traces);
  FillFamilies(totals.names, families, divisor_us, d);
  DecomposePerGpu(traces, families, d);
  FindBlocker(totals, families, divisor_us, d);
  return d;
}

// <job>/<run>/tensorboard/plugins/profile/<ts>/<file>: five levels below a job directory.
constexpr int kMaxSearchDepth = 6;

}  // namespace

std::string ReadStepMinusTotal(double seconds) {
  if (seconds > 0)
    return "positive: main-stream blocker(s) stall the GPU; the gap is idle wall-clock no family captures";
  if (seconds < 0) return "negative: streams overlap (communication runs under compute); healthy";
  return "zero: kernels tightly serialised";
}

StatusOr<std::vector<std::string>> FindTraceFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status)) return NotFoundError(path + ": no such file or directory");
    if (!std::filesystem::is_directory(status)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    const auto root = std::filesystem::canonical(path, ec);
    std::filesystem::recursive_directory_iterator it(path, std::filesystem::directory_options::skip_permission_denied,
                                                     ec);
    for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it.depth() >= kMaxSearchDepth) it.disable_recursion_pending();
      if (!it->is_regular_file(ec) || TraceFileStem(it->path().string()).empty()) continue;
      // Keep inside the directory named: a symlink out of it is not this job's trace.
      const auto resolved = std::filesystem::canonical(it->path(), ec);
      if (ec) continue;
      const auto relative = resolved.lexically_relative(root).string();
      if (relative.empty() || relative.rfind("..", 0) == 0) continue;
      found.push_back(it->path().string());
    }
    if (ec) return UnavailableError(path + ": " + ec.message());
    if (found.empty()) return NotFoundError(path + ": no *.trace.json.gz under this directory");
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

ProfileDrill AnalyzeTraces(const std::vector<TraceFile>& traces, const KernelFamilies& families,
                           const DrillOptions& options) {
  std::vector<TraceSummary> summaries;
  for (const auto& t : traces) summaries.push_back(Summarize(t, families));
  return Analyze(summaries, families, options);
}

ProfileDrill AnalyzeWindow(const std::vector<TraceSummary>& window, const KernelFamilies& families,
                           const DrillOptions& options) {
  return Analyze(window, families, options);
}

StatusOr<ProfileDrill> RunDrill(const std::vector<std::string>& files, const KernelFamilies& families,
                                const DrillOptions& options) {
  ASSIGN_OR_RETURN(const std::vector<TraceSummary> window, ReadWindow(files, families, options));
  return Analyze(window, families, options);
}

StatusOr<std::vector<TraceSummary>> ReadWindow(const std::vector<std::string>& files, const KernelFamilies& families,
                                               const DrillOptions& options) {
  if (files.empty()) return InvalidArgumentError("no trace file given");
  const size_t threads = std::min<size_t>(
      files.size(),
      options.threads > 0 ? static_cast<size_t>(options.threads)
                          : std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 2));
  std::vector<std::optional<TraceSummary>> summaries(files.size());
  std::vector<Status> errors(files.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  const auto work = [&] {
    for (size_t i = next++; i < files.size() && !failed; i = next++) {
      StatusOr<TraceFile> trace = ReadTraceFile(files[i], options.read);
      if (!trace.ok()) {
        errors[i] = trace.status();
        failed = true;
        return;
      }
      summaries[i] = Summarize(*trace, families);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  for (const auto& error : errors)
    if (!error.ok()) return error;
  std::vector<TraceSummary> done;
  for (auto& s : summaries) done.push_back(std::move(*s));
  return done;
}

std::string FormatDrillText(const ProfileDrill& d) {
  std::string out;
  const auto line = [&](const std::string& text) { out += text + "\n"; };
  line("Profile: " + std::to_string(d.files.size()) + " trace file(s) in " + std::to_string(d.window_dirs.size()) +
       " timestamp directory(ies); GPUs detected " + std::to_string(d.gpus) + "; looks like " + d.launcher_mode +
       " (" + Fixed(d.gpus_per_file, 1) + " GPUs/file)");
  line("Profiled steps " + std::to_string(d.steps) + " from " + d.steps_source +
       (d.writeback_step ? "; step " + std::to_string(*d.writeback_step) + " is the profiler writeback" : "") +
       "; divisor " + std::to_string(d.divisor) + " (GPUs × steps)");
  if (d.step_seconds) line("Step time " + Seconds(*d.step_seconds) + " s (" + d.step_source + ")");
  else line("Step time unknown: give --step-seconds (the log's steady state outside the window)");
  if (d.launcher_mode == "1-node/proc")
    line("  caveat (1-node/proc): routine kernels (GEMM, flash-attn) may read up to ~2x low per GPU; "
         "step - total kernel shows main-stream stalls most directly");
  line("");
  char row[256];
  std::snprintf(row, sizeof row, "%-48s %12s %10s", "Kernel family (s per GPU per step)", "time", "launches");
  line(row);
  for (const auto& f : d.families) {
    if (f.launches == 0) continue;
    std::snprintf(row, sizeof row, "%-48s %12.3f %10lld", f.label.c_str(), f.seconds,
                  static_cast<long long>(f.launches));
    line(row);
    for (const auto& k : f.kernels) {
      const std::string name = k.name.size() > 44 ? k.name.substr(0, 41) + "..." : k.name;
      std::snprintf(row, sizeof row, "    %-44s %12.3f %10lld", name.c_str(), k.seconds,
                    static_cast<long long>(k.launches));
      line(row);
    }
  }
  std::snprintf(row, sizeof row, "%-48s %12.3f", "Total kernel time (all streams)", d.total_kernel);
  line(row);
  if (d.step_minus_total) {
    std::snprintf(row, sizeof row, "%-48s %+12.3f  %s", "step - total kernel", *d.step_minus_total,
                  ReadStepMinusTotal(*d.step_minus_total).c_str());
    line(row);
  }
  line("");
  line("Step-time decomposition, median GPU (s per step): busy " + Seconds(d.median.busy) + " = compute " +
       Seconds(d.median.compute) + " + exposed communication " + Seconds(d.median.exposed_comm) + "; overlap " +
       Seconds(d.median.overlap) + (d.step_seconds ? "; idle " + Seconds(d.median.idle) : ""));
  if (d.blocker) {
    line("Main-stream blocker: " + d.blocker->kernel + " (" + d.blocker->family + "): " +
         Seconds(d.blocker->gap_seconds) + " s/GPU/step of main-stream gap follows it, its own time " +
         Seconds(d.blocker->kernel_seconds) + " s; worst on GPU " + std::to_string(d.blocker->device) + " of " +
         d.blocker->file + " (" + Seconds(d.blocker->worst_gap_seconds) + " s/step)");
    if (!d.blocker->remedy.empty()) line("  remedy: " + d.blocker->remedy);
  } else {
    line("Main-stream blocker: none (no gap pattern on the main stream costs 5 % of the step)");
  }
  const auto outlier = [&](const char* what, const std::optional<Outlier>& o) {
    if (o)
      line(std::string("Slowest ") + what + ": " + o->what + ": compute " + Seconds(o->value) + " s/step vs median " +
           Seconds(o->median) + " (MAD " + Fixed(o->mad, 3) + ", robust z " + Fixed(o->robust_z, 1) + "), " + o->file);
    else line(std::string("Slowest ") + what + ": none stands out (compute within 3.5 MAD of the median)");
  };
  outlier("GPU", d.slow_gpu);
  outlier("host", d.slow_host);
  for (const auto& w : d.warnings) line("warning: " + w);
  return out;
}

std::vector<std::string> ComparisonWarnings(const std::vector<std::string>& labels,
                                            const std::vector<ProfileDrill>& drills) {
  std::vector<std::string> warnings;
  for (size_t i = 1; i < drills.size(); ++i) {
    if (drills[i].launcher_mode != drills[0].launcher_mode)
      warnings.push_back("WARNING: launcher modes differ (" + labels[0] + " " + drills[0].launcher_mode + ", " +
                         labels[i] + " " + drills[i].launcher_mode +
                         "): per-kernel attribution is not comparable; re-check before trusting any delta");
    if (drills[i].gpus != drills[0].gpus)
      warnings.push_back("WARNING: GPU counts differ (" + labels[0] + " " + std::to_string(drills[0].gpus) + ", " +
                         labels[i] + " " + std::to_string(drills[i].gpus) +
                         "): a timestamp directory is missing or an unrelated window is included");
    if (drills[i].steps != drills[0].steps)
      warnings.push_back("WARNING: profiled steps differ (" + std::to_string(drills[0].steps) + " vs " +
                         std::to_string(drills[i].steps) + ")");
  }
  return warnings;
}

std::string FormatComparisonText(const std::vector<std::string>& labels, const std::vector<ProfileDrill>& drills) {
  std::string out;
  for (const auto& w : ComparisonWarnings(labels, drills)) out += w + "\n";
  char cell[128];
  const auto add_row = [&](const std::string& name, const std::vector<std::optional<double>>& values, bool sign) {
    std::snprintf(cell, sizeof cell, "%-40s", name.size() > 40 ? (name.substr(0, 37) + "...").c_str() : name.c_str());
    out += cell;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i]) std::snprintf(cell, sizeof cell, " %12s", "-");
      else std::snprintf(cell, sizeof cell, sign ? " %+12.3f" : " %12.3f", *values[i]);
      out += cell;
      if (i > 0) {
        if (values[i] && values[0]) std::snprintf(cell, sizeof cell, " (%+8.3f)", *values[i] - *values[0]);
        else std::snprintf(cell, sizeof cell, " %10s", "");
        out += cell;
      }
    }
    out += "\n";
  };
  std::snprintf(cell, sizeof cell, "%-40s", "s per GPU per step");
  out += cell;
  for (size_t i = 0; i < labels.size(); ++i) {
    std::snprintf(cell, sizeof cell, i == 0 ? " %12s" : " %12s %10s", labels[i].substr(0, 12).c_str(), "(delta)");
    out += cell;
  }
  out += "\n";
  std::snprintf(cell, sizeof cell, "%-40s", "launcher / GPUs / steps");
  out += cell;
  for (size_t i = 0; i < drills.size(); ++i) {
    const std::string text = drills[i].launcher_mode + "/" + std::to_string(drills[i].gpus) + "/" +
                             std::to_string(drills[i].steps);
    std::snprintf(cell, sizeof cell, i == 0 ? " %12s" : " %12s %10s", text.c_str(), "");
    out += cell;
  }
  out += "\n";
  const auto each = [&](auto get) {
    std::vector<std::optional<double>> v;
    for (const auto& d : drills) v.push_back(get(d));
    return v;
  };
  add_row("step", each([](const ProfileDrill& d) { return d.step_seconds; }), false);
  for (size_t f = 0; f < drills[0].families.size(); ++f) {
    bool any = false;
    for (const auto& d : drills) any = any || (f < d.families.size() && d.families[f].launches > 0);
    if (!any) continue;
    add_row(drills[0].families[f].label, each([&](const ProfileDrill& d) -> std::optional<double> {
              return f < d.families.size() ? std::optional<double>(d.families[f].seconds) : std::nullopt;
            }),
            false);
    std::set<std::string> kernels;
    for (const auto& d : drills)
      if (f < d.families.size())
        for (const auto& k : d.families[f].kernels) kernels.insert(k.name);
    for (const auto& name : kernels)
      add_row("  " + name, each([&](const ProfileDrill& d) -> std::optional<double> {
                for (const auto& k : d.families[f].kernels)
                  if (k.name == name) return k.seconds;
                return 0.0;
              }),
              false);
  }
  add_row("total kernel", each([](const ProfileDrill& d) -> std::optional<double> { return d.total_kernel; }), false);
  add_row("step - total kernel", each([](const ProfileDrill& d) { return d.step_minus_total; }), true);
  add_row("busy (median GPU)", each([](const ProfileDrill& d) -> std::optional<double> { return d.median.busy; }), false);
  add_row("exposed communication", each([](const ProfileDrill& d) -> std::optional<double> {
            return d.median.exposed_comm;
          }),
          false);
  add_row("idle", each([](const ProfileDrill& d) -> std::optional<double> {
            return d.step_seconds ? std::optional<double>(d.median.idle) : std::nullopt;
          }),
          false);
  for (size_t i = 0; i < drills.size(); ++i)
    if (drills[i].blocker)
      out += labels[i] + ": main-stream blocker " + drills[i].blocker->kernel + " (" +
             Seconds(drills[i].blocker->gap_seconds) + " s/GPU/step of gap after it)\n";
  return out;
}

nlohmann::json DrillJson(const ProfileDrill& d) {
  nlohmann::json j;
  j["files"] = d.files;
  j["window_dirs"] = d.window_dirs;
  j["gpus"] = d.gpus;
  j["gpus_per_file"] = d.gpus_per_file;
  j["launcher_mode"] = d.launcher_mode;
  j["profiled_steps"] = d.steps;
  j["profiled_steps_source"] = d.steps_source;
  j["step_numbers"] = d.step_numbers;
  j["writeback_step"] = d.writeback_step ? nlohmann::json(*d.writeback_step) : nlohmann::json(nullptr);
  j["divisor"] = d.divisor;
  j["step_seconds"] = d.step_seconds ? nlohmann::json(*d.step_seconds) : nlohmann::json(nullptr);
  j["step_source"] = d.step_source;
  nlohmann::json families = nlohmann::json::array();
  for (const auto& f : d.families) {
    nlohmann::json row{{"id", f.id},
                       {"label", f.label},
                       {"kind", f.kind == KernelKind::kCompute ? "compute" : "communication"},
                       {"seconds_per_gpu_step", f.seconds},
                       {"launches", f.launches}};
    if (!f.kernels.empty()) {
      row["kernels"] = nlohmann::json::array();
      for (const auto& k : f.kernels)
        row["kernels"].push_back({{"name", k.name}, {"seconds_per_gpu_step", k.seconds}, {"launches", k.launches}});
    }
    families.push_back(row);
  }
  j["families"] = families;
  j["total_kernel_seconds"] = d.total_kernel;
  j["step_minus_total_kernel_seconds"] = d.step_minus_total ? nlohmann::json(*d.step_minus_total) : nlohmann::json(nullptr);
  const auto breakdown = [](const GpuBreakdown& b) {
    return nlohmann::json{{"file", b.file},       {"host", b.host},       {"gpu", b.device},
                          {"kernel", b.kernel},   {"busy", b.busy},       {"compute", b.compute},
                          {"exposed_communication", b.exposed_comm}, {"overlap", b.overlap}, {"idle", b.idle}};
  };
  j["median_gpu"] = breakdown(d.median);
  j["per_gpu"] = nlohmann::json::array();
  for (const auto& b : d.per_gpu) j["per_gpu"].push_back(breakdown(b));
  if (d.blocker)
    j["main_stream_blocker"] = {{"kernel", d.blocker->kernel},
                                {"family", d.blocker->family},
                                {"gap_seconds_per_gpu_step", d.blocker->gap_seconds},
                                {"kernel_seconds_per_gpu_step", d.blocker->kernel_seconds},
                                {"file", d.blocker->file},
                                {"gpu", d.blocker->device},
                                {"worst_gap_seconds_per_step", d.blocker->worst_gap_seconds},
                                {"remedy", d.blocker->remedy}};
  const auto outlier = [](const Outlier& o) {
    return nlohmann::json{{"what", o.what},     {"file", o.file}, {"compute_seconds_per_step", o.value},
                          {"median", o.median}, {"mad", o.mad},   {"robust_z", o.robust_z}};
  };
  if (d.slow_gpu) j["slowest_gpu"] = outlier(*d.slow_gpu);
  if (d.slow_host) j["slowest_host"] = outlier(*d.slow_host);
  j["events"] = d.events;
  j["warnings"] = d.warnings;
  return j;
}

}  // namespace diagnose::profile
