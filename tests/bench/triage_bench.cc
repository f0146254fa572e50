// triage_bench: generates a >= --gb GiB 24-task RAY=1-style Slurm log (streamed to a temp file,
// removed afterwards), then times TriageJob on it and `grep -c 'completed step'` on the same file in
// one run, and prints both times, their ratio and the peak RSS.
//
//   triage_bench [--gb 1.0] [--tasks 24] [--keep]
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/job/job_location.h"
#include "engine/triage/triage.h"
#include "tests/bench/child_run.h"

namespace {

namespace fs = std::filesystem;

double CpuSeconds(int who) {
  struct rusage ru {};
  ::getrusage(who, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void Generate(const std::string& path, double gb, int tasks) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror(path.c_str());
    std::exit(2);
  }
  std::vector<char> buf(8 << 20);
  std::setvbuf(f, buf.data(), _IOFBF, buf.size());
  const uint64_t target = static_cast<uint64_t>(gb * (1ull << 30));
  int width = static_cast<int>(std::to_string(tasks - 1).size());
  auto host = [](int t) { return "benchhost" + std::to_string(100 + t); };
  std::fprintf(f, "JOB_ID=424242\nJOB_NAME=JAX-bench\nNNODES=%d\nJOB_NODELIST=benchhost[100-%d]\n"
                  "JAX_COORDINATOR_PORT=31000\nRAY_PORT=6379\n"
                  "PASSTHROUGH_ARGS=\"steps=10000000 enable_checkpointing=true checkpoint_period=500 "
                  "jax_distributed_heartbeat_timeout_seconds=900\"\nMODEL_NAME=bench-model\n",
               tasks, 100 + tasks - 1);
  for (int t = 0; t < tasks; ++t)
    std::fprintf(f, "%*d: HOSTNAME=%s\n%*d: NODE_RANK=%d\n%*d: Config param steps: 10000000\n", width, t,
                 host(t).c_str(), width, t, t, width, t);
  uint64_t written = 0;
  long step = 0;
  unsigned rng = 1;
  char line[512];
  while (written < target) {
    for (int t = 0; t < tasks; ++t) {
      rng = rng * 1103515245u + 12345u;
      double tgs = 3290.0 * (1.0 + ((rng >> 16) % 200 - 100) / 10000.0);
      int n = std::snprintf(line, sizeof line,
                            "%*d: \x1b[36m(MaxTextTrainerActor pid=%d)\x1b[0m completed step: %ld, seconds: %.3f, "
                            "TFLOP/s/device: %.3f, MFU: %.2f%%, Tokens/s/device: %.3f, total_weights: 524288, "
                            "loss: %.3f\n",
                            width, t, 5000 + t, step, 16384.0 / tgs, tgs * 0.0631, tgs * 0.0631 / 25, tgs,
                            2.0 + 1.0 / (1 + step));
      std::fwrite(line, 1, n, f);
      written += n;
      // Realistic noise between step lines: Ray/NCCL/py-spy chatter and warnings.
      if ((rng >> 8) % 4 == 0) {
        n = std::snprintf(line, sizeof line,
                          "%*d: \x1b[36m(MaxTextTrainerActor pid=%d)\x1b[0m %s:%d:%d [%d] NCCL INFO Channel %02d/0 : "
                          "%d[%d] -> %d[%d] via P2P/IPC/read\n",
                          width, t, 5000 + t, host(t).c_str(), 5000 + t, 6000 + (int)(rng % 64), (int)(rng % 8),
                          (int)(rng % 32), t, (int)(rng % 8), (t + 1) % tasks, (int)(rng % 8));
        std::fwrite(line, 1, n, f);
        written += n;
      }
      if ((rng >> 12) % 16 == 0) {
        n = std::snprintf(line, sizeof line,
                          "%*d: \x1b[36m(MaxTextTrainerActor pid=%d)\x1b[0m To see full metrics 'tensorboard "
                          "--logdir=/outputs/424242-JAX-bench/default_train_test/tensorboard/'\n",
                          width, t, 5000 + t);
        std::fwrite(line, 1, n, f);
        written += n;
      }
    }
    if (step % 500 == 0 && step > 0)
      for (int t = 0; t < tasks; ++t) {
        int n = std::snprintf(line, sizeof line, "%*d: Saved a checkpoint at step %ld.\n", width, t, step);
        std::fwrite(line, 1, n, f);
        written += n;
      }
    ++step;
  }
  std::fprintf(f, "========================== JOB SUMMARY ==========================\n  Wall:   99h 0m 0s\n"
                  "  Status: SUCCESS (exit 0)\n=================================================================\n");
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  double gb = 1.0;
  int tasks = 24;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--gb" && i + 1 < argc) gb = std::atof(argv[++i]);
    else if (a == "--tasks" && i + 1 < argc) tasks = std::atoi(argv[++i]);
    else if (a == "--keep") keep = true;
    else {
      std::fprintf(stderr, "usage: triage_bench [--gb G] [--tasks N] [--keep]\n");
      return 2;
    }
  }
  char tmpl[] = "/tmp/diagnose-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 2;
  std::string dir = tmpl;
  std::string log = dir + "/424242-JAX-bench.log";
  auto t0 = std::chrono::steady_clock::now();
  Generate(log, gb, tasks);
  auto t1 = std::chrono::steady_clock::now();
  uint64_t size = fs::file_size(log);
  std::printf("generated %.2f GiB (%d tasks) in %.1f s: %s\n", size / double(1ull << 30), tasks, Seconds(t0, t1),
              log.c_str());

