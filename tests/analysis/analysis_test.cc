#include "engine/analysis/analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace diagnose::analysis {
namespace {

Json Args(const std::string& name, Json overrides = Json::object()) {
  Json args = Json::object();
  for (const auto& [k, spec] : FindAnalysis(name)->args) args[k] = spec.default_value;
  for (const auto& [k, v] : overrides.items()) args[k] = v;
  return args;
}

// Deterministic noise, so tests never depend on a random seed.
double Noise(int i, double amplitude) { return amplitude * std::sin(i * 12.9898) * 0.5; }

// Step -> epoch as it was placed before the map was read once per analysis: sorted afresh and
// scanned from the start for every step.
bool ScannedStepTime(std::vector<std::pair<double, double>> pts, double step, double* epoch) {
  if (pts.empty()) return false;
  std::stable_sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (pts.size() == 1) {
    *epoch = pts[0].second;
    return true;
  }
  size_t i = 1;
  while (i + 1 < pts.size() && pts[i].first < step) ++i;
  const auto& [ax, ay] = pts[i - 1];
  const auto& [bx, by] = pts[i];
  *epoch = bx == ax ? ay : ay + (step - ax) * (by - ay) / (bx - ax);
  return true;
}

TEST(StepClockTest, PlacesEveryStepAsAScanOfTheWholeMapWould) {
  // Unsorted, a repeated step (a restart logs it twice at one time), an object pair, a malformed one.
  const std::vector<std::pair<double, double>> pairs = {{40, 1400}, {0, 1000}, {10, 1100}, {20, 1150}, {20, 1150}, {30, 1390}};
  Json map = Json::array();
  for (const auto& [step, t] : pairs) map.push_back({step, t});
  map.push_back({{"step", 50}, {"time", 1500}});
  map.push_back("not a pair");
  std::vector<std::pair<double, double>> all = pairs;
  all.emplace_back(50, 1500);
  const StepClock clock(map);
  for (double step : {-10.0, 0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 45.0, 50.0, 75.0, std::nan("")}) {
    double want = 0, got = 0, one_off = 0;
    ASSERT_TRUE(ScannedStepTime(all, step, &want));
    ASSERT_TRUE(clock.TimeOf(step, &got)) << step;
    ASSERT_TRUE(StepToTime(map, step, &one_off));
    if (std::isnan(step)) {
      EXPECT_TRUE(std::isnan(got) == std::isnan(want) && std::isnan(one_off) == std::isnan(want));
      continue;
    }
    EXPECT_DOUBLE_EQ(got, want) << "step " << step;
    EXPECT_DOUBLE_EQ(one_off, want) << "step " << step;
  }
  double t = 0;
  EXPECT_TRUE(clock.TimeOf(15, &t));
  EXPECT_DOUBLE_EQ(t, 1125);   // between steps 10 and 20
  EXPECT_TRUE(clock.TimeOf(60, &t));
  EXPECT_DOUBLE_EQ(t, 1600);   // past the last pair, extrapolated along the last segment
  EXPECT_FALSE(StepClock(Json::array()).TimeOf(1, &t));
  EXPECT_FALSE(StepClock(Json()).TimeOf(1, &t));
  EXPECT_TRUE(StepClock(Json::array({{7, 700}})).TimeOf(100, &t));
  EXPECT_DOUBLE_EQ(t, 700);
  EXPECT_TRUE(StepClock(Json::array({{0, 0}, {10, 100}})).TimeOf(-5, &t));
  EXPECT_DOUBLE_EQ(t, -50);
}

TEST(ChangePointsTest, FindsPhasesAndIgnoresSpikesAndNoise) {
  // TGS by step: healthy, phase 1 (-20%), recovered, phase 2 (-23%), plus one checkpoint spike.
  Json steps = Json::array();
  for (int s = 0; s < 400; ++s) {
    double tgs = s < 97 ? 3293 : s < 217 ? 2620 : s < 251 ? 3288 : 2520;
    if (s == 200) tgs = 300;   // one-step checkpoint dip
    steps.push_back({{"step", s}, {"tokens_per_sec_per_device", tgs + Noise(s, 30)}});
  }
  AnalysisInput in;
  in.input = steps;
  in.args = Args("change_points", {{"x", "step"}, {"y", "tokens_per_sec_per_device"}});
  auto r = ChangePoints(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)["segments"].size(), 4u) << r->dump(2);
  EXPECT_EQ((*r)["change_points"], Json({97, 217, 251}));
  EXPECT_NEAR((*r)["segments"][1]["mean"].get<double>(), 2620, 2620 * 0.02);
  EXPECT_EQ((*r)["direction"], "down");
}

