// The one grammar of the engine-side PromQL readers (engine/dag/promql_subset.h): the tree it builds,
// what it declines, and the evaluation the planners share, with the rules where they differ.
#include "engine/dag/promql_subset.h"

#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

namespace diagnose::dag {
namespace {

using Kind = PromqlNode::Kind;

// The tree as text: parts in [], numbers as written by %g, operators with their modifiers.
std::string Shape(const PromqlNode& n) {
  switch (n.kind) {
    case Kind::kPart: return "[" + n.text + (n.function.empty() ? "" : " fn=" + n.function) + "]";
    case Kind::kNumber: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", n.number);
      return buf;
    }
    case Kind::kScalar: return "scalar(" + Shape(*n.children[0]) + ")";
    case Kind::kLabelReplace: return "label_replace(" + Shape(*n.children[0]) + "," + n.dst + "," + n.replacement + "," + n.src + "," + n.regex + ")";
    case Kind::kAggregate: {
      std::string by;
      for (const auto& l : n.labels) by += (by.empty() ? "" : ",") + l;
      char q[32] = "";
      if (n.op == "quantile") std::snprintf(q, sizeof q, "%g,", n.number);
      return n.op + "by(" + by + ")(" + q + Shape(*n.children[0]) + ")";
    }
    case Kind::kBinary: {
      std::string op = n.op + (n.return_bool ? " bool" : "");
      if (n.on) {
        std::string on;
        for (const auto& l : n.labels) on += (on.empty() ? "" : ",") + l;
        op += " on(" + on + ")";
      }
      return "(" + Shape(*n.children[0]) + " " + op + " " + Shape(*n.children[1]) + ")";
    }
  }
  return "?";
}

std::string ShapeOf(std::string_view promql) {
  auto root = ParsePromqlSubset(promql);
  return root ? Shape(*root) : "declined";
}

TEST(PromqlSubsetTest, PrecedenceAndAssociativityArePromqls) {
  EXPECT_EQ(ShapeOf("a - b * c"), "([a] - ([b] * [c]))");
  EXPECT_EQ(ShapeOf("a - b - c"), "(([a] - [b]) - [c])");
  EXPECT_EQ(ShapeOf("a or b and c > 1"), "([a] or ([b] and ([c] > 1)))");
  EXPECT_EQ(ShapeOf("a / 2 % 3 unless b"), "((([a] / 2) % 3) unless [b])");
  EXPECT_EQ(ShapeOf("(a or b) > bool -2.5e3"), "(([a] or [b]) > bool -2500)");
  EXPECT_EQ(ShapeOf("2 < a"), "(2 < [a])");
}

TEST(PromqlSubsetTest, PartsAreKeptAsWrittenWithTheFunctionTheyCall) {
  EXPECT_EQ(ShapeOf("count_over_time (x{a=\"(]\\\")\"}[5m]) + rate(y[1m]) offset 5m"),
            "([count_over_time (x{a=\"(]\\\")\"}[5m]) fn=count_over_time] + [rate(y[1m]) offset 5m])");
  EXPECT_EQ(ShapeOf("avg by (h) (x) - quantile(0.5, y) without (g) - w @ 100"),
            "(([avg by (h) (x)] - [quantile(0.5, y) without (g)]) - [w @ 100])");
  EXPECT_EQ(ShapeOf("{__name__=\"v\"} > 1"), "([{__name__=\"v\"}] > 1)");
}

TEST(PromqlSubsetTest, AggregationsScalarLabelReplaceAndMatchingOnLabels) {
  EXPECT_EQ(ShapeOf("max by (host, instance,) (x) / scalar(max(y))"), "(maxby(host,instance)([x]) / scalar(maxby()([y])))");
  EXPECT_EQ(ShapeOf("count(x) by (host)"), "countby(host)([x])");
  EXPECT_EQ(ShapeOf("a unless on (host) b and on () c"), "(([a] unless on(host) [b]) and on() [c])");
  EXPECT_EQ(ShapeOf("label_replace(a, \"block\", `x`, 'src', \"\")"), "label_replace([a],block,x,src,)");
}

TEST(PromqlSubsetTest, DeclinesWhatItDoesNotReadAndUntrustedExtremes) {
  for (const char* promql : {
           "a ^ 2", "atan2(a, b)", "a atan2 b",          // Go's Pow and Atan2
           "a + on (h) b", "a > on (h) b",               // `on` decides arithmetic's labels
           "a and ignoring (h) b", "a and on (h) group_left b",
           "sum without (h) (a)", "sum by (a) by (b) (x)", "sum(1)", "scalar(1)",
           "(a + a)[5m:1m]", "(a + a) offset 5m", "scalar(a) offset 5m",
           "a and 1", "1 + 2", "a - -a", "a > 0x1f", "a > 5m", "a + Inf",
           "a # comment", "a{b=\"c}", "(a + a", "a + a)", "a +", "", "label_replace(a, \"a\", \"$1\", \"b\", \"(.*)\")",
       })
    EXPECT_EQ(ShapeOf(promql), "declined") << promql;
  EXPECT_EQ(ShapeOf("a - " + std::string(100, '(') + "a" + std::string(100, ')')), "declined") << "deeper than 64";
  EXPECT_NE(ShapeOf("a - " + std::string(20, '(') + "a" + std::string(20, ')')), "declined");
  std::string long_union = "a";
  while (long_union.size() <= 8192) long_union += " or a";
  EXPECT_EQ(ShapeOf(long_union), "declined") << "longer than 8 KiB";
}

TEST(PromqlSubsetTest, PartsInOrderOfFirstAppearanceWithTheirReads) {
  auto root = ParsePromqlSubset("x / scalar(max(x)) + y - x");
  ASSERT_TRUE(root);
  PromqlParts evaluated = PartsOf(*root, {});
  EXPECT_EQ(evaluated.texts, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(evaluated.reads, (std::vector<int>{3, 1}));
  PromqlParts asked = PartsOf(*root, {/*scalar_is_part=*/true, false});
  EXPECT_EQ(asked.texts, (std::vector<std::string>{"x", "scalar(max(x))", "y"}));
  EXPECT_EQ(asked.reads, (std::vector<int>{2, 1, 1}));
}

std::shared_ptr<const Labels> Owned(Labels labels) { return std::make_shared<const Labels>(std::move(labels)); }

std::vector<std::pair<Labels, double>> Evaluated(const std::string& promql, const std::vector<InstantVector>& parts,
                                                 SubsetRules rules, bool* refused = nullptr) {
  auto root = ParsePromqlSubset(promql);
  EXPECT_TRUE(root) << promql;
  std::vector<std::pair<Labels, double>> out;
  if (!root) return out;
  auto value = EvaluateInstant(*root, PartsOf(*root, rules).texts, parts, rules);
  if (refused) *refused = !value;
  if (value)
    for (const auto& e : *value) out.emplace_back(*e.labels, e.v);
  return out;
}

TEST(PromqlSubsetEvaluationTest, SetOperationsMatchOnTheOnLabelsOrOnEveryLabelButTheName) {
  const InstantVector a = {{Owned({{"host", "a"}, {"gpu", "0"}}), 1, 1}, {Owned({{"host", "b"}, {"gpu", "0"}}), 1, 2},
                           {Owned({{"gpu", "1"}}), 1, 3}};
  const InstantVector b = {{Owned({{"__name__", "m"}, {"host", "a"}}), 1, 9}};
  using Flat = std::vector<std::pair<Labels, double>>;
  EXPECT_EQ(Evaluated("a and on (host) b", {a, b}, {}), (Flat{{{{"host", "a"}, {"gpu", "0"}}, 1}}));
  EXPECT_EQ(Evaluated("a unless on (host) b", {a, b}, {}), (Flat{{{{"host", "b"}, {"gpu", "0"}}, 2}, {{{"gpu", "1"}}, 3}}));
  EXPECT_EQ(Evaluated("a and b", {a, b}, {}), Flat{}) << "every label but __name__";
  EXPECT_EQ(Evaluated("a unless on () b", {a, b}, {}), Flat{});
  EXPECT_EQ(Evaluated("b or on (host) a", {b, a}, {}).size(), 3u) << "host b and the host-less series join";
}

TEST(PromqlSubsetEvaluationTest, AggregationFoldsInSeriesOrderOrRefusesWhereOrderDecides) {
  const InstantVector fractions = {{Owned({{"h", "a"}}), 1, 0.1}, {Owned({{"h", "a"}}), 1, 0.2}, {Owned({{"h", "b"}}), 1, 0.3}};
  bool refused = false;
  auto ordered = Evaluated("sum(x)", {fractions}, {}, &refused);
  ASSERT_FALSE(refused);
  ASSERT_EQ(ordered.size(), 1u);
  EXPECT_EQ(ordered[0].second, (0.1 + 0.2) + 0.3) << "Prometheus' order, bit for bit";
  Evaluated("sum(x)", {fractions}, {false, /*any_order=*/true}, &refused);
  EXPECT_TRUE(refused) << "a sum of fractions depends on the order";
  const InstantVector counts = {{Owned({{"h", "a"}}), 1, 4}, {Owned({{"h", "b"}}), 1, 5}, {Owned({{"h", "a"}}), 1, 6}};
  using Flat = std::vector<std::pair<Labels, double>>;
  EXPECT_EQ(Evaluated("sum by (h) (x)", {counts}, {false, true}), (Flat{{{{"h", "a"}}, 10}, {{{"h", "b"}}, 5}}));
  EXPECT_EQ(Evaluated("count by (h) (x)", {counts}, {false, true}), (Flat{{{{"h", "a"}}, 2}, {{{"h", "b"}}, 1}}));
  const InstantVector zeros = {{Owned({{"h", "a"}}), 1, 0.0}, {Owned({{"h", "b"}}), 1, -0.0}};
  Evaluated("max(x)", {zeros}, {false, true}, &refused);
  EXPECT_TRUE(refused) << "which zero a max keeps is the order";
  auto first = Evaluated("max(x)", {zeros}, {}, &refused);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_FALSE(std::signbit(first[0].second)) << "the first in series order";
}

TEST(PromqlSubsetEvaluationTest, OneToOneMatchingAndScalar) {
  const InstantVector a = {{Owned({{"__name__", "m"}, {"h", "a"}}), 1, 5}, {Owned({{"h", "b"}}), 1, 1}};
  const InstantVector b = {{Owned({{"h", "a"}}), 1, 3}};
  using Flat = std::vector<std::pair<Labels, double>>;
  EXPECT_EQ(Evaluated("a - b", {a, b}, {}), (Flat{{{{"h", "a"}}, 2}})) << "the name dropped, unmatched dropped";
  EXPECT_EQ(Evaluated("a > b", {a, b}, {}), (Flat{{{{"__name__", "m"}, {"h", "a"}}, 5}})) << "a filter keeps the name";
  EXPECT_EQ(Evaluated("a / scalar(b)", {a, b}, {}), (Flat{{{{"h", "a"}}, 5.0 / 3}, {{{"h", "b"}}, 1.0 / 3}}));
  const auto nan = Evaluated("a / scalar(a)", {a}, {});
  ASSERT_EQ(nan.size(), 2u);
  EXPECT_TRUE(std::isnan(nan[0].second)) << "scalar() of two elements is NaN";
  const InstantVector twice = {{Owned({{"h", "a"}}), 1, 3}, {Owned({{"__name__", "n"}, {"h", "a"}}), 1, 4}};
  bool refused = false;
  Evaluated("a - b", {a, twice}, {}, &refused);
  EXPECT_TRUE(refused) << "one signature twice on a side: Prometheus fails";
}

// Signatures are hashed and compared in place (no key strings): what matches must be exactly what
// Prometheus matches, whatever sorts before or after __name__, however long the label sets.
TEST(PromqlSubsetEvaluationTest, MatchingComparesEveryLabelButTheNameWhereverItSorts) {
  using Flat = std::vector<std::pair<Labels, double>>;
  // "A" sorts before "__name__", "h" after it.
  const InstantVector named = {{Owned({{"A", "1"}, {"__name__", "m"}, {"h", "a"}}), 1, 5}};
  const InstantVector bare = {{Owned({{"A", "1"}, {"h", "a"}}), 1, 3}};
  EXPECT_EQ(Evaluated("a - b", {named, bare}, {}), (Flat{{{{"A", "1"}, {"h", "a"}}, 2}}));
  EXPECT_EQ(Evaluated("b - a", {bare, named}, {}), (Flat{{{{"A", "1"}, {"h", "a"}}, -2}}));
  const InstantVector longer = {{Owned({{"A", "1"}, {"h", "a"}, {"z", "1"}}), 1, 3}};
  EXPECT_EQ(Evaluated("a - b", {named, longer}, {}), Flat{}) << "one label more is another signature";
  EXPECT_EQ(Evaluated("b - a", {longer, named}, {}), Flat{});
  const InstantVector other_value = {{Owned({{"A", "2"}, {"h", "a"}}), 1, 3}};
  EXPECT_EQ(Evaluated("a and b", {named, other_value}, {}), Flat{});
  EXPECT_EQ(Evaluated("a unless b", {named, other_value}, {}), (Flat{{{{"A", "1"}, {"__name__", "m"}, {"h", "a"}}, 5}}));
}

TEST(PromqlSubsetEvaluationTest, OnLabelsMatchAbsentAndEmptyAlikeAndRefuseManyToOne) {
  using Flat = std::vector<std::pair<Labels, double>>;
  const InstantVector lhs = {{Owned({{"h", "a"}, {"g", "0"}}), 1, 1}, {Owned({{"h", ""}, {"g", "1"}}), 1, 2},
                             {Owned({{"g", "2"}}), 1, 3}};
  const InstantVector rhs = {{Owned({{"g", "9"}}), 1, 7}};
  EXPECT_EQ(Evaluated("a and on (h) b", {lhs, rhs}, {}),
            (Flat{{{{"h", ""}, {"g", "1"}}, 2}, {{{"g", "2"}}, 3}})) << "an empty label is an absent one";
  EXPECT_EQ(Evaluated("b or on (h) a", {rhs, lhs}, {}), (Flat{{{{"g", "9"}}, 7}, {{{"h", "a"}, {"g", "0"}}, 1}}));
  // Two left-hand series with one signature meet one right-hand series: Prometheus fails
  // (many-to-one without group_left); a comparison filtering one of them out does not.
  const InstantVector pair = {{Owned({{"__name__", "m"}, {"h", "a"}}), 1, 1}, {Owned({{"__name__", "n"}, {"h", "a"}}), 1, 4}};
  const InstantVector one = {{Owned({{"h", "a"}}), 1, 2}};
  bool refused = false;
  Evaluated("a - b", {pair, one}, {}, &refused);
  EXPECT_TRUE(refused);
  EXPECT_EQ(Evaluated("a > b", {pair, one}, {}, &refused), (Flat{{{{"__name__", "n"}, {"h", "a"}}, 4}}));
  EXPECT_FALSE(refused);
  Evaluated("a * 2", {pair}, {}, &refused);
  EXPECT_TRUE(refused) << "the name dropped leaves one label set twice";
  EXPECT_EQ(Evaluated("a * 2", {one}, {}), (Flat{{{{"h", "a"}}, 4}}));
}

TEST(PromqlSubsetEvaluationTest, ManySeriesMatchAsOneByOne) {
  // 2,000 series on each side, the right in reverse order and every third missing: each left-hand
  // series meets its own, whatever the hash buckets hold.
  InstantVector lhs, rhs;
  for (int i = 0; i < 2000; ++i)
    lhs.push_back({Owned({{"__name__", "x"}, {"host", "n" + std::to_string(i)}, {"gpu", std::to_string(i % 8)}}), 1, 1.0 * i});
  for (int i = 1999; i >= 0; --i)
    if (i % 3 != 0) rhs.push_back({Owned({{"host", "n" + std::to_string(i)}, {"gpu", std::to_string(i % 8)}}), 1, 0.5});
  const auto diff = Evaluated("a - b", {lhs, rhs}, {});
  ASSERT_EQ(diff.size(), 1333u);
  size_t k = 0;
  for (int i = 0; i < 2000; ++i) {
    if (i % 3 == 0) continue;
    EXPECT_EQ(diff[k].first.at("host"), "n" + std::to_string(i));
    EXPECT_EQ(diff[k].second, i - 0.5);
    ++k;
  }
  EXPECT_EQ(Evaluated("a unless on (host) b", {lhs, rhs}, {}).size(), 667u);
  EXPECT_EQ(Evaluated("b or a", {rhs, lhs}, {}).size(), 2000u);
}

TEST(PromqlSubsetTest, QuantileWithANumberIsEvaluatedOtherwiseAskedAsWritten) {
  EXPECT_EQ(ShapeOf("quantile(0.5, x)"), "quantileby()(0.5,[x])");
  EXPECT_EQ(ShapeOf("quantile by (h) (-0.25, min by (h, g) (x)) / 2"), "(quantileby(h)(-0.25,minby(h,g)([x])) / 2)");
  EXPECT_EQ(ShapeOf("quantile (0.9, x) by (h,)"), "quantileby(h)(0.9,[x])");
  EXPECT_EQ(ShapeOf("quantile(0.5, x) without (g) + y"), "([quantile(0.5, x) without (g)] + [y])");
  EXPECT_EQ(ShapeOf("quantile(scalar(y), x) - x"), "([quantile(scalar(y), x)] - [x])");
  EXPECT_EQ(ShapeOf("quantile(0.5)"), "[quantile(0.5)]") << "malformed: Prometheus' error, asked as written";
  auto root = ParsePromqlSubset("quantile by (h) (0.5, x)");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->text, "quantile by (h) (0.5, x)") << "an aggregation keeps its text for a planner asking it";
}

TEST(PromqlSubsetTest, AnAggregationOfAPartIsAPartWhereTheRulesSaySo) {
  auto root = ParsePromqlSubset("(min by (h) (x{t=\"s\"}) / scalar(quantile(0.5, min by (h) (x{t=\"s\"})))) < bool 0.9 or max(y - z)");
  ASSERT_TRUE(root);
  const SubsetRules range{false, true, /*aggregations_of_parts_are_parts=*/true};
  PromqlParts parts = PartsOf(*root, range);
  EXPECT_EQ(parts.texts, (std::vector<std::string>{"min by (h) (x{t=\"s\"})", "y", "z"}))
      << "the quantile of an aggregation and the max of an operation are evaluated";
  EXPECT_EQ(parts.reads, (std::vector<int>{2, 1, 1}));
  EXPECT_EQ(PartsOf(*root, {}).texts, (std::vector<std::string>{"x{t=\"s\"}", "y", "z"}));
}

TEST(PromqlSubsetEvaluationTest, QuantileIsPrometheusOwn) {
  const double inf = HUGE_VAL;
  auto q = [](double quantile, std::vector<double> values) { return PrometheusQuantile(quantile, std::move(values)); };
  EXPECT_TRUE(std::isnan(*q(0.5, {}))) << "no values";
  EXPECT_EQ(*q(-0.1, {1, 2}), -inf);
  EXPECT_EQ(*q(1.1, {1, 2}), inf);
  EXPECT_EQ(*q(0.5, {7}), 7) << "one value";
  EXPECT_EQ(*q(0.5, {4, 1, 3, 2}), 2.5) << "sorted, the two neighbours weighted";
  EXPECT_EQ(*q(0.5, {3, 1, 2}), 2);
  EXPECT_EQ(*q(0.9, {10, 0, 0, 10}), 10 * (1 - (0.9 * 3 - 2)) + 10 * (0.9 * 3 - 2)) << "ties, Go's arithmetic";
  EXPECT_EQ(*q(0.1, {0.3, 0.1, 0.2}), 0.1 * (1 - 0.1 * 2) + 0.2 * (0.1 * 2));
  EXPECT_EQ(*q(1, {5, 1, 3}), 5);
  EXPECT_EQ(*q(0, {5, 1, 3}), 1);
  EXPECT_EQ(*q(0.5, {1, inf}), inf);
  EXPECT_TRUE(std::isnan(*q(0.5, {1, 2, inf}))) << "Inf * 0 for the unweighted neighbour, as Prometheus answers";
  EXPECT_TRUE(std::isnan(*q(0.5, {-inf, inf})));
  EXPECT_EQ(*q(0.5, {-inf, -inf, 1}), -inf);
  const double nan = std::nan("");
  EXPECT_TRUE(std::isnan(*q(0, {2, nan, 1}))) << "one NaN sorts first";
  EXPECT_EQ(*q(1, {2, nan, 1}), 2);
  EXPECT_EQ(*q(0.75, {2, nan, 1}), 1 * (1 - 0.5) + 2 * 0.5);
  EXPECT_FALSE(q(0.5, {nan, 1, nan})) << "two NaNs: Go's sort has no one order for them";
  EXPECT_FALSE(q(0.5, {0.0, 1, -0.0})) << "+0 and -0 are equal to the sort: which one is chosen is the input order";
  EXPECT_TRUE(std::signbit(*q(0.5, {-0.0, -0.0})));
  EXPECT_FALSE(std::signbit(*q(0.5, {0.0, 1})));
}

TEST(PromqlSubsetEvaluationTest, QuantileAggregatesByGroup) {
  const InstantVector x = {{Owned({{"h", "a"}, {"g", "0"}}), 1, 3}, {Owned({{"h", "b"}, {"g", "0"}}), 1, 8},
                           {Owned({{"h", "a"}, {"g", "1"}}), 1, 1}, {Owned({{"h", "a"}, {"g", "2"}}), 1, 2}};
  using Flat = std::vector<std::pair<Labels, double>>;
  for (SubsetRules rules : {SubsetRules{}, SubsetRules{false, true}}) {
    EXPECT_EQ(Evaluated("quantile by (h) (0.5, x)", {x}, rules), (Flat{{{{"h", "a"}}, 2}, {{{"h", "b"}}, 8}}));
    EXPECT_EQ(Evaluated("x / scalar(quantile(0.25, x))", {x}, rules).front().second, 3 / (1 * 0.25 + 2 * 0.75));
  }
  const InstantVector zeros = {{Owned({{"h", "a"}}), 1, 0.0}, {Owned({{"h", "b"}}), 1, -0.0}};
  bool refused = false;
  Evaluated("quantile(0.5, x)", {zeros}, {}, &refused);
  EXPECT_TRUE(refused);
  EXPECT_EQ(Evaluated("quantile by (h) (0.5, x)", {zeros}, {}, &refused).size(), 2u) << "each zero alone in its group";
  EXPECT_FALSE(refused);
}

}  // namespace
}  // namespace diagnose::dag
