#include "engine/dag/query_result.h"

#include <cmath>

#include <gtest/gtest.h>

namespace diagnose::dag {
namespace {

using nlohmann::json;

playbook::RuleSpec RangeRule(Reduction reduce) {
  playbook::RuleSpec rule;
  rule.query.range = true;
  rule.query.by = {"host"};
  rule.query.reduce = reduce;
  return rule;
}

Series SeriesOf(const std::string& host, const std::string& gpu, std::vector<Sample> samples) {
  return Series{{{"host", host}, {"gpu", gpu}}, std::move(samples)};
}

// A range answer's points per key: the series sharing the key merged in time order, a time two of
// them share combined as the reduction combines series (sum adds, max keeps the larger), NaN points
// left out, one series' repeated time combined in the order it came.
TEST(QueryResultJson, SeriesSharingAKeyAreMergedInTimeOrderAndCombinedAtSharedTimes) {
  QueryResult answer;
  answer.result_type = "matrix";
  answer.series = {SeriesOf("a", "0", {{10, 1}, {20, 2}}),
                   SeriesOf("a", "1", {{5, 7}, {20, 3}, {40, 4}}),
                   SeriesOf("b", "0", {{30, 1}, {10, 2}, {10, 0.5}}),
                   SeriesOf("c", "0", {{10, 6}, {20, std::nan("")}, {30, 8}}),
                   SeriesOf("d", "0", {{10, std::nan("")}})};
  const json sum = QueryResultJson(RangeRule(Reduction::kSum), answer, json::object(), "q", 0, 60);
  EXPECT_EQ(sum["series"]["a"], json::parse("[[5,7.0],[10,1.0],[20,5.0],[40,4.0]]"));
  EXPECT_EQ(sum["series"]["b"], json::parse("[[10,2.5],[30,1.0]]"));
  // A series whose sum is NaN has no value, and so no points either.
  EXPECT_FALSE(sum["series"].contains("c"));
  EXPECT_FALSE(sum["series"].contains("d"));
  const json max = QueryResultJson(RangeRule(Reduction::kMax), answer, json::object(), "q", 0, 60);
  EXPECT_EQ(max["series"]["a"], json::parse("[[5,7.0],[10,1.0],[20,3.0],[40,4.0]]"));
  EXPECT_EQ(max["series"]["b"], json::parse("[[10,2.0],[30,1.0]]"));
  EXPECT_EQ(max["series"]["c"], json::parse("[[10,6.0],[30,8.0]]"));
  EXPECT_EQ(max["values"], json::parse(R"({"a":7.0,"b":2.0,"c":8.0})"));
}

TEST(QueryResultJson, AKeyWhoseEveryPointIsNaNKeepsAnEmptySeries) {
  QueryResult answer;
  answer.result_type = "matrix";
  // Reduced by count, the series has a value (its length) though no point is a number.
  answer.series = {SeriesOf("a", "0", {{10, std::nan("")}, {20, std::nan("")}})};
  const json counted = QueryResultJson(RangeRule(Reduction::kCount), answer, json::object(), "q", 0, 60);
  EXPECT_EQ(counted["values"], json::parse(R"({"a":2.0})"));
  EXPECT_EQ(counted["series"]["a"], json::array());
}

// Every reduction of a key combines its series as that reduction does, and the summary numbers are
// over the combined values; an instant answer keeps the largest value of a key's series.
TEST(QueryResultJson, ReductionsAndSummaryAreOverTheCombinedKeys) {
  QueryResult answer;
  answer.result_type = "matrix";
  answer.series = {SeriesOf("a", "0", {{10, 1}, {20, 5}}), SeriesOf("a", "1", {{10, 4}, {20, 2}}),
                   SeriesOf("b", "0", {{10, 3}}), SeriesOf("c", "0", {})};
  playbook::RuleSpec rule = RangeRule(Reduction::kMax);
  rule.query.reductions = {Reduction::kMax, Reduction::kSum, Reduction::kMin, Reduction::kLast};
  const json out = QueryResultJson(rule, answer, json::object(), "q", 0, 60);
  EXPECT_EQ(out["values"], json::parse(R"({"a":5.0,"b":3.0})"));
  EXPECT_EQ(out["reduced"]["max"], json::parse(R"({"a":5.0,"b":3.0})"));
  EXPECT_EQ(out["reduced"]["sum"], json::parse(R"({"a":12.0,"b":3.0})"));
  EXPECT_EQ(out["reduced"]["min"], json::parse(R"({"a":1.0,"b":3.0})"));
  EXPECT_EQ(out["reduced"]["last"], json::parse(R"({"a":5.0,"b":3.0})"));
  EXPECT_EQ(out["count"], 2u);
  EXPECT_EQ(out["max"], 5.0);
  EXPECT_EQ(out["min"], 3.0);
  EXPECT_EQ(out["sum"], 8.0);
  EXPECT_EQ(out["avg"], 4.0);
  EXPECT_EQ(out["hosts"], json({"a", "b", "c"}));

  playbook::RuleSpec instant;
  instant.query.by = {"host", "gpu"};
  QueryResult vector;
  vector.result_type = "vector";
  vector.series = {SeriesOf("a", "0", {{60, 1}}), SeriesOf("a", "1", {{60, 9}}), SeriesOf("a", "1", {{60, 4}})};
  const json by_gpu = QueryResultJson(instant, vector, json::object(), "q", 60, 60);
  EXPECT_EQ(by_gpu["values"], json::parse(R"({"a/0":1.0,"a/1":9.0})"));
  EXPECT_EQ(by_gpu["count"], 2u);
  EXPECT_FALSE(by_gpu.contains("series"));
  EXPECT_FALSE(by_gpu.contains("reduced"));

  const json none = QueryResultJson(instant, QueryResult{}, json::object(), "q", 60, 60);
  EXPECT_EQ(none["values"], json::object());
  EXPECT_EQ(none["count"], 0u);
  EXPECT_FALSE(none.contains("max"));
}

}  // namespace
}  // namespace diagnose::dag
