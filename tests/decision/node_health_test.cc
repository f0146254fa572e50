// Node perf sweep table and network bisection.
#include <gtest/gtest.h>

#include "engine/decision/node_health.h"
#include "engine/triage/hostlist.h"
#include "tests/decision/decision_test_support.h"

namespace diagnose {
namespace {

NodeRun OneNode(const std::string& job, const std::string& host, double tgs, JobStatus status = JobStatus::kCompleted,
                int last_step = 14) {
  NodeRun run;
  run.job = job;
  run.hosts = {host};
  run.status = status;
  for (int s = 0; s <= last_step; ++s) run.step_tgs.emplace_back(s, s < 5 ? tgs / 3 : tgs);   // warmup is slow
  return run;
}

const NodeHealthRow& RowFor(const NodeHealthTable& t, const std::string& node) {
  for (const auto& r : t.rows)
    if (r.node == node) return r;
  throw std::runtime_error("no row for " + node);
}

TEST(NodeHealth, SkillExampleTable) {
  const auto& th = testing::SweepRules().node_health;
  NodeHealthTable t = BuildNodeHealthTable(
      {OneNode("9701", "node001", 1842), OneNode("9702", "node002", 1838), OneNode("9703", "node003", 1840),
       OneNode("9704", "node004", 1695)},
      th);
  ASSERT_TRUE(t.median_tgs);
  EXPECT_NEAR(*t.median_tgs, 1839, 1e-9);
  EXPECT_EQ(RowFor(t, "node001").status, NodeStatus::kHealthy);
  EXPECT_EQ(RowFor(t, "node004").status, NodeStatus::kDegraded);
  EXPECT_NEAR(*RowFor(t, "node004").delta_pct, -7.83, 0.01);
  EXPECT_EQ(t.exclude, std::vector<std::string>{"node004"});
  EXPECT_EQ(t.healthy, (std::vector<std::string>{"node001", "node002", "node003"}));
}

TEST(NodeHealth, BandsAtTheirEdges) {
  const auto& th = testing::SweepRules().node_health;
  // median 1000 (five nodes); -2% healthy, -3% marginal, -5% degraded.
  NodeHealthTable t = BuildNodeHealthTable({OneNode("1", "a", 1000), OneNode("2", "b", 1000), OneNode("3", "c", 980),
                                            OneNode("4", "d", 970), OneNode("5", "e", 950), OneNode("6", "f", 1010),
                                            OneNode("7", "g", 1000)},
                                           th);
  EXPECT_EQ(*t.median_tgs, 1000);
  EXPECT_EQ(RowFor(t, "c").status, NodeStatus::kHealthy);
  EXPECT_EQ(RowFor(t, "d").status, NodeStatus::kMarginal);
  EXPECT_EQ(RowFor(t, "e").status, NodeStatus::kDegraded);
  EXPECT_EQ(t.monitor, std::vector<std::string>{"d"});
}

TEST(NodeHealth, SteadyWindowIsSteps5To14) {
  NodeRun run = OneNode("1", "a", 1000, JobStatus::kCompleted, 20);
  for (auto& [step, tgs] : run.step_tgs)
    if (step > 14) tgs = 1;   // a tail collapse outside the window does not count
  auto steady = SteadyTgs(run, 5, 14, 5);
  ASSERT_TRUE(steady);
  EXPECT_DOUBLE_EQ(*steady, 1000);
}

TEST(NodeHealth, FailedOrHungNodesAreUnhealthy) {
  const auto& th = testing::SweepRules().node_health;
  NodeHealthTable t = BuildNodeHealthTable({OneNode("1", "a", 1000), OneNode("2", "b", 1000),
                                            OneNode("3", "c", 0, JobStatus::kHanging, 3), OneNode("4", "d", 0, JobStatus::kFailed, -1)},
                                           th);
  EXPECT_EQ(RowFor(t, "c").status, NodeStatus::kUnhealthy);
  EXPECT_EQ(RowFor(t, "d").status, NodeStatus::kUnhealthy);
  EXPECT_EQ(t.exclude, (std::vector<std::string>{"c", "d"}));
}

TEST(NodeHealth, SoftSuccessIsMeasuredNotFailed) {
  const auto& th = testing::SweepRules().node_health;
  NodeRun soft = OneNode("3", "c", 1000, JobStatus::kFailed);
  soft.soft_success = true;
  NodeHealthTable t = BuildNodeHealthTable({OneNode("1", "a", 1000), OneNode("2", "b", 1000), soft}, th);
  EXPECT_EQ(RowFor(t, "c").status, NodeStatus::kHealthy);
}

TEST(NodeHealth, TooFewSteadyStepsIsInsufficientData) {
  const auto& th = testing::SweepRules().node_health;
  NodeHealthTable t = BuildNodeHealthTable({OneNode("1", "a", 1000), OneNode("2", "b", 900, JobStatus::kRunning, 7)}, th);
  EXPECT_EQ(RowFor(t, "b").status, NodeStatus::kInsufficientData);
  EXPECT_TRUE(t.exclude.empty());
}

NodeRun Group(const std::string& name, std::vector<std::string> hosts, double tgs, JobStatus status = JobStatus::kCompleted) {
  NodeRun run;
  run.job = "j-" + name;
  run.name = name;
  run.hosts = std::move(hosts);
  run.status = status;
  run.step_tgs = {{0, tgs}};
  return run;
}

const std::vector<std::string> kAll{"node001", "node002", "node003", "node004",
                                    "node005", "node006", "node007", "node008"};
std::vector<std::string> Slice(size_t a, size_t b) { return {kAll.begin() + a, kAll.begin() + b}; }

TEST(Bisection, DegradedBaselineAsksForHalves) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult r = AnalyzeBisection({Group("all-8", kAll, 1320)}, th, 1393.0);
  EXPECT_EQ(r.degraded_groups, std::vector<std::string>{"all-8"});
  ASSERT_EQ(r.next_splits.size(), 2u);
  EXPECT_EQ(r.next_splits[0], Slice(0, 4));
  EXPECT_EQ(r.next_splits[1], Slice(4, 8));
}

TEST(Bisection, SkillExampleFindsTheBadPair) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult r = AnalyzeBisection({Group("all-8", kAll, 1320), Group("group-a", Slice(0, 4), 1385),
                                        Group("group-b", Slice(4, 8), 1310), Group("pair-b1", Slice(4, 6), 1388),
                                        Group("pair-b2", Slice(6, 8), 1295)},
                                       th, 1393.0);
  EXPECT_EQ(r.degraded_groups, (std::vector<std::string>{"all-8", "group-b", "pair-b2"}));
  EXPECT_EQ(r.bad_pair, (std::vector<std::string>{"node007", "node008"}));
  EXPECT_TRUE(r.next_splits.empty());
  EXPECT_NE(r.conclusion.find("node007"), std::string::npos);
}

