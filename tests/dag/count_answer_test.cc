// Count questions computed from per-series sample counts (engine/dag/count_answer.h): what is
// recognised, PromQL's semantics over the counts, and the evaluator sending each range once.
#include "engine/dag/count_answer.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "engine/dag/evaluate.h"
#include "engine/playbook/loader.h"
#include "tests/support/table_query_client.h"

namespace diagnose::dag {
namespace {

using nlohmann::json;

// observability-gaps' family_missing and coverage, gpu-hardware's gpu_coverage (playbooks/).
const std::string kFamilyMissing =
    "count by (host, instance) (count_over_time(cycle[60s])) unless on (host) count by (host) "
    "(count_over_time(power[60s])) and on () (count(count_over_time(power[60s])) > 0)";
const std::string kCoverage =
    "sum by (host, instance) (count_over_time(cycle[60s])) / scalar(max(sum by (host, instance) "
    "(count_over_time(cycle[60s]))))";
const std::string kGpuCoverage =
    "min by (host, instance) (count_over_time(power[60s])) / scalar(max(count_over_time(power[60s])))";

Series Counted(Labels labels, double v, double t = 100) { return {std::move(labels), {{t, v}}}; }

QueryResult CountsVector(std::vector<Series> series) {
  QueryResult r;
  r.result_type = "vector";
  r.series = std::move(series);
  return r;
}

std::map<Labels, std::vector<Sample>> CountsBySeries(const QueryResult& r) {
  std::map<Labels, std::vector<Sample>> out;
  for (const auto& s : r.series) out[s.labels] = s.samples;
  return out;
}

std::optional<QueryResult> Computed(const std::string& promql, const std::vector<QueryResult>& leaves,
                                  Query::Kind kind = Query::Kind::kInstant) {
  auto expression = CountExpressionOf(promql);
  if (!expression) {
    ADD_FAILURE() << "not recognised: " << promql;
    return std::nullopt;
  }
  std::vector<const QueryResult*> pointers;
  for (const auto& leaf : leaves) pointers.push_back(&leaf);
  return AnswerFromCounts(*expression, pointers, kind);
}

TEST(CountExpressionTest, RecognisesThePlaybooksCountQuestionsAndTheirRepeatedRanges) {
  auto family = CountExpressionOf(kFamilyMissing);
  ASSERT_TRUE(family);
  EXPECT_EQ(family->leaves, (std::vector<std::string>{"count_over_time(cycle[60s])", "count_over_time(power[60s])"}));
  EXPECT_EQ(family->leaf_reads, (std::vector<int>{1, 2}));
  auto coverage = CountExpressionOf(kCoverage);
  ASSERT_TRUE(coverage);
  EXPECT_EQ(coverage->leaves, std::vector<std::string>{"count_over_time(cycle[60s])"});
  EXPECT_EQ(coverage->leaf_reads, std::vector<int>{2});
  auto gpu = CountExpressionOf(kGpuCoverage);
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->leaf_reads, std::vector<int>{2});
  // A selector with matchers and quotes stays one leaf, as written.
  auto quoted = CountExpressionOf(R"q(count by (host) (count_over_time(x{a="(]\")"}[5m])) > 2)q");
  ASSERT_TRUE(quoted);
  EXPECT_EQ(quoted->leaves, std::vector<std::string>{R"q(count_over_time(x{a="(]\")"}[5m]))q"});
  EXPECT_TRUE(CountExpressionOf("max(count_over_time(x[5m])) by (host)"));
  // Exact as well: a signed threshold, a trailing comma in a label list (PromQL allows it).
  EXPECT_TRUE(CountExpressionOf("min by (host,) (avg_over_time(x[5m])) - max by (host,) (avg_over_time(x[5m])) > -2.5"));
  EXPECT_TRUE(CountExpressionOf("count_over_time(x[5m]) and on (host,) count_over_time(y[5m])"));
}