TEST(ChangePointsTest, ARangeAnswerWithoutSeriesIsNoDataNotAnError) {
  // A dense job's MoE load-balance loss: the range query answers no series. The rule is skipped
  // (FailedPrecondition) with the reason, not reported as an error; two series stay an error.
  AnalysisInput in;
  in.input = {{"series", Json::object()}};
  in.args = Args("change_points");
  auto none = ChangePoints(in);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition) << none.status().message();
  in.input = {{"a", Json::array({{0, 1}})}, {"b", Json::array({{0, 1}})}};
  auto two = ChangePoints(in);
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), StatusCode::kInvalidArgument);
}

TEST(ChangePointsTest, StableSeriesHasNoChange) {
  Json pts = Json::array();
  for (int i = 0; i < 200; ++i) pts.push_back({i, 100 + Noise(i, 4)});
  AnalysisInput in;
  in.input = {{"only-series", pts}};
  in.args = Args("change_points");
  auto r = ChangePoints(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["count"], 0);
  EXPECT_TRUE((*r)["first_change"].is_null());
}

TEST(PeerOutliersTest, MedianMadFlagsOnlyTheOddHost) {
  AnalysisInput in;
  in.input = {{"h1/ionic_0", 0.0}, {"h2/ionic_0", 0.1}, {"h3/ionic_0", 0.0}, {"h4/ionic_0", 0.05}, {"h5/ionic_1", 55.0}};
  in.args = Args("peer_outliers", {{"min_abs_deviation", 1}});
  auto r = PeerOutliers(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["hosts"], Json({"h5"}));
  in.args["direction"] = "low";
  EXPECT_TRUE((*PeerOutliers(in))["hosts"].empty());
}

TEST(EarliestAnomalyTest, TheFamilyThatMovedFirstWins) {
  Json tgs = Json::array(), lb = Json::array(), power = Json::array();
  for (int i = 0; i < 100; ++i) {
    double t = 1000 + i * 30;
    tgs.push_back({t, (i < 60 ? 3290 : 3290 - (i - 60) * 10) + Noise(i, 5)});
    lb.push_back({t, (i < 45 ? 0.01 : 0.05) + Noise(i, 0.001)});
    power.push_back({t, 916 + Noise(i, 6)});
  }
  AnalysisInput in;
  in.input = {{"tgs", {{"series", {{"", tgs}}}}}, {"moe_lb_loss", {{"series", {{"", lb}}}}}, {"power", {{"h1", power}}}};
  in.args = Args("earliest_anomaly");
  auto r = EarliestAnomaly(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["first"], "moe_lb_loss") << r->dump(2);
  EXPECT_EQ((*r)["first_onset"], 1000 + 45 * 30);
  EXPECT_EQ((*r)["order"], Json({"moe_lb_loss", "tgs"}));
  EXPECT_EQ((*r)["clean"], Json({"power"}));
}

TEST(AlignByStepTest, ComparesOverlappingStepsOnly) {
  Json a = Json::array(), b = Json::array();
  for (int s = 0; s < 300; ++s) a.push_back({{"step", s}, {"tokens_per_sec_per_device", 3295.0}});
  for (int s = 101; s < 250; ++s) b.push_back({{"step", s}, {"tokens_per_sec_per_device", 3261.0}});
  AnalysisInput in;
  in.input = b;
  in.baseline_input = a;
  in.args = Args("align_by_step");
  auto r = AlignByStep(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["overlap"]["first"], 106);
  EXPECT_EQ((*r)["overlap"]["last"], 249);
  EXPECT_NEAR((*r)["delta_pct"].get<double>(), -1.03, 0.01);
}

// A baseline cancelled 5 steps after the step the restore started from: the overlap holds no
// steady step, so the runs' own steady states are compared, by median so checkpoint dips do not count.
TEST(AlignByStepTest, ShortOverlapComparesTheRunsSteadyStates) {
  Json baseline = Json::array(), subject = Json::array();
  for (int s = 0; s <= 25; ++s)
    baseline.push_back({{"step", s}, {"tokens_per_sec_per_device", s == 21 ? 90.0 : 1340.0 + (s % 3)}});
  for (int s = 21; s <= 100; ++s)
    subject.push_back({{"step", s}, {"tokens_per_sec_per_device", s % 20 == 1 ? 90.0 : 1324.0 + (s % 3)}});
  AnalysisInput in;
  in.input = subject;
  in.baseline_input = baseline;
  in.args = Args("align_by_step");
  EXPECT_TRUE((*AlignByStep(in))["delta_pct"].is_null());   // the old comparison finds nothing
  in.args = Args("align_by_step", {{"min_overlap", 10}, {"center", "median"}});
  auto r = AlignByStep(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["basis"], "steady-states") << r->dump(2);
  EXPECT_NEAR((*r)["delta_pct"].get<double>(), -1.19, 0.05) << r->dump(2);
}

