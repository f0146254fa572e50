// The private Prometheus starts while the job's logs are triaged, on every block, before the log
// has said which blocks are the job's: once it has, a server that serves blocks the log's run
// leaves out is dropped and the one the log chooses is started, so the answer is the one a start
// after triage gives.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/subprocess.h"
#include "engine/tsdb/private_prometheus.h"
#include "tests/support/fixture_reports.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The job's files copied with their mtimes (the log's mtime is where its run ends); symlinks (the
// job dir's `log`, relative) stay symlinks.
void CopyKeepingTimes(const fs::path& from, const fs::path& to) {
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  if (fs::is_regular_file(fs::symlink_status(from))) {
    fs::last_write_time(to, fs::last_write_time(from));
    return;
  }
  for (const auto& e : fs::recursive_directory_iterator(from))
    if (fs::is_regular_file(e.symlink_status()))
      fs::last_write_time(to / e.path().lexically_relative(from), e.last_write_time());
}

// (finding id, status) of every finding, for "the same answer".
std::set<std::pair<std::string, std::string>> FindingStates(const json& report) {
  std::set<std::pair<std::string, std::string>> states;
  for (const auto& f : report.value("findings", json::array()))
    states.insert({f.value("id", ""), f.value("status", "")});
  return states;
}

TEST(EarlyServer, AnOlderJobsBlockHasTheServerTheLogChoosesStartedWithTheSameAnswer) {
  REQUIRE_FIXTURE("8308");
  if (FindExecutable("prometheus").empty()) GTEST_SKIP() << "prometheus is not installed (scripts/install-deps.sh installs it)";
  const fs::path job_dir = fs::canonical(e2e::FixtureJobDir("8308"));
  const fs::path outputs = fs::temp_directory_path() / ("diagnose-early-server-" + std::to_string(::getpid()));
  fs::remove_all(outputs);
  fs::create_directories(outputs);
  // Removed however the test ends (a failed assertion, a filesystem exception).
  const std::unique_ptr<const fs::path, void (*)(const fs::path*)> remove_outputs(
      &outputs, [](const fs::path* dir) { fs::remove_all(*dir); });
  CopyKeepingTimes(job_dir, outputs / job_dir.filename());
  const fs::path log = job_dir.string() + ".log";
  CopyKeepingTimes(log, outputs / log.filename());
  const fs::path tsdb = outputs / job_dir.filename() / "prometheus";
  auto inventory = InspectTsdbDir(tsdb.string());
  ASSERT_TRUE(inventory.ok()) << inventory.status().ToString();
  ASSERT_FALSE(inventory->blocks.empty());
  const std::string older = "01AAAAAAAAAAAAAAAAAAAAAAAA";
  fs::copy(tsdb / inventory->blocks.front().ulid, tsdb / older, fs::copy_options::recursive);
  {
    const int64_t shift_ms = int64_t{400} * 86400 * 1000;
    const fs::path meta_path = tsdb / older / "meta.json";
    json meta = json::parse(std::ifstream(meta_path));
    meta["ulid"] = older;
    meta["minTime"] = meta["minTime"].get<int64_t>() - shift_ms;
    meta["maxTime"] = meta["maxTime"].get<int64_t>() - shift_ms;
    std::ofstream(meta_path) << meta.dump();
  }

  const e2e::CliRun run = e2e::RunDiagnoseCli({"8308", "--outputs", outputs.string(), "--format", "json", "-vv"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string served = "served " + std::to_string(inventory->blocks.size()) + " of " +
                             std::to_string(inventory->blocks.size() + 1) + " blocks: 1 outside the job's logged run";
  EXPECT_NE(run.err.find(served), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("starting the one the log chooses"), std::string::npos) << run.err;
  const json report = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << run.out.substr(0, 300);
  const json original = e2e::DiagnoseFixtureJson({"8308"});
  ASSERT_FALSE(original.is_null());
  EXPECT_EQ(FindingStates(report), FindingStates(original));
  EXPECT_EQ(report["decision"], original["decision"]) << e2e::Dump(report["decision"]);
}

// Without a block outside the run the server started beside triage is the one kept: no second start.
TEST(EarlyServer, TheServerStartedBesideTriageIsKeptWhenTheLogChoosesTheSame) {
  REQUIRE_FIXTURE("8308");
  if (FindExecutable("prometheus").empty()) GTEST_SKIP() << "prometheus is not installed (scripts/install-deps.sh installs it)";
  const e2e::CliRun run =
      e2e::RunDiagnoseCli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json", "-vv"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("while the logs are triaged"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("starting the one the log chooses"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("starting Prometheus on"), run.err.rfind("starting Prometheus on")) << "started twice: " << run.err;
}

}  // namespace
}  // namespace diagnose
