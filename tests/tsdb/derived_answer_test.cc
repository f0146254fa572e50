// The answers the engine derives from another answer (engine/dag/derived_answer.h) against
// Prometheus' own answers to the same questions, on the shared 24-host job: value for value, bit for
// bit (NaN, -0, a host's gap in a range).
#include "engine/dag/derived_answer.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/tsdb/same_answer.h"

namespace diagnose {
namespace {

using dag::DerivationOf;
using dag::DeriveAnswer;
using nlohmann::json;

using DerivedAnswerTest = testing::SharedJobPrometheusTest;
using testing::ExpectSameAnswer;

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
