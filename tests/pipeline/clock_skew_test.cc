// Failure mode 6 of issue 12: a finished job whose files carry future mtimes (the file server's
// clock ahead of this host's) must be diagnosed exactly as it is with clocks that agree, plus a
// note that the clocks disagree. Runs the built binary on a skewed copy of a generated fixture.
#include <fcntl.h>
#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/fixture_reports.h"

namespace diagnose::e2e {
namespace {

namespace fs = std::filesystem;

constexpr double kSkewSeconds = 6 * 3600;

// The fixture's log and job dir copied to a fresh outputs dir (symlinks kept as symlinks), with a
// WAL segment as a job's Prometheus leaves it, and every mtime shifted `skew_seconds` ahead of now.
// A fresh outputs dir holding only the fixture job's files (its log and job dir), copied.
void CopyFixtureJob(const std::string& id, const fs::path& outputs) {
  fs::remove_all(outputs);
  fs::create_directories(outputs);
  for (const auto& entry : fs::directory_iterator(DIAGNOSE_FIXTURE_OUTPUTS)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(id + "-", 0) != 0) continue;
    fs::copy(entry.path(), outputs / name, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
}

std::string SkewedCopy(const std::string& id, double skew_seconds) {
  const fs::path outputs = fs::temp_directory_path() / ("diagnose-skew-" + id + "-" + std::to_string(::getpid()) + "-" +
                                                          std::to_string(static_cast<long>(skew_seconds)));
  CopyFixtureJob(id, outputs);
  for (const auto& entry : fs::recursive_directory_iterator(outputs)) {
    if (entry.is_directory() && !entry.is_symlink() && entry.path().filename() == "prometheus") {
      fs::create_directories(entry.path() / "wal");
      std::ofstream(entry.path() / "wal" / "00000000");
    }
  }
  const timespec future{std::time(nullptr) + static_cast<time_t>(skew_seconds), 0};
  const timespec times[2] = {future, future};
  for (const auto& entry : fs::recursive_directory_iterator(outputs))
    utimensat(AT_FDCWD, entry.path().c_str(), times, AT_SYMLINK_NOFOLLOW);
  return outputs.string();
}

nlohmann::json DiagnoseIn(const std::string& outputs, const std::string& id) {
  CliRun run = RunDiagnoseCli({id, "--outputs", outputs, "--format", "json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json report = nlohmann::json::parse(run.out, nullptr, false);
  EXPECT_FALSE(report.is_discarded()) << run.out.substr(0, 500);
  return report.is_discarded() ? nlohmann::json() : report;
}

bool AnyNoteContains(const nlohmann::json& report, const std::string& text) {
  for (const auto& note : report["decision"]["notes"])
    if (note.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

// 9103: exclusions at every priority, so a TSDB lost to the skew changes the answer visibly.
TEST(ClockSkew, FutureMtimesGiveTheSameDiagnosisAndSaySoInTheReport) {
  const std::string id = "9103";
  REQUIRE_FIXTURE(id);
  const std::string agreed_outputs = SkewedCopy(id, 0);
  const nlohmann::json agreed = DiagnoseIn(agreed_outputs, id);
  const std::string skewed_outputs = SkewedCopy(id, kSkewSeconds);
  const nlohmann::json skewed = DiagnoseIn(skewed_outputs, id);
  ASSERT_FALSE(agreed.is_null());
  ASSERT_FALSE(skewed.is_null());
  ASSERT_EQ(agreed["tsdb"][0]["state"], "served") << Dump(agreed["tsdb"]);
  EXPECT_EQ(skewed["tsdb"][0]["state"], "served") << Dump(skewed["tsdb"]);
  EXPECT_EQ(skewed["jobs"][0]["status"], agreed["jobs"][0]["status"]);
  EXPECT_EQ(skewed["verdict"]["root_cause"], agreed["verdict"]["root_cause"]) << Dump(skewed);
  EXPECT_EQ(skewed["decision"]["action"], agreed["decision"]["action"]);
  EXPECT_EQ(skewed["decision"]["exclude"], agreed["decision"]["exclude"]);

  EXPECT_FALSE(agreed["tsdb"][0].contains("clock_skew_seconds"));
  ASSERT_TRUE(skewed["tsdb"][0].contains("clock_skew_seconds")) << Dump(skewed["tsdb"]);
  EXPECT_NEAR(skewed["tsdb"][0]["clock_skew_seconds"].get<double>(), kSkewSeconds, 300);
  EXPECT_TRUE(AnyNoteContains(skewed, "clocks disagree")) << Dump(skewed["decision"]);

  CliRun text = RunDiagnoseCli({id, "--outputs", skewed_outputs, "--format", "text"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("clocks disagree"), std::string::npos) << text.out.substr(0, 3000);
  std::error_code ec;
  fs::remove_all(skewed_outputs, ec);
  fs::remove_all(agreed_outputs, ec);
}

}  // namespace
}  // namespace diagnose::e2e

namespace diagnose::e2e {
namespace {

// The fixture copied to a fresh outputs dir with every block's meta.json moved `days` later (as a
// node whose clock was a year off writes it): its samples then lie outside what the blocks claim.
std::string CopyWithBlocksMoved(const std::string& id, int days) {
  const fs::path outputs = fs::temp_directory_path() / ("diagnose-moved-" + id + "-" + std::to_string(::getpid()));
  CopyFixtureJob(id, outputs);
  const int64_t shift_ms = int64_t{days} * 86400 * 1000;
  for (const auto& entry : fs::recursive_directory_iterator(outputs)) {
    if (entry.path().filename() != "meta.json") continue;
    nlohmann::json meta = nlohmann::json::parse(ReadFileOrEmpty(entry.path().string()));
    meta["minTime"] = meta["minTime"].get<int64_t>() + shift_ms;
    meta["maxTime"] = meta["maxTime"].get<int64_t>() + shift_ms;
    std::ofstream(entry.path()) << meta.dump();
  }
  return outputs.string();
}

// Data the blocks place 400 days after the job's run is named (clock skew, or another job's), and
// the absence of samples in the run never reads as a clean bill of health.
TEST(ClockSkew, BlocksFarOutsideTheLoggedRunAreNamedAndMissingDataIsNeverHealthy) {
  const std::string id = "8308";
  REQUIRE_FIXTURE(id);
  const std::string outputs = CopyWithBlocksMoved(id, 400);
  CliRun run = RunDiagnoseCli({id, "--outputs", outputs, "--format", "json"});
  const nlohmann::json report = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << run.err << run.out.substr(0, 500);
  const std::string tsdb = report["tsdb"].dump();
  EXPECT_NE(tsdb.find(" days after the job's run in its log"), std::string::npos) << Dump(report["tsdb"]);
  EXPECT_NE(tsdb.find("clock skew"), std::string::npos) << Dump(report["tsdb"]);
  // Nothing of the metrics was read, so nothing from them is clean (the old answer was "RDMA
  // healthy on all 24 hosts", root cause none).
  for (const auto& finding : report["findings"]) {
    const std::string summary = finding.value("summary", "");
    EXPECT_EQ(summary.find("healthy on all"), std::string::npos) << Dump(finding);
  }
  EXPECT_EQ(report["verdict"]["summary"].get<std::string>().find("healthy on all"), std::string::npos)
      << Dump(report["verdict"]);
  EXPECT_NE(report["verdict"]["root_cause"], "none") << Dump(report["verdict"]);
  fs::remove_all(outputs);
}

}  // namespace
}  // namespace diagnose::e2e

namespace diagnose::e2e {
namespace {

// A reused job dir whose prometheus/ also holds a block of a job run 400 days earlier. Before, the
// run's start was unknown (the log gives only its mtime and a wall time), the older block widened
// every window to 400 days and the diagnosis ran out of time; now the wall time anchored on the
// newest block leaves it out, names it, and the diagnosis is the plain job's.
TEST(SharedTsdb, AnOlderJobsBlockIsNamedNotServedAndTheDiagnosisIsTheJobsOwn) {
  const std::string id = "8308";
  REQUIRE_FIXTURE(id);
  const fs::path outputs = fs::temp_directory_path() / ("diagnose-shared-" + id + "-" + std::to_string(::getpid()));
  CopyFixtureJob(id, outputs);
  std::string older_ulid = "01AAAAAAAAAAAAAAAAAAAAAAAA";
  bool added = false;
  for (const auto& entry : fs::recursive_directory_iterator(outputs)) {
    if (added || entry.path().filename() != "meta.json") continue;
    const fs::path older = entry.path().parent_path().parent_path() / older_ulid;
    fs::copy(entry.path().parent_path(), older, fs::copy_options::recursive);
    nlohmann::json meta = nlohmann::json::parse(ReadFileOrEmpty((older / "meta.json").string()));
    const int64_t shift_ms = int64_t{400} * 86400 * 1000;
    meta["ulid"] = older_ulid;
    meta["minTime"] = meta["minTime"].get<int64_t>() - shift_ms;
    meta["maxTime"] = meta["maxTime"].get<int64_t>() - shift_ms;
    std::ofstream(older / "meta.json") << meta.dump();
    added = true;
  }
  ASSERT_TRUE(added);
  const nlohmann::json plain = DiagnoseIn(DIAGNOSE_FIXTURE_OUTPUTS, id);
  const nlohmann::json shared = DiagnoseIn(outputs.string(), id);
  ASSERT_FALSE(plain.is_null());
  ASSERT_FALSE(shared.is_null());
  EXPECT_EQ(shared["verdict"]["root_cause"], plain["verdict"]["root_cause"]) << Dump(shared["verdict"]);
  EXPECT_EQ(shared["decision"]["action"], plain["decision"]["action"]);
  EXPECT_EQ(shared["decision"]["exclude"], plain["decision"]["exclude"]);
  // Findings compared without their evidence, which cites the log by its path in each outputs dir.
  auto without_evidence = [](nlohmann::json findings) {
    for (auto& finding : findings) finding.erase("evidence");
    return findings;
  };
  EXPECT_EQ(without_evidence(shared["findings"]), without_evidence(plain["findings"]));
  const std::string tsdb = shared["tsdb"].dump();
  EXPECT_NE(tsdb.find("block " + older_ulid), std::string::npos) << Dump(shared["tsdb"]);
  EXPECT_NE(tsdb.find("days before the job's run"), std::string::npos) << Dump(shared["tsdb"]);
  EXPECT_NE(tsdb.find("newest block's end minus the log's wall time"), std::string::npos) << Dump(shared["tsdb"]);
  fs::remove_all(outputs);
}

}  // namespace
}  // namespace diagnose::e2e
