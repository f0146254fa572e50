#include "engine/dag/derived_answer.h"
#include "engine/dag/composite_answer.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/dag/query_results.h"

namespace diagnose::dag {
namespace {

const double kNaN = std::nan("");

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

// The answer to `promql` asked as a query of `kind` from the answers to its parts, named by their PromQL.
std::optional<QueryResult> Answer(const std::string& promql, const std::map<std::string, QueryResult>& parts,
                                  Query::Kind kind = Query::Kind::kInstant) {
  auto composite = CompositeOf(promql, kind);
  EXPECT_TRUE(composite) << promql;
  if (!composite) return std::nullopt;
  EXPECT_EQ(composite->kind, kind);
  std::vector<const QueryResult*> answers;
  for (const auto& part : composite->parts) {
    auto it = parts.find(part);
    EXPECT_NE(it, parts.end()) << "no answer for part `" << part << "`";
    if (it == parts.end()) return std::nullopt;
    answers.push_back(&it->second);
  }
  return AnswerComposite(*composite, answers);
}

// (labels, value) in the answer's order.
std::vector<std::pair<Labels, double>> Flat(const QueryResult& r) {
  std::vector<std::pair<Labels, double>> out;
  for (const auto& s : r.series) {
    EXPECT_EQ(s.samples.size(), 1u);
    out.emplace_back(s.labels, s.samples.at(0).v);
  }
  return out;
}

const std::string kIncrease =
    "(max_over_time(c[600s]) - min_over_time(c[600s] offset 3253s)) >= 0 or max_over_time(c[600s]) < min_over_time(c[600s] offset 3253s)";

TEST(CompositeOfTest, TheCounterIncreaseReadsEachWindowOnce) {
  auto c = CompositeOf(kIncrease);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->parts, (std::vector<std::string>{"max_over_time(c[600s])", "min_over_time(c[600s] offset 3253s)"}));
  EXPECT_EQ(c->part_occurrences, 4);
  EXPECT_TRUE(c->RepeatsAPart());
  c = CompositeOf("sum by (host, instance) (label_replace((" + kIncrease + "), \"block\", \"umc\", \"\", \"\") or label_replace(d, 'block', `x`, \"\", \"\"))");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->parts.size(), 3u);
  EXPECT_EQ(c->parts.back(), "d");
}

TEST(CompositeOfTest, PartsAreWhatTheEngineDoesNotEvaluateAsWritten) {
  auto c = CompositeOf(R"(rate(x{a="b) or c"}[5m] offset -1h) + avg by (host) (y) / quantile(0.5, z) without (gpu) - w @ 100 * {__name__="v"})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->parts, (std::vector<std::string>{R"(rate(x{a="b) or c"}[5m] offset -1h))", "avg by (host) (y)",
                                                "quantile(0.5, z) without (gpu)", "w @ 100", R"({__name__="v"})"}));
  EXPECT_FALSE(c->RepeatsAPart());
}

TEST(CompositeOfTest, AnythingUnsureIsAskedAsWritten) {
  for (const char* promql : {
           "x",                                   // a part alone
           "max_over_time(x[5m])",
           "1 + 2",                               // numbers only
           "x + on (host) y", "x / ignoring (gpu) y", "x * on (host) group_left y",
           "x ^ 2", "atan2(x, y)", "x atan2 y",   // Go's Pow and Atan2
           "sum without (gpu) (x) + x",
           "label_replace(x, \"a\", \"$1\", \"b\", \"(.*)\") or x",   // a real regular expression
           "label_replace(x, \"a\", \"v\", \"b\", \"c.d\") or x",
           "label_replace(x, \"1a\", \"v\", \"b\", \"\") or x",       // invalid label name
           "label_replace(x, \"a\", \"v\\\"\", \"b\", \"\") or x",   // escapes
           "(x + x)[5m:1m]", "(x + x) offset 5m",
           "x + x # comment", "x > 0x1f", "x - -x", "x and 1", "1 or x", "sum(1)", "x + Inf",
           "(x + x", "x + x)", "x +", "sum by (a) by (b) (x)"}) {
    EXPECT_FALSE(CompositeOf(promql)) << promql;
  }
  // Untrusted text: nesting that would exhaust the stack (a fuzz finding, fuzz/regressions/promql_answer)
  // and text longer than the parser reads are declined, not followed.
  EXPECT_FALSE(CompositeOf("x - " + std::string(100000, '(') + "x" + std::string(100000, ')')))
      << "nesting beyond the parser's depth";
  EXPECT_TRUE(CompositeOf("x - " + std::string(20, '(') + "x" + std::string(20, ')')));
  std::string long_union = "x";
  while (long_union.size() <= 8192) long_union += " or x";
  EXPECT_FALSE(CompositeOf(long_union)) << "longer than the parser reads";
}

