// End to end from log text: job logs in the launcher's shapes -> ResolveJob -> TriageJob (the real
// triage and its failure-signature table) -> RefineDecision. Guards the coupling between the sweep
// signals and triage's class ids / event kinds.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/decision/refine.h"
#include "engine/job/job_location.h"
#include "engine/triage/triage.h"
#include "tests/decision/decision_test_support.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

class TriagedLogTest : public ::testing::Test {
 protected:
  // Header (formats §2.1) for `hosts`, then `body`, then optionally a JOB SUMMARY (§2.7).
  std::string WriteLog(const std::string& id, const std::vector<std::string>& hosts, const std::string& body,
                       const std::string& status_line, const std::string& args = "steps=15") {
    std::string nodelist;
    for (const auto& h : hosts) nodelist += (nodelist.empty() ? "" : ",") + h;
    const fs::path path = outputs_ / (id + "-JAX-grok-1.log");
    std::ofstream out(path);
    out << "JOB_ID=" << id << "\nJOB_NAME=JAX-grok-1\nNNODES=" << hosts.size() << "\nJOB_NODELIST=" << nodelist
        << "\nJAX_COORDINATOR_PORT=23456\nPASSTHROUGH_ARGS=\"" << args << "\"\nMODEL_NAME=grok-1\n";
    out << "== Training BEGIN (no timeout) ==\n" << body;
    if (!status_line.empty())
      out << "========================== JOB SUMMARY ==========================\n  Job:    " << id
          << " (JAX-grok-1)\n  Model:  grok-1\n  Nodes:  " << hosts.size() << "\n  Wall:   9m 1s\n  Status: "
          << status_line << "\n=================================================================\n";
    return path.string();
  }

  static std::string Steps(size_t tasks, int first, int last) {
    std::string s;
    for (int step = first; step <= last; ++step)
      for (size_t t = 0; t < tasks; ++t)
        s += std::to_string(t) + ": completed step: " + std::to_string(step) +
             ", seconds: 30.309, TFLOP/s/device: 207.973, MFU: 8.32%, Tokens/s/device: 2036.000, "
             "total_weights: 4194304, loss: 7.123\n";
    return s;
  }

  JobFacts Triage(const std::string& log, std::optional<int64_t> now = std::nullopt,
                  std::optional<bool> running = std::nullopt) {
    auto loc = ResolveJob(log, outputs_.string());
    EXPECT_TRUE(loc.ok()) << loc.status().ToString();
    TriageOptions options;
    options.rules_dir = std::string(DIAGNOSE_SOURCE_DIR) + "/rules";
    options.now = now;
    options.scheduler_running = running;
    auto facts = TriageJob(*loc, options);
    EXPECT_TRUE(facts.ok()) << facts.status().ToString();
    return facts.ok() ? *facts : JobFacts{};
  }

  static std::string Describe(const JobFacts& f) {
    std::string s = "status=" + std::string(ToString(f.status)) + " class=" + f.failure_class + " events:";
    for (const auto& e : f.events) s += " " + e.kind + "@" + std::to_string(e.task);
    return s;
  }

  testing::TempDir scratch_{"sweep-triaged"};
  const fs::path outputs_ = scratch_.path();
};

const std::string kDash = "\xE2\x80\x94";

TEST_F(TriagedLogTest, GpuOomNoRetryWithAllocation) {
  const std::vector<std::string> hosts{"gpu101", "gpu102"};
  const std::string log = WriteLog(
      "9805", hosts,
      Steps(2, 0, 0) +
          "1: jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 221.71GiB.: while "
          "running replica 0 and partition 40 of a replicated computation (other replicas may have failed as well).\n"
          "1: NODE_EXIT host=gpu102 exit=1\n0: NODE_EXIT host=gpu101 exit=143\n",
      "FAILED (exit 1) " + kDash + " Training FAILED (exit=1)");
  JobFacts f = Triage(log);
  SweepDecision d = testing::Refine(f);
  EXPECT_EQ(d.decision.action, DecisionAction::kNoRetry) << Describe(f);
  EXPECT_EQ(d.rule, "gpu-oom");
  EXPECT_EQ(d.oom_allocation, "221.71GiB");
}

TEST_F(TriagedLogTest, HsaAbortOnOneNodeExcludesIt) {
  const std::vector<std::string> hosts{"gpu101", "gpu102", "gpu103", "gpu104"};
  const std::string log = WriteLog(
      "9810", hosts,
      Steps(4, 0, 8) +
          "2: :0:rocdevice.cpp            :3587: 13177094081 us:  Callback: Queue 0x7f9100c00000 aborting with error : "
          "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal "
          "address. code: 0x29\n2: NODE_EXIT host=gpu103.example.org exit=134\n",
      "FAILED (exit 1) " + kDash + " Training FAILED (exit=134)");
  JobFacts f = Triage(log);
  SweepDecision d = testing::Refine(f);
  EXPECT_EQ(d.decision.action, DecisionAction::kRetryExcludingNodes) << Describe(f);
  ASSERT_EQ(d.decision.exclude.size(), 1u);
  EXPECT_EQ(d.decision.exclude[0].host, "gpu103");
}