TEST(SteadyLevelTest, MedianAndNoiseOutsideTheGivenWindows) {
  Json series = {{"h1", Json::array()}, {"h2", Json::array()}};
  for (int i = 0; i < 40; ++i) {
    const double t = i * 30.0;
    const bool saving = t >= 600 && t <= 900;
    series["h1"].push_back({t, saving ? 4.0 : 18.0 + (i % 2)});   // drops while checkpointing
    series["h2"].push_back({t, 18.0 + (i % 3)});
  }
  AnalysisInput in;
  in.input = series;
  in.windows = Json::array({{{"start", 600}, {"end", 900}}});
  in.args = Args("steady_level");
  auto r = SteadyLevel(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["count"], 2);
  EXPECT_EQ((*r)["excluded_points"], 22);
  EXPECT_NEAR((*r)["values"]["h1"].get<double>(), 18.5, 0.51);
  EXPECT_GT((*r)["spread"]["h2"].get<double>(), 0);
  in.windows = "not a list";
  EXPECT_FALSE(SteadyLevel(in).ok());
}

// A short baseline cancelled right after a save lies wholly inside its checkpoint window: its level
// comes from every point (named in `unwindowed`) rather than from none.
TEST(SteadyLevelTest, ASeriesWhollyInsideTheWindowsKeepsALevelFromAllItsPoints) {
  Json series = {{"short", Json::array()}, {"long", Json::array()}};
  for (int i = 0; i < 6; ++i) series["short"].push_back({600.0 + i * 30, 18.0});
  for (int i = 0; i < 40; ++i) series["long"].push_back({i * 30.0, 20.0});
  AnalysisInput in;
  in.input = series;
  in.windows = Json::array({{{"start", 590}, {"end", 900}}});
  in.args = Args("steady_level");
  auto r = SteadyLevel(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["count"], 2);
  EXPECT_EQ((*r)["values"]["short"], 18.0);
  EXPECT_EQ((*r)["unwindowed"], Json::array({"short"}));
  EXPECT_EQ((*r)["values"]["long"], 20.0);
  EXPECT_EQ((*r)["n"]["long"], 29);   // 11 points of the long series still left out
}

TEST(FlatlineTest, GhostSeriesAreFlat) {
  Json series = {{"h1", Json::array()}, {"h2", Json::array()}};
  for (int i = 0; i < 20; ++i) {
    series["h1"].push_back({i * 10, 0.113});
    series["h2"].push_back({i * 10, 0.1 + (i % 3) * 0.01});
  }
  AnalysisInput in;
  in.input = series;
  in.args = Args("flatline");
  auto r = Flatline(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["hosts"], Json({"h1"}));
  EXPECT_EQ((*r)["fraction"], 0.5);
}

TEST(BurstPhaseCorrelationTest, BurstsAlignedWithPhaseBoundariesBlameTheHost) {
  // Steps every 30 s from t=0; phase 1 = steps 97..216.
  Json step_times = Json::array();
  for (int s = 0; s < 400; ++s) step_times.push_back({s, s * 30.0});
  Json series = {{"bad/ionic_0", Json::array()}, {"noisy/ionic_0", Json::array()}, {"clean/ionic_0", Json::array()}};
  for (int i = 0; i < 400; ++i) {
    double t = i * 30.0;
    series["bad/ionic_0"].push_back({t, i >= 97 && i <= 216 ? 500.0 : 0.0});
    series["noisy/ionic_0"].push_back({t, i >= 20 && i <= 40 ? 500.0 : 0.0});   // a burst, but not with the phase
    series["clean/ionic_0"].push_back({t, 0.0});
  }
  AnalysisInput in;
  in.input = series;
  in.phases = Json::array({{{"first_step", 97}, {"last_step", 216}, {"mean_tgs", 2620}}});
  in.step_times = step_times;
  in.args = Args("burst_phase_correlation", {{"tolerance", 60}});
  auto r = BurstPhaseCorrelation(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["hosts"], Json({"bad"}));
  EXPECT_EQ((*r)["matches"]["bad"], Json::array({0}));
  in.step_times = nullptr;
  EXPECT_EQ(BurstPhaseCorrelation(in).status().code(), StatusCode::kFailedPrecondition);
}