TEST(CompositeAnswerTest, CounterIncreaseKeepsGrowthOrTheValueAfterAReset) {
  const auto answer = Answer(kIncrease, {
      {"max_over_time(c[600s])", Vector({At100({{"gpu", "0"}}, 5), At100({{"gpu", "1"}}, 1), At100({{"gpu", "2"}}, kNaN),
                                         At100({{"gpu", "3"}}, 7), At100({{"gpu", "4"}}, 3)})},
      {"min_over_time(c[600s] offset 3253s)", Vector({At100({{"gpu", "4"}}, 3), At100({{"gpu", "0"}}, 3),
                                                      At100({{"gpu", "1"}}, 3), At100({{"gpu", "2"}}, 1)})},
  });
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->result_type, "vector");
  // gpu 2 (NaN) is neither; gpu 3 has no earlier window; gpu 1 was reset: its value after the reset.
  // The left side's order (A's), then the right side's additions.
  const auto flat = Flat(*answer);
  ASSERT_EQ(flat.size(), 3u);
  EXPECT_EQ(flat[0], (std::pair<Labels, double>{{{"gpu", "0"}}, 2}));
  EXPECT_EQ(flat[1], (std::pair<Labels, double>{{{"gpu", "4"}}, 0}));
  EXPECT_EQ(flat[2], (std::pair<Labels, double>{{{"gpu", "1"}}, 1}));
  EXPECT_EQ(answer->series[0].samples[0].t, 100);
}

TEST(CompositeAnswerTest, ArithmeticDropsTheNameComparisonKeepsItBoolGivesZeroOrOne) {
  const std::map<std::string, QueryResult> parts = {
      {"a", Vector({At100({{"__name__", "a"}, {"h", "1"}}, 2), At100({{"__name__", "a"}, {"h", "2"}}, 5)})},
      {"b", Vector({At100({{"__name__", "b"}, {"h", "2"}}, 4), At100({{"__name__", "b"}, {"h", "1"}}, 3)})},
  };
  auto r = Answer("a - b + a", parts);
  ASSERT_TRUE(r);
  EXPECT_EQ(Flat(*r), (std::vector<std::pair<Labels, double>>{{{{"h", "1"}}, 1}, {{{"h", "2"}}, 6}}));
  r = Answer("a > b or a", parts);
  ASSERT_TRUE(r);
  EXPECT_EQ(Flat(*r), (std::vector<std::pair<Labels, double>>{{{{"__name__", "a"}, {"h", "2"}}, 5},
                                                              {{{"__name__", "a"}, {"h", "1"}}, 2}}));
  r = Answer("a > bool b or a", parts);
  ASSERT_TRUE(r);
  EXPECT_EQ(Flat(*r), (std::vector<std::pair<Labels, double>>{{{{"h", "1"}}, 0}, {{{"h", "2"}}, 1}}))
      << "`or` matches without __name__: both `a` series have a nameless twin on the left";
  // A number on the left of a comparison keeps the vector's value; on the left of `-` it is the minuend.
  r = Answer("3 < a or 10 - a", parts);
  ASSERT_TRUE(r);
  EXPECT_EQ(Flat(*r), (std::vector<std::pair<Labels, double>>{{{{"__name__", "a"}, {"h", "2"}}, 5}, {{{"h", "1"}}, 8}}));
  r = Answer("a % 3 + a / 0 * 0 + a", parts);
  ASSERT_TRUE(r);
  EXPECT_TRUE(std::isnan(r->series[0].samples[0].v));
}

TEST(CompositeAnswerTest, SetOperatorsAndEmptySides) {
  const std::map<std::string, QueryResult> parts = {
      {"a", Vector({At100({{"h", "1"}}, 1), At100({{"h", "2"}}, 2)})},
      {"b", Vector({At100({{"h", "2"}}, 20), At100({{"h", "3"}}, 30)})},
      {"none", Vector({})},
  };
  auto flat = [&](const std::string& promql) {
    auto r = Answer(promql, parts);
    EXPECT_TRUE(r) << promql;
    return r ? Flat(*r) : std::vector<std::pair<Labels, double>>{};
  };
  using F = std::vector<std::pair<Labels, double>>;
  EXPECT_EQ(flat("a and b or a and b"), (F{{{{"h", "2"}}, 2}}));
  EXPECT_EQ(flat("a unless b or b unless a"), (F{{{{"h", "1"}}, 1}, {{{"h", "3"}}, 30}}));
  EXPECT_EQ(flat("none or b or none"), (F{{{{"h", "2"}}, 20}, {{{"h", "3"}}, 30}}));
  EXPECT_EQ(flat("a - none or none"), F{});
  EXPECT_EQ(flat("a unless none and a"), (F{{{{"h", "1"}}, 1}, {{{"h", "2"}}, 2}}));
  EXPECT_EQ(flat("a * 2 or a"), (F{{{{"h", "1"}}, 2}, {{{"h", "2"}}, 4}}));
}

