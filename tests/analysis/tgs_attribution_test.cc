#include "engine/analysis/tgs_attribution.h"

#include <cmath>
#include <functional>
#include <random>

#include <gtest/gtest.h>

namespace diagnose::analysis {
namespace {

constexpr double kStepSeconds = 20;
double AtStep(int step) { return 5000.0 + kStepSeconds * step; }

// n steps of `level(step)` TGS with ±0.5 % noise; a checkpoint spike every `ckpt` steps (0: none).
Json AttributionSteps(int n, const std::function<double(int)>& level, int ckpt, Json* step_times) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(-0.005, 0.005);
  Json steps = Json::array();
  *step_times = Json::array();
  for (int s = 0; s < n; ++s) {
    double tgs = level(s) * (1 + noise(rng));
    if (ckpt > 0 && s > 0 && s % ckpt == 0) tgs /= 6;
    steps.push_back({{"step", s}, {"tokens_per_sec_per_device", tgs}});
    step_times->push_back({s, AtStep(s)});
  }
  return steps;
}

// A burst seen through rate([2m]): from the first error to ~2 minutes after the last.
Json RateBurst(int first, int last) { return Json::array({{{"start", AtStep(first) - 10}, {"end", AtStep(last) + 120}}}); }

AnalysisInput AttributionInput(const Json& bursts, const Json& steps, const Json& step_times) {
  AnalysisInput in;
  in.input = bursts;
  in.baseline_input = steps;
  in.step_times = step_times;
  in.args = {{"smear", 150}, {"min_effect_pct", 3}, {"min_t", 8}, {"min_points", 3}};
  return in;
}

bool Lists(const Json& list, const std::string& host) {
  for (const auto& h : list)
    if (h == host) return true;
  return false;
}

TEST(TgsAttribution, OverlappingFaultsAreEachCreditedWithTheirOwnRange) {
  // hostA costs 20 % over 18-134, hostB 15 % over 56-192; collectives wait for the slower, so TGS
  // never moves when hostB starts. Tested alone against the TGS before its errors, hostB "had no
  // effect"; jointly, it explains 135-192 and the recovery at 193.
  Json st;
  Json steps = AttributionSteps(
      240, [](int s) { return s >= 18 && s <= 134 ? 2080.0 : s >= 135 && s <= 192 ? 2210.0 : 2600.0; }, 0, &st);
  Json bursts = {{"hostA", RateBurst(18, 134)}, {"hostB", RateBurst(56, 192)}, {"hostC", RateBurst(205, 225)}};
  auto r = TgsAttribution(AttributionInput(bursts, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(Lists((*r)["explains"], "hostA")) << r->dump();
  EXPECT_TRUE(Lists((*r)["explains"], "hostB")) << r->dump();
  // hostC's burst came while TGS was flat: tested, no effect.
  EXPECT_TRUE(Lists((*r)["no_effect"], "hostC")) << r->dump();
  EXPECT_NEAR((*r)["details"]["hostB"]["last_step"].get<double>(), 192, 3);
  EXPECT_NEAR((*r)["details"]["hostA"]["first_step"].get<double>(), 18, 3);
  ASSERT_EQ((*r)["explained_text"].size(), 2u);
}

TEST(TgsAttribution, ASmallerFaultBetweenTwoLargerOnesIsCreditedWhereItIsTheSlowest) {
  // -11 % over 67-172, -6 % over 147-275, -10 % over 197-end: the middle host is the slowest only
  // over 173-196, and TGS there is its own.
  Json st;
  Json steps = AttributionSteps(
      400, [](int s) { return s >= 67 && s <= 172 ? 1886.0 : s >= 173 && s <= 196 ? 1980.0 : s >= 197 ? 1901.0 : 2124.0; },
      0, &st);
  Json bursts = {{"hostA", RateBurst(67, 172)}, {"hostB", RateBurst(147, 275)}, {"hostC", RateBurst(197, 399)}};
  auto r = TgsAttribution(AttributionInput(bursts, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const char* host : {"hostA", "hostB", "hostC"}) EXPECT_TRUE(Lists((*r)["explains"], host)) << host << ": " << r->dump();
}

TEST(TgsAttribution, ASlowStretchNoHostColumnExplainsDoesNotHideTheOthers) {
  // Steps 200-240 are 16 % slow from a fault of another kind (a throttling GPU: no burst here);
  // hostA's own 7 % over 30-90 must still be credited.
  Json st;
  Json steps = AttributionSteps(
      320, [](int s) { return s >= 30 && s <= 90 ? 2232.0 : s >= 200 && s <= 240 ? 2016.0 : 2400.0; }, 0, &st);
  Json bursts = {{"hostA", RateBurst(30, 90)}};
  auto r = TgsAttribution(AttributionInput(bursts, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(Lists((*r)["explains"], "hostA")) << r->dump();
}

// A link fault over 24-69 under a throttling GPU from 45 to the end, each costing ~8.7 %: TGS
// drops once at 24 and never recovers. The link's own stretch (24-44) is slow against the healthy
// steps only when the throttle's stretch is known; without it, the slow steps after the link
// recovered sit in its baseline and the link looks harmless.
Json LinkUnderAThrottle(Json* st) {
  return AttributionSteps(114, [](int s) { return s >= 24 ? 1287.0 : 1408.0; }, 0, st);
}

TEST(TgsAttribution, AFaultOfAnotherKindKeepsALinkThatRecoveredUnderItCredited) {
  Json st;
  Json steps = LinkUnderAThrottle(&st);
  AnalysisInput in = AttributionInput({{"linkhost", RateBurst(24, 69)}}, steps, st);
  in.windows = {{"hothost", Json::array({{{"start", AtStep(45)}, {"end", AtStep(113)}}})}};
  auto r = TgsAttribution(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(Lists((*r)["explains"], "linkhost")) << r->dump();
  EXPECT_NEAR((*r)["details"]["linkhost"]["effect_pct"].get<double>(), 8.6, 1.0) << r->dump();
  // The other fault is in the fit, never blamed here.
  EXPECT_TRUE(Lists((*r)["others_explain"], "hothost")) << r->dump();
  EXPECT_FALSE(Lists((*r)["explains"], "hothost"));
  EXPECT_FALSE(Lists((*r)["no_effect"], "hothost"));
}

TEST(TgsAttribution, WithoutTheOtherFaultsStretchTheSameLinkLooksHarmless) {
  Json st;
  Json steps = LinkUnderAThrottle(&st);
  auto r = TgsAttribution(AttributionInput({{"linkhost", RateBurst(24, 69)}}, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(Lists((*r)["no_effect"], "linkhost")) << r->dump();
  EXPECT_TRUE((*r)["others_explain"].empty());
}

TEST(TgsAttribution, AnOtherFaultOverTheWholeJobCannotBeTestedAndChangesNothing) {
  // A GPU clocked low from first to last step is no contrast: the link is judged as without it.
  Json st;
  Json steps = AttributionSteps(120, [](int s) { return s >= 40 && s <= 80 ? 2000.0 : 2400.0; }, 0, &st);
  AnalysisInput in = AttributionInput({{"hostA", RateBurst(40, 80)}}, steps, st);
  auto alone = TgsAttribution(in);
  in.windows = {{"slowgpu", Json::array({{{"start", AtStep(0) - 60}, {"end", AtStep(119) + 60}}})}};
  auto with_other = TgsAttribution(in);
  ASSERT_TRUE(alone.ok() && with_other.ok());
  EXPECT_EQ((*alone)["explains"], (*with_other)["explains"]) << with_other->dump();
  // Only the steps at the other stretch's smeared end leave the fit.
  EXPECT_NEAR((*alone)["details"]["hostA"]["effect_pct"].get<double>(),
              (*with_other)["details"]["hostA"]["effect_pct"].get<double>(), 0.1);
  EXPECT_TRUE((*with_other)["others_explain"].empty());
}

TEST(TgsAttribution, HostsWithTheSameIntervalShareTheExplanation) {
  Json st;
  Json steps = AttributionSteps(120, [](int s) { return s >= 40 && s <= 80 ? 2000.0 : 2400.0; }, 10, &st);
  Json bursts = {{"hostA", RateBurst(40, 80)}, {"hostB", RateBurst(40, 80)}};
  auto r = TgsAttribution(AttributionInput(bursts, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(Lists((*r)["explains"], "hostA")) << r->dump();
  EXPECT_TRUE(Lists((*r)["explains"], "hostB")) << r->dump();
  EXPECT_EQ((*r)["details"].size(), 2u);
  // Checkpoint spikes every 10 steps did not blur the effect.
  EXPECT_NEAR((*r)["details"]["hostA"]["effect_pct"].get<double>(), 16.7, 1.0);
}

TEST(TgsAttribution, FlatTgsExplainsNothingAndShortBurstsAreUntested) {
  Json st;
  Json steps = AttributionSteps(150, [](int) { return 2400.0; }, 0, &st);
  Json bursts = {{"hostA", RateBurst(30, 90)}, {"hostB", RateBurst(100, 101)}};
  auto r = TgsAttribution(AttributionInput(bursts, steps, st));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE((*r)["explains"].empty()) << r->dump();
  EXPECT_TRUE(Lists((*r)["no_effect"], "hostA"));
  // Two steps, all inside the rate window's smear: nothing to test.
  EXPECT_TRUE(Lists((*r)["untested"], "hostB"));
}

TEST(TgsAttribution, WithoutAStepTimeMapItSaysSo) {
  Json st;
  Json steps = AttributionSteps(50, [](int) { return 2400.0; }, 0, &st);
  AnalysisInput in = AttributionInput({{"hostA", RateBurst(10, 20)}}, steps, Json::array());
  auto r = TgsAttribution(in);
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace diagnose::analysis