TEST(CountExpressionTest, LeavesEverythingElseToTheTsdb) {
  EXPECT_FALSE(CountExpressionOf(std::string(100, '(') + "count(count_over_time(x[5m]))" + std::string(100, ')')))
      << "nesting beyond the parser's depth";
  std::string long_chain = "count(count_over_time(x[5m]))";
  while (long_chain.size() <= 8192) long_chain += " unless on () count(count_over_time(x[5m]))";
  EXPECT_FALSE(CountExpressionOf(long_chain)) << "longer than the parser reads";
  EXPECT_TRUE(CountExpressionOf("((((count(count_over_time(x[5m]))))))"));
  for (const std::string promql : {
           "count_over_time(x[5m])",                                        // a bare leaf is asked as it is
           "sum by (host) (rate(x[5m]))",                                   // not a count
           "count_over_time(x[5m]) or count_over_time(y[5m])",
           "count_over_time(x[5m]) - on (a) count_over_time(y[5m])",
           "1 - avg_over_time(x[5m])",
           "count_over_time(x[5m]) - scalar(count(count_over_time(y[5m])))",
           "count_over_time(x[5m]) - 1",
           "count_over_time(x[5m]) * 2",
           "count_over_time(x[5m]) > bool 2",
           "count_over_time(x[5m]) / count_over_time(y[5m])",               // vector matching
           "2 < count_over_time(x[5m])",
           "count_over_time(x[5m]) > count_over_time(y[5m])",
           "count_over_time(x[5m]) unless ignoring (a) count_over_time(y[5m])",
           "count_over_time(x[5m]) and on (a) group_left count_over_time(y[5m])",
           "sum without (a) (count_over_time(x[5m]))",
           "topk(2, count_over_time(x[5m]))",
           "avg(count_over_time(x[5m]))",                                   // a mean rounds
           "count by (__name__) (count_over_time(x[5m]))",
           "count by (a) (count_over_time(x[5m])) by (b)",
           "scalar(count_over_time(x[5m]))",                                // not a vector
           "count(count_over_time(x[5m]) # a comment\n)",
           "count(count_over_time(x[5m])",
           "count(count_over_time(x[5m])) > 5m",
           "count(count_over_time(x[5m])) > Inf",
           "-count(count_over_time(x[5m]))",
       })
    EXPECT_FALSE(CountExpressionOf(promql)) << promql;
}

TEST(CountAnswerTest, FamilyMissingKeepsTheSourceHostsWithoutTheFamily) {
  const QueryResult cycle = CountsVector({Counted({{"host", "a"}, {"instance", "a:9"}}, 6), Counted({{"host", "b"}, {"instance", "b:9"}}, 6),
                                    Counted({{"host", "b"}, {"instance", "b:8"}}, 2), Counted({{"instance", "c:9"}}, 6)});
  const QueryResult power = CountsVector({Counted({{"host", "a"}, {"gpu", "0"}}, 6), Counted({{"host", "a"}, {"gpu", "1"}}, 5)});
  auto answer = Computed(kFamilyMissing, {cycle, power});
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->result_type, "vector");
  // The value is the number of source series per group: 1 each; the host-less series matches
  // on an empty host, which power does not have.
  const std::map<Labels, std::vector<Sample>> expected = {
      {{{"host", "b"}, {"instance", "b:8"}}, {{100, 1}}},
      {{{"host", "b"}, {"instance", "b:9"}}, {{100, 1}}},
      {{{"instance", "c:9"}}, {{100, 1}}}};
  const auto got = CountsBySeries(*answer);
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [labels, samples] : expected) {
    ASSERT_TRUE(got.count(labels));
    ASSERT_EQ(got.at(labels).size(), 1u);
    EXPECT_EQ(got.at(labels)[0].t, 100);
    EXPECT_EQ(got.at(labels)[0].v, 1);
  }
  // No host exports the family at all: `count(...) > 0` is empty and so is the answer.
  auto none = Computed(kFamilyMissing, {cycle, CountsVector({})});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->series.empty());
  // `unless` without `on` matches every label but the metric name.
  auto plain = Computed("count_over_time(cycle[60s]) > 1 unless count_over_time(power[60s])",
                      {CountsVector({Counted({{"host", "a"}}, 6), Counted({{"host", "b"}}, 6)}),
                       CountsVector({Counted({{"host", "a"}}, 2), Counted({{"host", "b"}, {"gpu", "0"}}, 2)})});
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->series.size(), 1u);
  EXPECT_EQ(plain->series[0].labels, (Labels{{"host", "b"}}));
  EXPECT_EQ(plain->series[0].samples[0].v, 6);
}