TEST(CompositeAnswerTest, AggregationsGroupInOrderOfFirstAppearanceAndAddInSeriesOrder) {
  const std::map<std::string, QueryResult> parts = {
      {"x", Vector({At100({{"host", "b"}, {"gpu", "0"}}, 1e16), At100({{"host", "a"}, {"gpu", "0"}}, kNaN),
                    At100({{"host", "b"}, {"gpu", "1"}}, 1), At100({{"host", "a"}, {"gpu", "1"}}, 4),
                    At100({{"host", "b"}, {"gpu", "2"}}, 1), At100({{"gpu", "9"}}, 7)})},
  };
  auto r = Answer("sum by (host) (x) or max by (host) (x) or min by (host, nope) (x) or count(x) or group by (gpu) (x) + x", parts);
  ASSERT_TRUE(r);
  const auto flat = Flat(*r);
  // The max and min have the sum's three label sets, count(x) the empty one; of `group by (gpu) (x) + x`
  // only gpu 9, whose series has no host, matches.
  ASSERT_EQ(flat.size(), 4u);
  EXPECT_EQ(flat[0].first, (Labels{{"host", "b"}}));
  EXPECT_EQ(flat[0].second, (1e16 + 1) + 1) << "added in series order: 1e16 + 1 + 1 is 1e16 in doubles";
  EXPECT_EQ(flat[1].first, (Labels{{"host", "a"}}));
  EXPECT_TRUE(std::isnan(flat[1].second));
  EXPECT_EQ(flat[2], (std::pair<Labels, double>{{}, 7}));
  EXPECT_EQ(flat[3], (std::pair<Labels, double>{{{"gpu", "9"}}, 8}));

  r = Answer("max by (host) (x) - min by (host) (x)", parts);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->series[1].samples[0].v, 0) << "max and min skip a NaN met first";
  r = Answer("count by (host) (x) + group by (host) (x)", parts);
  ASSERT_TRUE(r);
  EXPECT_EQ(Flat(*r), (std::vector<std::pair<Labels, double>>{{{{"host", "b"}}, 4}, {{{"host", "a"}}, 3}, {{}, 2}}));
}

TEST(CompositeAnswerTest, LabelReplaceOfAConstant) {
  const std::map<std::string, QueryResult> parts = {
      {"x", Vector({At100({{"__name__", "x"}, {"gpu", "0"}, {"block", "old"}}, 1), At100({{"gpu", "1"}, {"src", "s"}}, 2)})},
  };
  auto r = Answer("label_replace(x, \"block\", \"umc\", \"\", \"\") or label_replace(x, \"block\", \"\", \"src\", \"s\")", parts);
  ASSERT_TRUE(r);
  EXPECT_EQ(Flat(*r), (std::vector<std::pair<Labels, double>>{
                          {{{"__name__", "x"}, {"gpu", "0"}, {"block", "umc"}}, 1},
                          {{{"gpu", "1"}, {"src", "s"}, {"block", "umc"}}, 2},
                          {{{"__name__", "x"}, {"gpu", "0"}, {"block", "old"}}, 1},   // src "" is not "s": kept as is
                          {{{"gpu", "1"}, {"src", "s"}}, 2}}));                        // the empty value deletes
}

TEST(CompositeAnswerTest, WherePrometheusWouldFailTheEngineDeclines) {
  const std::map<std::string, QueryResult> parts = {
      {"x", Vector({At100({{"__name__", "x"}, {"gpu", "0"}}, 1), At100({{"__name__", "y"}, {"gpu", "0"}}, 2)})},
      {"z", Vector({At100({{"gpu", "0"}}, 1)})},
      {"s", []{ QueryResult r; r.result_type = "scalar"; r.series = {At100({}, 1)}; return r; }()},
      {"m", []{ QueryResult r; r.result_type = "matrix"; r.series = {{{{"gpu", "0"}}, {{1, 1}, {2, 2}}}}; return r; }()},
  };
  EXPECT_FALSE(Answer("z - x or z", parts)) << "duplicate series for the match group on the right";
  EXPECT_FALSE(Answer("x - z or z", parts)) << "many-to-one without group_left";
  EXPECT_TRUE(Answer("x < z or z", parts)) << "a match not kept is no duplicate";
  EXPECT_FALSE(Answer("x * 1 or z", parts)) << "two series with one label set once the name is dropped";
  EXPECT_FALSE(Answer("label_replace(x, \"__name__\", \"n\", \"\", \"\") or z", parts)) << "one label set twice";
  EXPECT_FALSE(Answer("s + z or z", parts)) << "a scalar part";
  EXPECT_FALSE(Answer("m + z or z", parts)) << "a range vector part";
}

