// The built binary on the generated fixtures: progress lines on stderr only when asked for (stderr
// here is a file, never a terminal), stdout unchanged by them, and `summary` with one line per job.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "engine/job/job_location.h"
#include "tests/support/fixture_reports.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using e2e::CliRun;
using e2e::RunDiagnoseCli;

// A fixture job with a TSDB, so every stage (Prometheus, queries, playbooks) runs; chosen from the
// generated outputs rather than named.
std::string JobWithTsdb() {
  auto jobs = ListJobs(DIAGNOSE_FIXTURE_OUTPUTS);
  if (!jobs.ok()) return "";
  for (const auto& job : *jobs)
    if (job.prometheus_dir && job.log_path) return job.id;
  return "";
}

// Two runs of one job differ only in the times they measured (stage timings, discovery's elapsed).
std::string WithoutTimings(const std::string& out) {
  nlohmann::json report = nlohmann::json::parse(out, nullptr, false);
  if (report.is_discarded()) return "not JSON: " + out.substr(0, 300);
  report.erase("timings");
  for (auto& tsdb : report["tsdb"])
    if (tsdb.contains("discovery") && tsdb["discovery"].is_object()) tsdb["discovery"].erase("elapsed_seconds");
  return report.dump();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool HasLineStartingWith(const std::string& text, const std::string& prefix) {
  const auto lines = Lines(text);
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
}

TEST(ProgressCli, NothingOnAStderrThatIsNotATerminalUnlessAsked) {
  const std::string id = JobWithTsdb();
  ASSERT_FALSE(id.empty()) << "no fixture job with a TSDB (build target `fixtures`)";
  const std::vector<std::string> args{id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"};

  CliRun quiet = RunDiagnoseCli(args);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");

  std::vector<std::string> verbose_args = args;
  verbose_args.push_back("-v");
  CliRun verbose = RunDiagnoseCli(verbose_args);
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  for (const std::string& stage : {"diagnose: locating " + id, "diagnose: triage " + id + " (1 log, ",
                                   std::string("diagnose: starting Prometheus on "),
                                   std::string("diagnose: running playbooks"), std::string("diagnose: playbooks: ")})
    EXPECT_TRUE(HasLineStartingWith(verbose.err, stage)) << "no '" << stage << "' in:\n" << verbose.err;
  EXPECT_NE(verbose.err.find(" queries in "), std::string::npos) << verbose.err;
  EXPECT_EQ(verbose.err.find("debug"), std::string::npos) << "-v is stage lines, not debug:\n" << verbose.err;
  EXPECT_EQ(verbose.err.find('\x1b'), std::string::npos) << "colour on a file";
  EXPECT_EQ(WithoutTimings(verbose.out), WithoutTimings(quiet.out)) << "logging changed the report";
}

// -vv's time line runs from the process's start to its end, so where a diagnosis spends its wall
// time can be read off it: the private server's start-up split, the rounds, the report, the closing.
TEST(ProgressCli, TheDebugTimeLineCoversTheServersStartAndTheRunsEnd) {
  const std::string id = JobWithTsdb();
  ASSERT_FALSE(id.empty()) << "no fixture job with a TSDB (build target `fixtures`)";
  CliRun run = RunDiagnoseCli({id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json", "-vv"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> stages;
  for (const std::string& line : Lines(run.err)) {
    for (const char* stage : {"private Prometheus ready: copy ", "playbook round: ", "report rendered and handed to stdout (",
                              "s after the report for what was left to close"})
      if (line.find(stage) != std::string::npos && (stages.empty() || stages.back() != stage)) stages.push_back(stage);
  }
  const std::vector<std::string> in_order{"private Prometheus ready: copy ", "playbook round: ",
                                          "report rendered and handed to stdout (",
                                          "s after the report for what was left to close"};
  EXPECT_EQ(stages, in_order) << run.err;
  EXPECT_NE(run.err.find(", spawn to its port "), std::string::npos) << run.err;
}

TEST(ProgressCli, LogLevelOverridesVerbose) {
  const std::string id = JobWithTsdb();
  ASSERT_FALSE(id.empty());
  CliRun debug = RunDiagnoseCli({id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json", "--logs-only",
                                 "--log-level", "debug"});
  ASSERT_EQ(debug.exit_code, 0) << debug.err;
  EXPECT_TRUE(HasLineStartingWith(debug.err, "diagnose: debug +")) << debug.err;
  EXPECT_TRUE(HasLineStartingWith(debug.err, "diagnose: triage " + id)) << debug.err;

  CliRun off = RunDiagnoseCli({id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json", "--logs-only", "-v",
                               "--log-level", "off"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.err, "");

  CliRun bad = RunDiagnoseCli({id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--log-level", "loud"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(Lines(bad.err).size(), 1u) << bad.err;
}

class SummaryCli : public ::testing::Test {
 protected:
  void SetUp() override {
    history_ = (fs::temp_directory_path() / ("summary-cli-" + std::to_string(::getpid()) + ".jsonl")).string();
    auto jobs = ListJobs(DIAGNOSE_FIXTURE_OUTPUTS, &refused_);
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    jobs_ = *jobs;
    ASSERT_FALSE(jobs_.empty()) << "no fixture jobs (build target `fixtures`)";
  }
  // Logs only: the full pipeline on every fixture is what `diagnose JOB` tests cover; this is about
  // the rows. A history that does not exist keeps a stray sweep-history.jsonl out of it.
  CliRun Summary(std::vector<std::string> extra) {
    std::vector<std::string> args{"summary", DIAGNOSE_FIXTURE_OUTPUTS, "--logs-only", "--history", history_};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunDiagnoseCli(args);
  }
  std::string history_;
  std::vector<JobLocation> jobs_;
  std::vector<RefusedJob> refused_;
};

TEST_F(SummaryCli, OneLinePerFixtureJob) {
  CliRun text = Summary({});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.err, "");
  const auto lines = Lines(text.out);
  ASSERT_EQ(lines.size(), jobs_.size() + refused_.size()) << text.out;
  for (const auto& job : jobs_) {
    const bool listed = std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.find("  " + job.id + "  ") != std::string::npos;
    });
    EXPECT_TRUE(listed) << job.id << " missing from:\n" << text.out;
  }
  EXPECT_FALSE(fs::exists(history_)) << "summary wrote a history";

  CliRun verbose = Summary({"-v"});
  EXPECT_EQ(verbose.out, text.out) << "logging changed stdout";
  EXPECT_TRUE(HasLineStartingWith(verbose.err, "diagnose: summary: diagnosing ")) << verbose.err;
}

TEST_F(SummaryCli, JsonIsAnArrayOfRows) {
  CliRun run = Summary({"--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json rows = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_TRUE(rows.is_array()) << run.out.substr(0, 300);
  ASSERT_EQ(rows.size(), jobs_.size() + refused_.size());
  for (const auto& row : rows) {
    ASSERT_TRUE(row.contains("id") && row.contains("time") && row.contains("source")) << row.dump();
    if (row["source"] == "unreadable") continue;
    EXPECT_EQ(row["source"], "diagnosis") << row.dump();
    for (const char* key : {"model", "nodes", "status", "tgs", "root_cause", "action", "exclude"})
      EXPECT_TRUE(row.contains(key)) << key << " missing in " << row.dump();
  }
  // Sorted by time.
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i - 1]["time"].is_string() && rows[i]["time"].is_string()) {
      EXPECT_LE(rows[i - 1]["time"].get<std::string>(), rows[i]["time"].get<std::string>());
    }
  }
}

TEST_F(SummaryCli, UsageErrors) {
  CliRun since = Summary({"--since", "last tuesday"});
  EXPECT_EQ(since.exit_code, 2);
  EXPECT_EQ(since.out, "");
  CliRun format = Summary({"--format", "html"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_EQ(format.out, "");
}

}  // namespace
}  // namespace diagnose