TEST_F(TriagedLogTest, HsaAbortOnEveryNodeIsConfigError) {
  const std::vector<std::string> hosts{"gpu101", "gpu102"};
  std::string body = Steps(2, 0, 3);
  for (int t = 0; t < 2; ++t)
    body += std::to_string(t) +
            ": rocdevice.cpp:3583: Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to "
            "allocate the necessary resources. Available Free mem : 24 MB\n";
  JobFacts f = Triage(WriteLog("9811", hosts, body, "FAILED (exit 1) " + kDash + " Training FAILED (exit=134)"));
  SweepDecision d = testing::Refine(f);
  EXPECT_EQ(d.decision.action, DecisionAction::kStopSweep) << Describe(f);
  EXPECT_EQ(d.root_cause, "config-error");
}

TEST_F(TriagedLogTest, CleanupExit143AfterFinalStepIsSuccess) {
  const std::vector<std::string> hosts{"gpu101", "gpu102"};
  JobFacts f = Triage(WriteLog("9850", hosts,
                               Steps(2, 0, 14) + "0: NODE_EXIT host=gpu101 exit=143\n1: NODE_EXIT host=gpu102 exit=143\n",
                               "FAILED (exit 143) " + kDash + " CANCELLED (scancel / SIGTERM)"));
  SweepDecision d = testing::Refine(f, {}, testing::MakeDiagnosis("unknown", DecisionAction::kRetrySameNodes));
  EXPECT_EQ(d.decision.action, DecisionAction::kNone) << Describe(f);
  EXPECT_EQ(d.root_cause, "none");
}

TEST_F(TriagedLogTest, UnknownXlaFlagIsConfigError) {
  const std::vector<std::string> hosts{"gpu101", "gpu102"};
  std::string body;
  for (int t = 0; t < 2; ++t)
    body += std::to_string(t) +
            ": F0301 10:00:00.000000  1234 parse_flags_from_env.cc:226] Unknown flags in XLA_FLAGS: "
            "--xla_gpu_enable_foo=true\n";
  JobFacts f = Triage(WriteLog("9830", hosts, body, "FAILED (exit 1) " + kDash + " Training FAILED (exit=134)"));
  SweepDecision d = testing::Refine(f);
  EXPECT_EQ(d.rule, "unknown-xla-flag") << Describe(f);
  EXPECT_EQ(d.root_cause, "config-error");
  EXPECT_EQ(d.decision.action, DecisionAction::kNoRetry);
}

TEST_F(TriagedLogTest, CoordinationDeadlineRetriesSameNodes) {
  const std::vector<std::string> hosts{"gpu101", "gpu102"};
  JobFacts f = Triage(WriteLog("9870", hosts,
                               Steps(2, 0, 7) +
                                   "0: jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: GetKeyValue() timed "
                                   "out with key: jax_cross_host_barrier and duration: 600s\n",
                               "FAILED (exit 1) " + kDash + " Training FAILED (exit=1)"));
  SweepDecision d = testing::Refine(f);
  EXPECT_EQ(d.rule, "coordination-deadline-exceeded") << Describe(f);
  EXPECT_EQ(d.decision.action, DecisionAction::kRetrySameNodes);
}

TEST_F(TriagedLogTest, NicCompletionErrorRetriesSameNodes) {
  const std::vector<std::string> hosts{"gpu101", "gpu102"};
  JobFacts f = Triage(WriteLog("9880", hosts,
                               Steps(2, 0, 2) + "1: [12345.678] ionic 0000:05:00.0: ionic_comp_msn cqe with error 12\n",
                               "FAILED (exit 1) " + kDash + " Training FAILED (exit=1)"));
  SweepDecision d = testing::Refine(f);
  EXPECT_EQ(d.rule, "nic-completion-error") << Describe(f);
  EXPECT_EQ(d.decision.action, DecisionAction::kRetrySameNodes);
}

TEST_F(TriagedLogTest, StalledJobAfterStep0IsHangRetry) {
  const std::vector<std::string> hosts{"gpu101", "gpu102"};
  const std::string log = WriteLog("9890", hosts, Steps(2, 0, 30), "");
  JobFacts f = Triage(log);
  SweepDecision d = testing::Refine(f, {}, testing::MakeDiagnosis(), /*stalled=*/true);
  EXPECT_EQ(d.hang_phase, "after-step0") << Describe(f);
  EXPECT_EQ(d.decision.action, DecisionAction::kRetrySameNodes);
}

TEST_F(TriagedLogTest, StalledJobBeforeMemstatsIsTransient) {
  const std::vector<std::string> hosts{"gpu101", "gpu102"};
  JobFacts f = Triage(WriteLog("9891", hosts, "0: Launching MaxText.train directly...\n", ""));
  SweepDecision d = testing::Refine(f, {}, testing::MakeDiagnosis(), /*stalled=*/true);
  EXPECT_EQ(d.hang_phase, "before-memstats") << Describe(f);
  EXPECT_EQ(d.decision.action, DecisionAction::kRetrySameNodes);
}

TEST_F(TriagedLogTest, StalledAfterMemstatsBeforeStep0IsSilentOom) {
  const std::vector<std::string> hosts{"gpu101", "gpu102"};
  JobFacts f = Triage(WriteLog("9892", hosts,
                               "0: \n0: Memstats: After params initialized:\n0: \tUsing (GB) 40.12 / 180.0 "
                               "(22.288889%) on rocm:0\n",
                               ""));
  SweepDecision d = testing::Refine(f, {}, testing::MakeDiagnosis(), /*stalled=*/true);
  EXPECT_EQ(d.hang_phase, "after-memstats-before-step0") << Describe(f) << " memstats=" << f.memstats.size();
  EXPECT_EQ(d.decision.action, DecisionAction::kNoRetry);
}

}  // namespace
}  // namespace diagnose