TEST(CountAnswerTest, CoverageDividesByTheScalarOfTheMaximum) {
  const QueryResult power = CountsVector({Counted({{"host", "a"}, {"instance", "a:9"}, {"gpu", "0"}}, 360),
                                    Counted({{"host", "a"}, {"instance", "a:9"}, {"gpu", "1"}}, 120),
                                    Counted({{"host", "b"}, {"instance", "b:9"}, {"gpu", "0"}}, 359)});
  auto answer = Computed(kGpuCoverage, {power});
  ASSERT_TRUE(answer);
  const auto got = CountsBySeries(*answer);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got.at({{"host", "a"}, {"instance", "a:9"}})[0].v, 120.0 / 360.0);
  EXPECT_EQ(got.at({{"host", "b"}, {"instance", "b:9"}})[0].v, 359.0 / 360.0);
  // Sums of counts are exact in any order.
  const QueryResult cycle = CountsVector({Counted({{"host", "a"}, {"instance", "a:9"}, {"pid", "1"}}, 3),
                                    Counted({{"host", "a"}, {"instance", "a:9"}, {"pid", "2"}}, 4),
                                    Counted({{"host", "b"}, {"instance", "b:9"}}, 14)});
  auto coverage = Computed(kCoverage, {cycle});
  ASSERT_TRUE(coverage);
  EXPECT_EQ(CountsBySeries(*coverage).at({{"host", "a"}, {"instance", "a:9"}})[0].v, 7.0 / 14.0);
  EXPECT_EQ(CountsBySeries(*coverage).at({{"host", "b"}, {"instance", "b:9"}})[0].v, 1.0);
  // scalar() of anything but one element is NaN, and so is every quotient.
  auto no_max = Computed("count_over_time(cycle[60s]) / scalar(count_over_time(cycle[60s]))", {cycle});
  ASSERT_TRUE(no_max);
  ASSERT_EQ(no_max->series.size(), 3u);
  for (const auto& s : no_max->series) EXPECT_TRUE(std::isnan(s.samples[0].v));
  // An empty answer is an empty answer.
  auto empty = Computed(kGpuCoverage, {CountsVector({})});
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->series.empty());
}

TEST(CountAnswerTest, ASpreadIsTheDifferenceOfTheGroupsMaximumAndMinimum) {
  const std::string spread =
      "max by (host, instance) (avg_over_time(power[1h])) - min by (host, instance) (avg_over_time(power[1h]))";
  auto expression = CountExpressionOf(spread);
  ASSERT_TRUE(expression);
  EXPECT_EQ(expression->leaves, std::vector<std::string>{"avg_over_time(power[1h])"});
  EXPECT_EQ(expression->leaf_reads, std::vector<int>{2});
  const double nan = std::nan("");
  const QueryResult average = CountsVector({Counted({{"host", "a"}, {"instance", "a:9"}, {"gpu", "0"}}, 701.25),
                                            Counted({{"host", "a"}, {"instance", "a:9"}, {"gpu", "1"}}, 650.5),
                                            Counted({{"host", "b"}, {"instance", "b:9"}, {"gpu", "0"}}, nan),
                                            Counted({{"host", "b"}, {"instance", "b:9"}, {"gpu", "1"}}, 700),
                                            Counted({{"host", "c"}, {"instance", "c:9"}, {"gpu", "0"}}, 0.1)});
  auto answer = Computed(spread, {average});
  ASSERT_TRUE(answer);
  const auto got = CountsBySeries(*answer);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got.at({{"host", "a"}, {"instance", "a:9"}})[0].v, 701.25 - 650.5);
  // Prometheus' max and min replace a NaN they started from: 700 - 700.
  EXPECT_EQ(got.at({{"host", "b"}, {"instance", "b:9"}})[0].v, 0);
  EXPECT_EQ(got.at({{"host", "c"}, {"instance", "c:9"}})[0].v, 0);
  // Series without a match on the other side are dropped.
  auto unmatched = Computed("avg_over_time(power[1h]) - max_over_time(power[1h])",
                            {CountsVector({Counted({{"gpu", "0"}}, 3), Counted({{"gpu", "1"}}, 4)}),
                             CountsVector({Counted({{"gpu", "1"}}, 5)})});
  ASSERT_TRUE(unmatched);
  ASSERT_EQ(unmatched->series.size(), 1u);
  EXPECT_EQ(unmatched->series[0].samples[0].v, -1);
  // A max over +0 and -0 depends on the order; a sum of averages on the order of addition.
  EXPECT_FALSE(Computed(spread, {CountsVector({Counted({{"host", "a"}, {"gpu", "0"}}, 0.0), Counted({{"host", "a"}, {"gpu", "1"}}, -0.0)})}));
  EXPECT_FALSE(Computed("sum(avg_over_time(power[1h])) - max(avg_over_time(power[1h]))", {average}));
}

