// Nested min/max/quantile subqueries of an expression the engine composes (issue 36: each range
// decoded once).
// thermal-throttle's sclk_peer_ratio asks, at one instant,
//   min_over_time(max_over_time((A / scalar(quantile(0.5, A)))[5m:1m])[W:1m])
// and Prometheus evaluates A twice at every minute of W. The engine asks A's range once, at exactly
// the minutes Prometheus 2.42 evaluates the innermost subquery at (aligned to multiples of its step
// from epoch 0, one range below the next outer level's first step), composes the ratio there
// (composite_answer.h) and folds each level over its window as 2.42 does: left-closed [t - range, t],
// in time order, a NaN replaced by the next value. quantile_over_time too (the quantile
// aggregation's function over a window's values: a sort and one weighted pair, refused where the
// sort has no one order): `quantile_over_time(0.5, (avg by (host) (P))[W:1m])` asked at two times
// or windows reads P's per-host averages once (evaluate.cc asks the union of their grids). Other
// functions' results depend on floating-point sums.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

struct SubqueryChain {
  struct Level {
    std::string function;   // min_over_time, max_over_time or quantile_over_time
    int64_t range_ms = 0;
    int64_t step_ms = 0;
    double quantile = 0;    // quantile_over_time's q
  };
  std::vector<Level> levels;   // outermost first
  std::string inner;           // the expression of the innermost subquery, as written
};

// The chain `promql` is, when it is nothing but min/max_over_time or quantile_over_time(<number>, ...)
// calls each over a subquery with a range and a step (no offset, no @), the innermost one of a
// parenthesised expression; nullopt otherwise.
std::optional<SubqueryChain> SubqueryChainOf(std::string_view promql);

// `seconds` as Prometheus reads the API's time parameter the engine sends (three decimals), in
// milliseconds: math.Modf, the fraction rounded to milliseconds, truncated to nanoseconds.
int64_t PrometheusMillis(double seconds);

// The first and last times (ms) the innermost expression is evaluated at, `levels.back().step_ms`
// apart, for an instant query at `time_ms`.
struct ChainGrid {
  int64_t first_ms = 0;
  int64_t last_ms = 0;
  int64_t step_ms = 0;
};
ChainGrid InnerGrid(const SubqueryChain& chain, int64_t time_ms);

// The chain's instant vector at `time_ms` from the innermost expression's range answer over
// InnerGrid (or a longer range on the same step grid, asked for several questions: samples outside
// this one's grid are not read): one series per label set (metric name dropped) with one sample at
// the query time, sorted by labels. nullopt when the answer is not a matrix on that grid's steps (a
// client that clamped the step), two series have one label set once the name is dropped
// (Prometheus fails) or a quantile has no one order.
std::optional<std::vector<Series>> EvaluateChain(const SubqueryChain& chain, const QueryResult& inner, int64_t time_ms);

}  // namespace diagnose::dag
