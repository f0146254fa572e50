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
#include "tests/watch/job_log_support.h"

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
    std::ifstream in(out);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_NE(text.find("0 running job(s), 1 already ended or decided (skipped)"), std::string::npos) << text;
  WriteJob("9806", "grok-1", {"gpu102", "gpu103"}, 0,
           "1: jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2GiB.\n", kFailed);
  for (int i = 0; i < 600 && text.find("job 9806") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(out);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
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
  // A stand-in diagnose that records its argv, one per line.
  std::string FakeDiagnose() {
    const fs::path fake = dir_ / "fake-diagnose";
    std::ofstream(fake) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$ARGS_FILE\"\necho '{}'\n";
    fs::permissions(fake, fs::perms::owner_all);
    return fake.string();
  }
  StatusOr<RunResult> Epilog(const std::string& exit_spec) {
    return RunCommand({"env", "SLURM_JOB_ID=8308", "SLURM_JOB_EXIT_CODE2=" + exit_spec, "DIAGNOSE_BIN=" + FakeDiagnose(),
                       "DIAGNOSE_OUTPUTS=" + outputs_.string(), "DIAGNOSE_LOGS_ONLY=1",
                       "ARGS_FILE=" + (dir_ / "args").string(), "bash",
                       std::string(DIAGNOSE_SOURCE_DIR) + "/tools/slurm-epilog-diagnose.sh"},
                      std::chrono::milliseconds(60000));
  }
};

TEST_F(EpilogTest, FailedJobRunsDiagnoseWithHistory) {
  auto run = Epilog("1:0");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 0) << run->output;
  std::ifstream in(dir_ / "args");
  std::vector<std::string> args;
  for (std::string l; std::getline(in, l);) args.push_back(l);
  const std::vector<std::string> expected{"8308",    "--outputs", outputs_.string(),
                                          "--history", (dir_ / "sweep-history.jsonl").string(),
                                          "--format", "json",      "--logs-only"};
  EXPECT_EQ(args, expected);
}

TEST_F(EpilogTest, SuccessfulJobIsLeftAlone) {
  auto run = Epilog("0:0");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "args"));
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
