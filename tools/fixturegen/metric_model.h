// The metric side of a fixture: every series the node_hw exporter plugins, Ray's metrics agent and
// Prometheus itself would have stored for the job, with Prometheus-added `job`/`instance` labels,
// per-target scrape offsets, missed scrapes, lifetime counters and noise, driven by the same
// timeline as the logs. Faults from the scenario modulate the per-host state.
#pragma once

#include <functional>

#include "engine/core/status.h"
#include "engine/tsdb/query_client.h"
#include "tools/fixturegen/scenario.h"
#include "tools/fixturegen/timeline.h"

namespace diagnose::fixturegen {

using SeriesSink = std::function<Status(Series)>;

struct MetricStats {
  int64_t series = 0;
  int64_t samples = 0;
};

// Streams every series (host by host, bounded memory) into `sink`. Samples of one series are in
// strictly increasing time order; label values are final.
StatusOr<MetricStats> GenerateMetrics(const Scenario& scenario, const Timeline& timeline, const SeriesSink& sink);

}  // namespace diagnose::fixturegen
