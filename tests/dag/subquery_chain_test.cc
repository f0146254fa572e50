// Nested min/max subqueries evaluated from a range answer (engine/dag/subquery_chain.h): what is
// recognised, Prometheus 2.42's step alignment and left-closed windows, the NaN fold, and refusals.
// Against a real Prometheus: tests/tsdb/derived_answer_test.cc.
#include "engine/dag/subquery_chain.h"
#include "engine/dag/composite_answer.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/dag/query_results.h"

namespace diagnose::dag {
namespace {

const std::string kRatio =
    "min by (host, instance) (avg_over_time(c[2m])) / scalar(quantile(0.5, min by (host, instance) (avg_over_time(c[2m]))))";

TEST(SubqueryChainTest, ReadsNestedMinAndMaxSubqueriesOuterFirst) {
  auto chain = SubqueryChainOf("min_over_time(max_over_time((" + kRatio + ")[5m:1m])[3465s:1m])");
  ASSERT_TRUE(chain);
  ASSERT_EQ(chain->levels.size(), 2u);
  EXPECT_EQ(chain->levels[0].function, "min_over_time");
  EXPECT_EQ(chain->levels[0].range_ms, 3465000);
  EXPECT_EQ(chain->levels[0].step_ms, 60000);
  EXPECT_EQ(chain->levels[1].function, "max_over_time");
  EXPECT_EQ(chain->levels[1].range_ms, 300000);
  EXPECT_EQ(chain->inner, kRatio);
  chain = SubqueryChainOf(" max_over_time ( ( x{a=\"[1m:1m]\"} ) [1h30m5s:15s] ) ");
  ASSERT_TRUE(chain);
  EXPECT_EQ(chain->levels[0].range_ms, 5405000);
  EXPECT_EQ(chain->levels[0].step_ms, 15000);
  EXPECT_EQ(chain->inner, "x{a=\"[1m:1m]\"}");
  EXPECT_EQ(SubqueryChainOf("min_over_time((x)[1500ms:500ms])")->levels[0].range_ms, 1500);
}

TEST(SubqueryChainTest, DeclinesAnythingElse) {
  for (const char* promql : {
           "min_over_time(x[5m])",                  // a range selector, not a subquery
           "min_over_time((x)[5m:])",               // the step left to the evaluation interval
           "avg_over_time((x)[5m:1m])",             // a sum: its last bit is the order of addition
           "quantile_over_time(q, (x)[5m:1m])",     // q not a number
           "quantile_over_time((x)[5m:1m])", "quantile_over_time(0.5 + 0, (x)[5m:1m])",
           "quantile_over_time(NaN, (x)[5m:1m])",
           "min_over_time((x)[5m:1m] offset 1m)", "min_over_time((x)[5m:1m] @ 100)",
           "min_over_time((x)[5m:1m]) + 1", "min_over_time(x[5m:1m])",
           "min_over_time((x)[1m5h:1m])",           // units out of order
           "min_over_time((x)[0s:1m])", "min_over_time((x)[5:1m])", "min_over_time(()[5m:1m])",
           "min_over_time((x)[30d:1s])",            // more steps than a range answer holds
           "min_over_time((x)[999999999999y:1m])",  // beyond int64 milliseconds (no overflow)
           "min_over_time((x)[999999999999w999999999999d:1m])",
           "min_over_time((x)[5m:1m]"}) {
    EXPECT_FALSE(SubqueryChainOf(promql)) << promql;
  }
}

TEST(SubqueryChainTest, TimesAreReadAsPrometheusReadsThemAndStepsAlignedToTheEpoch) {
  EXPECT_EQ(PrometheusMillis(1771484719.918), 1771484719918);
  EXPECT_EQ(PrometheusMillis(100), 100000);
  EXPECT_EQ(PrometheusMillis(1000.5), 1000500);
  auto chain = SubqueryChainOf("min_over_time(max_over_time((x)[300s:60s])[600s:60s])");
  ASSERT_TRUE(chain);
  // Outer: the first minute at or after 1000.5 - 600 s is 420 s; inner: 300 s before it.
  const ChainGrid grid = InnerGrid(*chain, 1000500);
  EXPECT_EQ(grid.first_ms, 120000);
  EXPECT_EQ(grid.last_ms, 960000);
  EXPECT_EQ(grid.step_ms, 60000);
}

TEST(SubqueryChainTest, LevelsFoldLeftClosedWindowsInTimeOrder) {
  auto chain = SubqueryChainOf("min_over_time(max_over_time((x)[120s:60s])[180s:60s])");
  ASSERT_TRUE(chain);
  const double nan = std::nan("");
  // At 600 s: the outer level reads the inner one at 420..600 s, which reads x at 300..600 s.
  ASSERT_EQ(InnerGrid(*chain, 600000).first_ms, 300000);
  const QueryResult x = Matrix({
      {{{"h", "a"}}, {{300, 1}, {360, 5}, {420, 2}, {480, nan}, {540, 3}, {600, 4}}},
      // Only at 300 s, the first time of the window at 420 s (left-closed in 2.42).
      {{{"__name__", "m"}, {"h", "b"}}, {{300, 7}}},
      {{{"h", "c"}}, {{360, nan}}},
      {{{"h", "d"}}, {{300, 1}}},
  });
  auto out = EvaluateChain(*chain, x, 600000);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 4u);
  // max at 420/480/540/600: 5, 5 (a NaN after a number is skipped), 3, 4 (a NaN first is replaced).
  EXPECT_EQ((*out)[0].labels, (Labels{{"h", "a"}}));
  EXPECT_EQ(Points((*out)[0].samples), (PointList{{600, 3}}));
  EXPECT_EQ((*out)[1].labels, (Labels{{"h", "b"}})) << "the name dropped";
  EXPECT_EQ((*out)[1].samples[0].v, 7);
  EXPECT_TRUE(std::isnan((*out)[2].samples[0].v)) << "NaN alone stays NaN";
  EXPECT_EQ((*out)[3].samples[0].v, 1);
  // At 659.999 s the outer level's first step rounds up to 480 s, the inner grid to 360 s: b's
  // sample at 300 s, on the same step grid but before this one (a range shared with another question
  // reaches there), is not read.
  EXPECT_EQ(InnerGrid(*chain, 659999).first_ms, 360000);
  auto later = EvaluateChain(*chain, Matrix({x.series[1]}), 659999);
  ASSERT_TRUE(later);
  EXPECT_TRUE(later->empty());
}

TEST(SubqueryChainTest, RefusesAnAnswerOffTheGridAndOneLabelSetTwice) {
  auto chain = SubqueryChainOf("max_over_time((x)[120s:60s])");
  ASSERT_TRUE(chain);
  EXPECT_FALSE(EvaluateChain(*chain, Matrix({{{{"h", "a"}}, {{510, 1}}}}), 600000)) << "a clamped step";
  // After the query time, on the grid (a range shared with a later question): not read.
  auto after = EvaluateChain(*chain, Matrix({{{{"h", "a"}}, {{540, 2}, {660, 9}}}}), 600000);
  ASSERT_TRUE(after);
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].samples[0].v, 2);
  EXPECT_FALSE(EvaluateChain(*chain, Matrix({{{{"h", "a"}}, {{661, 1}}}}), 600000)) << "off the step grid";
  EXPECT_FALSE(EvaluateChain(*chain, Matrix({{{{"__name__", "m"}, {"h", "a"}}, {{540, 1}}}, {{{"h", "a"}}, {{540, 2}}}}), 600000));
  QueryResult vector;
  vector.result_type = "vector";
  EXPECT_FALSE(EvaluateChain(*chain, vector, 600000));
}

