// diagnose_e2e_bench: median end-to-end wall time of `diagnose JOB --format json` on a generated
// fixture (default 8308): locate, triage, private Prometheus start, discovery, every playbook query,
// verdict and report. Measured, never asserted.
//
//   build/tests/bench/diagnose_e2e_bench [JOB] [RUNS] [--baseline JOB]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/core/subprocess.h"

int main(int argc, char** argv) {
  std::string job = argc > 1 ? argv[1] : "8308";
  int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
  std::vector<std::string> extra;
  for (int i = 3; i < argc; ++i) extra.push_back(argv[i]);
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) {
    diagnose::SpawnOptions options;
    options.argv = {DIAGNOSE_BINARY, job, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"};
    options.argv.insert(options.argv.end(), extra.begin(), extra.end());
    auto started = std::chrono::steady_clock::now();
    auto child = diagnose::ChildProcess::Spawn(options);
    if (!child.ok()) {
      std::fprintf(stderr, "spawn failed: %s\n", child.status().message().c_str());
      return 1;
    }
    auto code = child->Wait(std::chrono::minutes(5));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!code.ok() || *code != 0) {
      std::fprintf(stderr, "run %d: diagnose exited with %d\n", i, code.ok() ? *code : -1);
      return 1;
    }
    seconds.push_back(s);
  }
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  std::printf("diagnose %s --format json: %d runs, median %.3f s, min %.3f s, max %.3f s\n", job.c_str(), runs,
              sorted[sorted.size() / 2], sorted.front(), sorted.back());
  return 0;
}
