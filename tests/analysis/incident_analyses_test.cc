#include "engine/analysis/incident_analyses.h"

#include <gtest/gtest.h>

namespace diagnose::analysis {
namespace {

// Steps every 30 s from t0; TGS `healthy` except in [bad_first, bad_last] (degraded) and, when
// recover_late > 0, for that many extra steps after the bad range.
Json Steps(int n, int bad_first, int bad_last, int recover_late, Json* step_times) {
  Json steps = Json::array();
  *step_times = Json::array();
  for (int s = 0; s < n; ++s) {
    double tgs = (s >= bad_first && s <= bad_last + recover_late) ? 2600 : 3290;
    steps.push_back({{"step", s}, {"tokens_per_sec_per_device", tgs + (s % 3)}});
    step_times->push_back({s, 1000.0 + 30.0 * s});
  }
  return steps;
}

AnalysisInput RecoveryInput(const Json& bursts, const Json& steps, const Json& step_times) {
  AnalysisInput in;
  in.input = bursts;
  in.baseline_input = steps;
  in.step_times = step_times;
  in.args = {{"max_steps", 2}, {"tolerance_pct", 3}, {"smear", 120}, {"hold_steps", 3},
             {"reference_steps", 10}, {"end_margin", 300}, {"y", "tokens_per_sec_per_device"}};
  return in;
}

double T(int step) { return 1000.0 + 30.0 * step; }

// A healthy job of `n` steps at 3000 TGS with uniform step noise of +-`width`/2 (an LCG from
// `seed`, so the steps are the same on every platform).
Json NoisySteps(int n, uint64_t seed, double width, Json* step_times) {
  Json steps = Json::array();
  *step_times = Json::array();
  for (int s = 0; s < n; ++s) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(seed >> 11) / 9007199254740992.0;   // [0, 1)
    steps.push_back({{"step", s}, {"tokens_per_sec_per_device", 3000 * (1 + width * (u - 0.5))}});
    step_times->push_back({s, T(s)});
  }
  return steps;
}

TEST(RecoveryAfterBursts, RecoversWithinTwoStepsOfTheBurstEnd) {
  Json st;
  Json steps = Steps(200, 50, 100, 0, &st);
  // Measured through rate([2m]): the burst ends ~2 minutes after the last retransmit.
  Json bursts = {{"hostA", Json::array({{{"start", T(50) - 30}, {"end", T(100) + 110}}})}};
  auto r = RecoveryAfterBursts(RecoveryInput(bursts, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["recovered"], Json::array({"hostA"}));
  EXPECT_EQ((*r)["details"]["hostA"][0]["recovery_step"], 101);
  EXPECT_LE((*r)["details"]["hostA"][0]["lag_steps"].get<double>(), 2);
}

TEST(RecoveryAfterBursts, FailsWhenTgsStaysLowLongAfterTheBurst) {
  Json st;
  Json steps = Steps(200, 50, 100, 30, &st);   // TGS recovers 30 steps after the burst: not the cause
  Json bursts = {{"hostA", Json::array({{{"start", T(50) - 30}, {"end", T(100) + 110}}})}};
  auto r = RecoveryAfterBursts(RecoveryInput(bursts, steps, st));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["failed"], Json::array({"hostA"}));
  EXPECT_TRUE((*r)["recovered"].empty());
}

TEST(RecoveryAfterBursts, FailsWhenTgsRecoveredLongBeforeTheBurstEnded) {
  Json st;
  Json steps = Steps(200, 50, 70, 0, &st);
  Json bursts = {{"hostA", Json::array({{{"start", T(50) - 30}, {"end", T(120)}}})}};
  auto r = RecoveryAfterBursts(RecoveryInput(bursts, steps, st));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["failed"], Json::array({"hostA"}));
}

TEST(RecoveryAfterBursts, BurstUntilTheEndIsOngoingAndHarmlessBurstHasNoEffect) {
  Json st;
  Json steps = Steps(200, 150, 199, 0, &st);
  Json bursts = {{"hostB", Json::array({{{"start", T(150) - 30}, {"end", T(199)}}})},
                 {"hostC", Json::array({{{"start", T(20)}, {"end", T(40)}}})}};
  auto r = RecoveryAfterBursts(RecoveryInput(bursts, steps, st));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["ongoing"], Json::array({"hostB"}));
  EXPECT_EQ((*r)["no_effect"], Json::array({"hostC"}));
}

// A host whose first burst began before the first step (untested) and whose later burst fell in a
// stretch TGS was already degraded in (no visible effect) is not shown harmless: "no effect" needs
// every burst tested.
TEST(RecoveryAfterBursts, NoEffectOnlyWhenEveryBurstWasTested) {
  Json st;
  Json steps = Steps(200, 0, 120, 0, &st);
  Json bursts = {{"hostD", Json::array({{{"start", T(0) - 300}, {"end", T(60)}}, {{"start", T(80)}, {"end", T(110)}}})}};
  auto r = RecoveryAfterBursts(RecoveryInput(bursts, steps, st));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)["no_effect"].empty());
  EXPECT_EQ((*r)["untested"], Json::array({"hostD"}));
}