TEST(SubqueryChainTest, ACompositeOverAChainAsksTheInnerPartsOverTheInnerGrid) {
  const std::string promql =
      "min by (host, instance) (min_over_time(max_over_time((" + kRatio + ")[5m:1m])[3465s:1m]))";
  auto c = CompositeOf(promql);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->chain);
  EXPECT_EQ(c->parts, std::vector<std::string>{"min by (host, instance) (avg_over_time(c[2m]))"});
  EXPECT_TRUE(c->RepeatsAPart());
  const Query part = c->PartQuery(Query::Instant(promql, 1771484719.918), 0);
  EXPECT_EQ(part.kind, Query::Kind::kRange);
  EXPECT_EQ(part.start, 1771480980);
  EXPECT_EQ(part.end, 1771484719.918);
  EXPECT_EQ(part.step, 60);
  // The answer: the ratio composed at each minute, the levels folded, then the min by host.
  const Labels a = {{"host", "a"}, {"instance", "a:1"}}, b = {{"host", "b"}, {"instance", "b:1"}};
  std::vector<Sample> high, low;
  for (double t = 1771480980; t <= 1771484719.918; t += 60) {
    high.push_back({t, 2000});
    low.push_back({t, t == 1771484400 ? 1000.0 : 1900.0});
  }
  const QueryResult clocks = Matrix({{a, high}, {b, low}});
  auto answer = AnswerComposite(*c, {&clocks}, 1771484719.918);
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->series.size(), 2u);
  EXPECT_EQ(Points(answer->series[0].samples), (PointList{{1771484719.918, 2000 / (1900 * 0.5 + 2000 * 0.5)}}));
  EXPECT_EQ(answer->series[1].samples[0].v, 1900 / (1900 * 0.5 + 2000 * 0.5)) << "one low minute is no 5-minute level";
  EXPECT_FALSE(CompositeOf("min_over_time(max_over_time((x)[5m:1m])[1h:1m])")) << "a bare selector inside: asked as written";
}

