// Sweep history file: round trip, malformed lines, and appends that survive SIGTERM mid-loop.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/decision/refine.h"
#include "engine/decision/sweep_history.h"
#include "tests/decision/decision_test_support.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

std::string TempPath(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("sweep-history-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  fs::remove(p);
  return p.string();
}

HistoryEntry Entry(const std::string& job) {
  HistoryEntry e;
  e.time = 1700000000;
  e.sweep = "s1";
  e.job = job;
  e.config = {"grok-1", {{"per_device_batch_size", "8"}, {"_env_NOTE", "a \"quoted\"\nvalue"}}};
  e.nodes = {"gpu1", "gpu2"};
  e.status = JobStatus::kFailed;
  e.action = DecisionAction::kRetryExcludingNodes;
  e.exclude = {{"gpu2", 1, "HSA abort"}};
  e.root_cause = "gpu-hardware-fault";
  e.failure_class = "gpu-hardware-fault";
  e.rule = "gpu-hardware-error-one-node";
  return e;
}

TEST(SweepHistory, MissingFileIsEmptyHistory) {
  auto h = LoadSweepHistory(TempPath("absent.jsonl"));
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->entries.empty());
}

TEST(SweepHistory, AppendAndLoadRoundTrip) {
  const std::string path = TempPath("roundtrip.jsonl");
  HistoryEntry a = Entry("1");
  HistoryEntry b = Entry("2");
  b.retry_of = "1";
  ASSERT_TRUE(AppendHistoryEntry(path, a).ok());
  ASSERT_TRUE(AppendHistoryEntry(path, b).ok());
  auto h = LoadSweepHistory(path);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->entries.size(), 2u);
  EXPECT_EQ(h->entries[0].config, a.config);
  EXPECT_FALSE(h->entries[0].retry_of);
  EXPECT_EQ(h->entries[1].retry_of, std::optional<std::string>("1"));
  EXPECT_EQ(h->entries[1].exclude[0].host, "gpu2");
  // One physical line per entry even with a newline inside a value.
  std::ifstream in(path);
  int lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  EXPECT_EQ(lines, 2);
  // The documented field names.
  const nlohmann::json j = nlohmann::json::parse(EncodeHistoryLine(b));
  for (const char* key : {"time", "sweep", "job", "config", "nodes", "action", "exclude", "root_cause",
                          "failure_class", "retry_of"})
    EXPECT_TRUE(j.contains(key)) << key;
}

TEST(SweepHistory, MalformedAndTornLinesAreSkippedWithWarnings) {
  const std::string path = TempPath("torn.jsonl");
  ASSERT_TRUE(AppendHistoryEntry(path, Entry("1")).ok());
  {
    std::ofstream out(path, std::ios::app);
    out << "this is not json\n";
    out << R"({"job": 7, "action": [1]})" << "\n";   // wrong types
  }
  ASSERT_TRUE(AppendHistoryEntry(path, Entry("2")).ok());
  {
    std::ofstream out(path, std::ios::app);
    out << R"({"time": 1, "sweep": "s1", "job": "3", "act)";   // torn tail, no newline
  }
  auto h = LoadSweepHistory(path);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->entries.size(), 2u);
  EXPECT_EQ(h->entries[1].job, "2");
  ASSERT_EQ(h->warnings.size(), 3u);
  EXPECT_NE(h->warnings[0].find(":2:"), std::string::npos);
  EXPECT_NE(h->warnings[2].find("unterminated"), std::string::npos);
}

// Found by fuzz/sweep_history (UBSan): a float beyond int64's range where an integer belongs was
// converted with undefined behaviour. Now the line is skipped like any other of the wrong type.
TEST(SweepHistory, ANumberBeyondInt64IsAWrongTypeNotUndefinedBehaviour) {
  std::istringstream in(R"({"time": 528658888888888888888888888888888888883808, "job": "1", "action": "none"})" "\n"
                        R"({"time": 1e300, "job": "2", "action": "none"})" "\n"
                        R"({"time": 1771490000, "job": "3", "action": "none"})" "\n");
  SweepHistory h = ParseSweepHistory(in, "h.jsonl");
  ASSERT_EQ(h.entries.size(), 1u);
  EXPECT_EQ(h.entries[0].job, "3");
  ASSERT_EQ(h.warnings.size(), 2u);
  EXPECT_NE(h.warnings[0].find("h.jsonl:1:"), std::string::npos) << h.warnings[0];
}

