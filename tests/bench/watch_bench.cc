// watch_bench: how fast the watch loop's follower reads a job log, what a poll costs when a log has
// grown a little, and what one scan over many idle jobs costs. Prints numbers; asserts nothing.
// Usage: watch_bench [MiB=200] [jobs=300]
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/decision/decision_rules.h"
#include "engine/watch/log_follow.h"
#include "engine/watch/watcher.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

long MaxRssKib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// 24 tasks; per step one step line per task plus NCCL/Ray noise, as a RAY=1 job would write.
void WriteLog(const fs::path& path, size_t target_bytes) {
  std::ofstream out(path, std::ios::binary);
  out << "JOB_ID=1\nJOB_NAME=JAX-bench\nNNODES=24\nJOB_NODELIST=node[001-024]\nPASSTHROUGH_ARGS=\"steps=100000\"\n"
         "MODEL_NAME=bench\n";
  size_t written = 0;
  for (int step = 0; written < target_bytes; ++step) {
    for (int t = 0; t < 24; ++t) {
      char line[320];
      int n = std::snprintf(line, sizeof(line),
                            "%2d: completed step: %d, seconds: 30.309, TFLOP/s/device: 207.973, MFU: 8.32%%, "
                            "Tokens/s/device: 3293.512, total_weights: 4194304, loss: 7.123\n",
                            t, step);
      out.write(line, n);
      written += static_cast<size_t>(n);
      n = std::snprintf(line, sizeof(line),
                        "%2d: node%03d:1234:5678 [3] NCCL INFO Channel 12/0 : 3[3] -> 11[3] [send] via NET/IB/3/GDRDMA\n",
                        t, t + 1);
      for (int k = 0; k < 4; ++k) out.write(line, n);
      written += 4 * static_cast<size_t>(n);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200;
  const int jobs = argc > 2 ? std::atoi(argv[2]) : 300;
  const fs::path dir = fs::temp_directory_path() / ("watch-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir / "outputs");
  const fs::path log = dir / "outputs" / "1-JAX-bench.log";

  WriteLog(log, mib << 20);
  const double size_mib = static_cast<double>(fs::file_size(log)) / (1 << 20);
  const long rss_before = MaxRssKib();
  diagnose::LogFollower follower(log.string());
  auto t0 = Clock::now();
  auto first = follower.Poll();
  const double full = Seconds(t0);
  if (!first.ok()) return 1;
  std::printf("follower: first read of %.0f MiB (%lld step lines) in %.2f s = %.0f MiB/s; max RSS grew %ld KiB\n",
              size_mib, static_cast<long long>(follower.progress().step_lines), full, size_mib / full,
              MaxRssKib() - rss_before);

  {
    std::ofstream out(log, std::ios::app);
    out << " 0: completed step: 999999, seconds: 1.0, Tokens/s/device: 1.0\n";
  }
  t0 = Clock::now();
  const int polls = 1000;
  for (int i = 0; i < polls; ++i) (void)follower.Poll();
  std::printf("follower: incremental poll of an unchanged %.0f MiB log: %.1f us/poll\n", size_mib,
              Seconds(t0) / polls * 1e6);

  // Many idle running jobs in one outputs dir.
  for (int j = 0; j < jobs; ++j) {
    std::ofstream out(dir / "outputs" / (std::to_string(1000 + j) + "-JAX-bench.log"));
    out << "JOB_ID=" << 1000 + j << "\nNNODES=1\nJOB_NODELIST=node001\nMODEL_NAME=bench\n";
    for (int s = 0; s < 20; ++s)
      out << "0: completed step: " << s << ", seconds: 1.0, Tokens/s/device: 1000.0, loss: 1\n";
  }
  auto rules = diagnose::LoadDecisionRules(DIAGNOSE_SOURCE_DIR);
  if (!rules.ok()) return 1;
  diagnose::WatchOptions options;
  options.outputs_dir = (dir / "outputs").string();
  options.rules = &*rules;
  options.include_already_ended = true;
  // No diagnosis and no sweep decision: the bench measures discovery and following, not the pipeline.
  options.diagnose = [](const diagnose::WatchEvent&, const diagnose::SweepContext&, const std::string&,
                        const diagnose::AwaitEarlierFn&) -> diagnose::StatusOr<diagnose::DecidedReport> {
    return diagnose::DecidedReport{};
  };
  auto watcher = diagnose::Watcher::Create(options);
  if (!watcher.ok()) return 1;
  t0 = Clock::now();
  (void)(*watcher)->PollOnce();   // discovers and catches up on every job (and the big log again)
  const double first_scan = Seconds(t0);
  t0 = Clock::now();
  for (int i = 0; i < 20; ++i) (void)(*watcher)->PollOnce();
  std::printf("watch: %d+1 jobs: first scan %.2f s, steady poll %.2f ms; max RSS %ld KiB\n", jobs, first_scan,
              Seconds(t0) / 20 * 1e3, MaxRssKib());
  fs::remove_all(dir);
  return 0;
}
