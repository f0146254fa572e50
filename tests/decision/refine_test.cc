// Every sweep rule of rules/sweep/decisions.yaml, driven by constructed triage facts, plus the
// history-driven limits and escalations.
#include <gtest/gtest.h>

#include "engine/decision/refine.h"
#include "tests/decision/decision_test_support.h"

namespace diagnose {
namespace {

using testing::AddClass;
using testing::AddEvent;
using testing::AddNodeExit;
using testing::AddSteps;
using testing::DecideAndRecord;
using testing::MakeDiagnosis;
using testing::MakeFacts;
using testing::MakeHungFacts;
using testing::Refine;
using testing::SetSummary;

const std::vector<std::string> kEight{"gpu101", "gpu102", "gpu103", "gpu104",
                                      "gpu105", "gpu106", "gpu107", "gpu108"};

std::vector<std::string> Hosts(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& x : d.exclude) out.push_back(x.host);
  return out;
}

void ExpectContractValid(const SweepDecision& d) {
  EXPECT_TRUE(d.root_cause.empty() || IsKnownRootCause(d.root_cause)) << d.root_cause;
  if (d.decision.action == DecisionAction::kRetryExcludingNodes) EXPECT_FALSE(d.decision.exclude.empty());
  else EXPECT_TRUE(d.decision.exclude.empty());
}

TEST(SweepRules, OomIsNoRetryAndRecordsAllocation) {
  JobFacts f = MakeFacts("9805", kEight);
  AddSteps(&f, 0, 0);
  AddClass(&f, "oom-gpu", "gpu103",
           "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 221.71GiB.");
  f.oom_allocation = "221.71GiB";
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.rule, "gpu-oom");
  EXPECT_EQ(d.decision.action, DecisionAction::kNoRetry);
  EXPECT_EQ(d.root_cause, "gpu-oom");
  EXPECT_EQ(d.oom_allocation, "221.71GiB");
  EXPECT_NE(d.decision.notes.front().find("221.71GiB"), std::string::npos);
  ExpectContractValid(d);
}

TEST(SweepRules, OomMatchedByLineTextWhenTriageUsesAnotherClassId) {
  JobFacts f = MakeFacts("9806", kEight);
  AddEvent(&f, "xla-error", "gpu101", "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 3.5GiB");
  EXPECT_EQ(Refine(f).decision.action, DecisionAction::kNoRetry);
}

TEST(SweepRules, GpuHardwareErrorOnOneNodeExcludesItAndRetries) {
  JobFacts f = MakeFacts("9810", kEight);
  AddSteps(&f, 0, 40);
  AddEvent(&f, "hsa", "gpu106",
           ":0:rocdevice.cpp            :3587: 13177094081 us:  Callback: Queue 0x7f aborting with error : "
           "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION");
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.rule, "gpu-hardware-error-one-node");
  EXPECT_EQ(d.decision.action, DecisionAction::kRetryExcludingNodes);
  EXPECT_EQ(Hosts(d.decision), std::vector<std::string>{"gpu106"});
  EXPECT_EQ(d.decision.exclude[0].priority, 1);
  EXPECT_EQ(d.root_cause, "gpu-hardware-fault");
  ExpectContractValid(d);
}

TEST(SweepRules, GpuHardwareErrorOnAllNodesIsConfigErrorStopSweep) {
  JobFacts f = MakeFacts("9811", {"n1", "n2", "n3", "n4"});
  for (const auto& h : f.header.hosts) AddClass(&f, "gpu-hardware-fault", h, "HSA_STATUS_ERROR_OUT_OF_RESOURCES");
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.rule, "gpu-hardware-error-all-nodes");
  EXPECT_EQ(d.decision.action, DecisionAction::kStopSweep);
  EXPECT_EQ(d.root_cause, "config-error");
  ExpectContractValid(d);
}

TEST(SweepRules, GpuHardwareErrorOnSeveralNodesIsConfigError) {
  JobFacts f = MakeFacts("9812", kEight);
  AddClass(&f, "gpu-hardware-fault", "gpu102", "rocdevice.cpp:3583: Aborting with error : HSA_STATUS_ERROR");
  AddClass(&f, "gpu-hardware-fault", "gpu107", "rocdevice.cpp:3583: Aborting with error : HSA_STATUS_ERROR");
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.decision.action, DecisionAction::kStopSweep);
  EXPECT_EQ(d.root_cause, "config-error");
}