// A link that fails while TGS is already down from another host's fault cannot move it: its burst
// is untested and named `masked`, not cleared as harmless; the same burst on healthy TGS is.
TEST(RecoveryAfterBursts, ABurstThatBeganUnderAnotherSlowdownIsMaskedNotHarmless) {
  Json st;
  Json steps = Steps(200, 50, 180, 0, &st);   // hostA's fault slows steps 50-180
  Json bursts = {{"hostA", Json::array({{{"start", T(50) - 30}, {"end", T(180) + 110}}})},
                 {"hostM", Json::array({{{"start", T(90)}, {"end", T(170)}}})},    // inside hostA's slowdown
                 {"hostH", Json::array({{{"start", T(10)}, {"end", T(30)}}})}};    // on healthy TGS
  auto r = RecoveryAfterBursts(RecoveryInput(bursts, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["masked"], Json::array({"hostM"}));
  EXPECT_EQ((*r)["untested"], Json::array({"hostM"}));
  EXPECT_EQ((*r)["no_effect"], Json::array({"hostH"}));
  EXPECT_EQ((*r)["recovered"], Json::array({"hostA"}));
}

// The same when the slowdown covers most of the job (steps 17-199 of 200: the 80th percentile of
// the window medians is the slow level): the healthy level is the one the first steps held.
TEST(RecoveryAfterBursts, ABurstUnderASlowdownOfMostOfTheJobIsStillMasked) {
  Json st;
  Json steps = Steps(200, 17, 199, 0, &st);
  Json bursts = {{"hostA", Json::array({{{"start", T(17) - 30}, {"end", T(199) + 60}}})},
                 {"hostM", Json::array({{{"start", T(40)}, {"end", T(170)}}})}};
  auto r = RecoveryAfterBursts(RecoveryInput(bursts, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["masked"], Json::array({"hostM"})) << r->dump();
  EXPECT_TRUE((*r)["no_effect"].empty());
}

// A noisy healthy job (5 % step noise, 1,000 steps) has a few windows well above its 80th
// percentile by chance: they are no level it held, so a harmless burst stays "no effect".
TEST(RecoveryAfterBursts, AFewLuckyWindowsOfANoisyJobDoNotRaiseItsHealthyLevel) {
  Json st;
  Json steps = NoisySteps(1000, 987654321, 0.173, &st);   // sd 5 %
  Json bursts = {{"hostH", Json::array({{{"start", T(500)}, {"end", T(560)}}})}};
  auto r = RecoveryAfterBursts(RecoveryInput(bursts, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE((*r)["masked"].empty()) << r->dump();
}

// Step noise of 3 % (as tolerance_pct): a harmless burst on a noisy but healthy job stays "no
// effect"; the healthy level is not the highest of hundreds of noisy window medians.
TEST(RecoveryAfterBursts, NoisyHealthyTgsDoesNotMaskAHarmlessBurst) {
  Json st;
  Json steps = NoisySteps(600, 12345, 0.104, &st);   // sd 3 %
  Json bursts = {{"hostH", Json::array({{{"start", T(300)}, {"end", T(360)}}})}};
  auto r = RecoveryAfterBursts(RecoveryInput(bursts, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["no_effect"], Json::array({"hostH"})) << r->dump();
  EXPECT_TRUE((*r)["masked"].empty());
}

TEST(RecoveryAfterBursts, NeedsAStepTimeMap) {
  Json st;
  Json steps = Steps(20, 5, 10, 0, &st);
  auto in = RecoveryInput({{"h", Json::array()}}, steps, Json());
  auto r = RecoveryAfterBursts(in);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  in.input = Json::array();
  EXPECT_EQ(RecoveryAfterBursts(in).status().code(), StatusCode::kInvalidArgument);
}

TEST(TaskNeighbours, PicksTheNonAccusedTaskBetweenOrNextToAccusedOnes) {
  AnalysisInput in;
  Json hosts = Json::array();
  for (int i = 0; i < 24; ++i) hosts.push_back("n" + std::to_string(i));
  in.input = Json::array({Json::array({10, 8}), hosts});
  auto r = TaskNeighbours(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["task"], 9);
  EXPECT_EQ((*r)["host"], "n9");

  in.input = Json::array({Json::array({0, 1}), hosts});
  r = TaskNeighbours(in);
  EXPECT_EQ((*r)["task"], 2);

  in.input = Json::array({Json::array({23}), hosts});
  r = TaskNeighbours(in);
  EXPECT_EQ((*r)["task"], 22);
}

TEST(TaskNeighbours, NoNeighbourWhenEveryTaskIsAccusedAndBadInputIsAnError) {
  AnalysisInput in;
  in.input = Json::array({Json::array({0, 1}), Json::array({"a", "b"})});
  auto r = TaskNeighbours(in);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)["host"].is_null());
  in.input = Json::array({Json::array({0})});
  EXPECT_FALSE(TaskNeighbours(in).ok());
}

TEST(ConfigDiff, ReportsChangedAddedAndRemovedKeys) {
  AnalysisInput in;
  in.input = {{"steps", "121"}, {"enable_single_replica_ckpt_restoring", "true"}, {"per_device_batch_size", "12"}};
  in.baseline_input = {{"steps", "120"}, {"per_device_batch_size", "12"}, {"run_name", "a"}};
  auto r = ConfigDiff(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["changed"]["steps"], Json::array({"121", "120"}));
  EXPECT_EQ((*r)["only_subject"]["enable_single_replica_ckpt_restoring"], "true");
  EXPECT_EQ((*r)["only_baseline"]["run_name"], "a");
  EXPECT_EQ((*r)["keys"], Json::array({"enable_single_replica_ckpt_restoring", "run_name", "steps"}));
  EXPECT_EQ((*r)["same"], 1);
  in.baseline_input = nullptr;
  EXPECT_FALSE(ConfigDiff(in).ok());
}

TEST(IncidentAnalyses, AreRegistered) {
  EXPECT_NE(FindAnalysis("config_diff"), nullptr);
  EXPECT_NE(FindAnalysis("recovery_after_bursts"), nullptr);
  EXPECT_NE(FindAnalysis("task_neighbours"), nullptr);
}

}  // namespace
}  // namespace diagnose::analysis