TEST(Bisection, ExpectedDefaultsToTheBestGroup) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult r = AnalyzeBisection({Group("a", Slice(0, 4), 1385), Group("b", Slice(4, 8), 1310)}, th, std::nullopt);
  EXPECT_EQ(r.expected_tgs, 1385);
  EXPECT_EQ(r.degraded_groups, std::vector<std::string>{"b"});
}

TEST(Bisection, OneDegradedHalfIsBisectedAgain) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult r = AnalyzeBisection(
      {Group("all-8", kAll, 1320), Group("a", Slice(0, 4), 1385), Group("b", Slice(4, 8), 1310)}, th, std::nullopt);
  ASSERT_EQ(r.next_splits.size(), 2u);
  EXPECT_EQ(r.next_splits[0], Slice(4, 6));
  EXPECT_EQ(r.next_splits[1], Slice(6, 8));
}

TEST(Bisection, HealthyHalvesMeanCrossGroupLinkAndMixedGroupsNext) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult r = AnalyzeBisection(
      {Group("all-8", kAll, 1300), Group("a", Slice(0, 4), 1390), Group("b", Slice(4, 8), 1388)}, th, std::nullopt);
  EXPECT_NE(r.conclusion.find("cross-group"), std::string::npos);
  ASSERT_EQ(r.next_splits.size(), 2u);
  EXPECT_EQ(r.next_splits[0], (std::vector<std::string>{"node001", "node002", "node005", "node006"}));
}