// The action is parsed as the line is read: a word outside the contract skips the line with the
// others of the wrong shape, so no later comparison ever sees it.
TEST(SweepHistory, AnActionOutsideTheContractSkipsTheLine) {
  std::istringstream in(R"({"time": 1, "job": "1", "action": "reboot"})" "\n"
                        R"({"time": 2, "job": "2", "action": "retry-excluding-nodes"})" "\n");
  SweepHistory h = ParseSweepHistory(in, "h.jsonl");
  ASSERT_EQ(h.entries.size(), 1u);
  EXPECT_EQ(h.entries[0].action, DecisionAction::kRetryExcludingNodes);
  ASSERT_EQ(h.warnings.size(), 1u);
  EXPECT_NE(h.warnings[0].find("reboot"), std::string::npos) << h.warnings[0];
}

// A writer killed mid-line leaves a tail without '\n'. The next append must start on a fresh line:
// joined to the torn tail, it would be lost with it on the next read.
TEST(SweepHistory, AppendAfterTornTailStartsOnAFreshLine) {
  const std::string path = TempPath("torn-tail.jsonl");
  ASSERT_TRUE(AppendHistoryEntry(path, Entry("1")).ok());
  {
    std::ofstream out(path, std::ios::app);
    out << R"({"time": 1, "sweep": "s1", "job": "torn", "act)";   // killed writer: no newline
  }
  ASSERT_TRUE(AppendHistoryEntry(path, Entry("2")).ok());
  ASSERT_TRUE(AppendHistoryEntry(path, Entry("3")).ok());
  auto h = LoadSweepHistory(path);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->entries.size(), 3u);
  EXPECT_EQ(h->entries[1].job, "2");
  EXPECT_EQ(h->entries[2].job, "3");
  ASSERT_EQ(h->warnings.size(), 1u);
  EXPECT_NE(h->warnings[0].find(":2:"), std::string::npos) << h->warnings[0];
}

// A child appends as fast as it can; the parent SIGTERMs it mid-loop (default action: die at once,
// wherever it is). Every line in the file must be complete JSON.
TEST(SweepHistory, ValidJsonLinesAfterSigtermMidAppend) {
  const std::string path = TempPath("sigterm.jsonl");
  HistoryEntry big = Entry("x");
  big.config.args["padding"] = std::string(3000, 'p');   // multi-KiB lines widen the window
  for (int round = 0; round < 5; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0;; ++i) {
        big.job = std::to_string(round) + "-" + std::to_string(i);
        if (!AppendHistoryEntry(path, big).ok()) ::_exit(3);
      }
    }
    // Let it write for a while, with a varying delay so the signal lands at different points.
    std::this_thread::sleep_for(std::chrono::milliseconds(30 + 17 * round));
    ASSERT_EQ(::kill(pid, SIGTERM), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus));
    EXPECT_EQ(WTERMSIG(wstatus), SIGTERM);
  }
  const std::string content = testing::ReadFileOrEmpty(path);
  ASSERT_FALSE(content.empty());
  EXPECT_EQ(content.back(), '\n') << "file ends in a partial line";
  auto h = LoadSweepHistory(path);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->warnings.empty()) << h->warnings.front();
  EXPECT_GT(h->entries.size(), 5u);
  for (const auto& e : h->entries) EXPECT_EQ(e.config.args.at("padding").size(), 3000u);
}

