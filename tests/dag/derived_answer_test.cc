#include "engine/dag/derived_answer.h"

#include <cmath>

#include <gtest/gtest.h>

namespace diagnose::dag {
namespace {

const double kNaN = std::nan("");

QueryResult Vector(std::vector<Series> series) {
  QueryResult r;
  r.result_type = "vector";
  r.series = std::move(series);
  return r;
}

QueryResult Matrix(std::vector<Series> series) {
  QueryResult r;
  r.result_type = "matrix";
  r.series = std::move(series);
  return r;
}

Series At100(Labels labels, double v) { return {std::move(labels), {{100, v}}}; }

QueryResult Derive(const std::string& promql, const QueryResult& source, Query::Kind kind = Query::Kind::kInstant) {
  auto d = DerivationOf(promql);
  EXPECT_TRUE(d.has_value()) << promql;
  if (!d) return {};
  auto r = DeriveAnswer(*d, source, kind);
  EXPECT_TRUE(r.has_value()) << promql;
  return r ? *r : QueryResult{};
}

TEST(DerivationOfTest, AComparisonWithANumberIsAFilterOfItsLeftSide) {
  auto d = DerivationOf("sum by (host, instance) (rate(hw_rdma_tx_retx_pkts_total[2m])) > 0.01");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Derivation::Kind::kFilter);
  EXPECT_EQ(d->source, "sum by (host, instance) (rate(hw_rdma_tx_retx_pkts_total[2m]))");
  EXPECT_EQ(d->comparison, ">");
  EXPECT_EQ(d->threshold, 0.01);
  d = DerivationOf("  min by (host, device) (min_over_time(x{a=\"b>1\"}[1h]))==0 ");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->source, "min by (host, device) (min_over_time(x{a=\"b>1\"}[1h]))");
  EXPECT_EQ(d->comparison, "==");
  EXPECT_EQ(d->threshold, 0);
  d = DerivationOf("x offset 5m <= -2.5e3");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->source, "x offset 5m");
  EXPECT_EQ(d->comparison, "<=");
  EXPECT_EQ(d->threshold, -2500);
}

TEST(DerivationOfTest, AnAggregationOfTheWholeExpressionByLabels) {
  auto d = DerivationOf("max by (host, instance) (max_over_time(hw_gpu_temperature_celsius[13789s]))");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Derivation::Kind::kAggregate);
  EXPECT_EQ(d->aggregation, "max");
  EXPECT_EQ(d->by, (std::vector<std::string>{"host", "instance"}));
  EXPECT_EQ(d->source, "max_over_time(hw_gpu_temperature_celsius[13789s])");
  d = DerivationOf("min(a / b)");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->by.empty());
  EXPECT_EQ(d->source, "a / b");
  d = DerivationOf("count by(host)(up{job=\")\"})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->by, std::vector<std::string>{"host"});
  EXPECT_EQ(d->source, "up{job=\")\"}");
}

TEST(DerivationOfTest, FormsWhoseAnswerIsNotExactlyComputableAreLeftToTheTsdb) {
  for (const char* promql : {
           "a and b > 1",                       // `a and (b > 1)`
           "a > 1 or b",                        // set operator binds looser
           "x > bool 1",                        // values become 0/1
           "x > y",                             // vector matching
           "x > 1 > 0",                         // two comparisons
           "x > Inf",                           // not a plain decimal
           "x > 0x10",
           "rate(x[5m]) > 1 # comment",
           "sum by (h) (x)",                    // addition order decides the last bit
           "avg(x)",
           "max by (h) (x) / 2",                // more after the aggregation
           "max (x) by (h)",                    // the clause after: not recognised, asked
           "max without (h) (x)",
           "max_over_time(x[5m])",
           "topk(3, x)",
           "max by (h (x)",                     // malformed
           "x{a=\"b\"",
           "",
       })
    EXPECT_FALSE(DerivationOf(promql).has_value()) << promql;
}

TEST(DeriveAnswerTest, AFilterKeepsValueAndLabelsOfTheSamplesThatPass) {
  const QueryResult source = Vector({At100({{"__name__", "x"}, {"host", "a"}}, 5), At100({{"host", "b"}}, 1),
                                     At100({{"host", "c"}}, kNaN), At100({{"host", "d"}}, 3)});
  const QueryResult r = Derive("x >= 3", source);
  EXPECT_EQ(r.result_type, "vector");
  ASSERT_EQ(r.series.size(), 2u);
  EXPECT_EQ(r.series[0].labels, (Labels{{"__name__", "x"}, {"host", "a"}})) << "a comparison keeps the name";
  EXPECT_EQ(r.series[0].samples[0].v, 5);
  EXPECT_EQ(r.series[1].labels, (Labels{{"host", "d"}}));
  // NaN compares unequal to everything: it passes `!=` only.
  const QueryResult ne = Derive("x != 3", source);
  ASSERT_EQ(ne.series.size(), 3u);
  EXPECT_TRUE(std::isnan(ne.series[2].samples[0].v));
  EXPECT_TRUE(Derive("x < 0", source).series.empty());
  EXPECT_TRUE(Derive("x > 0", Vector({})).series.empty());
}

