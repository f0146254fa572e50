// The built binary: `diagnose watch --once`, `diagnose nodes`, and the example Slurm epilog.
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <filesystem>
#include <thread>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/core/json.h"
#include "engine/core/subprocess.h"
#include "engine/decision/sweep_history.h"
#include "tests/support/job_logs.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

class CliTest : public OutputsDirTest {
 protected:
  CliTest() : OutputsDirTest("sweep-cli") {}

  void WriteJob(const std::string& id, const std::string& model, const std::vector<std::string>& hosts, double tgs,
                const std::string& extra, const std::string& status) {
    std::string nodelist;
    for (const auto& h : hosts) nodelist += (nodelist.empty() ? "" : ",") + h;
    std::ofstream out(outputs_ / (id + "-JAX-" + model + ".log"));
    out << "JOB_ID=" << id << "\nJOB_NAME=JAX-" << model << "\nNNODES=" << hosts.size() << "\nJOB_NODELIST="
        << nodelist << "\nJAX_COORDINATOR_PORT=23456\nPASSTHROUGH_ARGS=\"steps=15\"\nMODEL_NAME=" << model << "\n";
    for (int s = 0; s < (tgs > 0 ? 15 : 1); ++s)
      for (size_t t = 0; t < hosts.size(); ++t)
        out << t << ": completed step: " << s << ", seconds: 30.309, TFLOP/s/device: 207.973, MFU: 34.90%, "
            << "Tokens/s/device: " << (s < 5 ? tgs / 2 : tgs) << ", total_weights: 4194304, loss: 7.123\n";
    out << extra;
    out << "========================== JOB SUMMARY ==========================\n  Job:    " << id << " (JAX-" << model
        << ")\n  Model:  " << model << "\n  Nodes:  " << hosts.size() << "\n  Wall:   9m 1s\n  Status: " << status
        << "\n=================================================================\n";
  }
};

const std::string kFailed = "FAILED (exit 1) \xE2\x80\x94 Training FAILED (exit=1)";

TEST_F(CliTest, WatchOnceDiagnosesEndedJobsOnceAndAppendsHistory) {
  WriteJob("9801", "llama2-70b", {"gpu101"}, 2036, "", "SUCCESS (exit 0)");
  WriteJob("9805", "grok-1", {"gpu102", "gpu103"}, 0,
           "1: jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 221.71GiB.\n",
           kFailed);
  const std::string history = (dir_ / "sweep.jsonl").string();
  const std::vector<std::string> argv{DIAGNOSE_BINARY, "watch", outputs_.string(), "--history", history,
                                      "--once", "--logs-only"};
  auto run = RunCommand(argv, std::chrono::milliseconds(120000));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->exit_code, 0) << run->output;
  EXPECT_NE(run->output.find("llama2-70b 1N (job 9801): 2,036 TGS/device, 34.9% MFU \xE2\x80\x94 PASS"),
            std::string::npos)
      << run->output;
  EXPECT_NE(run->output.find("grok-1 2N (job 9805): OOM \xE2\x80\x94 FAIL \xE2\x80\x94 no-retry"), std::string::npos)
      << run->output;
  auto h = LoadSweepHistory(history);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->entries.size(), 2u);
  EXPECT_TRUE(h->warnings.empty());
  // A second pass finds both jobs in the history: nothing is diagnosed again.
  auto again = RunCommand(argv, std::chrono::milliseconds(120000));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->output.find("job 98"), std::string::npos) << again->output;
  EXPECT_EQ(LoadSweepHistory(history)->entries.size(), 2u);
}

TEST_F(CliTest, WatchStopsCleanlyOnSigterm) {
  WriteJob("9805", "grok-1", {"gpu102", "gpu103"}, 0,
           "1: jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1GiB.\n", kFailed);
  const std::string out = (dir_ / "watch.out").string();
  SpawnOptions spawn;
  spawn.argv = {DIAGNOSE_BINARY, "watch", outputs_.string(), "--history", (dir_ / "h.jsonl").string(),
                "--poll-seconds", "0.1", "--logs-only"};
  spawn.stdout_path = out;
  spawn.stderr_path = out;
  auto child = ChildProcess::Spawn(spawn);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  // The watcher skips jobs that had ended before it started; a job ending afterwards is handled.
  // Wait for its first scan (slow under sanitizers) so that 9806 surely ends afterwards.
  std::string text;
  for (int i = 0; i < 600 && text.find("diagnose watch: following") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = testing::ReadFileOrEmpty(out);
  }
  ASSERT_NE(text.find("0 running job(s), 1 already ended or decided (skipped)"), std::string::npos) << text;
  WriteJob("9806", "grok-1", {"gpu102", "gpu103"}, 0,
           "1: jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2GiB.\n", kFailed);
  for (int i = 0; i < 600 && text.find("job 9806") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = testing::ReadFileOrEmpty(out);
  }
  ASSERT_EQ(::kill(child->pid(), SIGTERM), 0);
  auto code = child->Wait(std::chrono::milliseconds(10000));
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 128 + SIGTERM);   // the conventional status for a SIGTERM'd process
  std::ifstream in(out);
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("grok-1 2N (job 9806): OOM"), std::string::npos) << text;
  EXPECT_EQ(text.find("job 9805"), std::string::npos) << text;
  EXPECT_NE(text.find("stopped by SIGTERM (1 result(s))"), std::string::npos) << text;
  auto h = LoadSweepHistory((dir_ / "h.jsonl").string());
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->warnings.empty());
  EXPECT_EQ(h->entries.size(), 1u);
}

