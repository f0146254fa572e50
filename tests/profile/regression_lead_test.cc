// The kernel-time-regression finding leads with what the evidence shows first: the slowest GPU
// when one stands out by a material share of the step, else communication exposed beyond the
// baseline's window, else the kernel before the main-stream gaps (engine/pipeline/profile_stage.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/pipeline/profile_stage.h"
#include "engine/verdict/verdict.h"

namespace diagnose {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A 10 s step: GEMM 6 s under which RCCL ran in the baseline; the blocker is the fusion after the GEMM.
profile::ProfileDrill Window() {
  profile::ProfileDrill d;
  d.gpus = 16;
  d.steps = 3;
  d.step_seconds = 10;
  d.families = {{"rccl", "RCCL (ncclDevKernel)", profile::KernelKind::kCommunication, 1.2, 252, {}},
                {"gemm", "GEMM (CK/primus)", profile::KernelKind::kCompute, 6.0, 126, {}},
                {"input_scatter_fusion", "input_scatter_fusion", profile::KernelKind::kCompute, 0.4, 6, {}}};
  d.total_kernel = 7.6;
  d.step_minus_total = 2.4;
  d.median.busy = 8.0;
  d.median.compute = 8.0;
  d.median.exposed_comm = 0;
  profile::Blocker b;
  b.kernel = "input_scatter_fusion_3.kd";
  b.family = "input_scatter_fusion";
  b.gap_seconds = 1.8;
  b.worst_gap_seconds = 2.0;
  b.file = "node-2.trace.json.gz";
  b.device = 4;
  b.remedy = "compose the chained gathers";
  d.blocker = b;
  return d;
}

JobFacts Facts(const std::string& id, double tgs) {
  JobFacts facts;
  facts.id = id;
  facts.tgs.steady_tgs = tgs;
  return facts;
}

JobProfile Profile(const profile::ProfileDrill& d, double tgs) {
  JobProfile p;
  p.drill = d;
  p.tgs = tgs;
  return p;
}

struct Judged {
  Finding finding;
  Diagnosis diagnosis;
};

Judged Judge(const profile::ProfileDrill& slow, const profile::ProfileDrill& base) {
  const JobProfile subject = Profile(slow, 600), baseline = Profile(base, 720);
  auto finding = ProfileRegressionFinding(Facts("5001", 600), subject, Facts("5000", 720), &baseline);
  EXPECT_TRUE(finding.has_value());
  Diagnosis none;
  none.verdict.root_cause = "none";
  return {*finding, WithProfileVerdict(none, *finding, kAgainstBaseline, JobStatus::kCompleted)};
}

// `slow` judged against the plain window: the lead the evidence names, the sentence the summary
// carries, and no remedy (the blocking family's remedy answers a blocker, not a slow GPU or lost
// overlap).
Judged JudgeExpectingLead(const profile::ProfileDrill& slow, const std::string& lead, const std::string& sentence) {
  Judged judged = Judge(slow, Window());
  EXPECT_EQ(judged.finding.evidence.front().value["lead"], lead);
  EXPECT_THAT(judged.finding.summary, HasSubstr(sentence));
  EXPECT_THAT(judged.finding.summary, Not(HasSubstr("Remedy")));
  return judged;
}

TEST(RegressionLead, ABlockerAloneLeadsWithTheKernelAndItsRemedy) {
  const auto [finding, diagnosis] = Judge(Window(), Window());
  const auto& value = finding.evidence.front().value;
  EXPECT_EQ(value["lead"], "main-stream-blocker");
  EXPECT_THAT(finding.summary, HasSubstr("; input_scatter_fusion_3.kd blocks the main stream: 1.80 s/GPU/step"));
  EXPECT_THAT(finding.summary, HasSubstr("Remedy: compose the chained gathers"));
  EXPECT_EQ(finding.evidence.front().query, "node-2.trace.json.gz");
  EXPECT_EQ(diagnosis.verdict.root_cause, "kernel-time-regression");
  EXPECT_EQ(diagnosis.causal_chain.front(), "main-stream blocker input_scatter_fusion_3.kd");
}

// A slow kernel answers "why slow", not "why failed": a failed job's unknown verdict and its
// unexplained note stay, and the note says what the profile did explain.
TEST(RegressionLead, AFailedJobStaysUnexplainedWithTheProfileAsANote) {
  const JobProfile subject = Profile(Window(), 600), baseline = Profile(Window(), 720);
  auto finding = ProfileRegressionFinding(Facts("5001", 600), subject, Facts("5000", 720), &baseline);
  ASSERT_TRUE(finding.has_value());
  Diagnosis unknown;
  unknown.verdict.root_cause = "unknown";
  unknown.decision.notes = {verdict::UnexplainedNote("failed")};
  const Diagnosis failed = WithProfileVerdict(unknown, *finding, kAgainstBaseline, JobStatus::kFailed);
  EXPECT_EQ(failed.verdict.root_cause, "unknown");
  EXPECT_THAT(failed.decision.notes, ::testing::ElementsAre(verdict::UnexplainedNote("failed"),
                                                            "the profile explains the slowdown (" + finding->id +
                                                                "), not why the job failed"));
  EXPECT_EQ(WithProfileVerdict(unknown, *finding, kAgainstBaseline, JobStatus::kHanging).decision.notes.back(),
            "the profile explains the slowdown (" + finding->id + "), not why the job hangs");
  EXPECT_EQ(WithProfileVerdict(unknown, *finding, kAgainstBaseline, JobStatus::kUnknownDeath).decision.notes.back(),
            "the profile explains the slowdown (" + finding->id + "), not why the job died");
  const Diagnosis completed = WithProfileVerdict(unknown, *finding, kAgainstBaseline, JobStatus::kCompleted);
  EXPECT_EQ(completed.verdict.root_cause, "kernel-time-regression");
  EXPECT_TRUE(completed.decision.notes.empty());
}

TEST(RegressionLead, OneSlowGpuLeadsWithWhichGpuHowMuchSlowerAndItsKernels) {
  auto slow = Window();
  profile::Outlier gpu;
  gpu.what = "GPU 6 of node-3";
  gpu.file = "node-3.trace.json.gz";
  gpu.value = 10.4;
  gpu.median = 8.0;
  gpu.robust_z = 41;
  gpu.slower_families = {{"GEMM (CK/primus)", 7.8, 6.0}, {"input_scatter_fusion", 0.5, 0.4}};
  slow.slow_gpu = gpu;
  const auto [finding, diagnosis] = JudgeExpectingLead(
      slow, "slowest-gpu",
      "; the slowest GPU is GPU 6 of node-3 (node-3.trace.json.gz): compute 10.40 s/step vs 8.00 on the median GPU "
      "(+30.0%, robust z 41.0); its kernels: GEMM (CK/primus) 7.80 vs 6.00 s/step, input_scatter_fusion 0.50 vs "
      "0.40 s/step; the other GPUs wait for it");
  const auto& value = finding.evidence.front().value;
  EXPECT_THAT(finding.summary, Not(HasSubstr("blocks the main stream")));
  EXPECT_EQ(finding.evidence.front().query, "node-3.trace.json.gz");
  EXPECT_EQ(value["slowest_gpu_families"][0]["family"], "GEMM (CK/primus)");
  EXPECT_DOUBLE_EQ(value["slowest_gpu_compute_seconds_per_step"].get<double>(), 10.4);
  // The blocker stays in the evidence: what the others wait behind.
  EXPECT_EQ(value["kernel"], "input_scatter_fusion_3.kd");
  EXPECT_THAT(diagnosis.causal_chain.front(), StartsWith("GPU 6 of node-3 is the slowest GPU: compute 10.40 s/step vs 8.00"));
}

TEST(RegressionLead, ASlowGpuWithinAFewPercentOfTheStepDoesNotLead) {
  auto slow = Window();
  profile::Outlier gpu;
  gpu.what = "GPU 6 of node-3";
  gpu.value = 8.1;   // 1 % of the step over the median: below the 2 % that is named as growth
  gpu.median = 8.0;
  gpu.robust_z = 5;
  slow.slow_gpu = gpu;
  const auto [finding, diagnosis] = Judge(slow, Window());
  EXPECT_EQ(finding.evidence.front().value["lead"], "main-stream-blocker");
  EXPECT_THAT(finding.summary, HasSubstr("; slowest GPU GPU 6 of node-3: compute 8.10"));
}

TEST(RegressionLead, LostOverlapLeadsWithTheExposedCommunicationAndTheCollectives) {
  auto slow = Window();
  slow.median.busy = 9.2;
  slow.median.exposed_comm = 1.2;
  const auto [finding, diagnosis] = JudgeExpectingLead(
      slow, "exposed-communication",
      "; communication is exposed (not under compute): 1.20 s/step on the median GPU (0.00 in the baseline's window); "
      "the collectives: RCCL (ncclDevKernel) 1.20 s/GPU/step (252 launches); the main stream waits for them: 1.80 "
      "s/GPU/step of gap after input_scatter_fusion_3.kd");
  const auto& value = finding.evidence.front().value;
  EXPECT_THAT(finding.summary, Not(HasSubstr("exposed communication (not under compute) 0.00 -> 1.20")))
      << "said once, in the lead";
  EXPECT_EQ(value["collectives"][0]["launches"], 252);
  EXPECT_DOUBLE_EQ(value["exposed_communication_seconds_per_step"].get<double>(), 1.2);
  EXPECT_EQ(diagnosis.causal_chain.front(), "communication no longer under compute: 1.20 s/step exposed");
}

TEST(RegressionLead, ExposedCommunicationTheBaselineHadToo) {
  auto slow = Window(), base = Window();
  slow.median.exposed_comm = base.median.exposed_comm = 1.2;
  const auto [finding, diagnosis] = Judge(slow, base);
  EXPECT_EQ(finding.evidence.front().value["lead"], "main-stream-blocker") << "no growth against the baseline";
}

}  // namespace
}  // namespace diagnose