TEST(SweepRules, SameGpuErrorOnADifferentNodeLaterInTheSweepIsConfigError) {
  SweepHistory history;
  JobFacts first = MakeFacts("100", kEight);
  AddEvent(&first, "hsa", "gpu101", "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION");
  EXPECT_EQ(DecideAndRecord(first, &history).decision.action, DecisionAction::kRetryExcludingNodes);
  // Another config (different batch) hits the same abort on another node.
  JobFacts second = MakeFacts("101", {"gpu102", "gpu103", "gpu104", "gpu105"}, "grok-1",
                              {{"per_device_batch_size", "4"}});
  AddEvent(&second, "hsa", "gpu104", "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION");
  SweepDecision d = Refine(second, history);
  EXPECT_EQ(d.decision.action, DecisionAction::kStopSweep);
  EXPECT_EQ(d.root_cause, "config-error");
  // The escalation is a field a script reads, not only a note.
  ASSERT_FALSE(d.decision.overrides.empty());
  const ActionOverride& last = d.decision.overrides.back();
  EXPECT_EQ(last.from, DecisionAction::kRetryExcludingNodes);
  EXPECT_EQ(last.to, DecisionAction::kStopSweep);
  EXPECT_EQ(last.rule, d.rule);
  EXPECT_NE(last.reason.find("different node"), std::string::npos) << last.reason;
}

TEST(SweepRules, EccInPreflightExcludesForTheWholeSweep) {
  JobFacts f = MakeFacts("9820", {"gpu101", "gpu102"});
  AddEvent(&f, "ecc-check", "gpu102", "gpu102: GPU[3]          : ... UMC CE=0 UE=2");
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.rule, "ecc-errors-in-preflight");
  EXPECT_EQ(d.decision.action, DecisionAction::kRetryExcludingNodes);
  EXPECT_EQ(Hosts(d.decision), std::vector<std::string>{"gpu102"});
  EXPECT_EQ(d.exclude_scope, ExcludeScope::kSweep);
  ExpectContractValid(d);
}

TEST(SweepRules, EccLineWithZeroCountsIsNotAnError) {
  JobFacts f = MakeFacts("9821", {"gpu101", "gpu102"});
  AddEvent(&f, "ecc-check", "gpu102", "gpu102: GPU[3] UMC CE=0 UE=0");
  EXPECT_NE(Refine(f).rule, "ecc-errors-in-preflight");
}

TEST(SweepRules, SweepExcludedHostRunningALaterJobIsNoted) {
  SweepHistory history;
  JobFacts ecc = MakeFacts("1", {"gpu101", "gpu102"});
  AddEvent(&ecc, "ecc-check", "gpu102", "gpu102: GPU[0] UMC CE=4 UE=0");
  DecideAndRecord(ecc, &history);
  JobFacts later = MakeFacts("2", {"gpu102", "gpu103"}, "llama2-70b");
  SweepDecision d = Refine(later, history);
  bool noted = false;
  for (const auto& n : d.decision.notes) noted = noted || n.find("excluded for the whole sweep") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(SweepRules, UnknownXlaFlagIsConfigErrorNoRetry) {
  JobFacts f = MakeFacts("9830", kEight);
  AddClass(&f, "python-exception", "gpu101",
           "F0301 10:00:00.000000 1 parse_flags_from_env.cc:226] Unknown flag in XLA_FLAGS: --xla_gpu_foo=true");
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.rule, "unknown-xla-flag");
  EXPECT_EQ(d.decision.action, DecisionAction::kNoRetry);
  EXPECT_EQ(d.root_cause, "config-error");
}