TEST(DeriveAnswerTest, AFilteredRangeKeepsEachSeriesPointsThatPassAndDropsEmptySeries) {
  const QueryResult source = Matrix({{{{"host", "a"}}, {{0, 1}, {30, 20}, {60, 2}, {90, 30}}},
                                     {{{"host", "b"}}, {{0, 1}, {30, 2}}}});
  const QueryResult r = Derive("x > 10", source, Query::Kind::kRange);
  ASSERT_EQ(r.series.size(), 1u);
  EXPECT_EQ(r.series[0].labels, (Labels{{"host", "a"}}));
  ASSERT_EQ(r.series[0].samples.size(), 2u);
  EXPECT_EQ(r.series[0].samples[0].t, 30);
  EXPECT_EQ(r.series[0].samples[1].v, 30);
}

TEST(DeriveAnswerTest, MaxAndMinSkipNaNUnlessTheWholeGroupIsNaN) {
  const QueryResult source = Vector({At100({{"host", "a"}, {"gpu", "0"}}, kNaN), At100({{"host", "a"}, {"gpu", "1"}}, 7),
                                     At100({{"host", "a"}, {"gpu", "2"}}, 3), At100({{"host", "b"}, {"gpu", "0"}}, kNaN),
                                     At100({{"host", "c"}, {"gpu", "0"}}, -1), At100({{"host", "c"}, {"gpu", "1"}}, kNaN)});
  const QueryResult max = Derive("max by (host) (x)", source);
  ASSERT_EQ(max.series.size(), 3u);
  EXPECT_EQ(max.series[0].labels, (Labels{{"host", "a"}})) << "only the `by` labels stay";
  EXPECT_EQ(max.series[0].samples[0].v, 7);
  EXPECT_EQ(max.series[0].samples[0].t, 100);
  EXPECT_TRUE(std::isnan(max.series[1].samples[0].v));
  EXPECT_EQ(max.series[2].samples[0].v, -1);
  const QueryResult min = Derive("min by (host) (x)", source);
  EXPECT_EQ(min.series[0].samples[0].v, 3);
  EXPECT_EQ(min.series[2].samples[0].v, -1);
}

TEST(DeriveAnswerTest, CountAndGroupAndAggregatesWithoutBy) {
  const QueryResult source = Vector({At100({{"host", "a"}, {"gpu", "0"}}, kNaN), At100({{"host", "a"}, {"gpu", "1"}}, 7),
                                     At100({{"gpu", "0"}}, 9)});
  const QueryResult count = Derive("count by (host) (x)", source);
  ASSERT_EQ(count.series.size(), 2u);
  EXPECT_EQ(count.series[0].labels, Labels{}) << "a series without the label is its own group";
  EXPECT_EQ(count.series[0].samples[0].v, 1);
  EXPECT_EQ(count.series[1].samples[0].v, 2) << "NaN samples count";
  const QueryResult group = Derive("group by (host) (x)", source);
  EXPECT_EQ(group.series[1].samples[0].v, 1);
  const QueryResult all = Derive("max(x)", source);
  ASSERT_EQ(all.series.size(), 1u);
  EXPECT_EQ(all.series[0].labels, Labels{});
  EXPECT_EQ(all.series[0].samples[0].v, 9);
  EXPECT_TRUE(Derive("max(x)", Vector({})).series.empty()) << "nothing to aggregate: no series";
}

TEST(DeriveAnswerTest, ARangeIsAggregatedStepByStepOverTheSeriesPresentAtIt) {
  const QueryResult source = Matrix({{{{"host", "b"}, {"gpu", "0"}}, {{0, 1}, {60, 5}}},
                                     {{{"host", "b"}, {"gpu", "1"}}, {{30, 4}, {60, 2}}},
                                     {{{"host", "a"}, {"gpu", "0"}}, {{0, 8}}}});
  const QueryResult r = Derive("max by (host) (x)", source, Query::Kind::kRange);
  ASSERT_EQ(r.series.size(), 2u);
  EXPECT_EQ(r.series[0].labels, (Labels{{"host", "a"}})) << "sorted by labels, as a range answer is";
  ASSERT_EQ(r.series[1].samples.size(), 3u);
  EXPECT_EQ(r.series[1].samples[0].v, 1);
  EXPECT_EQ(r.series[1].samples[1].v, 4);
  EXPECT_EQ(r.series[1].samples[2].v, 5);
}

TEST(DeriveAnswerTest, RefusesWhatItCannotAnswerExactly) {
  auto max = DerivationOf("max by (host) (x)");
  ASSERT_TRUE(max);
  // Which of +0 and -0 a max keeps depends on the order Prometheus met them in.
  EXPECT_FALSE(DeriveAnswer(*max, Vector({At100({{"host", "a"}}, 0.0), At100({{"host", "a"}}, -0.0)}), Query::Kind::kInstant));
  EXPECT_TRUE(DeriveAnswer(*max, Vector({At100({{"host", "a"}}, 0.0), At100({{"host", "a"}}, 0.0)}), Query::Kind::kInstant));
  // A range vector of an instant query (`x[5m]`) or a scalar is nothing a comparison filters.
  EXPECT_FALSE(DeriveAnswer(*max, Matrix({At100({{"host", "a"}}, 1)}), Query::Kind::kInstant));
  EXPECT_FALSE(DeriveAnswer(*max, Vector({At100({{"host", "a"}}, 1)}), Query::Kind::kRange));
  QueryResult scalar;
  scalar.result_type = "scalar";
  scalar.series = {At100({}, 1)};
  EXPECT_FALSE(DeriveAnswer(*DerivationOf("x > 0"), scalar, Query::Kind::kInstant));
}

}  // namespace
}  // namespace diagnose::dag