TEST(CountAnswerTest, RangeAnswersAreEvaluatedAtEachStep) {
  QueryResult counts;
  counts.result_type = "matrix";
  counts.effective_step = 60;
  counts.series = {{{{"host", "a"}, {"gpu", "0"}}, {{0, 4}, {60, 5}}},
                   {{{"host", "a"}, {"gpu", "1"}}, {{60, 1}, {120, 3}}},
                   {{{"host", "b"}, {"gpu", "0"}}, {{0, 4}}}};
  auto answer = Computed("min by (host) (count_over_time(power[60s])) >= 3 and on (host) count_over_time(power[60s]) > 3",
                       {counts}, Query::Kind::kRange);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->result_type, "matrix");
  EXPECT_EQ(answer->effective_step, 60);
  const auto got = CountsBySeries(*answer);
  ASSERT_EQ(got.size(), 2u);
  // host a: min 4 at 0 (gpu0 > 3), min 1 at 60 (filtered), min 3 at 120 (no series above 3 then).
  ASSERT_EQ(got.at({{"host", "a"}}).size(), 1u);
  EXPECT_EQ(got.at({{"host", "a"}})[0].t, 0);
  EXPECT_EQ(got.at({{"host", "a"}})[0].v, 4);
  EXPECT_EQ(got.at({{"host", "b"}})[0].v, 4);
  // scalar() is per step too: NaN where the vector is empty.
  auto ratio = Computed("count_over_time(power[60s]) / scalar(count(count_over_time(power[60s])) == 1)", {counts},
                      Query::Kind::kRange);
  ASSERT_TRUE(ratio);
  const auto ratios = CountsBySeries(*ratio);
  EXPECT_TRUE(std::isnan(ratios.at({{"host", "a"}, {"gpu", "0"}})[0].v)) << "two series at 0";
  EXPECT_EQ(ratios.at({{"host", "a"}, {"gpu", "1"}})[1].v, 3) << "one series at 120";
}

TEST(CountAnswerTest, RefusesWhatIsNotACountOrNotItsKind) {
  const QueryResult counts = CountsVector({Counted({{"host", "a"}}, 3)});
  EXPECT_FALSE(Computed(kGpuCoverage, {counts}, Query::Kind::kRange)) << "a vector answering a range query";
  EXPECT_FALSE(Computed(kGpuCoverage, {CountsVector({Counted({{"host", "a"}}, 2.5)})}));
  EXPECT_FALSE(Computed(kGpuCoverage, {CountsVector({Counted({{"host", "a"}}, std::nan(""))})}));
  EXPECT_FALSE(Computed(kGpuCoverage, {CountsVector({Counted({{"__name__", "x"}, {"host", "a"}}, 2)})}));
  EXPECT_FALSE(Computed(kGpuCoverage, {CountsVector({Counted({{"host", "a"}}, 2), Counted({{"host", "a"}}, 3)})}));
  // A sum of quotients would depend on the order of addition.
  EXPECT_FALSE(Computed("sum(count_over_time(x[1m]) / 3)", {CountsVector({Counted({{"h", "a"}}, 1), Counted({{"h", "b"}}, 1)})}));
  EXPECT_FALSE(Computed("sum(count_over_time(x[1m]))", {CountsVector({Counted({{"h", "a"}}, 9007199254740992.0), Counted({{"h", "b"}}, 2)})}));
  auto expression = CountExpressionOf(kFamilyMissing);
  ASSERT_TRUE(expression);
  EXPECT_FALSE(AnswerFromCounts(*expression, {&counts}, Query::Kind::kInstant)) << "one answer for two leaves";
  EXPECT_FALSE(AnswerFromCounts(*expression, {&counts, nullptr}, Query::Kind::kInstant)) << "a leaf that failed";
}

