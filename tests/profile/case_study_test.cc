// Case study 0 of the ROCm blog (job 8104, LLaMA 3.1 405B FP8 on 64 MI355X, "8104 perf analysis"):
// the fixture scenario generated into a private outputs dir, then `diagnose 8104` must show TGS,
// MFU, the step-time decomposition and the kernel table on its first screen.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/bench/child_run.h"
#include "tests/support/files.h"
#include "tools/fixturegen/generate.h"
#include "tools/fixturegen/scenario.h"

namespace diagnose::profile {
namespace {

using ::testing::HasSubstr;

// A fixture scenario, changed by `edit`, generated logs-only into `outputs`.
template <typename Edit>
void GenerateScenario(const std::string& scenario_file, const std::string& outputs, Edit edit) {
  auto scenario = fixturegen::LoadScenario(std::string(DIAGNOSE_SOURCE_DIR) + "/fixtures/scenarios/" + scenario_file);
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  edit(*scenario);
  fixturegen::GenerateOptions options;
  options.out_dir = outputs;
  options.write_tsdb = false;
  auto generated = fixturegen::Generate(*scenario, options);
  ASSERT_TRUE(generated.ok()) << generated.status().message();
}

// A suite whose tests share one generated outputs dir, made before its first test and removed with
// everything in it after its last.
template <typename Suite>
class SharedOutputsSuite : public ::testing::Test {
 protected:
  static void MakeOutputs(const std::string& prefix) { scratch_ = std::make_unique<testing::TempDir>(prefix); }
  static std::string Outputs() { return scratch_->path().string(); }
  static void TearDownTestSuite() { scratch_.reset(); }