TEST(SweepRules, UnknownXlaFlagOnASecondProfileStopsTheSweep) {
  SweepHistory history;
  JobFacts a = MakeFacts("1", kEight, "grok-1", {{"_env_TUNE_PROFILE", "A"}});
  AddEvent(&a, "xla", "gpu101", "parse_flags_from_env.cc:226] Unknown flag in XLA_FLAGS: --xla_old");
  DecideAndRecord(a, &history);
  JobFacts b = MakeFacts("2", kEight, "grok-1", {{"_env_TUNE_PROFILE", "B"}});
  AddEvent(&b, "xla", "gpu101", "parse_flags_from_env.cc:226] Unknown flag in XLA_FLAGS: --xla_old");
  EXPECT_EQ(Refine(b, history).decision.action, DecisionAction::kStopSweep);
}

TEST(SweepRules, HangBeforeMemstatsRetriesSameNodes) {
  JobFacts f = MakeFacts("9840", kEight);
  f.status = JobStatus::kHanging;
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.rule, "hang-before-memstats");
  EXPECT_EQ(d.hang_phase, "before-memstats");
  EXPECT_EQ(d.decision.action, DecisionAction::kRetrySameNodes);
}

TEST(SweepRules, StalledRunningJobIsTreatedAsHang) {
  JobFacts f = MakeFacts("9841", kEight);
  f.status = JobStatus::kRunning;
  AddSteps(&f, 0, 30);
  SweepDecision d = Refine(f, {}, MakeDiagnosis(), /*stalled=*/true);
  EXPECT_EQ(d.rule, "hang-after-step0");
  EXPECT_EQ(d.decision.action, DecisionAction::kRetrySameNodes);
  // Not stalled: the same facts are just a running job, no sweep rule.
  EXPECT_EQ(Refine(f).rule, "");
}

TEST(SweepRules, HangAfterMemstatsBeforeStep0IsSilentCompileOom) {
  JobFacts f = MakeFacts("9842", kEight);
  f.status = JobStatus::kHanging;
  f.memstats.push_back({"After params initialized", 0, 40.1, 180.0, 22.3, "rocm:0", {}});
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.rule, "hang-after-memstats-before-step0");
  EXPECT_EQ(d.decision.action, DecisionAction::kNoRetry);
  EXPECT_EQ(d.root_cause, "gpu-oom");
}

TEST(SweepRules, HangAfterBarrierWithoutMemstatsIsFirstStepHangRetried) {
  JobFacts f = MakeFacts("9843", kEight);
  f.status = JobStatus::kHanging;
  f.barrier_passed = true;
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.hang_phase, "after-barrier-before-step0");
  EXPECT_EQ(d.decision.action, DecisionAction::kRetrySameNodes);
}

TEST(SweepRules, HangAfterStep0RetriesOnceThenFails) {
  SweepHistory history;
  JobFacts first = MakeHungFacts("1", kEight, 120);
  EXPECT_EQ(DecideAndRecord(first, &history).decision.action, DecisionAction::kRetrySameNodes);
  JobFacts second = first;
  second.id = "2";
  SweepDecision d = Refine(second, history);
  // Recurred on the same nodes with no suspect: FAIL and continue.
  EXPECT_EQ(d.decision.action, DecisionAction::kNoRetry);
  EXPECT_EQ(d.retry_of, std::optional<std::string>("1"));
}

TEST(SweepRules, HangRecurringOnSameNodesExcludesSuspects) {
  SweepHistory history;
  JobFacts first = MakeHungFacts("1", kEight, 50);
  DecideAndRecord(first, &history);
  JobFacts second = first;
  second.id = "2";
  // The diagnosis (e.g. the hang playbook's stuck-GPU-set outlier) names a suspect.
  Diagnosis diagnosis = MakeDiagnosis("rccl-hang", DecisionAction::kRetrySameNodes);
  diagnosis.decision.exclude.push_back({"gpu105", 2, "stuck GPU index set differs from the majority"});
  SweepDecision d = Refine(second, history, diagnosis);
  EXPECT_EQ(d.decision.action, DecisionAction::kRetryExcludingNodes);
  EXPECT_EQ(Hosts(d.decision), std::vector<std::string>{"gpu105"});
}