TEST(CountExpressionTest, KnowsWhichLeavesOnlyPresenceReaches) {
  using On = std::optional<std::vector<std::string>>;
  auto family = CountExpressionOf(kFamilyMissing);
  ASSERT_TRUE(family);
  EXPECT_EQ(family->presence_on, (std::vector<On>{std::nullopt, std::vector<std::string>{"host"}}));
  // A count by (host, gpu) matched on host only is present by host.
  auto narrower = CountExpressionOf(
      "count_over_time(a[1h]) and on (host) count by (host, gpu) (count_over_time(b[1h])) unless on (gpu) count_over_time(c[1h])");
  ASSERT_TRUE(narrower);
  EXPECT_EQ(narrower->presence_on, (std::vector<On>{std::nullopt, std::vector<std::string>{"host"},
                                                    std::vector<std::string>{"gpu"}}));
  // Values reach the answer: through a filter counts can fail, a set operation without `on`, the
  // divisor, or a second use that reads them.
  for (const std::string promql : {
           "count_over_time(a[1h]) and on (host) (count_over_time(b[1h]) > 3)",
           "count_over_time(a[1h]) and on (host) (count by (host) (count_over_time(b[1h])) > 1)",
           "count_over_time(a[1h]) unless count_over_time(b[1h])",
           "count_over_time(a[1h]) / scalar(count(count_over_time(b[1h])))",
           "count_over_time(a[1h]) unless on (host) count_over_time(b[1h]) and on () max(count_over_time(b[1h])) > 0",
           "count_over_time(a[1h]) unless on (host) count_over_time(b[1h]) > 0 and on (gpu) count_over_time(b[1h])",
       }) {
    auto e = CountExpressionOf(promql);
    ASSERT_TRUE(e) << promql;
    ASSERT_EQ(e->presence_on.size(), 2u) << promql;
    EXPECT_FALSE(e->presence_on[1]) << promql;
  }
  auto guard = CountExpressionOf("count_over_time(a[1h]) and on () (count(count_over_time(b[1h])) >= 1)");
  ASSERT_TRUE(guard);
  EXPECT_EQ(guard->presence_on[1], On(std::vector<std::string>{}));
}

