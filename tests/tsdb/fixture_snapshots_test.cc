// Discovery on the generated maxtext-slurm fixture snapshots (fixtures/outputs, built by
// tools/fixturegen; $DIAGNOSE_FIXTURE_OUTPUTS_DIR overrides the location): every job with a TSDB is
// served from a private copy, discovered, and its directory is byte-identical afterwards.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "engine/discovery/discovery.h"
#include "engine/tsdb/private_prometheus.h"
#include "tests/tsdb/tsdb_fixture.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

std::string OutputsDir() {
  const char* env = std::getenv("DIAGNOSE_FIXTURE_OUTPUTS_DIR");
  return env && *env ? env : DIAGNOSE_FIXTURE_OUTPUTS;
}

// The last `completed step: N` of a job log, as the log-side input of the wrong-database guard.
std::optional<int64_t> LastLoggedStep(const fs::path& log) {
  std::ifstream in(log);
  static const std::regex kStep(R"(completed step: (\d+))");
  std::optional<int64_t> last;
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kStep)) last = std::stoll(m[1].str());
  }
  return last;
}

TEST(FixtureSnapshotsTest, EverySnapshotIsServedDiscoveredAndLeftUntouched) {
  const fs::path outputs = OutputsDir();
  std::vector<fs::path> jobs, empty_tsdbs;
  std::error_code ec;
  for (fs::directory_iterator it(outputs, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory()) continue;
    auto blocks = ListBlockDirs((it->path() / "prometheus").string());
    if (blocks.ok() && !blocks->empty()) {
      jobs.push_back(it->path());
    } else if (fs::is_directory(it->path() / "prometheus") && !fs::exists(it->path() / "prometheus" / "wal")) {
      empty_tsdbs.push_back(it->path() / "prometheus");
    }
  }
  ASSERT_FALSE(jobs.empty()) << "no generated fixtures under " << outputs << " (build target `fixtures`)";
  auto rules = LoadDiscoveryRules(std::string(DIAGNOSE_SOURCE_DIR) + "/rules/discovery.yaml");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  for (const auto& job : jobs) {
    SCOPED_TRACE(job.string());
    const std::string before = testing::DirectoryFingerprint(job.string());
    {
      auto server = PrivatePrometheus::Start((job / "prometheus").string());
      ASSERT_TRUE(server.ok()) << server.status().ToString();
      DiscoveryInputs inputs = InputsForSnapshot((*server)->inventory());
      inputs.log_last_step = LastLoggedStep(job.string() + ".log");
      auto d = Discover((*server)->client(), inputs, *rules);
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_FALSE(d->metric_names.empty());
      EXPECT_FALSE(d->hosts.empty());
      std::printf("%s: %zu names, %zu hosts, %zu real steps (last %s), %lld fills excluded, guard %s, %zu gaps, %d queries in %.3f s\n",
                  job.filename().c_str(), d->metric_names.size(), d->hosts.size(), d->step_times.size(),
                  d->step_times.empty() ? "-" : std::to_string(d->step_times.back().step).c_str(),
                  static_cast<long long>(d->staleness_fills_excluded), d->guard.status.c_str(), d->gaps.size(),
                  d->queries, d->elapsed_seconds);
      for (const auto& g : d->GapSentences()) std::printf("    gap: %s\n", g.c_str());
      if (d->guard.status != "unverifiable") std::printf("    guard: %s\n", d->guard.message.c_str());
    }
    EXPECT_EQ(testing::DirectoryFingerprint(job.string()), before);
  }
  // Jobs whose Prometheus never scraped: a clear refusal naming the dir, nothing started.
  for (const auto& tsdb : empty_tsdbs) {
    auto server = PrivatePrometheus::Start(tsdb.string());
    ASSERT_FALSE(server.ok()) << tsdb;
    EXPECT_EQ(server.status().code(), StatusCode::kNotFound);
    EXPECT_NE(server.status().message().find(tsdb.string()), std::string::npos);
  }
  EXPECT_TRUE(testing::PrometheusChildrenOf(getpid()).empty());
}

}  // namespace
}  // namespace diagnose
