// `diagnose summary` assembled on a temp outputs dir with a sweep history beside it: decided jobs
// come from the history, the others from the (stand-in) diagnosis, nothing is written.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "engine/decision/sweep_history.h"
#include "engine/watch/sweep_summary.h"
#include "tests/support/job_logs.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kDay = 86400;
constexpr int64_t kNow = 1772000000;   // 2026-02-25T06:13:20Z

void SetMtime(const fs::path& path, int64_t epoch) {
  fs::last_write_time(path, std::chrono::file_clock::from_sys(std::chrono::sys_seconds(std::chrono::seconds(epoch))));
}

// Every entry below `dir` with its size and mtime, to show that nothing was written.
std::map<std::string, std::pair<uintmax_t, int64_t>> Snapshot(const fs::path& dir) {
  std::map<std::string, std::pair<uintmax_t, int64_t>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::error_code ec;
    const uintmax_t size = e.is_regular_file(ec) ? e.file_size(ec) : 0;
    out[e.path().string()] = {size, fs::last_write_time(e.path(), ec).time_since_epoch().count()};
  }
  return out;
}

class SweepSummaryTest : public OutputsDirTest {
 protected:
  SweepSummaryTest() : OutputsDirTest("sweep-summary") {}

  // A finished job whose log was last written at `time`.
  fs::path Job(const std::string& id, const std::string& model, const std::vector<std::string>& hosts, double tgs,
               int64_t time) {
    JobLog log(outputs_, id, model, hosts);
    log.Steps(0, 14, tgs);
    log.Summary(false, 1, "Training FAILED (exit=1)");
    SetMtime(log.path(), time);
    return log.path();
  }

  void Decide(const std::string& job, const std::string& root_cause, DecisionAction action,
              const std::vector<std::string>& excluded) {
    HistoryEntry e;
    e.time = kNow;
    e.sweep = "sweep";
    e.job = job;
    e.config.model = "from-history";
    e.nodes = {"h1", "h2", "h3"};
    e.status = JobStatus::kFailed;
    e.root_cause = root_cause;
    e.action = action;
    for (const auto& host : excluded) e.exclude.push_back({host, 1, "bad link"});
    ASSERT_TRUE(AppendHistoryEntry(history_, e).ok());
  }

  // The diagnosis stand-in: records which jobs it was asked about and answers per script.
  SummaryOptions Options() {
    SummaryOptions options;
    options.outputs_dir = outputs_.string();
    options.history_file = history_;
    options.diagnose = [this](const JobLocation& job) -> StatusOr<Report> {
      diagnosed_.insert(job.id);
      if (fail_.count(job.id)) return ParseError(job.log_path.value_or(job.id) + ": not a job log");
      Report r;
      JobEntry entry;
      entry.id = job.id;
      entry.status = JobStatus::kFailed;
      r.jobs.push_back(entry);
      r.verdict.root_cause = "gpu-oom";
      r.decision.action = DecisionAction::kNoRetry;
      return r;
    };
    return options;
  }

  const SummaryRow& Row(const SweepSummary& summary, const std::string& id) {
    for (const auto& row : summary.rows)
      if (row.id == id) return row;
    ADD_FAILURE() << "no row for job " << id;
    static const SummaryRow none;
    return none;
  }

  std::set<std::string> diagnosed_, fail_;
};