TEST(PresenceTest, AsksWhereTheSeriesAreNowThenOnlyElsewhere) {
  EXPECT_EQ(PresenceNowQuery("count_over_time(power[1h])", {"host"}), "count by (host) (power)");
  EXPECT_EQ(PresenceNowQuery(R"(count_over_time(power{type="x}"}[5m]))", {}), R"(count(power{type="x}"}))");
  EXPECT_FALSE(PresenceNowQuery("count_over_time(power[4m])", {"host"})) << "shorter than the lookback";
  EXPECT_FALSE(PresenceNowQuery("count_over_time(power[1h] offset 5m)", {"host"}));
  EXPECT_FALSE(PresenceNowQuery("count_over_time(power[1h:1m])", {"host"}));
  EXPECT_FALSE(PresenceNowQuery("count_over_time(rate(power[5m])[1h:1m])", {"host"}));
  EXPECT_FALSE(PresenceNowQuery("count_over_time(power[1h])", {"host", "gpu"}));

  const QueryResult now = CountsVector({Counted({{"host", "a.b"}}, 8), Counted({}, 1)});
  EXPECT_EQ(PresenceElsewhereQuery("count_over_time(power[1h])", {"host"}, now),
            R"(count by (host) (count_over_time(power{host!~"|a\\.b"}[1h])))");
  EXPECT_EQ(PresenceElsewhereQuery(R"(count_over_time(power{type="sclk"}[1h]))", {"host"}, now),
            R"(count by (host) (count_over_time(power{type="sclk", host!~"|a\\.b"}[1h])))");
  EXPECT_EQ(PresenceElsewhereQuery("count_over_time(power{}[1h])", {"host"}, CountsVector({})),
            "count by (host) (count_over_time(power{}[1h]))");
  EXPECT_FALSE(PresenceElsewhereQuery("count_over_time(power[1h])", {}, now)) << "present: nothing left to know";
  EXPECT_EQ(PresenceElsewhereQuery("count_over_time(power[1h])", {}, CountsVector({})), "count(count_over_time(power[1h]))");

  const QueryResult elsewhere = CountsVector({Counted({{"host", "c"}}, 3)});
  const QueryResult presence = PresenceAnswer({"host"}, now, &elsewhere);
  EXPECT_EQ(presence.result_type, "vector");
  const auto got = CountsBySeries(presence);
  ASSERT_EQ(got.size(), 3u);
  for (const Labels& labels : {Labels{}, Labels{{"host", "a.b"}}, Labels{{"host", "c"}}}) {
    ASSERT_TRUE(got.count(labels));
    EXPECT_EQ(got.at(labels)[0].v, 1);
    EXPECT_EQ(got.at(labels)[0].t, 100);
  }
  // Standing for the counts in the family question, the presence gives its answer.
  const QueryResult cycle = CountsVector({Counted({{"host", "a.b"}, {"instance", "a:9"}}, 6), Counted({{"host", "c"}, {"instance", "c:9"}}, 6),
                                          Counted({{"host", "d"}, {"instance", "d:9"}}, 6)});
  auto answer = Computed(kFamilyMissing, {cycle, presence});
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->series.size(), 1u);
  EXPECT_EQ(answer->series[0].labels, (Labels{{"host", "d"}, {"instance", "d:9"}}));
  auto none = Computed(kFamilyMissing, {cycle, PresenceAnswer({"host"}, CountsVector({}), nullptr)});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->series.empty());
}

// A fake PromQL engine answering exactly the questions it has a table row for.
class CountingClient : public testing::TableQueryClient {
 public:
  bool EvaluatesPromql() const override { return true; }
  StatusOr<QueryResult> Run(const Query& q) override {
    auto it = answers.find(q.promql);
    if (errors.count(q.promql)) return InvalidArgumentError(errors.at(q.promql));
    if (it == answers.end()) return NotFoundError("no table row for " + q.promql);
    QueryResult r;
    r.result_type = q.kind == Query::Kind::kRange ? "matrix" : "vector";
    r.series = it->second;
    return r;
  }
};

class CountedEvaluationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Load("60s");
    ctx_.discovery = {{"range", {{"start", 0}, {"end", 100}}}};
    client_.answers["count_over_time(cycle[60s])"] = {Counted({{"host", "a"}, {"instance", "a:9"}}, 6),
                                                      Counted({{"host", "b"}, {"instance", "b:9"}}, 3)};
    client_.answers["count_over_time(power[60s])"] = {Counted({{"host", "a"}, {"gpu", "0"}}, 6)};
    client_.answers["count(count_over_time(temperature[60s])) > 0"] = {Counted({}, 2)};
    ctx_.subject = &client_;
  }

  // Coverage and presence questions over two families, and one reading its range once, over `range`.
  void Load(const std::string& range) {
    std::string yaml = R"YAML(playbook: gaps
description: coverage and presence questions over two families
rules:
  - id: coverage
    query: 'sum by (host, instance) (count_over_time(cycle[RANGE])) / scalar(max(sum by (host, instance) (count_over_time(cycle[RANGE]))))'
    window: job
    by: [host]
  - id: missing
    query: 'count by (host, instance) (count_over_time(cycle[RANGE])) unless on (host) count by (host) (count_over_time(power[RANGE])) and on () (count(count_over_time(power[RANGE])) > 0)'
    window: job
    by: [host]
  - id: once
    query: 'count(count_over_time(temperature[RANGE])) > 0'
    window: job
)YAML";
    for (size_t at; (at = yaml.find("RANGE")) != std::string::npos;) yaml.replace(at, 5, range);
    playbook::Loader loader;
    loader.LoadPlaybookText(yaml, "gaps.yaml");
    ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
    library_ = loader.TakeLibrary();
  }

  playbook::Library library_;
  EvaluationContext ctx_;
  CountingClient client_;
};