 private:
  static inline std::unique_ptr<testing::TempDir> scratch_;
};

class CaseStudy0 : public SharedOutputsSuite<CaseStudy0> {
 protected:
  static void SetUpTestSuite() {
    MakeOutputs("diagnose-case0");
    GenerateScenario("incident-8104-profile-llama405b.yaml", Outputs(), [](fixturegen::Scenario&) {});
  }
  static bench::ChildRun Diagnose(const std::string& format) {
    return bench::RunChild({DIAGNOSE_BINARY, "8104", "--outputs", Outputs(), "--format", format, "--color", "never"});
  }
};

TEST_F(CaseStudy0, FirstScreenShowsThroughputDecompositionAndKernels) {
  const auto run = Diagnose("text");
  ASSERT_EQ(WEXITSTATUS(run.status), 0) << run.out;
  std::istringstream lines(run.out);
  std::string first_screen, line;
  for (int i = 0; i < 40 && std::getline(lines, line); ++i) first_screen += line + "\n";
  EXPECT_THAT(first_screen, HasSubstr("TGS 720"));
  EXPECT_THAT(first_screen, HasSubstr("MFU 37.4"));
  EXPECT_THAT(first_screen, HasSubstr("profile: 8 file(s), GPUs 64, 1-node/proc, 3 profiled steps"));
  EXPECT_THAT(first_screen, HasSubstr("writeback step 8, divisor 192"));
  EXPECT_THAT(first_screen, HasSubstr("step-time decomposition per GPU (median, s/step): busy 9.20 = compute 9.20"));
  EXPECT_THAT(first_screen, HasSubstr("CK+primus GEMM 6.200"));
  EXPECT_THAT(first_screen, HasSubstr("RCCL ncclDevKernel 3.400"));
  EXPECT_THAT(first_screen, HasSubstr("total kernel 12.600; step - total kernel -1.2"));
  EXPECT_THAT(first_screen, HasSubstr("WHAT HAPPENED  none"));
  EXPECT_THAT(first_screen, ::testing::Not(HasSubstr("profile warning")));
}

TEST_F(CaseStudy0, JsonCarriesTheProfile) {
  const auto run = Diagnose("json");
  ASSERT_EQ(WEXITSTATUS(run.status), 0);
  const auto report = nlohmann::json::parse(run.out);
  const auto& p = report.at("profile");
  EXPECT_EQ(p.at("gpus"), 64);
  EXPECT_EQ(p.at("launcher_mode"), "1-node/proc");
  EXPECT_EQ(p.at("writeback_step"), 8);
  EXPECT_NEAR(p.at("total_kernel_seconds").get<double>(), 12.6, 0.01);
  EXPECT_NEAR(p.at("mfu_pct").get<double>(), 37.4, 0.1);
  EXPECT_FALSE(p.contains("main_stream_blocker"));
  EXPECT_EQ(report.at("verdict").at("root_cause"), "none");
}

// A job slower than its baseline only because a kernel blocks the main stream: the verdict names
// the blocker with its evidence, and a slowdown within noise is no regression.
class BlockerAgainstBaseline : public SharedOutputsSuite<BlockerAgainstBaseline> {
 protected:
  static void SetUpTestSuite() {
    MakeOutputs("diagnose-blocker");
    Write("8111", 720, false);
    Write("8112", 610, true);
    Write("8113", 715, true);
  }
  // The 8104 job under another id, at `tgs`, with or without a fusion that stalls the main stream.
  static void Write(const std::string& id, double tgs, bool blocker) {
    GenerateScenario("incident-8104-profile-llama405b.yaml", Outputs(), [&](fixturegen::Scenario& scenario) {
      scenario.job_id = id;
      scenario.job_name = "JAX-llama3.1-405b-fp8-8N";
      scenario.seed = std::stoull(id);
      scenario.phases.front().tgs = tgs;
      if (!blocker) return;
      auto& spec = scenario.profile->spec;
      spec.step_seconds = 13.9;
      spec.slices = {{"ck::kernel_gemm_xdl_cshuffle_v3_f8", 0, 0.0, 6.2, 126},
                     {"input_scatter_fusion_3.kd", 0, 6.2, 0.5, 6},
                     {"aiter::fmha_fwd_hd128_bf16", 0, 9.2, 1.9, 126},
                     {"loop_convert_fusion_7.kd", 0, 11.1, 0.9, 126},
                     {"hipMemsetAsync", 0, 12.0, 0.2, 20},
                     {"ncclDevKernel_Generic_1", 1, 2.0, 3.4, 252}};
    });
  }
  static nlohmann::json Diagnose(const std::string& subject) {
    const auto run = bench::RunChild(
        {DIAGNOSE_BINARY, subject, "--baseline", "8111", "--outputs", Outputs(), "--format", "json"});
    EXPECT_EQ(WEXITSTATUS(run.status), 0);
    return nlohmann::json::parse(run.out);
  }
};

TEST_F(BlockerAgainstBaseline, TheVerdictNamesTheBlockerWithItsEvidence) {
  const auto report = Diagnose("8112");
  EXPECT_EQ(report["verdict"]["root_cause"], "kernel-time-regression");
  EXPECT_EQ(report["verdict"]["domain"], "software");
  EXPECT_THAT(report["verdict"]["summary"].get<std::string>(), HasSubstr("input_scatter_fusion_3.kd blocks the main stream"));
  EXPECT_THAT(report["verdict"]["summary"].get<std::string>(), HasSubstr("below baseline 8111"));
  EXPECT_THAT(report["verdict"]["summary"].get<std::string>(), HasSubstr("compose the chained gathers"));
  const nlohmann::json* evidence = nullptr;
  for (const auto& f : report["findings"])
    if (f["id"] == "profile/main-stream-blocker") evidence = &f["evidence"][0];
  ASSERT_NE(evidence, nullptr);
  EXPECT_EQ((*evidence)["kind"], "profile");
  EXPECT_THAT((*evidence)["query"].get<std::string>(), HasSubstr(".trace.json.gz"));
  EXPECT_EQ((*evidence)["value"]["kernel"], "input_scatter_fusion_3.kd");
  EXPECT_NEAR((*evidence)["value"]["gap_seconds_per_gpu_step"].get<double>(), 2.5, 0.01);
  EXPECT_TRUE((*evidence)["value"].contains("gpu"));
  EXPECT_GT((*evidence)["value"]["step_minus_total_kernel_seconds"].get<double>(), 0);
  EXPECT_LT((*evidence)["value"]["baseline_step_minus_total_kernel_seconds"].get<double>(), 0);
}

TEST_F(BlockerAgainstBaseline, ASlowdownWithinNoiseIsNoRegression) {
  const auto report = Diagnose("8113");
  EXPECT_EQ(report["verdict"]["root_cause"], "none");
  for (const auto& f : report["findings"]) EXPECT_NE(f["id"], "profile/main-stream-blocker");
}


// No baseline: the job ran at its healthy level, then slower. The profile speaks for the slowdown
// only when its window lies inside the slow stretch triage found; otherwise the evidence is
// insufficient and the verdict is left alone.
class BlockerAgainstOwnHealthyLevel : public SharedOutputsSuite<BlockerAgainstOwnHealthyLevel> {
 protected:
  static void SetUpTestSuite() {
    MakeOutputs("diagnose-own-level");
    Write("8121", 25);   // window inside the slow stretch (steps 20-39)
    Write("8122", 5);    // window in the healthy stretch, before the slowdown
  }
  static void Write(const std::string& id, int64_t window_first_step) {
    GenerateScenario("fault-9230-profile-blocker-slow-phase.yaml", Outputs(), [&](fixturegen::Scenario& scenario) {
      scenario.job_id = id;
      scenario.seed = std::stoull(id);
      scenario.profile->spec.first_step = window_first_step;
      // Logs only, as the other cases here (a Ray job without its TSDB would be an observability gap).
      scenario.tsdb = false;
      scenario.ray = false;
    });
  }
  static nlohmann::json Diagnose(const std::string& subject) {
    const auto run = bench::RunChild({DIAGNOSE_BINARY, subject, "--outputs", Outputs(), "--format", "json"});
    EXPECT_EQ(WEXITSTATUS(run.status), 0) << run.out;
    return nlohmann::json::parse(run.out);
  }
  static const nlohmann::json* ProfileFinding(const nlohmann::json& report) {
    for (const auto& f : report["findings"])
      if (f["id"] == "profile/main-stream-blocker") return &f;
    return nullptr;
  }
};

TEST_F(BlockerAgainstOwnHealthyLevel, AWindowInsideTheSlowStretchNamesTheBlocker) {
  const auto report = Diagnose("8121");
  EXPECT_EQ(report["verdict"]["root_cause"], "kernel-time-regression");
  const std::string summary = report["verdict"]["summary"].get<std::string>();
  EXPECT_THAT(summary, HasSubstr("Slower than its own healthy level"));
  EXPECT_THAT(summary, HasSubstr("input_scatter_fusion_3.kd blocks the main stream"));
  EXPECT_THAT(summary, HasSubstr("steps 25-27"));
  const nlohmann::json* finding = ProfileFinding(report);
  ASSERT_NE(finding, nullptr);
  EXPECT_EQ((*finding)["status"], "fired");
  const auto& value = (*finding)["evidence"][0]["value"];
  EXPECT_EQ(value["kernel"], "input_scatter_fusion_3.kd");
  EXPECT_NEAR(value["gap_seconds_per_gpu_step"].get<double>(), 2.5, 0.01);
  EXPECT_GT(value["step_minus_total_kernel_seconds"].get<double>(), 0);
  // Measured against the healthy stretch's level, not a baseline job.
  EXPECT_NEAR(value["baseline_tgs"].get<double>(), 720, 720 * 0.03);
  EXPECT_NEAR(value["tgs"].get<double>(), 600, 600 * 0.03);
}

TEST_F(BlockerAgainstOwnHealthyLevel, AWindowBeforeTheSlowdownIsInsufficientEvidence) {
  const auto report = Diagnose("8122");
  EXPECT_NE(report["verdict"]["root_cause"], "kernel-time-regression");
  const nlohmann::json* finding = ProfileFinding(report);
  ASSERT_NE(finding, nullptr);
  EXPECT_EQ((*finding)["status"], "skipped");
  EXPECT_THAT((*finding)["summary"].get<std::string>(), HasSubstr("evidence insufficient"));
  EXPECT_THAT((*finding)["summary"].get<std::string>(), HasSubstr("steps 5-7"));
}

}  // namespace
}  // namespace diagnose::profile