// uniform_delta of per-host values against a baseline's, with a 10-thread minimum delta.
StatusOr<Json> UniformDeltaOf(const Json& subject, const Json& baseline) {
  AnalysisInput in;
  in.input = subject;
  in.baseline_input = baseline;
  in.args = Args("uniform_delta", {{"min_delta", 10}});
  return UniformDelta(in);
}

TEST(UniformDeltaTest, RestoreLeakIsUniformAcrossHosts) {
  Json subject = Json::object(), baseline = Json::object();
  for (int h = 0; h < 24; ++h) {
    std::string host = "n" + std::to_string(h);
    baseline[host] = 18 + Noise(h, 1);
    subject[host] = 35 + Noise(h + 7, 1);
  }
  auto r = UniformDeltaOf(subject, baseline);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)["uniform"].get<bool>()) << r->dump(2);
  EXPECT_NEAR((*r)["median"].get<double>(), 17, 1);
  EXPECT_EQ((*r)["count"], 24);
  subject["n3"] = 80;   // one host far off: not uniform
  auto off = UniformDeltaOf(subject, baseline);
  EXPECT_FALSE((*off)["uniform"].get<bool>());
  // ... but 23 of 24 hosts still share the delta, which the robust view keeps.
  EXPECT_NEAR((*off)["within_fraction"].get<double>(), 23.0 / 24, 1e-9);
}

TEST(UniformDeltaTest, PartlyOverlappingAllocationsCountEverySubjectHost) {
  Json subject = Json::object(), baseline = Json::object();
  for (int h = 0; h < 18; ++h) baseline["n" + std::to_string(h)] = 18 + Noise(h, 1);
  for (int h = 12; h < 30; ++h) subject["n" + std::to_string(h)] = 34 + Noise(h + 3, 1);   // 6 shared hosts
  auto r = UniformDeltaOf(subject, baseline);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["count"], 18) << r->dump(2);
  EXPECT_TRUE((*r)["paired"].get<bool>());
  EXPECT_TRUE((*r)["uniform"].get<bool>());
  EXPECT_NEAR((*r)["median"].get<double>(), 16, 1);
}

TEST(WindowRatioTest, RatioBetweenWindows) {
  Json series = {{"h1", Json::array()}};
  for (int i = 0; i < 10; ++i) series["h1"].push_back({i * 10, i < 5 ? 900.0 : 300.0});
  AnalysisInput in;
  in.input = series;
  in.windows = Json::array({{{"start", 0}, {"end", 40}}, {{"start", 50}, {"end", 90}}});
  in.args = Args("window_ratio");
  auto r = WindowRatio(in);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR((*r)["ratio"]["h1"].get<double>(), 1.0 / 3, 1e-9);
}

TEST(WindowRatioTest, MedianIgnoresAShortIdleStretch) {
  // Each window holds a short idle stretch (a checkpoint save): the mean moves, the median does not.
  Json series = {{"h1", Json::array()}};
  for (int i = 0; i < 20; ++i) {
    const bool idle = i == 12 || i == 13 || i == 14;
    series["h1"].push_back({i * 10, idle ? 132.0 : (i < 10 ? 2300.0 : 2290.0)});
  }
  AnalysisInput in;
  in.input = series;
  in.windows = Json::array({{{"start", 0}, {"end", 90}}, {{"start", 100}, {"end", 190}}});
  in.args = Args("window_ratio", {{"aggregate", "median"}});
  auto median = WindowRatio(in);
  ASSERT_TRUE(median.ok()) << median.status().message();
  EXPECT_DOUBLE_EQ((*median)["second"]["h1"].get<double>(), 2290.0);
  EXPECT_NEAR((*median)["ratio"]["h1"].get<double>(), 2290.0 / 2300.0, 1e-12);
  in.args = Args("window_ratio");
  auto mean = WindowRatio(in);
  ASSERT_TRUE(mean.ok());
  EXPECT_LT((*mean)["ratio"]["h1"].get<double>(), 0.8);
}

TEST(DurationTest, PromqlDurations) {
  double s = 0;
  EXPECT_TRUE(ParseDurationSeconds("1h30m", &s));
  EXPECT_EQ(s, 5400);
  EXPECT_TRUE(ParseDurationSeconds("500ms", &s));
  EXPECT_EQ(s, 0.5);
  EXPECT_FALSE(ParseDurationSeconds("5 minutes", &s));
  EXPECT_FALSE(ParseDurationSeconds("", &s));
}

}  // namespace
}  // namespace diagnose::analysis