TEST_F(CountedEvaluationTest, EachRangeIsReadOnceAndTheAnswersComputedFromItsCounts) {
  auto graph = CompiledGraph::Compile(library_, {"gaps"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx_);
  ASSERT_EQ(client_.batches.size(), 1u);
  std::vector<std::string> sent;
  for (const auto& q : client_.batches[0]) sent.push_back(q.promql);
  std::sort(sent.begin(), sent.end());
  // The question reading its range once is sent as it is; the others' ranges once each.
  EXPECT_EQ(sent, (std::vector<std::string>{"count(count_over_time(temperature[60s])) > 0", "count_over_time(cycle[60s])",
                                            "count_over_time(power[60s])"}));
  EXPECT_EQ(r.queries_run, 3);
  EXPECT_EQ(r.queries_derived, 2);
  auto node = [&](const std::string& id) { return r.nodes[graph->IndexOf(id)]; };
  EXPECT_EQ(node("gaps/coverage").health, NodeHealth::kOk);
  EXPECT_EQ(node("gaps/coverage").value["values"], json({{"a", 1.0}, {"b", 0.5}}));
  EXPECT_EQ(node("gaps/coverage").value["query"], library_.playbooks[0].rules[0].query.promql_template);
  EXPECT_EQ(node("gaps/missing").value["values"], json({{"b", 1.0}}));
  EXPECT_EQ(node("gaps/once").value["values"], json({{"", 2.0}}));
}

TEST_F(CountedEvaluationTest, AQuestionWhoseCountsFailedIsAskedItself) {
  client_.errors["count_over_time(power[60s])"] = "bad_data: the leaf failed";
  const std::string missing = library_.playbooks[0].rules[1].query.promql_template;
  client_.answers[missing] = {Counted({{"host", "b"}, {"instance", "b:9"}}, 1)};
  auto graph = CompiledGraph::Compile(library_, {"gaps"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx_);
  ASSERT_EQ(client_.batches.size(), 2u);
  ASSERT_EQ(client_.batches[1].size(), 1u);
  EXPECT_EQ(client_.batches[1][0].promql, missing);
  EXPECT_EQ(r.queries_run, 4);
  EXPECT_EQ(r.queries_derived, 1);
  EXPECT_EQ(r.nodes[graph->IndexOf("gaps/missing")].value["values"], json({{"b", 1.0}}));
  EXPECT_EQ(r.nodes[graph->IndexOf("gaps/coverage")].value["values"], json({{"a", 1.0}, {"b", 0.5}}));
}

TEST_F(CountedEvaluationTest, AFamilyOnlyPresenceMattersOfIsAskedWhereItsSeriesAre) {
  Load("1h");
  auto graph = CompiledGraph::Compile(library_, {"gaps"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  client_.answers["count(count_over_time(temperature[1h])) > 0"] = {Counted({}, 2)};
  client_.answers["count_over_time(cycle[1h])"] = {Counted({{"host", "a"}, {"instance", "a:9"}}, 6),
                                                   Counted({{"host", "b"}, {"instance", "b:9"}}, 3),
                                                   Counted({{"host", "c"}, {"instance", "c:9"}}, 6)};
  // Power is at the end on a only; b's stopped earlier in the hour, c never had any.
  client_.answers["count by (host) (power)"] = {Counted({{"host", "a"}}, 8)};
  client_.answers[R"(count by (host) (count_over_time(power{host!~"a"}[1h])))"] = {Counted({{"host", "b"}}, 8)};
  auto r = Evaluate(*graph, ctx_);
  ASSERT_EQ(client_.batches.size(), 2u);
  std::vector<std::string> first;
  for (const auto& q : client_.batches[0]) first.push_back(q.promql);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<std::string>{"count by (host) (power)", "count(count_over_time(temperature[1h])) > 0",
                                             "count_over_time(cycle[1h])"}));
  ASSERT_EQ(client_.batches[1].size(), 1u);
  EXPECT_EQ(client_.batches[1][0].promql, R"(count by (host) (count_over_time(power{host!~"a"}[1h])))");
  EXPECT_EQ(r.queries_run, 4);
  EXPECT_EQ(r.queries_derived, 2);
  EXPECT_EQ(r.nodes[graph->IndexOf("gaps/missing")].value["values"], json({{"c", 1.0}}));
  EXPECT_EQ(r.nodes[graph->IndexOf("gaps/coverage")].value["values"], json({{"a", 1.0}, {"b", 0.5}, {"c", 1.0}}));

  // Where the question for the rest fails, the family question is asked itself.
  client_.batches.clear();
  client_.errors[R"(count by (host) (count_over_time(power{host!~"a"}[1h])))"] = "bad_data: failed";
  const std::string missing = library_.playbooks[0].rules[1].query.promql_template;
  client_.answers[missing] = {Counted({{"host", "c"}, {"instance", "c:9"}}, 1)};
  r = Evaluate(*graph, ctx_);
  ASSERT_EQ(client_.batches.size(), 3u);
  ASSERT_EQ(client_.batches[2].size(), 1u);
  EXPECT_EQ(client_.batches[2][0].promql, missing);
  EXPECT_EQ(r.nodes[graph->IndexOf("gaps/missing")].value["values"], json({{"c", 1.0}}));
}

TEST_F(CountedEvaluationTest, ASpreadIsComputedFromThePerGpuAnswerAskedAnyway) {
  playbook::Loader loader;
  loader.LoadPlaybookText(R"YAML(playbook: health
description: per-GPU average power and its spread within each host
rules:
  - id: power_avg
    query: 'avg_over_time(power[1h])'
    window: job
    by: [host, gpu]
  - id: power_spread
    query: 'max by (host) (avg_over_time(power[1h])) - min by (host) (avg_over_time(power[1h]))'
    window: job
    by: [host]
)YAML", "health.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  auto library = loader.TakeLibrary();
  auto graph = CompiledGraph::Compile(library, {"health"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  client_.answers["avg_over_time(power[1h])"] = {Counted({{"host", "a"}, {"gpu", "0"}}, 700.5), Counted({{"host", "a"}, {"gpu", "1"}}, 690.25),
                                                 Counted({{"host", "b"}, {"gpu", "0"}}, 650)};
  auto r = Evaluate(*graph, ctx_);
  ASSERT_EQ(client_.batches.size(), 1u);
  ASSERT_EQ(client_.batches[0].size(), 1u);
  EXPECT_EQ(client_.batches[0][0].promql, "avg_over_time(power[1h])");
  EXPECT_EQ(r.queries_derived, 1);
  EXPECT_EQ(r.nodes[graph->IndexOf("health/power_spread")].value["values"], json({{"a", 700.5 - 690.25}, {"b", 0.0}}));
  EXPECT_EQ(r.nodes[graph->IndexOf("health/power_avg")].value["values"], json({{"a/0", 700.5}, {"a/1", 690.25}, {"b/0", 650.0}}));
}

TEST_F(CountedEvaluationTest, AClientThatIsNotPrometheusIsAskedEveryQuestion) {
  class Remote : public CountingClient {
   public:
    bool EvaluatesPromql() const override { return false; }
  } remote;
  remote.answers = client_.answers;
  for (const auto& rule : library_.playbooks[0].rules) remote.answers.try_emplace(rule.query.promql_template);
  ctx_.subject = &remote;
  auto graph = CompiledGraph::Compile(library_, {"gaps"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx_);
  ASSERT_EQ(remote.batches.size(), 1u);
  EXPECT_EQ(remote.batches[0].size(), 3u);
  EXPECT_EQ(r.queries_derived, 0);
}

}  // namespace
}  // namespace diagnose::dag
