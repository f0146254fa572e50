// profile_bench: `diagnose profile` on a generated 64-GPU window (8 files of 8 GPUs, 1-node/proc,
// --events X events per file, 3 profiled steps) against python3 gzip + json.load summing the dur
// of the same X events over the same files, one run each, side by side: wall and CPU time, their
// ratios, each one's peak RSS against the largest uncompressed file, and the machine's load average
// (the machine is shared: wall time under load says as much about the others as about us). diagnose
// reads two files at a time; the python script, as the runbook's tool, reads one: the wall ratio
// counts that, the CPU ratio does not. Then diagnose alone on windows of 1/4 and 1/2 the events per
// file, and the least-squares line through the three (cost linear in events).
//
//   profile_bench [--files 8] [--events 1000000] [--keep]

#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine/profile/trace_reader.h"
#include "tests/bench/child_run.h"
#include "tests/profile/worked_examples_support.h"
#include "tools/fixturegen/trace_writer.h"

namespace {

namespace fs = std::filesystem;
using diagnose::bench::ChildRun;
using diagnose::bench::RunChild;

struct Window {
  std::string dir;
  int64_t events_per_file = 0;
  int64_t largest_json_bytes = 0;
};

Window Generate(const std::string& root, int files, int64_t events_per_file) {
  auto spec = diagnose::profile::worked::MoeVariants()[0].spec;
  spec.hosts = diagnose::profile::worked::Hosts(files, "bench");
  int64_t per_gpu_step = 0;
  for (const auto& s : spec.slices) per_gpu_step += s.launches;
  const int64_t gpu_steps = static_cast<int64_t>(spec.gpus_per_host) * spec.steps;
  spec.filler_kernels_per_gpu_step = std::max<int64_t>(0, (events_per_file - spec.steps) / gpu_steps - per_gpu_step);
  Window window;
  window.dir = root + "/events-" + std::to_string(events_per_file) + "/run/tensorboard/plugins/profile/2026_03_01_10_00_00";
  auto written = diagnose::fixturegen::WriteTraceWindow(spec, window.dir);
  if (!written.ok()) {
    std::fprintf(stderr, "profile_bench: %s\n", written.status().message().c_str());
    std::exit(2);
  }
  window.events_per_file = written->events / files;
  window.largest_json_bytes = written->json_bytes;
  return window;
}

constexpr const char* kPythonSum =
    "import gzip, json, sys\n"
    "total = 0.0\n"
    "for path in sys.argv[1:]:\n"
    "    with gzip.open(path, 'rt') as f:\n"
    "        trace = json.load(f)\n"
    "    total += sum(e.get('dur', 0) for e in trace['traceEvents'] if e.get('ph') == 'X')\n"
    "print(total)\n";

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one.empty() ? "unknown" : one + " " + five + " " + fifteen;
}

double SecondsOf(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Least squares: seconds = a + b * events per file (each window has the same file count).
void PrintFit(const char* what, const std::vector<double>& xs, const std::vector<double>& ys, int files) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
  const double n = static_cast<double>(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i], y = ys[i];
    sx += x, sy += y, sxx += x * x, sxy += x * y, syy += y * y;
  }
  const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  const double a = (sy - b * sx) / n;
  const double r = (n * sxy - sx * sy) / std::sqrt((n * sxx - sx * sx) * (n * syy - sy * sy));
  std::printf("fit (%s): seconds = %.3f + %.1f ns x events/file x %d files (R^2 = %.4f)\n", what, a, b * 1e9 / files,
              files, r * r);
}

// The choice of libraries, measured on one file: inflate with ISA-L against zlib, then the parse.
void PhaseTimings(const std::string& path) {
  std::string json;
  const double isal = SecondsOf([&] {
    auto inflated = diagnose::profile::InflateGzipFile(path);
    if (inflated.ok()) json = std::move(*inflated);
  });
  const double zlib = SecondsOf([&] {
    gzFile f = gzopen(path.c_str(), "rb");
    std::string out(json.size() + 1, '\0');
    size_t got = 0;
    int n = 0;
    while ((n = gzread(f, out.data() + got, static_cast<unsigned>(std::min<size_t>(out.size() - got, 1u << 30)))) > 0)
      got += static_cast<size_t>(n);
    gzclose(f);
  });
  const size_t bytes = json.size();
  const double parse = SecondsOf([&] { (void)diagnose::profile::ParseTraceJson(std::move(json), path); });
  std::printf("one file (%.1f MiB JSON): ISA-L inflate %.3f s, zlib inflate %.3f s, UTF-8 check + simdjson On Demand "
              "parse + clipping %.3f s\n",
              bytes / 1048576.0, isal, zlib, parse);
}

}  // namespace

