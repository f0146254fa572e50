// The answers the engine derives from another answer (engine/dag/derived_answer.h) or composes from
// the answers to their parts (engine/dag/composite_answer.h) against Prometheus' own answers to the
// same questions, on the shared 24-host job: value for value, bit for bit (NaN, -0, a host's gap in
// a range, sums in series order, a side with no series); composed ones also in Prometheus' order.
#include "engine/dag/derived_answer.h"
#include "engine/dag/composite_answer.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/tsdb/same_answer.h"

namespace diagnose {
namespace {

using dag::AnswerComposite;
using dag::CompositeOf;
using dag::DerivationOf;
using dag::DeriveAnswer;
using nlohmann::json;

using DerivedAnswerTest = testing::SharedJobPrometheusTest;
using testing::ExpectSameAnswer;

void ExpectSameAnswerInOrder(const QueryResult& composed, const QueryResult& asked) {
  EXPECT_EQ(composed.result_type, asked.result_type);
  ASSERT_EQ(composed.series.size(), asked.series.size());
  for (size_t i = 0; i < asked.series.size(); ++i) {
    const auto& c = composed.series[i];
    const auto& a = asked.series[i];
    ASSERT_EQ(json(c.labels).dump(), json(a.labels).dump()) << "series " << i;
    ASSERT_EQ(c.samples.size(), 1u);
    ASSERT_EQ(a.samples.size(), 1u);
    EXPECT_EQ(c.samples[0].t, a.samples[0].t);
    EXPECT_TRUE(testing::SameValue(c.samples[0].v, a.samples[0].v))
        << json(a.labels).dump() << ": composed " << c.samples[0].v << ", Prometheus " << a.samples[0].v;
  }
}

// `(A - B) >= 0 or A < B`: the growth of a counter, or its value after a reset.
std::string Increase(const std::string& a, const std::string& b) {
  return "((" + a + " - " + b + ") >= 0 or " + a + " < " + b + ")";
}

// The composite question's answer from Prometheus' answers to its parts at `time`.
std::optional<QueryResult> ComposedFromPrometheusParts(QueryClient& client, const std::string& promql, double time) {
  auto composite = CompositeOf(promql);
  EXPECT_TRUE(composite);
  if (!composite) return std::nullopt;
  std::vector<QueryResult> answers;
  for (const auto& part : composite->parts) {
    auto answer = client.Run(Query::Instant(part, time));
    EXPECT_TRUE(answer.ok()) << part << ": " << answer.status().ToString();
    if (!answer.ok()) return std::nullopt;
    answers.push_back(std::move(*answer));
  }
  std::vector<const QueryResult*> parts;
  for (const auto& a : answers) parts.push_back(&a);
  return AnswerComposite(*composite, parts);
}


TEST_F(DerivedAnswerTest, EveryDerivedAnswerIsPrometheusOwn) {
  QueryClient& client = server_->client();
  ASSERT_TRUE(client.EvaluatesPromql());
  const double end = end_;

  struct Case {
    Query::Kind kind;
    std::string source;
    std::vector<std::string> derived;
  };
  const std::string temperature = "max_over_time(hw_gpu_temperature_celsius[3600s])";
  const std::string retx = "rate(hw_rdma_tx_retx_pkts_total[2m])";
  // 0/0 where a GPU sits at exactly 60 °C, 1 elsewhere: groups of NaN and numbers.
  const std::string some_nan = "(hw_gpu_temperature_celsius - 60) / (hw_gpu_temperature_celsius - 60)";
  const std::vector<Case> cases = {
      {Query::Kind::kInstant, temperature,
       {"max by (host) (" + temperature + ")", "min by (host, gpu) (" + temperature + ")",
        "count by (host) (" + temperature + ")", "group by (host) (" + temperature + ")", "max(" + temperature + ")",
        temperature + " > 62", temperature + " == 63", temperature + " != 63"}},
      {Query::Kind::kInstant, "max_over_time(hw_gpu_power_watts[1h]) / max_over_time(hw_gpu_temperature_celsius[1h])",
       {"max by (host) (max_over_time(hw_gpu_power_watts[1h]) / max_over_time(hw_gpu_temperature_celsius[1h]))"}},
      {Query::Kind::kInstant, "hw_gpu_power_watts", {"hw_gpu_power_watts > 720", "min by (host) (hw_gpu_power_watts)"}},
      {Query::Kind::kInstant, some_nan,
       {"max by (host) (" + some_nan + ")", "min(" + some_nan + ")", some_nan + " != 1", some_nan + " >= 1"}},
      {Query::Kind::kInstant, "(59 - hw_gpu_temperature_celsius) * 0", {"max by (host) ((59 - hw_gpu_temperature_celsius) * 0)"}},
      {Query::Kind::kRange, retx,
       {"max by (host) (" + retx + ")", "count by (host) (" + retx + ")", retx + " > 0.01",
        "sum by (host) (" + retx + ") > 0.01"}},
      {Query::Kind::kRange, "hw_scrape_duration_seconds",
       {"max by (host) (hw_scrape_duration_seconds)", "count(hw_scrape_duration_seconds)"}},
      {Query::Kind::kRange, some_nan, {"min by (host) (" + some_nan + ")", some_nan + " < 2"}},
  };
  auto ask = [&](Query::Kind kind, const std::string& promql) {
    return client.Run(kind == Query::Kind::kInstant ? Query::Instant(promql, end) : Query::Range(promql, end - 3600, end, 60));
  };
  int derived = 0;
  for (const auto& c : cases) {
    auto source = ask(c.kind, c.source);
    ASSERT_TRUE(source.ok()) << c.source << ": " << source.status().ToString();
    ASSERT_FALSE(source->series.empty()) << c.source;
    for (const auto& promql : c.derived) {
      SCOPED_TRACE(promql);
      auto derivation = DerivationOf(promql);
      ASSERT_TRUE(derivation);
      if (derivation->source != c.source) {
        // `sum by (host) (X) > t` filters the sum, not X: its source is the sum, asked here.
        auto own = ask(c.kind, derivation->source);
        ASSERT_TRUE(own.ok()) << own.status().ToString();
        source = std::move(own);
      }
      auto answer = DeriveAnswer(*derivation, *source, c.kind);
      ASSERT_TRUE(answer) << "refused";
      auto asked = ask(c.kind, promql);
      ASSERT_TRUE(asked.ok()) << asked.status().ToString();
      ExpectSameAnswer(*answer, *asked);
      ++derived;
      if (derivation->source != c.source) source = ask(c.kind, c.source);
    }
  }
  EXPECT_EQ(derived, 24);
}

TEST_F(DerivedAnswerTest, EveryComposedAnswerIsPrometheusOwnInItsOrder) {
  ASSERT_TRUE(server_->client().EvaluatesPromql());
  const std::unique_ptr<JobScopedClient> scoped = AllButTheFirstHost();
  for (QueryClient* asked_of : std::vector<QueryClient*>{&server_->client(), scoped.get()}) {
    SCOPED_TRACE(asked_of->Describe());
    QueryClient& client = *asked_of;
    const std::string retx = "hw_rdma_tx_retx_pkts_total";
    const std::string temp = "hw_gpu_temperature_celsius";
    const std::string power = "hw_gpu_power_watts";
    // Counter growth, a "reset" on every GPU (the window's min below the earlier window's max), and a
    // bare selector against itself 45 s earlier (both branches, the right one keeping __name__).
    const std::string retx_increase = Increase("max_over_time(" + retx + "[600s])", "min_over_time(" + retx + "[600s] offset 3000s)");
    const std::string temp_reset = Increase("min_over_time(" + temp + "[600s])", "max_over_time(" + temp + "[600s] offset 3000s)");
    const std::string temp_step = Increase(temp, temp + " offset 45s");
    const std::string union_of_families = "label_replace(" + retx_increase + ", \"counter\", \"retx\", \"\", \"\") or label_replace(" +
                                          temp_reset + ", \"counter\", \"temp\", \"\", \"\") or label_replace(" + temp_step +
                                          ", \"counter\", \"step\", \"\", \"\")";
    // 0/0 where a GPU sits at exactly 60 °C; -0 and +0 in one group.
    const std::string some_nan = "(" + temp + " - 60) / (" + temp + " - 60)";
    const std::string zeros = "(60 - " + temp + ") * 0";
    const std::string rate = "rate(" + retx + "[2m])";
    const std::vector<std::string> cases = {
        retx_increase,
        "sum by (host, instance) (" + retx_increase + ")",
        temp_reset,
        temp_step,
        union_of_families,
        "sum by (host, instance) (" + union_of_families + ")",
        "(" + union_of_families + ") >= 0.5",
        "sum by (host) (" + temp_step + ") > bool 300 or count by (host) (" + temp_step + ")",
        some_nan + " > 0 or " + some_nan + " != 1",
        "sum by (host) (" + some_nan + ") or max by (host) (" + some_nan + ")",
        "max by (host) (" + zeros + ") - min by (host) (" + zeros + ") or " + zeros,
        "max(" + zeros + ") or min(" + zeros + ")",
        "sum by (host) (" + rate + ") / count by (host) (" + rate + ")",
        "sum(" + rate + " * 1.1) - sum(" + rate + ")",
        "max by (host, instance) (avg_over_time(" + power + "[3465s])) - min by (host, instance) (avg_over_time(" + power + "[3465s]))",
        "no_such_metric or " + temp + " > 62 or no_such_metric",
        temp + " - no_such_metric or 3 < " + temp,
        temp + "{gpu=\"0\"} - " + temp + " or " + temp + "{gpu=\"1\"} unless " + temp + "{host=\"chi2801\"}",
        "group by (gpu) (" + temp + ") and " + temp + " or group by (gpu) (" + temp + ")",
        // Quantiles (Prometheus 2.42's promql/quantile.go), by group, in range and out of it.
        "quantile by (host) (0.3, max_over_time(" + power + "[1h])) - min by (host) (max_over_time(" + power + "[1h]))",
        "quantile(0.5, " + temp + ") < " + temp + " or quantile by (gpu) (1.5, " + temp + ") or quantile by (host) (-1, " + temp + ")",
    };
    for (const auto& promql : cases) {
      SCOPED_TRACE(promql);
      std::optional<QueryResult> composed;
      ASSERT_NO_FATAL_FAILURE(composed = ComposedFromPrometheusParts(client, promql, end_));
      ASSERT_TRUE(composed) << "declined";
      auto asked = client.Run(Query::Instant(promql, end_));
      ASSERT_TRUE(asked.ok()) << asked.status().ToString();
      EXPECT_FALSE(asked->series.empty()) << "a case the fixture does not exercise";
      ExpectSameAnswerInOrder(*composed, *asked);
    }
  }
}

// Range questions composed from range answers to their parts (the aggregations of selectors as
// written, composite_answer.h): the fleet-median ratio gpu_clock_below_fleet asks (on power here),
// a binary operation over two ranges, quantiles over a host's scrape gap, over the whole job and a
// scoped one, at a step and start that are no multiple of the scrape interval.
TEST_F(DerivedAnswerTest, EveryComposedRangeIsPrometheusOwnInItsOrder) {
  const std::unique_ptr<JobScopedClient> scoped = AllButTheFirstHost();
  const std::string fleet = "min by (host, instance) (hw_gpu_power_watts)";
  const std::string ratio = fleet + " / scalar(quantile(0.5, " + fleet + "))";
  const std::string hottest = "max by (host, gpu) (hw_gpu_temperature_celsius)";
  const std::vector<std::string> cases = {
      "(" + ratio + ") < bool 1",
      "(" + ratio + ") < bool 0.999",
      ratio,
      "max by (instance, ip) (ray_node_mem_used) / max by (instance, ip) (ray_node_gpus_utilization)",
      "max by (host) (hw_gpu_temperature_celsius - hw_gpu_temperature_celsius offset 2m)",
      "quantile by (host) (0.25, " + hottest + ") - min by (host) (" + hottest + ")",
      "quantile by (host) (0.9, max by (host, device) (rate(hw_rdma_tx_retx_pkts_total[2m])))",
      "quantile(0, " + hottest + ") or quantile by (gpu) (1, " + hottest + ") or quantile by (host) (1.5, " + hottest + ")",
  };
  for (QueryClient* client : std::vector<QueryClient*>{&server_->client(), scoped.get()}) {
    SCOPED_TRACE(client->Describe());
    for (const auto& promql : cases) {
      SCOPED_TRACE(promql);
      auto composite = CompositeOf(promql, Query::Kind::kRange);
      ASSERT_TRUE(composite) << "declined";
      auto range = [&](const std::string& q) { return client->Run(Query::Range(q, end_ - 7000.5, end_, 47)); };
      std::vector<QueryResult> answers;
      for (const auto& part : composite->parts) {
        auto answer = range(part);
        ASSERT_TRUE(answer.ok()) << part << ": " << answer.status().ToString();
        answers.push_back(std::move(*answer));
      }
      std::vector<const QueryResult*> parts;
      for (const auto& a : answers) parts.push_back(&a);
      auto composed = AnswerComposite(*composite, parts);
      ASSERT_TRUE(composed) << "refused";
      auto asked = range(promql);
      ASSERT_TRUE(asked.ok()) << asked.status().ToString();
      EXPECT_GE(asked->series.size(), 2u) << "a case the fixture does not exercise";
      ExpectSameAnswer(*composed, *asked);
      ASSERT_EQ(composed->series.size(), asked->series.size());
      for (size_t i = 0; i < asked->series.size(); ++i) EXPECT_EQ(composed->series[i].labels, asked->series[i].labels) << i;
    }
  }
}

// Nested min/max subqueries of a composed range (subquery_chain.h): thermal-throttle's
// sclk_peer_ratio on power, steps that are no divisor of the ranges, a subquery over NaN (0/0 at
// exactly 60 °C), at the end of the data, at a time with milliseconds and inside a host's scrape gap.
TEST_F(DerivedAnswerTest, EveryChainOfSubqueriesIsPrometheusOwn) {
  const std::string level = "min by (host, instance) (avg_over_time(hw_gpu_power_watts[2m]))";
  const std::string temp = "hw_gpu_temperature_celsius";
  const std::vector<std::string> cases = {
      "min by (host, instance) (min_over_time(max_over_time((" + level + " / scalar(quantile(0.5, " + level +
          ")))[5m:1m])[3465s:1m]))",
      "max_over_time(min_over_time((max by (host) (" + temp + ") - min by (host) (" + temp + "))[7m:45s])[20m:2m])",
      "min_over_time((max by (host, gpu) ((" + temp + " - 60) / (" + temp + " - 60)))[30m:1m])",
      "count(max_over_time((" + level + " / scalar(quantile(0.25, " + level + ")) >= 1)[10m:30s]))",
  };
  const auto& spec = testing::SharedJobFixture().spec;
  const std::vector<double> times = {end_, end_ - 1234.567, spec.start + spec.gap_to - 60};
  const std::unique_ptr<JobScopedClient> scoped = AllButTheFirstHost();
  for (QueryClient* asked_of : std::vector<QueryClient*>{&server_->client(), scoped.get()}) {
    QueryClient& client = *asked_of;
    for (double time : times) {
      for (const auto& promql : cases) {
        SCOPED_TRACE(promql + " at " + std::to_string(time) + " on " + client.Describe());
        auto composite = CompositeOf(promql);
        ASSERT_TRUE(composite && composite->chain) << "declined";
        std::vector<QueryResult> answers;
        for (size_t i = 0; i < composite->parts.size(); ++i) {
          auto answer = client.Run(composite->PartQuery(Query::Instant(promql, time), i));
          ASSERT_TRUE(answer.ok()) << composite->parts[i] << ": " << answer.status().ToString();
          answers.push_back(std::move(*answer));
        }
        std::vector<const QueryResult*> parts;
        for (const auto& a : answers) parts.push_back(&a);
        auto composed = AnswerComposite(*composite, parts, time);
        ASSERT_TRUE(composed) << "refused";
        auto asked = client.Run(Query::Instant(promql, time));
        ASSERT_TRUE(asked.ok()) << asked.status().ToString();
        EXPECT_FALSE(asked->series.empty()) << "a case the fixture does not exercise";
        ExpectSameAnswer(*composed, *asked);
      }
    }
  }
}

// quantile_over_time levels over an aggregation asked whole (subquery_chain.h), as two questions of a
// round share it: the aggregation's range over a longer grid than each question's (the union the
// planner asks), the samples outside a question's own grid not read. Medians of per-host averages
// (the playbooks' power baseline), a quantile of them, a quantile under a max, at the end of the
// data, at a time with milliseconds and inside a host's scrape gap.
TEST_F(DerivedAnswerTest, QuantileChainsFromALongerSharedRangeArePrometheusOwn) {
  const std::string power = "avg by (host, instance) (hw_gpu_power_watts)";
  const std::vector<std::string> cases = {
      "quantile_over_time(0.5, (" + power + ")[30m:1m])",
      "quantile(0.5, quantile_over_time(0.5, (" + power + ")[1234s:1m]))",
      "quantile_over_time(0.9, (max by (host) (hw_gpu_temperature_celsius))[25m:2m])",
      "max_over_time(quantile_over_time(0.25, (" + power + ")[5m:1m])[20m:2m])",
  };
  const auto& spec = testing::SharedJobFixture().spec;
  const std::vector<double> times = {end_, end_ - 1234.567, spec.start + spec.gap_to - 60};
  QueryClient& client = server_->client();
  for (double time : times) {
    for (const auto& promql : cases) {
      SCOPED_TRACE(promql + " at " + std::to_string(time));
      auto composite = CompositeOf(promql);
      ASSERT_TRUE(composite && composite->chain) << "declined";
      ASSERT_EQ(composite->parts.size(), 1u);
      const Query own = composite->PartQuery(Query::Instant(promql, time), 0);
      // Seven steps before and five after this question's grid, as a later question's would reach.
      const Query shared = Query::Range(own.promql, own.start - 7 * own.step, own.end + 5 * own.step, own.step);
      auto part = client.Run(shared);
      ASSERT_TRUE(part.ok()) << part.status().ToString();
      auto composed = AnswerComposite(*composite, {&*part}, time);
      ASSERT_TRUE(composed) << "refused";
      auto asked = client.Run(Query::Instant(promql, time));
      ASSERT_TRUE(asked.ok()) << asked.status().ToString();
      EXPECT_FALSE(asked->series.empty()) << "a case the fixture does not exercise";
      ExpectSameAnswer(*composed, *asked);
    }
  }
}

// Where Prometheus fails, the engine declines, so the question is asked and fails as Prometheus says.
TEST_F(DerivedAnswerTest, WherePrometheusFailsTheEngineDeclines) {
  QueryClient& client = server_->client();
  const std::string both = "{__name__=~\"hw_gpu_power_watts|hw_gpu_temperature_celsius\"}";
  for (const std::string& promql : std::vector<std::string>{
           "hw_gpu_power_watts - " + both + " or hw_gpu_power_watts",             // duplicate series on the right
           both + " - hw_gpu_power_watts or hw_gpu_power_watts",                 // many-to-one without group_left
           both + " * 1 or hw_gpu_power_watts",                                  // one label set twice, names dropped
           std::string("label_replace(hw_gpu_power_watts, \"gpu\", \"0\", \"\", \"\") or hw_gpu_power_watts")}) {
    SCOPED_TRACE(promql);
    std::optional<QueryResult> composed;
    ASSERT_NO_FATAL_FAILURE(composed = ComposedFromPrometheusParts(client, promql, end_));
    EXPECT_FALSE(composed);
    EXPECT_FALSE(client.Run(Query::Instant(promql, end_)).ok());
    // The same as a range: refused at the first step that fails.
    auto range = CompositeOf(promql, Query::Kind::kRange);
    ASSERT_TRUE(range);
    std::vector<QueryResult> answers;
    for (const auto& part : range->parts) {
      auto answer = client.Run(Query::Range(part, end_ - 600, end_, 60));
      ASSERT_TRUE(answer.ok()) << part << ": " << answer.status().ToString();
      answers.push_back(std::move(*answer));
    }
    std::vector<const QueryResult*> parts;
    for (const auto& answer : answers) parts.push_back(&answer);
    EXPECT_FALSE(AnswerComposite(*range, parts));
    EXPECT_FALSE(client.Run(Query::Range(promql, end_ - 600, end_, 60)).ok());
  }
}

// A max over +0 and -0 keeps whichever Prometheus met first: not derived, asked.
TEST_F(DerivedAnswerTest, AMaxOverBothZerosIsRefused) {
  // (60 - t) * 0: -0 above 60 °C, +0 at exactly 60.
  const std::string zeros = "(60 - hw_gpu_temperature_celsius) * 0";
  auto source = server_->client().Run(Query::Instant(zeros, end_));
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  int positive = 0, negative = 0;
  for (const auto& s : source->series) (std::signbit(s.samples.at(0).v) ? negative : positive)++;
  if (positive == 0 || negative == 0) GTEST_SKIP() << "the fixture has no GPU at exactly 60 °C at its end";
  EXPECT_FALSE(DeriveAnswer(*DerivationOf("max(" + zeros + ")"), *source, Query::Kind::kInstant));
}

}  // namespace
}  // namespace diagnose
