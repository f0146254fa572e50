// `diagnose summary --parallel N` over real fixture jobs, each diagnosed through its own private
// Prometheus: the output does not depend on how many are diagnosed at a time.
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/core/json.h"
#include "tests/support/cli.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

// Every `stride`-th job of the fixture outputs (the job dir and its log), copied: a spread of
// causes, node counts and layouts, small enough for a test on a busy machine.
std::vector<std::string> CopyEveryNthJob(const fs::path& from, const fs::path& to, size_t stride) {
  std::vector<fs::path> logs;
  for (const auto& e : fs::directory_iterator(from))
    if (e.path().extension() == ".log" && e.is_regular_file()) logs.push_back(e.path());
  std::sort(logs.begin(), logs.end());
  std::vector<std::string> copied;
  for (size_t i = 0; i < logs.size(); i += stride) {
    const fs::path job_dir = from / logs[i].stem();
    fs::copy_file(logs[i], to / logs[i].filename());
    if (fs::is_directory(job_dir)) fs::copy(job_dir, to / logs[i].stem(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    copied.push_back(logs[i].stem().string());
  }
  return copied;
}

TEST(SummaryParallelCliTest, TwoAtATimePrintsWhatOneAtATimePrints) {
  testing::TempDir outputs("summary-parallel");
  const std::vector<std::string> jobs = CopyEveryNthJob(DIAGNOSE_FIXTURE_OUTPUTS, outputs.path(), 12);
  ASSERT_GE(jobs.size(), 5u) << "fixture outputs not generated (build target `fixtures`)";
  SCOPED_TRACE(std::to_string(jobs.size()) + " jobs, the first " + jobs.front());
  const std::string now = std::to_string(std::time(nullptr));
  auto summary = [&](const std::string& parallel) {
    return testing::RunDiagnoseCli({"summary", outputs.path().string(), "--format", "json", "--now", now,
                                    "--parallel", parallel, "-v"});
  };
  const testing::CliRun one = summary("1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const testing::CliRun two = summary("2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, one.out);
  // The rows are the jobs', diagnosed: a summary that diagnosed nothing would agree with itself too.
  const nlohmann::json rows = nlohmann::json::parse(one.out);
  ASSERT_EQ(rows.size(), jobs.size());
  size_t diagnosed = 0;
  for (const auto& row : rows) diagnosed += row.value("source", "") == "diagnosis";
  EXPECT_GE(diagnosed, jobs.size() - 1) << one.out;
  EXPECT_NE(two.err.find("2 job(s) diagnosed at a time (--parallel)"), std::string::npos) << two.err;
}

}  // namespace
}  // namespace diagnose