TEST(SweepRules, HangRecurringSuspectsFromLoggedNicErrors) {
  SweepHistory history;
  JobFacts first = MakeHungFacts("1", kEight, 50);
  DecideAndRecord(first, &history);
  JobFacts second = first;
  second.id = "2";
  AddEvent(&second, "nccl", "gpu103", "gpu103:1:2 [0] NCCL WARN Timeout waiting for ...");
  SweepDecision d = Refine(second, history);
  EXPECT_EQ(d.decision.action, DecisionAction::kRetryExcludingNodes);
  EXPECT_EQ(Hosts(d.decision), std::vector<std::string>{"gpu103"});
}

TEST(SweepRules, HangOnDifferentNodesIsNotARecurrence) {
  SweepHistory history;
  JobFacts first = MakeHungFacts("1", kEight, 50);
  Diagnosis diagnosis = MakeDiagnosis("rccl-hang", DecisionAction::kRetrySameNodes);
  diagnosis.decision.exclude.push_back({"gpu108", 2, "suspect"});
  // First hang excluded gpu108 via escalation? No: first occurrence always retries on the same nodes.
  EXPECT_EQ(DecideAndRecord(first, &history, diagnosis).decision.action, DecisionAction::kRetrySameNodes);
  std::vector<std::string> seven(kEight.begin(), kEight.end() - 1);
  JobFacts second = MakeHungFacts("2", seven, 50);
  // Retry chain continues (overlapping nodes) but nodes differ: consecutive-hang limit applies.
  SweepDecision d = Refine(second, history, diagnosis);
  EXPECT_EQ(d.decision.action, DecisionAction::kNoRetry);
}

TEST(SweepRules, RcclInitFlakeRetriesUntilThirdConsecutiveFlake) {
  SweepHistory history;
  auto flake = [](const std::string& id) {
    JobFacts f = MakeFacts(id, kEight, "mixtral-8x22b", {{"_env_TUNE_PROFILE", "Gco1G"}});
    f.status = JobStatus::kHanging;
    // RCCL init warnings scroll on every rank: nothing localises the flake to one node.
    for (const auto& h : kEight) AddEvent(&f, "nccl", h, h + ":1:1 [0] init.cc:123 NCCL WARN Timeout connecting");
    return f;
  };
  EXPECT_EQ(DecideAndRecord(flake("1"), &history).rule, "rccl-init-flake");
  EXPECT_EQ(history.entries.back().action, DecisionAction::kRetrySameNodes);
  // Second flake recurs on the same nodes; suspects are every node (not localised): no exclusion.
  SweepDecision second = DecideAndRecord(flake("2"), &history);
  EXPECT_EQ(second.decision.action, DecisionAction::kRetrySameNodes);
  SweepDecision third = Refine(flake("3"), history);
  EXPECT_EQ(third.decision.action, DecisionAction::kNoRetry);
}

TEST(SweepRules, DeadlineExceededRetriesThenStopsOnSecondInARow) {
  SweepHistory history;
  auto timeout = [](const std::string& id) {
    JobFacts f = MakeFacts(id, kEight);
    AddSteps(&f, 0, 7);
    AddClass(&f, "python-exception", "gpu101",
             "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: x");
    return f;
  };
  SweepDecision first = DecideAndRecord(timeout("1"), &history);
  EXPECT_EQ(first.rule, "coordination-deadline-exceeded");
  EXPECT_EQ(first.decision.action, DecisionAction::kRetrySameNodes);
  SweepDecision second = Refine(timeout("2"), history);
  EXPECT_EQ(second.decision.action, DecisionAction::kStopSweep);
}

TEST(SweepRules, NicCompletionErrorRetriesSameNodesWithItsOwnLimit) {
  SweepHistory history;
  auto nic = [](const std::string& id) {
    JobFacts f = MakeFacts(id, kEight);
    AddEvent(&f, "nccl", "gpu104", "ionic_comp_msn cqe with error 12");
    return f;
  };
  // xla-tuning/branch docs allow 3 retries for NIC faults (beyond the sweep default of 2).
  for (int i = 1; i <= 3; ++i) {
    SweepDecision d = DecideAndRecord(nic(std::to_string(i)), &history);
    EXPECT_EQ(d.decision.action, DecisionAction::kRetrySameNodes) << "attempt " << i;
    EXPECT_EQ(d.rule, "nic-completion-error");
  }
  EXPECT_EQ(Refine(nic("4"), history).decision.action, DecisionAction::kStopSweep);
}