TEST_F(SweepSummaryTest, HistoryDecidesKnownJobsAndOnlyTheRestAreDiagnosed) {
  Job("4102", "mixtral-8x22b", {"n1", "n2", "n3"}, 2520.4, kNow - 3 * kDay);
  Job("4101", "grok-1", {"n4", "n5"}, 1800, kNow - 2 * kDay);
  Decide("4102", "rdma-link-degradation", DecisionAction::kRetryExcludingNodes, {"n2", "n3"});
  const auto before = Snapshot(dir_);

  auto summary = SummarizeSweep(Options());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(diagnosed_, (std::set<std::string>{"4101"}));
  ASSERT_EQ(summary->rows.size(), 2u);
  // By time: 4102 ended first although its id sorts after.
  EXPECT_EQ(summary->rows[0].id, "4102");
  EXPECT_EQ(summary->rows[1].id, "4101");

  const SummaryRow& decided = Row(*summary, "4102");
  EXPECT_EQ(decided.source, "history");
  EXPECT_EQ(decided.model, "mixtral-8x22b");   // the log's header, not the history's config
  EXPECT_EQ(decided.nodes, 3);
  ASSERT_TRUE(decided.tgs.has_value());
  EXPECT_NEAR(*decided.tgs, 2520.4, 1e-6);
  EXPECT_EQ(decided.root_cause, "rdma-link-degradation");
  EXPECT_EQ(decided.action, DecisionAction::kRetryExcludingNodes);
  ASSERT_EQ(decided.exclude.size(), 2u);
  EXPECT_EQ(decided.exclude[1].host, "n3");
  EXPECT_EQ(decided.time, kNow - 3 * kDay);

  const SummaryRow& fresh = Row(*summary, "4101");
  EXPECT_EQ(fresh.source, "diagnosis");
  EXPECT_EQ(fresh.root_cause, "gpu-oom");
  EXPECT_EQ(fresh.action, DecisionAction::kNoRetry);
  EXPECT_EQ(fresh.nodes, 2);

  EXPECT_EQ(Snapshot(dir_), before) << "a summary must not write into the outputs dir or the history";
}

TEST_F(SweepSummaryTest, LatestHistoryEntryOfAJobWins) {
  Job("4201", "grok-1", {"n1"}, 1000, kNow - kDay);
  Decide("4201", "rccl-hang", DecisionAction::kRetrySameNodes, {});
  Decide("4201", "gpu-oom", DecisionAction::kNoRetry, {});
  auto summary = SummarizeSweep(Options());
  ASSERT_TRUE(summary.ok());
  EXPECT_TRUE(diagnosed_.empty());
  EXPECT_EQ(Row(*summary, "4201").root_cause, "gpu-oom");
}

TEST_F(SweepSummaryTest, UnreadableJobsAreOneRowEachNotAnAbort) {
  Job("4301", "grok-1", {"n1"}, 1000, kNow - kDay);
  Job("4302", "grok-1", {"n2"}, 1000, kNow - kDay);
  fail_.insert("4302");
  // A job dir whose `log` link leaves the outputs dir is refused, never followed.
  fs::create_directories(outputs_ / "4303-JAX-grok-1");
  std::ofstream(dir_ / "elsewhere.log") << "JOB_ID=4303\n";
  fs::create_symlink(dir_ / "elsewhere.log", outputs_ / "4303-JAX-grok-1" / "log");

  auto summary = SummarizeSweep(Options());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_EQ(summary->rows.size(), 3u);
  EXPECT_EQ(Row(*summary, "4301").source, "diagnosis");
  EXPECT_EQ(Row(*summary, "4302").source, "unreadable");
  EXPECT_NE(Row(*summary, "4302").note.find("not a job log"), std::string::npos);
  EXPECT_EQ(Row(*summary, "4303").source, "unreadable");
  EXPECT_NE(Row(*summary, "4303").note.find("outside the outputs dir"), std::string::npos);
  EXPECT_FALSE(diagnosed_.count("4303"));

  const std::string text = FormatSummaryText(summary->rows);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
  EXPECT_NE(text.find("4302  cannot read: "), std::string::npos) << text;
}

TEST_F(SweepSummaryTest, SinceLeavesOutOlderJobsWithoutDiagnosingThem) {
  Job("4401", "grok-1", {"n1"}, 1000, kNow - 10 * kDay);
  Job("4402", "grok-1", {"n1"}, 1000, kNow - 3600);
  SummaryOptions options = Options();
  auto since = ParseSince("2d", kNow);
  ASSERT_TRUE(since.ok());
  options.since = *since;
  auto summary = SummarizeSweep(options);
  ASSERT_TRUE(summary.ok());
  ASSERT_EQ(summary->rows.size(), 1u);
  EXPECT_EQ(summary->rows[0].id, "4402");
  EXPECT_EQ(diagnosed_, (std::set<std::string>{"4402"}));
}