TEST_F(CliTest, WatchFailsCleanlyOnMissingRules) {
  auto run = RunCommand({"env", "DIAGNOSE_DATA_DIR=" + (dir_ / "nowhere").string(), DIAGNOSE_BINARY, "watch",
                         outputs_.string(), "--once"},
                        std::chrono::milliseconds(60000));
  ASSERT_TRUE(run.ok());
  EXPECT_NE(run->exit_code, 0);
  EXPECT_NE(run->output.find("decisions.yaml"), std::string::npos) << run->output;
}

TEST_F(CliTest, NodesTableJsonRecommendsExclusion) {
  WriteJob("9701", "llama2-70b", {"node001"}, 1842, "", "SUCCESS (exit 0)");
  WriteJob("9702", "llama2-70b", {"node002"}, 1838, "", "SUCCESS (exit 0)");
  WriteJob("9703", "llama2-70b", {"node003"}, 1840, "", "SUCCESS (exit 0)");
  WriteJob("9704", "llama2-70b", {"node004"}, 1695, "", "SUCCESS (exit 0)");
  auto run = RunCommand({DIAGNOSE_BINARY, "nodes", "9701", "9702", "9703", "9704", "--outputs", outputs_.string(),
                         "--format", "json"},
                        std::chrono::milliseconds(60000));
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->exit_code, 0) << run->output;
  auto j = nlohmann::json::parse(run->output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << run->output;
  EXPECT_EQ(j["mode"], "node-perf");
  EXPECT_EQ(j["decision"]["action"], "retry-excluding-nodes");
  ASSERT_EQ(j["decision"]["exclude"].size(), 1u);
  EXPECT_EQ(j["decision"]["exclude"][0]["host"], "node004");
  EXPECT_EQ(j["nodes"]["rows"][3]["status"], "degraded");
  // Text form, the skill's table.
  auto text = RunCommand({DIAGNOSE_BINARY, "nodes", "9701", "9702", "9703", "9704", "--outputs", outputs_.string(),
                          "--format", "text"},
                         std::chrono::milliseconds(60000));
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->output.find("| node004 | 9704 | 1,695 | -7.8% | DEGRADED |"), std::string::npos) << text->output;
}

TEST_F(CliTest, NodesUnknownJobIsOneLineError) {
  auto run = RunCommand({DIAGNOSE_BINARY, "nodes", "424242", "--outputs", outputs_.string()},
                        std::chrono::milliseconds(60000));
  ASSERT_TRUE(run.ok());
  EXPECT_NE(run->exit_code, 0);
  EXPECT_NE(run->output.find("424242"), std::string::npos) << run->output;
}

class EpilogTest : public CliTest {
 protected:
  // A stand-in diagnose that records its argv (one per line) and each call, and exits with the
  // next status of FAKE_EXITS ("3 0": the first call fails as a tool failure, the second succeeds).
  std::string FakeDiagnose() {
    const fs::path fake = dir_ / "fake-diagnose";
    std::ofstream(fake) << "#!/bin/sh\n"
                           "printf '%s\\n' \"$@\" > \"$ARGS_FILE\"\n"
                           "echo call >> \"$ARGS_FILE.calls\"\n"
                           "n=$(wc -l < \"$ARGS_FILE.calls\")\n"
                           "code=$(echo \"${FAKE_EXITS:-0}\" | cut -d' ' -f\"$n\")\n"
                           "echo '{}'\n"
                           "exit \"${code:-0}\"\n";
    fs::permissions(fake, fs::perms::owner_all);
    return fake.string();
  }
  StatusOr<RunResult> Epilog(const std::string& exit_spec, std::vector<std::string> env = {}) {
    std::vector<std::string> argv{"env", "SLURM_JOB_ID=8308", "SLURM_JOB_EXIT_CODE2=" + exit_spec,
                                  "DIAGNOSE_BIN=" + FakeDiagnose(), "DIAGNOSE_OUTPUTS=" + outputs_.string(),
                                  "DIAGNOSE_LOGS_ONLY=1", "DIAGNOSE_RETRY_DELAY=0",
                                  "ARGS_FILE=" + (dir_ / "args").string()};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {"bash", std::string(DIAGNOSE_SOURCE_DIR) + "/tools/slurm-epilog-diagnose.sh"});
    return RunCommand(argv, std::chrono::milliseconds(60000));
  }
  std::vector<std::string> Lines(const fs::path& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
  size_t Calls() { return Lines(dir_ / "args.calls").size(); }
};