TEST(SweepRules, CleanupExit143AfterFinalStepIsSuccess) {
  JobFacts f = MakeFacts("9850", kEight);
  AddSteps(&f, 0, 14);
  f.progress.total_steps = 15;
  f.status = JobStatus::kCancelled;
  SetSummary(&f, "FAILED", 143, "CANCELLED (scancel / SIGTERM)");
  for (const auto& h : kEight) AddNodeExit(&f, h, 143);
  SweepDecision d = Refine(f, {}, MakeDiagnosis("unknown", DecisionAction::kRetrySameNodes));
  EXPECT_EQ(d.rule, "cleanup-exit-after-final-step");
  EXPECT_EQ(d.decision.action, DecisionAction::kNone);
  EXPECT_EQ(d.root_cause, "none");
}

TEST(SweepRules, Exit143BeforeFinalStepIsNotSuccess) {
  JobFacts f = MakeFacts("9851", kEight);
  AddSteps(&f, 0, 9);
  f.progress.total_steps = 15;
  f.status = JobStatus::kCancelled;
  SetSummary(&f, "FAILED", 143, "CANCELLED (scancel / SIGTERM)");
  EXPECT_NE(Refine(f).rule, "cleanup-exit-after-final-step");
  EXPECT_EQ(Refine(f, {}, MakeDiagnosis("rccl-hang", DecisionAction::kRetrySameNodes)).decision.action, DecisionAction::kRetrySameNodes);
}

TEST(SweepRules, SoftSuccessFromTriageIsSuccess) {
  JobFacts f = MakeFacts("9852", kEight);
  f.soft_success = true;
  SweepDecision d = Refine(f, {}, MakeDiagnosis("unknown", DecisionAction::kRetrySameNodes));
  EXPECT_EQ(d.decision.action, DecisionAction::kNone);
}

TEST(SweepRules, SingleNodeCrashExcludesThatNode) {
  JobFacts f = MakeFacts("9860", kEight);
  AddSteps(&f, 0, 20);
  AddNodeExit(&f, "gpu105.cluster.example", 1);   // NODE_EXIT prints $(hostname), possibly FQDN
  for (const auto& h : kEight)
    if (h != "gpu105") AddNodeExit(&f, h, 143);
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.rule, "single-node-crash");
  EXPECT_EQ(Hosts(d.decision), std::vector<std::string>{"gpu105"});
}

TEST(SweepRules, AllNodesFailingConsistentlyStopsTheSweep) {
  JobFacts f = MakeFacts("9861", {"n1", "n2"});
  for (const auto& h : f.header.hosts) {
    AddClass(&f, "python-exception", h, "Traceback (most recent call last):");
    AddNodeExit(&f, h, 1);
  }
  SweepDecision d = Refine(f);
  EXPECT_EQ(d.decision.action, DecisionAction::kStopSweep);
  EXPECT_EQ(d.root_cause, "config-error");
}

TEST(SweepRules, HangRefutedByMetricsIsLeftAlone) {
  JobFacts f = MakeHungFacts("1", kEight, 120);
  Diagnosis still_training = MakeDiagnosis("none", DecisionAction::kNone);
  still_training.verdict.source = "playbooks";
  still_training.verdict.confidence = Confidence::kLikely;
  still_training.verdict.refuted = {"hang"};
  SweepDecision d = Refine(f, {}, still_training);
  EXPECT_EQ(d.rule, "");
  EXPECT_EQ(d.decision.action, DecisionAction::kNone);
  // A telemetry-gap verdict of any confidence that carries the refutation stands down the same way.
  Diagnosis gap = still_training;
  gap.verdict.root_cause = "observability-gap";
  gap.verdict.confidence = Confidence::kPossible;
  EXPECT_EQ(Refine(f, {}, gap).decision.action, DecisionAction::kNone);
  // The same verdict without the refutation leaves the hang rule in charge.
  Diagnosis plain_none = still_training;
  plain_none.verdict.refuted.clear();
  EXPECT_EQ(Refine(f, {}, plain_none).decision.action, DecisionAction::kRetrySameNodes);
}