TEST_F(SweepSummaryTest, MissingOrDamagedHistoryIsAWarning) {
  Job("4501", "grok-1", {"n1"}, 1000, kNow);
  auto missing = SummarizeSweep(Options());
  ASSERT_TRUE(missing.ok());
  ASSERT_EQ(missing->warnings.size(), 1u);
  EXPECT_NE(missing->warnings[0].find("does not exist"), std::string::npos);

  std::ofstream(history_) << "{not json\n";
  diagnosed_.clear();
  auto damaged = SummarizeSweep(Options());
  ASSERT_TRUE(damaged.ok());
  ASSERT_EQ(damaged->warnings.size(), 1u);
  EXPECT_NE(damaged->warnings[0].find(":1: skipped malformed"), std::string::npos);
  EXPECT_EQ(diagnosed_, (std::set<std::string>{"4501"}));
}

TEST_F(SweepSummaryTest, TextAndJsonCarryEveryColumn) {
  Job("4601", "mixtral-8x22b", {"n1", "n2", "n3"}, 2520.4, kNow - kDay);
  Decide("4601", "rdma-link-degradation", DecisionAction::kRetryExcludingNodes, {"n2", "n3"});
  auto summary = SummarizeSweep(Options());
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(FormatSummaryText(summary->rows),
            "2026-02-24T06:13:20Z  4601  mixtral-8x22b  3N  failed  2,520 TGS  rdma-link-degradation  "
            "retry-excluding-nodes  n2,n3\n");
  const nlohmann::json j = SummaryJson(summary->rows);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["id"], "4601");
  EXPECT_EQ(j[0]["time"], "2026-02-24T06:13:20Z");
  EXPECT_EQ(j[0]["model"], "mixtral-8x22b");
  EXPECT_EQ(j[0]["nodes"], 3);
  EXPECT_NEAR(j[0]["tgs"].get<double>(), 2520.4, 1e-6);
  EXPECT_EQ(j[0]["status"], "failed");
  EXPECT_EQ(j[0]["root_cause"], "rdma-link-degradation");
  EXPECT_EQ(j[0]["action"], "retry-excluding-nodes");
  EXPECT_EQ(j[0]["exclude"][1]["host"], "n3");
  EXPECT_EQ(j[0]["slurm_exclude"], j[0]["exclude"][0]["host"].get<std::string>() + ",n3");
  EXPECT_EQ(j[0]["source"], "history");
}

TEST_F(SweepSummaryTest, DefaultHistoryIsTheEpilogsFileBesideTheOutputs) {
  ::unsetenv("DIAGNOSE_SWEEP_HISTORY");
  EXPECT_EQ(DefaultSummaryHistory(outputs_.string()), "");
  std::ofstream(history_) << "";
  EXPECT_EQ(fs::path(DefaultSummaryHistory(outputs_.string() + "/")), fs::path(history_));
  ::setenv("DIAGNOSE_SWEEP_HISTORY", "/elsewhere/h.jsonl", 1);
  EXPECT_EQ(DefaultSummaryHistory(outputs_.string()), "/elsewhere/h.jsonl");
  ::unsetenv("DIAGNOSE_SWEEP_HISTORY");
}

TEST(ParseSinceTest, DurationsAndIsoTimes) {
  EXPECT_EQ(*ParseSince("6h", kNow), kNow - 6 * 3600);
  EXPECT_EQ(*ParseSince("2d", kNow), kNow - 2 * kDay);
  EXPECT_EQ(*ParseSince("1d12h", kNow), kNow - kDay - 12 * 3600);
  EXPECT_EQ(*ParseSince("90m", kNow), kNow - 5400);
  EXPECT_EQ(*ParseSince("1w", kNow), kNow - 7 * kDay);
  EXPECT_EQ(*ParseSince("2026-02-24", kNow), 1771891200);
  EXPECT_EQ(*ParseSince("2026-02-24T19:21", kNow), 1771891200 + 19 * 3600 + 21 * 60);
  EXPECT_EQ(*ParseSince("2026-02-24T19:21:00Z", kNow), 1771891200 + 19 * 3600 + 21 * 60);
  EXPECT_EQ(*ParseSince("2026-02-24 20:21:00+01:00", kNow), 1771891200 + 19 * 3600 + 21 * 60);
  EXPECT_EQ(*ParseSince("2026-02-24T14:21:00.5-0500", kNow), 1771891200 + 19 * 3600 + 21 * 60);
  for (const char* bad : {"", "yesterday", "6", "h", "2026-13-01", "2026-02-24T25:00", "24/02/2026", "-2d", "99999999999999999999d"})
    EXPECT_FALSE(ParseSince(bad, kNow).ok()) << bad;
}

}  // namespace
}  // namespace diagnose
