// diagnose_e2e_bench: median end-to-end wall time of `diagnose JOB --format json` on a generated
// fixture (default 8308): locate, triage, private Prometheus start, discovery, every playbook query,
// verdict and report. Measured, never asserted.
//
//   build/tests/bench/diagnose_e2e_bench [JOB] [RUNS] [--against BINARY [--against-data DIR]] [--remote]
//                                        [DIAGNOSE ARGS...]
//
// --against runs a second diagnose binary (e.g. a frozen copy of an earlier build) on the same job,
// alternating with this build's run by run (the order swapped every run, so a machine growing busier
// weighs on both alike), and prints both medians and their ratio. --against-data sets its
// DIAGNOSE_DATA_DIR (the rules and playbooks it was built with). Other arguments go to both binaries
// (e.g. --baseline JOB).
//
// --remote: the diagnosis as a live job's is made, through `--prometheus URL` on one warm server
// started once on the job's TSDB (no private copy, no start-up per run), against the floor any
// diagnosis of the job pays on that server: one concurrent read of every sample of every metric name
// in the job's TSDB (count_over_time over the whole data range, 8 in flight as diagnose sends them),
// timed in the same run, alternating. Prints each binary's median over the floor's.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/subprocess.h"
#include "engine/job/job_location.h"
#include "engine/tsdb/private_prometheus.h"
#include "engine/tsdb/promql_escape.h"

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

// One warm server on the job's TSDB and the floor read over it.
struct WarmServer {
  std::unique_ptr<diagnose::PrivatePrometheus> server;
  std::vector<std::string> metric_names;
  double start = 0, end = 0;
  std::vector<double> floor_seconds;
  int64_t floor_samples = 0;
};

std::optional<WarmServer> StartWarmServer(const std::string& job) {
  auto location = diagnose::ResolveJob(job, DIAGNOSE_FIXTURE_OUTPUTS);
  if (!location.ok() || !location->prometheus_dir) {
    std::fprintf(stderr, "--remote: job %s has no TSDB under %s\n", job.c_str(), DIAGNOSE_FIXTURE_OUTPUTS);
    return std::nullopt;
  }
  auto server = diagnose::PrivatePrometheus::Start(*location->prometheus_dir);
  if (!server.ok()) {
    std::fprintf(stderr, "--remote: %s\n", server.status().ToString().c_str());
    return std::nullopt;
  }
  WarmServer warm;
  warm.server = std::move(server).value();
  const diagnose::TsdbInventory& inventory = warm.server->inventory();
  warm.start = inventory.min_time_ms() / 1000.0;
  warm.end = (inventory.max_time_ms() - 1) / 1000.0;
  auto names = warm.server->client().LabelValues("__name__", {}, warm.start, warm.end);
  if (!names.ok() || names->empty()) {
    std::fprintf(stderr, "--remote: no metric names in %s\n", location->prometheus_dir->c_str());
    return std::nullopt;
  }
  warm.metric_names = *names;
  return warm;
}

bool TimeFloor(WarmServer& warm) {
  std::vector<diagnose::Query> reads;
  const std::string window = diagnose::PromqlSeconds(warm.end - warm.start + 1);
  for (const auto& name : warm.metric_names)
    reads.push_back(diagnose::Query::Instant(
        "count_over_time({__name__=\"" + diagnose::EscapePromqlString(name) + "\"}[" + window + "])", warm.end));
  const int64_t samples_before = warm.server->client().samples_read();
  const auto started = std::chrono::steady_clock::now();
  for (const auto& answer : warm.server->client().RunBatch(reads)) {
    if (!answer.ok()) {
      std::fprintf(stderr, "floor read failed: %s\n", answer.status().ToString().c_str());
      return false;
    }
  }
  warm.floor_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  warm.floor_samples = warm.server->client().samples_read() - samples_before;
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
  bool remote = false;
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
    } else if (arg == "--remote") {
      remote = true;
    } else {
      extra.push_back(arg);
    }
  }
  if (contenders.size() > 1) contenders[1].data_dir = against_data;
  std::optional<WarmServer> warm;
  if (remote) {
    diagnose::InstallTerminationHandler();   // the warm server and its copy go with a Ctrl-C too
    warm = StartWarmServer(job);
    if (!warm) return 1;
    extra.insert(extra.end(), {"--prometheus", warm->server->url(), "--header",
                               "Authorization: " + warm->server->authorization()});
    // Warm-up, untimed: the server's caches and page cache hold what every later run reads.
    for (auto& c : contenders) {
      if (!TimeOneRun(c, job, extra, -1)) return 1;
      c.seconds.clear();
    }
    if (!TimeFloor(*warm)) return 1;
    warm->floor_seconds.clear();
  }
  for (int run = 0; run < runs; ++run) {
    for (size_t k = 0; k < contenders.size(); ++k) {
      Contender& c = contenders[run % 2 == 0 ? k : contenders.size() - 1 - k];
      if (!TimeOneRun(c, job, extra, run)) return 1;
    }
    if (warm && !TimeFloor(*warm)) return 1;
  }
  for (const auto& c : contenders) PrintSummary(c, job, runs);
  if (contenders.size() > 1) {
    const double mine = Median(contenders[0].seconds), theirs = Median(contenders[1].seconds);
    std::printf("ratio of medians (this build / against): %.3f (%.3f s / %.3f s)\n", mine / theirs, mine, theirs);
  }
  if (warm) {
    const double floor = Median(warm->floor_seconds);
    std::printf("floor: one concurrent read of every sample of the job's %zu metric names (%lld samples): median %.3f s\n",
                warm->metric_names.size(), static_cast<long long>(warm->floor_samples), floor);
    for (const auto& c : contenders)
      std::printf("%s over the floor: %.2fx (%.3f s / %.3f s)\n", c.label.c_str(), Median(c.seconds) / floor,
                  Median(c.seconds), floor);
  }
  return 0;
}