TEST(SweepRules, BrokenTelemetryLeavesTheLogRulesInCharge) {
  JobFacts f = MakeFacts("1", kEight);
  AddSteps(&f, 0, 50);
  for (const auto& h : kEight) AddNodeExit(&f, h, 1);
  Diagnosis gap = MakeDiagnosis("observability-gap", DecisionAction::kNone);
  gap.verdict.source = "playbooks";
  gap.verdict.confidence = Confidence::kLikely;
  SweepDecision d = Refine(f, {}, gap);
  EXPECT_EQ(d.rule, "all-nodes-crash");
  EXPECT_EQ(d.decision.action, DecisionAction::kStopSweep);
}

TEST(SweepRules, NoRuleMatchingPassesThePlaybookDecisionThrough) {
  JobFacts f = MakeFacts("8308", kEight);
  f.status = JobStatus::kCompleted;
  AddSteps(&f, 0, 400);
  SetSummary(&f, "SUCCESS", 0);
  Diagnosis diagnosis = MakeDiagnosis("rdma-link-degradation", DecisionAction::kRetryExcludingNodes);
  diagnosis.decision.exclude = {{"gpu104", 2, "sustained RDMA retransmits"}, {"gpu102", 1, "retry exhaustion"}};
  SweepDecision d = Refine(f, {}, diagnosis);
  EXPECT_EQ(d.rule, "");
  EXPECT_EQ(d.decision.action, DecisionAction::kRetryExcludingNodes);
  // Ordered by priority, 1 first.
  EXPECT_EQ(Hosts(d.decision), (std::vector<std::string>{"gpu102", "gpu104"}));
  EXPECT_EQ(d.root_cause, "rdma-link-degradation");
}

