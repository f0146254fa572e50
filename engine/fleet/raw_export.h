// Reading every raw sample out of a PromQL endpoint, and writing it in VictoriaMetrics' import
// format: how a job's persisted TSDB reaches a fleet store. Reading through PromQL (a private
// Prometheus on the snapshot) rather than the block files means the WAL's samples come along and
// Prometheus' own block format stays Prometheus' business.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/discovery/discovery.h"
#include "engine/tsdb/query_client.h"

namespace diagnose {

struct ExportStats {
  int64_t series = 0;             // distinct series, each counted once however many chunks it spans
  int64_t samples = 0;
  int64_t non_finite_samples = 0; // NaN/Inf values: VictoriaMetrics' JSON import cannot carry them
  int64_t queries = 0;
  std::vector<std::string> metric_names;
};

// Calls `sink` with the raw samples of every series in [range.start, range.end], one metric name
// and `chunk_seconds` at a time (an instant query of `{__name__="m"}[chunk]` at the chunk's end),
// so no answer holds more than one metric's chunk. Each sample reaches the sink exactly once.
Status ExportRawSamples(QueryClient& source, TimeRange range, double chunk_seconds,
                        const std::function<Status(const std::vector<Series>&)>& sink, ExportStats* stats);

// How many samples `selector` has in [range.start, range.end]: the count an import is verified by,
// asked of the source and of the store alike. An empty answer is 0.
Query SampleCountQuery(const std::string& selector, TimeRange range, std::string purpose);
int64_t SampleCountOf(const QueryResult& answer);

// One JSON line per series for VictoriaMetrics' /api/v1/import, with `extra` labels set (they
// override a series' own label of the same name). Non-finite values are left out and counted.
std::string VictoriaMetricsImportLines(const std::vector<Series>& series, const Labels& extra,
                                       int64_t* samples_written, int64_t* non_finite_skipped);

}  // namespace diagnose
