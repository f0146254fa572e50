// diagnose_e2e_bench: median end-to-end wall time of `diagnose JOB --format json` on a generated
// fixture (default 8308): locate, triage, private Prometheus start, discovery, every playbook query,
// verdict and report. Measured, never asserted.
//
//   build/tests/bench/diagnose_e2e_bench [JOB] [RUNS] [--against BINARY [--against-data DIR]] [DIAGNOSE ARGS...]
//
// --against runs a second diagnose binary (e.g. a frozen copy of an earlier build) on the same job,
// alternating with this build's run by run (the order swapped every run, so a machine growing busier
// weighs on both alike), and prints both medians and their ratio. --against-data sets its
// DIAGNOSE_DATA_DIR (the rules and playbooks it was built with). Other arguments go to both binaries
// (e.g. --baseline JOB).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/subprocess.h"

namespace {

struct Contender {
  std::string label;
  std::string binary;
  std::optional<std::string> data_dir;   // DIAGNOSE_DATA_DIR while it runs
  std::vector<double> seconds;
};

// One timed run; false when it could not run or did not exit 0.
bool TimeOneRun(Contender& c, const std::string& job, const std::vector<std::string>& extra, int run) {
  diagnose::SpawnOptions options;
  options.argv = {c.binary, job, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"};
  options.argv.insert(options.argv.end(), extra.begin(), extra.end());
  // The child inherits this process's environment; the bench is single-threaded.
  if (c.data_dir) ::setenv("DIAGNOSE_DATA_DIR", c.data_dir->c_str(), 1);
  else ::unsetenv("DIAGNOSE_DATA_DIR");
  auto started = std::chrono::steady_clock::now();
  auto child = diagnose::ChildProcess::Spawn(options);
  if (!child.ok()) {
    std::fprintf(stderr, "%s: spawn failed: %s\n", c.label.c_str(), child.status().message().c_str());
    return false;
  }
  auto code = child->Wait(std::chrono::minutes(5));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!code.ok() || *code != 0) {
    std::fprintf(stderr, "%s run %d: diagnose exited with %d\n", c.label.c_str(), run, code.ok() ? *code : -1);
    return false;
  }
  c.seconds.push_back(s);
  return true;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void PrintSummary(const Contender& c, const std::string& job, int runs) {
  std::vector<double> sorted = c.seconds;
  std::sort(sorted.begin(), sorted.end());
  std::printf("%s: diagnose %s --format json: %d runs, median %.3f s, min %.3f s, max %.3f s\n", c.label.c_str(),
              job.c_str(), runs, Median(sorted), sorted.front(), sorted.back());
}

}  // namespace

int main(int argc, char** argv) {
  std::string job = argc > 1 ? argv[1] : "8308";
  int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
  std::vector<Contender> contenders{{"this build", DIAGNOSE_BINARY, std::nullopt, {}}};
  if (const char* data = std::getenv("DIAGNOSE_DATA_DIR")) contenders[0].data_dir = data;
  std::vector<std::string> extra;
  std::optional<std::string> against_data;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--against" || arg == "--against-data") && i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", arg.c_str());
      return 2;
    }
    if (arg == "--against") {
      const std::string binary = argv[++i];
      contenders.push_back({"against " + binary, binary, std::nullopt, {}});
    } else if (arg == "--against-data") {
      against_data = argv[++i];
    } else {
      extra.push_back(arg);
    }
  }
  if (contenders.size() > 1) contenders[1].data_dir = against_data;
  for (int run = 0; run < runs; ++run) {
    for (size_t k = 0; k < contenders.size(); ++k) {
      Contender& c = contenders[run % 2 == 0 ? k : contenders.size() - 1 - k];
      if (!TimeOneRun(c, job, extra, run)) return 1;
    }
  }
  for (const auto& c : contenders) PrintSummary(c, job, runs);
  if (contenders.size() > 1) {
    const double mine = Median(contenders[0].seconds), theirs = Median(contenders[1].seconds);
    std::printf("ratio of medians (this build / against): %.3f (%.3f s / %.3f s)\n", mine / theirs, mine, theirs);
  }
  return 0;
}