TEST(SubqueryChainTest, QuantileLevelsTakeTheQuantileOfEachWindowAsPrometheusDoes) {
  auto chain = SubqueryChainOf("quantile_over_time( 0.25 , (avg by (h) (x))[180s:60s])");
  ASSERT_TRUE(chain);
  ASSERT_EQ(chain->levels.size(), 1u);
  EXPECT_EQ(chain->levels[0].function, "quantile_over_time");
  EXPECT_EQ(chain->levels[0].quantile, 0.25);
  EXPECT_EQ(chain->inner, "avg by (h) (x)");
  const double nan = std::nan("");
  // At 600 s the window is 420..600 s (left-closed), the grid's earlier minutes are not read.
  const QueryResult x = Matrix({
      {{{"h", "a"}}, {{360, 100}, {420, 4}, {480, 1}, {540, 3}, {600, 2}}},
      {{{"h", "b"}}, {{420, nan}, {480, 8}}},
  });
  auto out = EvaluateChain(*chain, x, 600000);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 2u);
  // a: sorted 1 2 3 4, rank 0.75 between 1 and 2; b: NaN sorts first, rank 0.25 between NaN and 8.
  EXPECT_EQ((*out)[0].samples[0].v, 1 * 0.25 + 2 * 0.75);
  EXPECT_TRUE(std::isnan((*out)[1].samples[0].v));
  // Two NaNs, or +0 and -0, in one window have no one sorted order: refused.
  EXPECT_FALSE(EvaluateChain(*chain, Matrix({{{{"h", "a"}}, {{480, nan}, {540, nan}}}}), 600000));
  EXPECT_FALSE(EvaluateChain(*chain, Matrix({{{{"h", "a"}}, {{480, 0.0}, {540, -0.0}}}}), 600000));
  // Nested under a max, each level over its own windows.
  auto nested = SubqueryChainOf("max_over_time(quantile_over_time(0.5, (avg by (h) (x))[120s:60s])[120s:60s])");
  ASSERT_TRUE(nested);
  ASSERT_EQ(nested->levels.size(), 2u);
  EXPECT_EQ(nested->levels[1].quantile, 0.5);
  // Median at 480 (360..480: 100 4 1 -> 4), 540 (4 1 3 -> 3), 600 (1 3 2 -> 2); max over 480..600: 4.
  auto max_of_medians = EvaluateChain(*nested, Matrix({x.series[0]}), 600000);
  ASSERT_TRUE(max_of_medians);
  ASSERT_EQ(max_of_medians->size(), 1u);
  EXPECT_EQ((*max_of_medians)[0].samples[0].v, 4);
}

TEST(SubqueryChainTest, AChainOverAnAggregationAsksTheAggregationWhole) {
  const std::string promql = "quantile(0.5, quantile_over_time(0.5, (avg by (host) (p))[600s:60s]))";
  auto c = CompositeOf(promql);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->chain);
  EXPECT_FALSE(c->inner);
  EXPECT_EQ(c->parts, std::vector<std::string>{"avg by (host) (p)"});
  EXPECT_FALSE(c->RepeatsAPart());
  const Query part = c->PartQuery(Query::Instant(promql, 1000.5), 0);
  EXPECT_EQ(part.promql, "avg by (host) (p)");
  EXPECT_EQ(part.start, 420);
  EXPECT_EQ(part.step, 60);
  std::vector<Sample> a, b;
  for (double t = 360; t <= 1020; t += 60) {   // a range shared with a question over a longer grid
    a.push_back({t, t});
    b.push_back({t, 2 * t});
  }
  const QueryResult averages = Matrix({{{{"host", "a"}}, a}, {{{"host", "b"}}, b}});
  auto answer = AnswerComposite(*c, {&averages}, 1000.5);
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->series.size(), 1u);
  // Medians over 420..960 s: a 690, b 1380; their median 1035.
  EXPECT_EQ(Points(answer->series[0].samples), (PointList{{1000.5, 1035}}));
  for (const char* declined : {"quantile_over_time(0.5, (p)[600s:60s])", "quantile_over_time(0.5, (rate(p[2m]))[600s:60s])",
                               "quantile_over_time(0.5, (avg by (host) (p) @ start())[600s:60s])"})
    EXPECT_FALSE(CompositeOf(declined)) << declined;
}

}  // namespace
}  // namespace diagnose::dag