TEST(SweepLimits, PlaybookExclusionBeyondTheSweepBudgetStopsTheSweep) {
  SweepHistory history;
  JobFacts a = MakeFacts("1", kEight);
  AddEvent(&a, "hsa", "gpu101", "HSA_STATUS_ERROR");
  DecideAndRecord(a, &history);
  JobFacts b = MakeFacts("2", kEight, "grok-1", {{"per_device_batch_size", "16"}});
  b.status = JobStatus::kCompleted;
  Diagnosis diagnosis = MakeDiagnosis("rdma-link-degradation", DecisionAction::kRetryExcludingNodes);
  diagnosis.decision.exclude = {{"gpu102", 2, "retx"}, {"gpu103", 2, "retx"}};
  SweepDecision d = Refine(b, history, diagnosis);
  EXPECT_EQ(d.decision.action, DecisionAction::kStopSweep);
  EXPECT_TRUE(d.decision.exclude.empty());
  bool named = false;
  for (const auto& n : d.decision.notes) named = named || n.find("3 nodes excluded") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(SweepLimits, TheLimitThatStoppedTheSweepIsNamedWithItsNumbers) {
  JobFacts f = MakeFacts("2", kEight);
  f.status = JobStatus::kCompleted;
  Diagnosis diagnosis = MakeDiagnosis("rdma-link-degradation", DecisionAction::kRetryExcludingNodes);
  diagnosis.decision.exclude = {{"gpu102", 2, "retx"}, {"gpu103", 2, "retx"}, {"gpu104", 2, "retx"}};
  SweepDecision d = Refine(f, {}, diagnosis);
  ASSERT_EQ(d.decision.action, DecisionAction::kStopSweep);
  const ActionOverride* limit = DecidingLimit(d.decision);
  ASSERT_NE(limit, nullptr);
  EXPECT_EQ(limit->limit, "limits.max_excluded_nodes_per_sweep");
  EXPECT_NE(limit->reason.find("3 nodes excluded"), std::string::npos) << limit->reason;
  EXPECT_NE(limit->reason.find("limit 2"), std::string::npos) << limit->reason;
  EXPECT_NE(PolicyLine(d.decision).find("limits.max_excluded_nodes_per_sweep"), std::string::npos);
}

// Outside a sweep the exclusion budget does not apply, but the report says what a sweep would do.
TEST(SweepLimits, AStandaloneDiagnosisSaysWhatASweepWouldDoWithIt) {
  JobFacts f = MakeFacts("2", kEight);
  f.status = JobStatus::kCompleted;
  Diagnosis diagnosis = MakeDiagnosis("rdma-link-degradation", DecisionAction::kRetryExcludingNodes);
  diagnosis.decision.exclude = {{"gpu102", 2, "retx"}, {"gpu103", 2, "retx"}, {"gpu104", 2, "retx"}};
  auto alone = DecideSweep(testing::SweepRules(), "", SweepContext{}, diagnosis, f);
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_EQ(alone->decision.action, DecisionAction::kRetryExcludingNodes);
  ASSERT_TRUE(alone->decision.in_sweep.has_value());
  EXPECT_EQ(alone->decision.in_sweep->from, DecisionAction::kRetryExcludingNodes);
  EXPECT_EQ(alone->decision.in_sweep->to, DecisionAction::kStopSweep);
  EXPECT_EQ(alone->decision.in_sweep->limit, "limits.max_excluded_nodes_per_sweep");
  EXPECT_NE(PolicyLine(alone->decision).find("in a sweep this would be stop-sweep"), std::string::npos);
  EXPECT_EQ(ToJson(alone->decision)["in_sweep"]["to"], "stop-sweep");
  // Two exclusions fit the budget: nothing to add.
  diagnosis.decision.exclude.pop_back();
  auto fits = DecideSweep(testing::SweepRules(), "", SweepContext{}, diagnosis, f);
  ASSERT_TRUE(fits.ok());
  EXPECT_FALSE(fits->decision.in_sweep.has_value());
  EXPECT_FALSE(ToJson(fits->decision).contains("in_sweep"));
}

TEST(SweepLimits, TwoExclusionsPerSweepAreAllowed) {
  SweepHistory history;
  JobFacts a = MakeFacts("1", kEight);
  AddEvent(&a, "hsa", "gpu101", "HSA_STATUS_ERROR");
  EXPECT_EQ(DecideAndRecord(a, &history).decision.action, DecisionAction::kRetryExcludingNodes);
  JobFacts b = MakeFacts("2", kEight, "grok-1", {{"per_device_batch_size", "16"}});
  Diagnosis diagnosis = MakeDiagnosis("rdma-link-degradation", DecisionAction::kRetryExcludingNodes);
  diagnosis.decision.exclude = {{"gpu102", 1, "retry exhaustion"}};
  b.status = JobStatus::kCompleted;
  EXPECT_EQ(Refine(b, history, diagnosis).decision.action, DecisionAction::kRetryExcludingNodes);
}

TEST(SweepLimits, NoThirdRetryOfTheSameJob) {
  SweepHistory history;
  auto transient = [](const std::string& id) {
    JobFacts f = MakeFacts(id, kEight, "llama2-70b", {{"steps", "15"}});
    f.status = JobStatus::kFailed;
    Diagnosis diagnosis = MakeDiagnosis("heartbeat-false-positive", DecisionAction::kRetryWithChanges);
    diagnosis.decision.changes["jax_distributed_heartbeat_timeout_seconds"] = "14400";
    return std::make_pair(f, diagnosis);
  };
  // retry-with-changes chains through the changed key.
  auto [f1, d1] = transient("1");
  EXPECT_EQ(DecideAndRecord(f1, &history, d1).decision.action, DecisionAction::kRetryWithChanges);
  auto [f2, d2] = transient("2");
  f2.header.passthrough["jax_distributed_heartbeat_timeout_seconds"] = "14400";
  EXPECT_EQ(DecideAndRecord(f2, &history, d2).decision.action, DecisionAction::kRetryWithChanges);
  EXPECT_EQ(history.entries.back().retry_of, std::optional<std::string>("1"));
  auto [f3, d3] = transient("3");
  f3.header.passthrough["jax_distributed_heartbeat_timeout_seconds"] = "14400";
  SweepDecision third = Refine(f3, history, d3);
  EXPECT_EQ(third.decision.action, DecisionAction::kNoRetry);
  EXPECT_TRUE(third.decision.changes.empty());
}

TEST(SweepLimits, DifferentConfigsDoNotShareARetryChain) {
  SweepHistory history;
  JobFacts a = MakeHungFacts("1", kEight, 10, "grok-1", {{"per_device_batch_size", "8"}});
  DecideAndRecord(a, &history);
  JobFacts b = MakeHungFacts("2", kEight, 10, "grok-1", {{"per_device_batch_size", "12"}});
  SweepDecision d = Refine(b, history);
  EXPECT_EQ(d.decision.action, DecisionAction::kRetrySameNodes);
  EXPECT_FALSE(d.retry_of);
}

TEST(SweepLimits, OtherSweepsDoNotCountTowardLimits) {
  SweepHistory history;
  JobFacts a = MakeHungFacts("1", kEight, 10);
  DecideAndRecord(a, &history);
  history.entries.back().sweep = "yesterday";
  JobFacts b = a;
  b.id = "2";
  EXPECT_EQ(Refine(b, history).decision.action, DecisionAction::kRetrySameNodes);
}

TEST(SweepLimits, ModelSweepStopsWhenTwoModelsRegressAgainstBaseline) {
  SweepHistory history;
  for (const std::string model : {"llama2-70b", "grok-1", "mixtral-8x22b"}) {
    JobFacts pass = MakeFacts("b-" + model, kEight, model, {});
    pass.status = JobStatus::kCompleted;
    SetSummary(&pass, "SUCCESS", 0);
    DecideAndRecord(pass, &history, MakeDiagnosis("none", DecisionAction::kNone), false, "baseline");
  }
  JobFacts c1 = MakeFacts("c1", kEight, "grok-1", {});
  AddClass(&c1, "python-exception", "gpu101", "Traceback (most recent call last):");
  EXPECT_EQ(DecideAndRecord(c1, &history, MakeDiagnosis(), false, "candidate").decision.action, DecisionAction::kNone);
  JobFacts c2 = MakeFacts("c2", kEight, "mixtral-8x22b", {});
  c2.status = JobStatus::kFailed;
  AddClass(&c2, "oom-gpu", "gpu101", "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1GiB");
  SweepDecision d = Refine(c2, history, MakeDiagnosis(), false, "candidate");
  EXPECT_EQ(d.decision.action, DecisionAction::kStopSweep);
}

TEST(SweepLimits, ModelSweepFailuresWithoutBaselinePassDoNotStop) {
  SweepHistory history;
  JobFacts c1 = MakeFacts("c1", kEight, "grok-1", {});
  AddClass(&c1, "oom-gpu", "gpu101", "RESOURCE_EXHAUSTED: Out of memory");
  DecideAndRecord(c1, &history, MakeDiagnosis(), false, "candidate");
  JobFacts c2 = MakeFacts("c2", kEight, "mixtral-8x22b", {});
  AddClass(&c2, "oom-gpu", "gpu101", "RESOURCE_EXHAUSTED: Out of memory");
  EXPECT_EQ(Refine(c2, history, MakeDiagnosis(), false, "candidate").decision.action, DecisionAction::kNoRetry);
}

TEST(SweepLimits, ModelSweepBaselineFromAnEarlierSweep) {
  SweepHistory history;
  for (const std::string model : {"grok-1", "kimi-k2-1t"}) {
    JobFacts pass = MakeFacts("old-" + model, kEight, model, {});
    pass.status = JobStatus::kCompleted;
    DecideAndRecord(pass, &history, MakeDiagnosis("none", DecisionAction::kNone));
    history.entries.back().sweep = "last-week";
  }
  JobFacts c1 = MakeFacts("c1", kEight, "grok-1", {});
  AddClass(&c1, "oom-gpu", "gpu101", "RESOURCE_EXHAUSTED: Out of memory");
  DecideAndRecord(c1, &history);
  JobFacts c2 = MakeFacts("c2", kEight, "kimi-k2-1t", {});
  AddClass(&c2, "oom-gpu", "gpu101", "RESOURCE_EXHAUSTED: Out of memory");
  EXPECT_EQ(Refine(c2, history).decision.action, DecisionAction::kStopSweep);
}

TEST(SweepRules, EveryRuleYieldsContractVocabulary) {
  for (const auto& rule : testing::SweepRules().rules) {
    if (!rule.decision.root_cause.empty()) EXPECT_TRUE(IsKnownRootCause(rule.decision.root_cause)) << rule.id;
  }
}

}  // namespace
}  // namespace diagnose