TEST(SweepHistory, DecideSweepRefinesAndAppends) {
  const std::string path = TempPath("apply.jsonl");
  JobFacts f = testing::MakeFacts("9805", {"gpu1", "gpu2"});
  testing::AddClass(&f, "oom-gpu", "gpu1", "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 9.00GiB");
  f.oom_allocation = "9.00GiB";
  const Diagnosis diagnosis = testing::MakeDiagnosis("gpu-oom", DecisionAction::kNone);
  SweepContext context;
  context.now = 1700000123;
  StatusOr<SweepDecision> decided = DecideSweep(testing::SweepRules(), path, context, diagnosis, f);
  ASSERT_TRUE(decided.ok()) << decided.status().ToString();
  EXPECT_EQ(decided->decision.action, DecisionAction::kNoRetry);
  EXPECT_EQ(decided->decision.root_cause, "");   // the diagnosis named the cause itself
  auto h = LoadSweepHistory(path);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->entries.size(), 1u);
  EXPECT_EQ(h->entries[0].sweep, "apply");   // default sweep id = history file stem
  EXPECT_EQ(h->entries[0].oom_allocation, "9.00GiB");
  EXPECT_EQ(h->entries[0].action, DecisionAction::kNoRetry);
  EXPECT_EQ(h->entries[0].time, 1700000123);
}

// An epilog run twice for one job (a requeue, a retried epilog, a user re-running it by hand) must
// not count the job twice against the sweep's limits: its line is replaced, at the end, and every
// other line (a malformed one too) is kept as it was.
TEST(SweepHistory, ARerunReplacesTheJobsLineInsteadOfAppendingASecond) {
  const std::string path = TempPath("rerun.jsonl");
  ASSERT_TRUE(AppendHistoryEntry(path, Entry("1")).ok());
  { std::ofstream(path, std::ios::app) << "{not json\n"; }
  ASSERT_TRUE(AppendHistoryEntry(path, Entry("2")).ok());
  HistoryEntry again = Entry("1");
  again.action = DecisionAction::kNoRetry;
  again.exclude.clear();
  ASSERT_TRUE(AppendHistoryEntry(path, again).ok());
  HistoryEntry other_sweep = Entry("1");
  other_sweep.sweep = "s2";   // the same job id in another sweep is another line
  ASSERT_TRUE(AppendHistoryEntry(path, other_sweep).ok());
  auto h = LoadSweepHistory(path);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->entries.size(), 3u);
  EXPECT_EQ(h->entries[0].job, "2");
  EXPECT_EQ(h->entries[1].job, "1");
  EXPECT_EQ(h->entries[1].action, DecisionAction::kNoRetry);
  EXPECT_EQ(h->entries[2].sweep, "s2");
  EXPECT_EQ(h->warnings.size(), 1u) << "the malformed line is kept, not dropped";
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(entry.path().filename().string().find("rerun.jsonl.tmp"), std::string::npos) << entry.path();
}

// Twelve processes at once, each job written by two of them: whatever the interleaving of appends
// and rewrites, the file ends with one whole line per job and no temp file beside it.
TEST(SweepHistory, ConcurrentWritersOfOneHistoryLeaveOneWholeLinePerJob) {
  const std::string path = TempPath("concurrent.jsonl");
  constexpr int kWriters = 12;
  std::vector<pid_t> children;
  for (int i = 0; i < kWriters; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      HistoryEntry e = Entry(std::to_string(i % (kWriters / 2)));
      e.config.args["padding"] = std::string(5000, 'p');   // multi-KiB lines widen the window
      for (int round = 0; round < 5; ++round)
        if (!AppendHistoryEntry(path, e).ok()) ::_exit(3);
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  }
  auto h = LoadSweepHistory(path);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->warnings.empty()) << h->warnings.front();
  std::set<std::string> jobs;
  for (const auto& e : h->entries) {
    EXPECT_TRUE(jobs.insert(e.job).second) << "job " << e.job << " recorded twice";
    EXPECT_EQ(e.config.args.at("padding").size(), 5000u);
  }
  EXPECT_EQ(jobs.size(), static_cast<size_t>(kWriters / 2));
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(entry.path().filename().string().find("concurrent.jsonl.tmp"), std::string::npos) << entry.path();
}

