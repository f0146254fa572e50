#include "engine/verdict/verdict.h"

#include <gtest/gtest.h>

namespace diagnose::verdict {
namespace {

Candidate Make(const std::string& pb, const std::string& cause, const std::string& confidence, std::optional<double> onset,
               int order) {
  Candidate c;
  c.playbook = pb;
  c.rule = "v";
  c.root_cause = cause;
  c.confidence = ParseConfidence(confidence).value();
  c.onset = onset;
  c.playbook_order = order;
  c.summary = cause + " summary";
  c.action = cause == "rccl-hang" ? DecisionAction::kRetrySameNodes : DecisionAction::kRetryWithChanges;
  return c;
}

// A candidate that calls for excluding `exclude`, explaining `explains`.
Candidate Excluding(Candidate c, std::vector<std::string> explains, std::vector<Exclusion> exclude) {
  c.action = DecisionAction::kRetryExcludingNodes;
  c.explains = std::move(explains);
  c.exclude = std::move(exclude);
  return c;
}

TEST(CombineTest, EarliestOnsetWinsAtEqualConfidenceAndTheChainIsOrdered) {
  auto hb = Make("heartbeat-false-positive", "heartbeat-false-positive", "likely", 2000, 0);
  hb.explains = {"heartbeat-timeout"};
  auto hang = Make("rccl-hang", "rccl-hang", "likely", 1000, 1);
  hang.explains = {"hang", "heartbeat-timeout"};
  auto io = Make("checkpoint-interference", "checkpoint-io-stall", "likely", 1500, 2);
  auto out = Combine({hb, hang, io}, JobStatus::kFailed, {"heartbeat-timeout"});
  EXPECT_EQ(out.verdict.root_cause, "rccl-hang");
  EXPECT_EQ(out.verdict.domain, DomainOfRootCause("rccl-hang"));
  EXPECT_EQ(out.decision.action, DecisionAction::kRetrySameNodes);
  ASSERT_EQ(out.causal_chain.size(), 4u);
  EXPECT_EQ(out.causal_chain[0], "rccl-hang (rccl-hang)");
  EXPECT_EQ(out.causal_chain[1], "checkpoint-io-stall (checkpoint-interference)");
  EXPECT_EQ(out.causal_chain[3], "symptom: heartbeat-timeout");
}

TEST(CombineTest, ConfidenceBeatsOnset) {
  auto out = Combine({Make("a", "thermal-throttle", "possible", 10, 0), Make("b", "rdma-link-degradation", "confirmed", 99, 1)},
                     JobStatus::kCompleted, {});
  EXPECT_EQ(out.verdict.root_cause, "rdma-link-degradation");
  EXPECT_EQ(out.verdict.confidence, Confidence::kConfirmed);
}

// Two faults of one slowdown, both established: the one that moved first is the root, however
// much more certain the later one is; without a common symptom, confidence still decides.
TEST(CombineTest, TheEarliestOfTwoEstablishedCausesOfOneSymptomIsTheRoot) {
  auto links = Make("rdma-phase-correlation", "rdma-link-degradation", "likely", 1000, 1);
  auto heat = Make("thermal-throttle", "thermal-throttle", "confirmed", 3000, 0);
  links.explains = heat.explains = {"tgs-degradation"};
  auto out = Combine({heat, links}, JobStatus::kCompleted, {"tgs-degradation"});
  EXPECT_EQ(out.verdict.root_cause, "rdma-link-degradation");
  EXPECT_NE(out.verdict.runner_up.find("2000 s after the winner's, which explains the same symptom"), std::string::npos)
      << out.verdict.runner_up;
  // Only possible: confidence decides, as before.
  auto weak = links;
  weak.confidence = Confidence::kPossible;
  EXPECT_EQ(Combine({heat, weak}, JobStatus::kCompleted, {"tgs-degradation"}).verdict.root_cause, "thermal-throttle");
  // No symptom in common: confidence decides.
  auto elsewhere = links;
  elsewhere.explains = {"nccl-timeout"};
  EXPECT_EQ(Combine({heat, elsewhere}, JobStatus::kCompleted, {"tgs-degradation"}).verdict.root_cause, "thermal-throttle");
}

TEST(CombineTest, BrokenTelemetryNeverHidesAFailureMechanism) {
  // A ghost exporter (likely, early) next to a node death (possible, later): the dead node is the cause.
  auto gap = Make("observability-gaps", "observability-gap", "likely", 100, 0);
  gap.yields = true;
  auto dead = Make("rccl-hang", "gpu-hardware-fault", "possible", 900, 1);
  auto out = Combine({gap, dead}, JobStatus::kCancelled, {"cancelled-after-hang"});
  EXPECT_EQ(out.verdict.root_cause, "gpu-hardware-fault");
  // Alone, the gap is the verdict.
  EXPECT_EQ(Combine({gap}, JobStatus::kFailed, {}).verdict.root_cause, "observability-gap");
}

TEST(CombineTest, NoneNeverHidesAFailure) {
  auto healthy = Make("ckpt", "none", "likely", std::nullopt, 0);
  healthy.notes = {"checkpoint spikes are expected"};
  auto failed = Combine({healthy}, JobStatus::kFailed, {"python-exception"});
  EXPECT_EQ(failed.verdict.root_cause, "unknown");
  EXPECT_EQ(failed.verdict.confidence, Confidence::kInsufficientEvidence);
  EXPECT_NE(failed.verdict.summary.find("python-exception"), std::string::npos);
  EXPECT_EQ(failed.decision.notes.back(), "checkpoint spikes are expected");
  auto ok = Combine({healthy}, JobStatus::kCompleted, {});
  EXPECT_EQ(ok.verdict.root_cause, "none");
  EXPECT_EQ(ok.decision.action, DecisionAction::kNone);
  EXPECT_EQ(Combine({}, JobStatus::kHanging, {}).verdict.root_cause, "unknown");
  // `unknown` is for an unexplained failure or loss: with a symptom it stands...
  EXPECT_EQ(Combine({Make("x", "unknown", "possible", 1, 0)}, JobStatus::kCompleted, {"tgs-degradation"}).verdict.root_cause,
            "unknown");
}

// A loss of throughput no playbook could explain: the verdict says what the playbook that ruled the
// families out saw and what to do next (the clean network playbook's `none` does not hide it), and
// the note names the symptom, not the job's status.
TEST(CombineTest, AnUnexplainedSlowdownCarriesTheSummaryOfThePlaybookThatRuledTheSystemOut) {
  auto unexplained = Make("moe-lb-loss-drift", "unknown", "possible", std::nullopt, 0);
  unexplained.rule = "unexplained_decline_without_lb_loss";
  unexplained.summary = "TGS fell from step 40 with every system family clean: profile the job";
  auto clean = Make("rdma-phase-correlation", "none", "likely", std::nullopt, 1);
  auto out = Combine({clean, unexplained}, JobStatus::kCompleted, {"tgs-degradation"});
  EXPECT_EQ(out.verdict.root_cause, "unknown");
  EXPECT_EQ(out.verdict.confidence, Confidence::kInsufficientEvidence);
  EXPECT_EQ(out.verdict.summary, "The evidence is insufficient to name a cause: " + unexplained.summary);
  EXPECT_EQ(out.verdict.finding, "moe-lb-loss-drift/unexplained_decline_without_lb_loss");
  EXPECT_EQ(out.decision.action, DecisionAction::kNone);
  bool noted = false;
  for (const auto& n : out.decision.notes) noted = noted || n.rfind("unexplained tgs-degradation:", 0) == 0;
  EXPECT_TRUE(noted);
}

// A slowdown triage measured, with only clean playbooks speaking (no `unknown` candidate either):
// the links being clean rules the network out, it does not explain the loss.
TEST(CombineTest, ASlowdownNoCandidateExplainsIsUnknownNeverNone) {
  auto clean = Make("rdma-phase-correlation", "none", "likely", std::nullopt, 0);
  auto out = Combine({clean}, JobStatus::kCompleted, {"tgs-degradation"});
  EXPECT_EQ(out.verdict.root_cause, "unknown");
  EXPECT_EQ(out.verdict.confidence, Confidence::kInsufficientEvidence);
  EXPECT_NE(out.verdict.summary.find("no playbook tied the loss to a cause"), std::string::npos) << out.verdict.summary;
  ASSERT_FALSE(out.decision.notes.empty());
  EXPECT_TRUE(IsUnexplainedNote(out.decision.notes.front())) << out.decision.notes.front();
  EXPECT_FALSE(IsUnexplainedNote("unexplained"));
  // A `none` that accounts for the slowdown (expected effects) still stands.
  clean.explains = {"tgs-degradation"};
  EXPECT_EQ(Combine({clean}, JobStatus::kCompleted, {"tgs-degradation"}).verdict.root_cause, "none");
}

// Issue 12 failure mode 4: a completed job with steady TGS and a harmless anomaly (a host's
// low-level retransmits) was judged `unknown` ("unexplained completed"). Healthy is `none`, and the
// anomaly stays in the notes.
TEST(CombineTest, AHealthyJobWithAnUnexplainedAnomalyIsNoneWithTheAnomalyNoted) {
  auto anomaly = Make("network-health", "unknown", "possible", 1, 0);
  anomaly.summary = "Network health: RDMA anomalies on h3.";
  auto clean = Make("rdma-phase-correlation", "none", "likely", std::nullopt, 1);
  for (const auto& classes : {std::vector<std::string>{}, std::vector<std::string>{"none"}}) {
    auto out = Combine({anomaly, clean}, JobStatus::kCompleted, classes);
    EXPECT_EQ(out.verdict.root_cause, "none");
    EXPECT_EQ(out.verdict.confidence, Confidence::kLikely);
    EXPECT_EQ(out.decision.action, DecisionAction::kNone);
    bool noted = false;
    for (const auto& n : out.decision.notes) noted = noted || n.find("RDMA anomalies on h3") != std::string::npos;
    EXPECT_TRUE(noted);
  }
}

// The same anomaly in a job whose log lost a stretch of steps: the log cannot say whether the
// anomaly cost TGS, so the verdict is `unknown` at insufficient evidence (never "healthy"); a log
// gap alone, with nothing anomalous, stays healthy.
TEST(CombineTest, AnAnomalyBesideALogGapIsInsufficientEvidence) {
  auto anomaly = Make("network-health", "unknown", "possible", 1, 0);
  anomaly.summary = "Network health: RDMA anomalies on h3.";
  auto clean = Make("rdma-phase-correlation", "none", "likely", std::nullopt, 1);
  auto out = Combine({anomaly, clean}, JobStatus::kCompleted, {"log-step-gap"});
  EXPECT_EQ(out.verdict.root_cause, "unknown");
  EXPECT_EQ(out.verdict.confidence, Confidence::kInsufficientEvidence);
  EXPECT_EQ(out.decision.action, DecisionAction::kNone);
  EXPECT_NE(out.verdict.summary.find("RDMA anomalies on h3"), std::string::npos) << out.verdict.summary;
  EXPECT_EQ(Combine({clean}, JobStatus::kCompleted, {"log-step-gap"}).verdict.root_cause, "none");
}

TEST(CombineTest, TheReportSaysWhyTheRunnerUpLost) {
  auto moe = Make("moe-lb-loss-drift", "moe-routing-shift", "confirmed", 1000, 0);
  auto rdma = Make("rdma-phase-correlation", "rdma-link-degradation", "possible", 900, 1);
  auto out = Combine({rdma, moe}, JobStatus::kCompleted, {"tgs-degradation"});
  EXPECT_EQ(out.verdict.root_cause, "moe-routing-shift");
  EXPECT_NE(out.verdict.runner_up.find("rdma-link-degradation"), std::string::npos);
  EXPECT_NE(out.verdict.runner_up.find("lower confidence"), std::string::npos);
  auto later = Combine({Make("a", "thermal-throttle", "likely", 500, 0), Make("b", "host-oom", "likely", 800, 1)},
                       JobStatus::kFailed, {"oom-host"});
  EXPECT_NE(later.verdict.runner_up.find("300 s after"), std::string::npos) << later.verdict.runner_up;
  EXPECT_TRUE(Combine({moe}, JobStatus::kCompleted, {"tgs-degradation"}).verdict.runner_up.empty());
}

TEST(CombineTest, AConfidentNoneThatExplainsThePrimarySymptomRefutesIt) {
  auto still_training = Make("rccl-hang", "none", "likely", std::nullopt, 0);
  still_training.action = DecisionAction::kNone;
  still_training.explains = {"hang"};
  auto out = Combine({still_training}, JobStatus::kHanging, {"hang"});
  EXPECT_EQ(out.verdict.root_cause, "none");
  EXPECT_EQ(out.verdict.confidence, Confidence::kLikely);
  EXPECT_EQ(out.verdict.refuted, (std::vector<std::string>{"hang"}));
  EXPECT_EQ(out.decision.action, DecisionAction::kNone);

  // Only possible: not enough to overrule the log.
  auto weak = still_training;
  weak.confidence = Confidence::kPossible;
  EXPECT_EQ(Combine({weak}, JobStatus::kHanging, {"hang"}).verdict.root_cause, "unknown");
  // Every symptom must be explained, and only a job still alive can be found healthy.
  EXPECT_EQ(Combine({still_training}, JobStatus::kHanging, {"hang", "oom-host"}).verdict.root_cause, "unknown");
  EXPECT_EQ(Combine({still_training}, JobStatus::kFailed, {"python-exception", "hang"}).verdict.root_cause, "unknown");
  EXPECT_EQ(Combine({still_training}, JobStatus::kFailed, {"hang"}).verdict.root_cause, "unknown");
  // A named cause still wins over a refutation, and leaves no refutation behind.
  auto oom = Make("host-oom", "host-oom", "possible", 5, 1);
  EXPECT_EQ(Combine({still_training, oom}, JobStatus::kHanging, {"hang"}).verdict.root_cause, "host-oom");
  EXPECT_TRUE(Combine({still_training, oom}, JobStatus::kHanging, {"hang"}).verdict.refuted.empty());
  // Broken telemetry next to it is the verdict, and the refutation stands.
  auto gap = Make("observability-gaps", "observability-gap", "possible", 5, 1);
  gap.yields = true;
  gap.action = DecisionAction::kNone;
  auto with_gap = Combine({still_training, gap}, JobStatus::kHanging, {"hang"});
  EXPECT_EQ(with_gap.verdict.root_cause, "observability-gap");
  EXPECT_EQ(with_gap.verdict.refuted, (std::vector<std::string>{"hang"}));
}

TEST(CombineTest, ExclusionsOrderedByPriorityThenHost) {
  auto c = Make("rdma", "rdma-link-degradation", "likely", 1, 0);
  c.action = DecisionAction::kRetryExcludingNodes;
  c.exclude = {{"h9", 2, "retx"}, {"h1", 2, "retx"}, {"h5", 1, "retry exhaustion"}};
  auto out = Combine({c}, JobStatus::kCompleted, {});
  ASSERT_EQ(out.decision.exclude.size(), 3u);
  EXPECT_EQ(out.decision.exclude[0].host, "h5");
  EXPECT_EQ(out.decision.exclude[1].host, "h1");
  EXPECT_EQ(out.decision.exclude[2].host, "h9");
}

TEST(CombineTest, ASecondFaultOfAnotherKindDuringTheSameSlowdownHasItsHostsExcludedToo) {
  auto rdma = Excluding(Make("rdma", "rdma-link-degradation", "confirmed", 100, 0), {"tgs-degradation"}, {{"h4", 2, "retx"}});
  auto thermal = Excluding(Make("thermal", "thermal-throttle", "likely", 400, 1), {"tgs-degradation"},
                           {{"h7", 2, "throttling"}, {"h4", 2, "throttling"}});
  // Only possible: named in the notes, nobody excluded for it.
  auto weak = Excluding(Make("gpu", "gpu-hardware-fault", "possible", 50, 2), {"tgs-degradation"}, {{"h9", 1, "ras"}});
  auto out = Combine({thermal, weak, rdma}, JobStatus::kCompleted, {"tgs-degradation"});
  EXPECT_EQ(out.verdict.root_cause, "rdma-link-degradation");
  ASSERT_EQ(out.decision.exclude.size(), 2u);
  EXPECT_EQ(out.decision.exclude[0].host, "h4");
  EXPECT_EQ(out.decision.exclude[0].reason, "retx");   // the root's entry wins
  EXPECT_EQ(out.decision.exclude[1].host, "h7");
  bool noted = false;
  for (const auto& n : out.decision.notes) noted = noted || n.find("also excluded for thermal-throttle") != std::string::npos;
  EXPECT_TRUE(noted);
}

// A link slowed the job (confirmed), then a node died and the job hung until it was cancelled
// (likely): the death ended the job, so it is the root cause, and both hosts are excluded.
TEST(CombineTest, WhatEndedAFailedJobOutranksAnEarlierSlowdownAndBothFaultsAreExcluded) {
  auto rdma = Excluding(Make("rdma", "rdma-link-degradation", "confirmed", 100, 0), {"tgs-degradation"}, {{"h2", 2, "retx"}});
  auto dead = Excluding(Make("rccl-hang", "gpu-hardware-fault", "likely", 900, 1), {"hang", "cancelled-after-hang", "cancelled"},
                        {{"h5", 2, "died"}});
  auto out = Combine({rdma, dead}, JobStatus::kCancelled, {"tgs-degradation", "cancelled"});
  EXPECT_EQ(out.verdict.root_cause, "gpu-hardware-fault");
  ASSERT_EQ(out.decision.exclude.size(), 2u);
  EXPECT_EQ(out.decision.exclude[0].host, "h2");
  EXPECT_EQ(out.decision.exclude[1].host, "h5");
  EXPECT_NE(out.verdict.runner_up.find("not how the job ended"), std::string::npos) << out.verdict.runner_up;

  // The same two findings on a job that completed: the slowdown is all that happened to it.
  EXPECT_EQ(Combine({rdma, dead}, JobStatus::kCompleted, {"tgs-degradation"}).verdict.root_cause, "rdma-link-degradation");
  // A merely possible death does not take the verdict from a confirmed cause.
  dead.confidence = Confidence::kPossible;
  EXPECT_EQ(Combine({rdma, dead}, JobStatus::kCancelled, {"tgs-degradation", "cancelled"}).verdict.root_cause, "rdma-link-degradation");
}

}  // namespace
}  // namespace diagnose::verdict