  double gc0 = CpuSeconds(RUSAGE_CHILDREN);
  auto g0 = std::chrono::steady_clock::now();
  std::string count = diagnose::bench::RunChild({"grep", "-c", "completed step", log}).out;
  while (!count.empty() && (count.back() == '\n' || count.back() == '\r')) count.pop_back();
  auto g1 = std::chrono::steady_clock::now();
  double grep_cpu = CpuSeconds(RUSAGE_CHILDREN) - gc0;

  auto job = diagnose::ResolveJob("424242", dir);
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.status().ToString().c_str());
    return 1;
  }
  diagnose::TriageOptions opt;
  double tc0 = CpuSeconds(RUSAGE_SELF);
  auto r0 = std::chrono::steady_clock::now();
  auto facts = diagnose::TriageJob(*job, opt);
  auto r1 = std::chrono::steady_clock::now();
  double triage_cpu = CpuSeconds(RUSAGE_SELF) - tc0;
  if (!facts.ok()) {
    std::fprintf(stderr, "%s\n", facts.status().ToString().c_str());
    return 1;
  }
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  double grep_s = Seconds(g0, g1), triage_s = Seconds(r0, r1);
  std::printf("grep -c 'completed step': %.3f s (count %s)\n", grep_s, count.empty() ? "?" : count.c_str());
  std::printf("TriageJob:                %.3f s (%zu logical steps, status %s, pattern %s, %.0f MiB/s)\n", triage_s,
              facts->steps.size(), std::string(ToString(facts->status)).c_str(), facts->tgs.pattern.c_str(),
              size / double(1 << 20) / triage_s);
  std::printf("ratio triage/grep:        %.2f wall (CPU: triage %.3f s on up to 2 threads, grep %.3f s, ratio %.2f)\n",
              triage_s / grep_s, triage_cpu, grep_cpu, grep_cpu > 0 ? triage_cpu / grep_cpu : 0.0);
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) > 0) std::printf("load average:             %.2f (timings are noisy on a shared machine)\n", load[0]);
  std::printf("peak RSS:                 %.1f MiB\n", ru.ru_maxrss / 1024.0);
  if (!keep) fs::remove_all(dir);
  return 0;
}