TEST(Bisection, BothHalvesDegradedEscalates) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult r = AnalyzeBisection(
      {Group("all-8", kAll, 1300), Group("a", Slice(0, 4), 1290), Group("b", Slice(4, 8), 1280)}, th, 1390.0);
  EXPECT_NE(r.conclusion.find("HW team"), std::string::npos);
}

TEST(Bisection, FailedGroupIsBad) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult r = AnalyzeBisection({Group("a", Slice(0, 2), 1390), Group("b", Slice(2, 4), 0, JobStatus::kHanging)}, th,
                                       std::nullopt);
  EXPECT_EQ(r.bad_pair, Slice(2, 4));
}

NodeRun ModelGroup(const std::string& job, const std::string& model, std::vector<std::string> hosts, double tgs,
                   JobStatus status = JobStatus::kCompleted) {
  NodeRun run = Group("JAX-" + model, std::move(hosts), tgs, status);
  run.job = job;
  run.model = model;
  run.healthy_tgs = tgs;
  run.last_step = 71;
  return run;
}

// A job whose throughput fell mid-run is measured at its healthy level, like `diagnose` reports it,
// and a lone group is not "compared" with itself.
TEST(Bisection, AGroupIsMeasuredAtItsHealthyLevelAndNotComparedWithItself) {
  const auto& th = testing::SweepRules().bisection;
  NodeRun slow = ModelGroup("8308", "mixtral-8x22b", Slice(0, 4), 3293);
  slow.step_tgs = {{0, 3293}, {100, 2520}, {200, 2520}};   // whole-run mean well below the healthy level
  slow.steady_tgs = 3293;
  slow.recent_tgs = 2520;
  slow.degradation_onset_step = 97;
  BisectionResult r = AnalyzeBisection({slow}, th, std::nullopt);
  ASSERT_EQ(r.rows.size(), 1u);
  ASSERT_TRUE(r.rows[0].tgs);
  EXPECT_NEAR(*r.rows[0].tgs, 3293, 1e-9);
  EXPECT_FALSE(r.rows[0].delta_pct.has_value());
  EXPECT_EQ(r.rows[0].status, GroupStatus::kDegraded);   // its own drop, said in its reason
  EXPECT_NE(r.rows[0].reason.find("23.5%"), std::string::npos) << r.rows[0].reason;
}

TEST(Bisection, AFailedGroupKeepsTheThroughputItMeasured) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult r = AnalyzeBisection({ModelGroup("8308", "mixtral-8x22b", Slice(0, 4), 3293),
                                        ModelGroup("8043", "mixtral-8x22b", Slice(4, 8), 3242, JobStatus::kFailed)},
                                       th, std::nullopt);
  const GroupRow& failed = r.rows[1];
  EXPECT_EQ(failed.job, "8043");
  EXPECT_EQ(failed.status, GroupStatus::kFailed);
  ASSERT_TRUE(failed.tgs);
  EXPECT_NEAR(*failed.tgs, 3242, 1e-9);
  EXPECT_EQ(failed.reason.find("did not complete a measured step"), std::string::npos) << failed.reason;
  EXPECT_NE(failed.reason.find("step 71"), std::string::npos) << failed.reason;
  // Two jobs of one name are told apart by their ids.
  EXPECT_NE(r.rows[0].name, r.rows[1].name);
  EXPECT_NE(r.rows[0].name.find("8308"), std::string::npos);
}