// The range answer to `promql` from range answers to its parts.
std::optional<QueryResult> RangeAnswer(const std::string& promql, const std::map<std::string, QueryResult>& parts) {
  return Answer(promql, parts, Query::Kind::kRange);
}

const std::string kClock = "min by (host, instance) (hw_gpu_clock_mhz{type=\"sclk\"})";
const std::string kBelowFleet = "(" + kClock + " / scalar(quantile(0.5, " + kClock + "))) < bool 0.9";

TEST(CompositeOfTest, ARangeReadsTheAggregationsOfItsSelectorsAsParts) {
  auto c = CompositeOf(kBelowFleet, Query::Kind::kRange);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->parts, std::vector<std::string>{kClock}) << "the aggregation other rules ask, read twice";
  EXPECT_TRUE(c->RepeatsAPart());
  EXPECT_EQ(CompositeOf(kBelowFleet)->parts,
            (std::vector<std::string>{"hw_gpu_clock_mhz{type=\"sclk\"}", "scalar(quantile(0.5, " + kClock + "))"}))
      << "an instant question keeps its own parts";
  c = CompositeOf("max by (instance, ip) (used) / max by (instance, ip) (total)", Query::Kind::kRange);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->parts, (std::vector<std::string>{"max by (instance, ip) (used)", "max by (instance, ip) (total)"}));
  c = CompositeOf("max by (ip) (used - used offset 2m)", Query::Kind::kRange);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->parts, (std::vector<std::string>{"used", "used offset 2m"}));
  for (const char* promql : {"min by (host) (x)", " quantile(0.5, x) ", "x", "x / time()", "x - pi()", "x and on (h) y"})
    EXPECT_FALSE(CompositeOf(promql, Query::Kind::kRange)) << promql;
}


TEST(CompositeAnswerTest, ARangeIsEvaluatedAtEachStepAndSortedByLabels) {
  const Labels b = {{"host", "b"}, {"instance", "b:9"}}, a = {{"host", "a"}, {"instance", "a:9"}},
               c = {{"host", "c"}, {"instance", "c:9"}};
  // Host c misses the step at 120: the median there is over two hosts.
  const std::map<std::string, QueryResult> parts = {
      {kClock, Matrix({{b, {{60, 2000}, {120, 2000}, {180, 2000}}},
                       {a, {{60, 1000}, {120, 2100}, {180, 2000}}},
                       {c, {{60, 2100}, {180, 1900}}}})}};
  auto r = RangeAnswer(kBelowFleet, parts);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_type, "matrix");
  ASSERT_EQ(r->series.size(), 3u);
  EXPECT_EQ(r->series[0].labels, a) << "sorted by labels, the name dropped by the comparison with bool";
  EXPECT_EQ(Points(r->series[0].samples), (PointList{{60, 1}, {120, 0}, {180, 0}}));
  EXPECT_EQ(Points(r->series[1].samples), (PointList{{60, 0}, {120, 0}, {180, 0}}));
  EXPECT_EQ(r->series[2].labels, c);
  EXPECT_EQ(Points(r->series[2].samples), (PointList{{60, 0}, {180, 0}}));
  auto ratio = RangeAnswer("(" + kClock + " / scalar(quantile(0.5, " + kClock + ")))", parts);
  ASSERT_TRUE(ratio);
  EXPECT_EQ(ratio->series[0].samples[1].v, 2100 / (2000 * 0.5 + 2100 * 0.5)) << "an even count: the neighbours weighted";
}

TEST(CompositeAnswerTest, ARangeRefusesWhatTheSeriesOrderWithinAStepWouldDecide) {
  const std::map<std::string, QueryResult> parts = {
      {"max by (h) (x)", Matrix({{{{"h", "a"}}, {{60, kNaN}}}, {{{"h", "b"}}, {{60, kNaN}}}, {{{"h", "c"}}, {{60, 1}}}})},
      {"max by (h) (y)", Matrix({{{{"h", "a"}}, {{60, 0.5}}}, {{{"h", "b"}}, {{60, 0.25}}}})},
      {"max by (h) (v)", Vector({At100({{"h", "a"}}, 1)})}};
  EXPECT_FALSE(RangeAnswer("max by (h) (x) / scalar(quantile(0.5, max by (h) (x)))", parts)) << "two NaNs in a quantile";
  EXPECT_FALSE(RangeAnswer("sum(max by (h) (y) + max by (h) (y))", parts)) << "a sum of fractions: the order decides";
  auto r = RangeAnswer("max by (h) (y) / max by (h) (x)", parts);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->series.size(), 2u);
  EXPECT_TRUE(std::isnan(r->series[0].samples[0].v));
  EXPECT_FALSE(RangeAnswer("max by (h) (y) / max by (h) (v)", parts)) << "an instant vector for a range part";
}

}  // namespace
}  // namespace diagnose::dag
