// promtool's input-series notation (`promtool test rules`, promqltest `load`): a series selector
// `metric{label="value"}` and expanding values `a+bxn`, `a-bxn`, `axn`, `_`, `_xn`, `stale`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/tsdb/query_client.h"

namespace diagnose::playbook {

// One expanded value per interval: a number, missing (`_`), or a staleness marker (`stale`).
struct SeriesPoint {
  enum class Kind { kValue, kMissing, kStale };
  Kind kind = Kind::kValue;
  double value = 0;
};

// Expands e.g. "0+10x3 _ stale 5x2" into 0 10 20 30 _ stale 5 5 5. `a+bxn` gives n+1 values
// (a, a+b, ..., a+n*b), `axn` repeats a n+1 times, `_xn` gives n missing values, as promtool does.
StatusOr<std::vector<SeriesPoint>> ExpandSeriesValues(const std::string& text);

// Parses `name{k="v", ...}` (also `{__name__="name", ...}`) into labels including __name__.
StatusOr<Labels> ParseSeriesSelector(const std::string& text);

// Samples at start + i*interval; missing and stale points are omitted: OpenMetrics (the block
// writer's input) cannot carry staleness markers, so `stale` becomes a gap.
Series MaterializeSeries(const Labels& labels, const std::vector<SeriesPoint>& points, double start, double interval);

}  // namespace diagnose::playbook