int main(int argc, char** argv) {
  int files = 8;
  int64_t events = 1'000'000;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--files" && i + 1 < argc) files = std::atoi(argv[++i]);
    else if (arg == "--events" && i + 1 < argc) events = std::atoll(argv[++i]);
    else if (arg == "--keep") keep = true;
    else {
      std::fprintf(stderr, "usage: profile_bench [--files 8] [--events 1000000] [--keep]\n");
      return 2;
    }
  }
  const std::string root = (fs::temp_directory_path() / ("diagnose-profile-bench-" + std::to_string(::getpid()))).string();
  std::printf("generating %d files x %lld events (and 1/4, 1/2 of that) under %s\n", files,
              static_cast<long long>(events), root.c_str());
  std::fflush(stdout);
  std::vector<Window> windows = {Generate(root, files, events / 4), Generate(root, files, events / 2),
                                 Generate(root, files, events)};
  const Window& full = windows.back();
  std::vector<std::string> full_files;
  for (const auto& e : fs::directory_iterator(full.dir)) full_files.push_back(e.path().string());

  // The children first: a child's peak RSS includes what its parent held when it was spawned (exec
  // folds the parent's high-water mark in), and the phase timings below hold two files' text.
  const std::string load_before = LoadAverage();
  std::vector<ChildRun> drills;
  for (const auto& w : windows)
    drills.push_back(RunChild({DIAGNOSE_BINARY, "profile", w.dir, "--format", "json"}));
  std::vector<std::string> python = {"python3", "-c", kPythonSum};
  python.insert(python.end(), full_files.begin(), full_files.end());
  const ChildRun py = RunChild(python);
  const std::string load_after = LoadAverage();

  PhaseTimings(full_files.front());
  const double largest_mib = full.largest_json_bytes / 1048576.0;
  const ChildRun& d = drills.back();
  std::printf("\nwindow: %d files, 64 GPUs when --files 8, %lld events per file, largest file %.1f MiB uncompressed\n",
              files, static_cast<long long>(full.events_per_file), largest_mib);
  std::printf("load average (1, 5, 15 min) on %u cores: %s before, %s after\n", std::thread::hardware_concurrency(),
              load_before.c_str(), load_after.c_str());
  std::printf("%-42s %10s %10s %14s %16s\n", "", "wall s", "CPU s", "peak RSS MiB", "RSS / largest");
  std::printf("%-42s %10.2f %10.2f %14.1f %16.2f  (exit %d)\n", "diagnose profile (2 files at a time)", d.seconds,
              d.cpu_seconds, d.max_rss_mib, d.max_rss_mib / largest_mib, WEXITSTATUS(d.status));
  std::printf("%-42s %10.2f %10.2f %14.1f %16.2f  (exit %d)\n", "python3 gzip + json.load (one thread)", py.seconds,
              py.cpu_seconds, py.max_rss_mib, py.max_rss_mib / largest_mib, WEXITSTATUS(py.status));
  std::printf("speed-up: %.1fx wall time, %.1fx CPU time\n", py.seconds / d.seconds, py.cpu_seconds / d.cpu_seconds);

  std::vector<double> events_per_file, wall, cpu;
  for (size_t i = 0; i < windows.size(); ++i) {
    std::printf("  %9lld events/file: %.2f s wall, %.2f s CPU, %.1f MiB peak\n",
                static_cast<long long>(windows[i].events_per_file), drills[i].seconds, drills[i].cpu_seconds,
                drills[i].max_rss_mib);
    events_per_file.push_back(static_cast<double>(windows[i].events_per_file));
    wall.push_back(drills[i].seconds);
    cpu.push_back(drills[i].cpu_seconds);
  }
  PrintFit("wall", events_per_file, wall, files);
  PrintFit("CPU", events_per_file, cpu, files);
  if (!keep) fs::remove_all(root);
  return d.status == 0 && py.status == 0 ? 0 : 1;
}