TEST(Bisection, EachModelHasItsOwnExpectationAndTheDifferenceIsSaid) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult r = AnalyzeBisection({ModelGroup("1", "mixtral-8x22b", Slice(0, 4), 3290),
                                        ModelGroup("2", "mixtral-8x22b", Slice(4, 8), 3280),
                                        ModelGroup("3", "llama2-70b", Slice(0, 2), 1340),
                                        ModelGroup("4", "llama2-70b", Slice(2, 4), 1338)},
                                       th, std::nullopt);
  for (const auto& row : r.rows) EXPECT_EQ(row.status, GroupStatus::kHealthy) << row.name << ": " << row.reason;
  EXPECT_EQ(r.expected_by_model.at("llama2-70b"), 1340);
  EXPECT_EQ(r.expected_by_model.at("mixtral-8x22b"), 3290);
  EXPECT_FALSE(r.expected_tgs.has_value());
  bool warned = false;
  for (const auto& n : r.notes) warned = warned || n.find("different models") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(NodeHealth, EachModelHasItsOwnMedian) {
  const auto& th = testing::SweepRules().node_health;
  std::vector<NodeRun> runs{OneNode("1", "a", 1840), OneNode("2", "b", 1838), OneNode("3", "c", 1842),
                            OneNode("4", "d", 900), OneNode("5", "e", 905), OneNode("6", "f", 902)};
  for (size_t i = 0; i < runs.size(); ++i) runs[i].model = i < 3 ? "llama2-70b" : "mixtral-8x22b";
  NodeHealthTable t = BuildNodeHealthTable(runs, th);
  for (const auto& row : t.rows) EXPECT_EQ(row.status, NodeStatus::kHealthy) << row.node;
  EXPECT_TRUE(t.exclude.empty());
  EXPECT_EQ(t.median_by_model.size(), 2u);
}

TEST(Bisection, AllHealthy) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult r = AnalyzeBisection({Group("all", kAll, 1390)}, th, 1392.0);
  EXPECT_TRUE(r.degraded_groups.empty());
  EXPECT_NE(r.conclusion.find("no network issue"), std::string::npos);
}

TEST(NodeHealthDecision, ExcludesUnhealthyFirstThenDegraded) {
  const auto& th = testing::SweepRules().node_health;
  NodeHealthTable t = BuildNodeHealthTable({OneNode("1", "a", 1000), OneNode("2", "b", 1000), OneNode("3", "c", 900),
                                            OneNode("4", "d", 0, JobStatus::kHanging, 2), OneNode("5", "e", 970)},
                                           th);
  Decision d = DecisionFromNodeHealth(t);
  EXPECT_EQ(d.action, DecisionAction::kRetryExcludingNodes);
  ASSERT_EQ(d.exclude.size(), 2u);
  EXPECT_EQ(d.exclude[0].host, "d");
  EXPECT_EQ(d.exclude[0].priority, 1);
  EXPECT_EQ(d.exclude[1].host, "c");
  EXPECT_EQ(d.exclude[1].priority, 2);
  NodeHealthTable clean = BuildNodeHealthTable({OneNode("1", "a", 1000), OneNode("2", "b", 1001)}, th);
  EXPECT_EQ(DecisionFromNodeHealth(clean).action, DecisionAction::kNone);
}

TEST(BisectionDecision, BadPairExcludedNextSplitNoted) {
  const auto& th = testing::SweepRules().bisection;
  BisectionResult pair = AnalyzeBisection({Group("a", Slice(0, 2), 1390), Group("b", Slice(2, 4), 1200)}, th, std::nullopt);
  Decision d = DecisionFromBisection(pair);
  EXPECT_EQ(d.action, DecisionAction::kRetryExcludingNodes);
  EXPECT_EQ(d.exclude.size(), 2u);
  BisectionResult first = AnalyzeBisection({Group("all-8", kAll, 1320)}, th, 1393.0);
  Decision next = DecisionFromBisection(first);
  EXPECT_EQ(next.action, DecisionAction::kNone);
  ASSERT_FALSE(next.notes.empty());
  EXPECT_NE(next.notes[0].find("node[001-004]"), std::string::npos) << next.notes[0];
}

TEST(Hostlist, Compress) {
  EXPECT_EQ(CompressHostlist({"chi2822", "chi2823", "chi2824", "chi2830"}), "chi[2822-2824,2830]");
  EXPECT_EQ(CompressHostlist({"node007", "node008"}), "node[007-008]");
  EXPECT_EQ(CompressHostlist({"login"}), "login");
}

}  // namespace
}  // namespace diagnose
