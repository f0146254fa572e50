// Count questions answered from per-series sample counts (engine/dag/count_answer.h) against
// Prometheus' own answers on the shared 24-host job (a host's scrape gap, Ray series without a host
// label), including a family some hosts do not export and one no host exports.
#include "engine/dag/count_answer.h"

#include <algorithm>
#include <optional>

#include <gtest/gtest.h>

#include "engine/tsdb/promql_escape.h"
#include "tests/tsdb/same_answer.h"

namespace diagnose {
namespace {

using CountAnswerTest = testing::SharedJobPrometheusTest;

// observability-gaps' family_missing, as the playbook writes it.
std::string FamilyMissing(const std::string& source, const std::string& keys, const std::string& family,
                          const std::string& match, const std::string& window) {
  return "count by (" + keys + ") (count_over_time(" + source + "[" + window + "])) unless on (" + match +
         ") count by (" + match + ") (count_over_time(" + family + "[" + window + "])) and on () (count(count_over_time(" +
         family + "[" + window + "])) > 0)";
}

TEST_F(CountAnswerTest, EveryCountAnswerIsPrometheusOwn) {
  ASSERT_TRUE(server_->client().EvaluatesPromql());
  const std::unique_ptr<JobScopedClient> scoped = AllButTheFirstHost();
  for (QueryClient* asked_of : std::vector<QueryClient*>{&server_->client(), scoped.get()}) {
    SCOPED_TRACE(asked_of->Describe());
    QueryClient& client = *asked_of;
    // Through the scope one host's series are gone: an answer that had some still has some.
    const bool whole_job = asked_of == &server_->client();
    // A family missing on some hosts: GPU power without the first two hosts that export it.
    auto hosts = client.Run(Query::Instant("count by (host) (count_over_time(hw_gpu_power_watts[1h]))", end_));
    ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
    ASSERT_GE(hosts->series.size(), 3u);
    const std::string partial = "hw_gpu_power_watts{host!~\"" + EscapePromqlRegexLiteral(hosts->series[0].labels.at("host")) +
                                "|" + EscapePromqlRegexLiteral(hosts->series[1].labels.at("host")) + "\"}";
    struct Case {
      Query::Kind kind;
      std::string promql;
      size_t expected_series_at_least;
    };
    const std::vector<Case> cases = {
        {Query::Kind::kInstant, FamilyMissing("hw_scrape_duration_seconds", "host, instance", "hw_gpu_power_watts", "host", "1h"), 0},
        {Query::Kind::kInstant, FamilyMissing("hw_scrape_duration_seconds", "host, instance", partial, "host", "1h"), 2},
        {Query::Kind::kInstant, FamilyMissing("hw_scrape_duration_seconds", "host, instance", "no_such_family", "host", "1h"), 0},
        {Query::Kind::kInstant, FamilyMissing("ray_node_mem_used", "instance, ip", "ray_node_gpus_utilization", "instance", "1h"), 0},
        {Query::Kind::kInstant,
         "sum by (host, instance) (count_over_time(hw_scrape_duration_seconds[2h])) / scalar(max(sum by (host, instance) "
         "(count_over_time(hw_scrape_duration_seconds[2h]))))", 24},
        {Query::Kind::kInstant,
         "sum by (instance, ip) (count_over_time(ray_node_mem_used[2h])) / scalar(max(sum by (instance, ip) "
         "(count_over_time(ray_node_mem_used[2h]))))", 24},
        {Query::Kind::kInstant,
         "min by (host, instance) (count_over_time(hw_gpu_power_watts[2h])) / scalar(max(count_over_time(hw_gpu_power_watts[2h])))", 24},
        {Query::Kind::kInstant, "count(count_over_time(no_such_family[1h])) > 0 and on () count_over_time(hw_scrape_duration_seconds[1h])", 0},
        // A scrape gap inside the range: counts change step by step, some below the threshold.
        {Query::Kind::kRange,
         "min by (host, instance) (count_over_time(hw_gpu_power_watts[15m])) >= 30 and on (host) count by (host) "
         "(count_over_time(hw_scrape_duration_seconds[15m]))", 23},
        {Query::Kind::kRange,
         "sum by (host) (count_over_time(hw_gpu_power_watts[15m])) / scalar(max(count_over_time(hw_gpu_power_watts[15m])))", 24},
        // gpu-health's power_spread, and spreads over two leaves and over NaN (0/0 at exactly 60 °C).
        {Query::Kind::kInstant,
         "max by (host, instance) (avg_over_time(hw_gpu_power_watts[1h])) - min by (host, instance) (avg_over_time(hw_gpu_power_watts[1h]))", 24},
        {Query::Kind::kInstant,
         "max by (host) (max_over_time(hw_gpu_temperature_celsius[1h])) - min by (host) (min_over_time(hw_gpu_temperature_celsius[1h]))", 24},
        {Query::Kind::kInstant,
         "max_over_time(hw_gpu_temperature_celsius[1h]) - min_over_time(hw_gpu_temperature_celsius[1h]) > 1", 1},
        {Query::Kind::kRange,
         "max by (host) (max_over_time(hw_gpu_power_watts[15m])) - min by (host) (min_over_time(hw_gpu_power_watts[15m]))", 24},
        // A signed threshold and a trailing comma in a label list (promql_subset.h reads both): the
        // spread's negative is never below -1000, so every host stays, none if the sign were lost.
        {Query::Kind::kRange,
         "min by (host,) (min_over_time(hw_gpu_temperature_celsius[15m])) - max by (host,) (max_over_time(hw_gpu_temperature_celsius[15m])) > -1000", 24},
    };
    for (const auto& c : cases) {
      SCOPED_TRACE(c.promql);
      auto expression = dag::CountExpressionOf(c.promql);
      ASSERT_TRUE(expression) << "not recognised";
      auto make = [&](const std::string& promql) {
        return c.kind == Query::Kind::kInstant ? Query::Instant(promql, end_) : Query::Range(promql, end_ - 7200, end_, 300);
      };
      std::vector<QueryResult> leaves;
      for (const auto& leaf : expression->leaves) {
        auto answer = client.Run(make(leaf));
        ASSERT_TRUE(answer.ok()) << leaf << ": " << answer.status().ToString();
        leaves.push_back(std::move(*answer));
      }
      std::vector<const QueryResult*> pointers;
      for (const auto& leaf : leaves) pointers.push_back(&leaf);
      auto computed = dag::AnswerFromCounts(*expression, pointers, c.kind);
      ASSERT_TRUE(computed) << "refused";
      auto asked = client.Run(make(c.promql));
      ASSERT_TRUE(asked.ok()) << asked.status().ToString();
      EXPECT_GE(asked->series.size(), whole_job ? c.expected_series_at_least : std::min<size_t>(c.expected_series_at_least, 1));
      testing::ExpectSameAnswer(*computed, *asked);
    }
  }
}

// Presence instead of counts (PresenceNowQuery, PresenceElsewhereQuery): at the end of the data
// (every series present now), inside a host's scrape gap (its series only earlier in the range) and
// after the data (none present now, all of them earlier).
TEST_F(CountAnswerTest, PresenceStandsForTheCountsExactly) {
  QueryClient& client = server_->client();
  const auto& spec = testing::SharedJobFixture().spec;
  ASSERT_GT(spec.gap_to - spec.gap_from, 900) << "the fixture's gap is longer than the lookback";
  const std::vector<double> times = {end_, spec.start + spec.gap_to - 60, end_ + 600};
  const std::vector<std::string> questions = {
      FamilyMissing("hw_scrape_duration_seconds", "host, instance", "hw_gpu_power_watts", "host", "1h"),
      FamilyMissing("hw_scrape_duration_seconds", "host, instance", "no_such_family", "host", "1h"),
      FamilyMissing("ray_node_mem_used", "instance, ip", "ray_node_gpus_utilization", "instance", "1h"),
      "count_over_time(hw_scrape_duration_seconds[20m]) and on (host) count by (host, gpu) (count_over_time(hw_gpu_power_watts[20m]))",
  };
  int elsewhere_found = 0;
  for (double t : times) {
    for (const auto& promql : questions) {
      SCOPED_TRACE(promql + " at " + std::to_string(t));
      auto expression = dag::CountExpressionOf(promql);
      ASSERT_TRUE(expression);
      std::vector<QueryResult> leaves;
      for (size_t l = 0; l < expression->leaves.size(); ++l) {
        const auto& on = expression->presence_on[l];
        if (!on) {
          auto counts = client.Run(Query::Instant(expression->leaves[l], t));
          ASSERT_TRUE(counts.ok()) << counts.status().ToString();
          leaves.push_back(std::move(*counts));
          continue;
        }
        auto now_query = dag::PresenceNowQuery(expression->leaves[l], *on);
        ASSERT_TRUE(now_query);
        auto now = client.Run(Query::Instant(*now_query, t));
        ASSERT_TRUE(now.ok()) << now.status().ToString();
        std::optional<QueryResult> elsewhere;
        if (auto elsewhere_query = dag::PresenceElsewhereQuery(expression->leaves[l], *on, *now)) {
          auto answer = client.Run(Query::Instant(*elsewhere_query, t));
          ASSERT_TRUE(answer.ok()) << *elsewhere_query << ": " << answer.status().ToString();
          elsewhere_found += !answer->series.empty();
          elsewhere = std::move(*answer);
        }
        leaves.push_back(dag::PresenceAnswer(*on, *now, elsewhere ? &*elsewhere : nullptr));
      }
      std::vector<const QueryResult*> pointers;
      for (const auto& leaf : leaves) pointers.push_back(&leaf);
      auto computed = dag::AnswerFromCounts(*expression, pointers, Query::Kind::kInstant);
      ASSERT_TRUE(computed) << "refused";
      auto asked = client.Run(Query::Instant(promql, t));
      ASSERT_TRUE(asked.ok()) << asked.status().ToString();
      testing::ExpectSameAnswer(*computed, *asked);
    }
  }
  EXPECT_GE(elsewhere_found, 3) << "the gap and after the data: series found only earlier in the range";
}

}  // namespace
}  // namespace diagnose