// The sweep's exclusion limit turns "exclude these hosts" into stop-sweep: the history line still
// names the hosts found, so a driver reading only the history learns which were bad.
TEST(SweepHistory, AStopSweepLineRecordsTheHostsTheDecisionFound) {
  const std::string path = TempPath("found.jsonl");
  JobFacts f = testing::MakeFacts("8308", {"gpu1", "gpu2", "gpu3", "gpu4", "gpu5"});
  Diagnosis diagnosis = testing::MakeDiagnosis("rdma-link-degradation", DecisionAction::kRetryExcludingNodes);
  diagnosis.verdict.source = "playbooks";
  diagnosis.verdict.confidence = Confidence::kLikely;
  for (const char* host : {"gpu2", "gpu3", "gpu4"}) diagnosis.decision.exclude.push_back({host, 1, "RDMA link degraded"});
  SweepContext context;
  context.now = 1700000123;
  StatusOr<SweepDecision> decided = DecideSweep(testing::SweepRules(), path, context, diagnosis, f);
  ASSERT_TRUE(decided.ok()) << decided.status().ToString();
  ASSERT_EQ(decided->decision.action, DecisionAction::kStopSweep) << "3 hosts against the sweep's limit of 2";
  auto h = LoadSweepHistory(path);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->entries.size(), 1u);
  EXPECT_TRUE(h->entries[0].exclude.empty());
  std::vector<std::string> found;
  for (const auto& x : h->entries[0].found) found.push_back(x.host);
  EXPECT_EQ(found, (std::vector<std::string>{"gpu2", "gpu3", "gpu4"}));
}

// A sweep rule naming a cause the diagnosis did not: the decision carries it beside the verdict,
// which stays the diagnosis's own.
TEST(SweepHistory, DecideSweepShowsThePolicysCauseBesideAnUnknownVerdict) {
  JobFacts f = testing::MakeFacts("9806", {"gpu1", "gpu2"});
  testing::AddClass(&f, "oom-gpu", "gpu1", "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 9.00GiB");
  const Diagnosis unknown = testing::MakeDiagnosis("unknown", DecisionAction::kNone);
  StatusOr<SweepDecision> decided = DecideSweep(testing::SweepRules(), "", SweepContext{}, unknown, f);
  ASSERT_TRUE(decided.ok()) << decided.status().ToString();
  EXPECT_FALSE(decided->rule.empty());
  EXPECT_EQ(decided->decision.root_cause, "gpu-oom");
  EXPECT_EQ(PolicyRootCause(*decided, unknown.verdict), "gpu-oom");
  EXPECT_EQ(PolicyRootCause(*decided, testing::MakeDiagnosis("observability-gap").verdict), "");
  SweepDecision no_rule = *decided;
  no_rule.rule.clear();
  EXPECT_EQ(PolicyRootCause(no_rule, unknown.verdict), "");
}

// The exclusion scope is one vocabulary: written as its word, read back as the enum, and a line
// with a word outside it is skipped with a warning like any other malformed line.
TEST(SweepHistory, ExcludeScopeRoundTripsAndAnUnknownScopeIsAMalformedLine) {
  HistoryEntry entry;
  entry.job = "1";
  entry.exclude_scope = ExcludeScope::kSweep;
  const std::string line = EncodeHistoryLine(entry);
  EXPECT_NE(line.find("\"exclude_scope\":\"sweep\""), std::string::npos) << line;
  std::string bad = line;
  bad.replace(bad.find("\"sweep\"", bad.find("exclude_scope")), 7, "\"fleet\"");
  std::istringstream in(line + bad);
  const SweepHistory history = ParseSweepHistory(in, "h.jsonl");
  ASSERT_EQ(history.entries.size(), 1u);
  EXPECT_EQ(history.entries[0].exclude_scope, ExcludeScope::kSweep);
  ASSERT_EQ(history.warnings.size(), 1u);
  EXPECT_NE(history.warnings[0].find("h.jsonl:2"), std::string::npos) << history.warnings[0];
}

}  // namespace
}  // namespace diagnose
