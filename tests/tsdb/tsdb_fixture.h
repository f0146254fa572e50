// Small but realistic job TSDBs for integration tests and the benchmark, built with BlockWriter:
// maxtext-slurm metric names (gpu/host/tb plugins with `host`, Ray series with instance/ip and no
// host), N hosts, a training run on the first host with TensorBoard staleness fills.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/tsdb/block_writer.h"

namespace diagnose::testing {

struct FixtureSpec {
  std::vector<std::string> hosts;
  double start = 1771891200;            // 2026-02-24T00:00:00Z
  double duration_seconds = 2 * 3600;
  double scrape_seconds = 30;
  double step_seconds = 12;             // wall time per training step
  int64_t first_step = 1;
  // Hosts whose node_hw series stop for this interval (observability gap), [from, to) offsets.
  std::vector<std::string> gap_hosts;
  double gap_from = 0, gap_to = 0;
  // Series the tb plugin re-emits (staleness_fill=1) with the last step after training stops.
  double training_stops_at = 0;         // offset; 0 = trains to the end
};

std::vector<std::string> NumberedHosts(const std::string& prefix, int first, int count);

struct FixtureFacts {
  int64_t last_real_step = 0;
  int64_t samples = 0;
};

StatusOr<FixtureFacts> BuildJobTsdb(const FixtureSpec& spec, const std::string& tsdb_dir);

// sha256-free but exact: path -> file content hash + size + mode, for "never written" checks.
std::string DirectoryFingerprint(const std::string& dir);

std::string MakeTempDir(const std::string& prefix);

// A temp dir removed when the test scope ends, also when an ASSERT returns early.
struct ScopedTempDir {
  explicit ScopedTempDir(const std::string& prefix) : path(MakeTempDir(prefix)) {}
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::string path;
};

// Live `prometheus` processes whose parent is `parent`.
std::vector<int> PrometheusChildrenOf(int parent);

}  // namespace diagnose::testing

namespace diagnose::testing {

// One 24-host job (hosts chi2800..chi2823, 2 h at 30 s, with a gap on chi2805 and training that
// stops 20 min before the end), built once per test process under a temp dir and removed at exit.
struct SharedJob {
  std::string job_dir;        // holds prometheus/ like a maxtext-slurm job dir
  std::string tsdb_dir;       // job_dir + "/prometheus"
  FixtureSpec spec;
  FixtureFacts facts;
};
const SharedJob& SharedJobFixture();

}  // namespace diagnose::testing