TEST_F(EpilogTest, FailedJobRunsDiagnoseWithHistory) {
  auto run = Epilog("1:0");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 0) << run->output;
  std::vector<std::string> args = Lines(dir_ / "args");
  ASSERT_EQ(args.size(), 10u);
  // The deadline is what is left of the 600 s budget, less a margin for the timeout backstop.
  const int deadline = std::stoi(args.back());
  EXPECT_GT(deadline, 500);
  EXPECT_LE(deadline, 590);
  args.pop_back();
  const std::vector<std::string> expected{"8308",    "--outputs", outputs_.string(),
                                          "--history", (dir_ / "sweep-history.jsonl").string(),
                                          "--format", "json",      "--logs-only", "--deadline"};
  EXPECT_EQ(args, expected);
  EXPECT_EQ(Calls(), 1u);
}

// A run that completed can still have lost throughput to a bad host (8308 exited 0:0).
TEST_F(EpilogTest, SuccessfulJobIsDiagnosedToo) {
  auto run = Epilog("0:0");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_EQ(Calls(), 1u);
}

TEST_F(EpilogTest, SuccessfulJobIsLeftAloneWhenAskedTo) {
  auto run = Epilog("0:0", {"DIAGNOSE_SKIP_SUCCESS=1"});
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "args"));
}

// Exit 3 is diagnose's own failure to read the metrics: tried once more, never more.
TEST_F(EpilogTest, ToolFailureIsRetriedOnce) {
  auto run = Epilog("1:0", {"FAKE_EXITS=3 0"});
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_EQ(Calls(), 2u);
  auto again = Epilog("1:0", {"FAKE_EXITS=3 3 3 3"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->exit_code, 0);
  EXPECT_EQ(Calls(), 4u);   // two more: one retry, then the epilog gives up (and still exits 0)
}

TEST_F(EpilogTest, JobVerdictIsNotRetried) {
  auto run = Epilog("1:0", {"FAKE_EXITS=1"});
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_EQ(Calls(), 1u);
}

// Waiting for another epilog's lock counts against the one budget: the lock is freed after 3 s of
// an 11 s budget, which leaves less than diagnose needs (10 s), so the epilog gives up (exit 0,
// nothing run) instead of holding Slurm for the wait plus a whole diagnosis.
TEST_F(EpilogTest, WaitingForTheHistoryLockCountsAgainstTheBudget) {
  const std::string lock = (dir_ / "sweep-history.jsonl.lock").string();
  SpawnOptions holder;
  holder.argv = {"flock", "--no-fork", lock, "sleep", "3"};   // no fork: ending it frees the lock
  auto held = ChildProcess::Spawn(holder);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  bool locked = false;
  for (int i = 0; i < 100 && !locked; ++i) {
    auto probe = RunCommand({"flock", "--nonblock", lock, "true"}, std::chrono::milliseconds(5000));
    locked = probe.ok() && probe->exit_code != 0;
    if (!locked) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(locked) << "the holder never took " << lock;
  auto run = Epilog("1:0", {"DIAGNOSE_TIMEOUT=11"});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "args")) << "diagnose ran after the lock wait had used the budget";
}

TEST_F(EpilogTest, HostileJobIdIsRejectedWithoutRunning) {
  auto run = RunCommand({"env", "SLURM_JOB_ID=1; touch pwned", "SLURM_JOB_EXIT_CODE2=1:0",
                         "DIAGNOSE_BIN=" + FakeDiagnose(), "DIAGNOSE_OUTPUTS=" + outputs_.string(),
                         "ARGS_FILE=" + (dir_ / "args").string(), "bash",
                         std::string(DIAGNOSE_SOURCE_DIR) + "/tools/slurm-epilog-diagnose.sh"},
                        std::chrono::milliseconds(60000));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "args"));
}

}  // namespace
}  // namespace diagnose
