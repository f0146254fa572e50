// Discovery: what one TSDB holds, asked once and shared by every playbook. Metric names, the data
// time range, the node set (from `host`, or from the host part of `instance` for series without it,
// such as Ray's), the instance -> host map, the tb_step -> wall-time map from real samples only,
// observability gaps, and the wrong-database guard (does this TSDB belong to the job whose log we
// read?). Expectations and tolerances come from rules/discovery.yaml.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/json.h"
#include "engine/core/scrape_target.h"
#include "engine/core/status.h"
#include "engine/tsdb/private_prometheus.h"
#include "engine/tsdb/query_client.h"

namespace diagnose {

struct FamilyExpectation {
  std::string id;
  std::string selector;          // PromQL series selector
  std::string hosts_from = "host";   // host | instance
  bool per_host = false;
  std::string why;
};

struct HeartbeatSeries {
  std::string selector;
  std::string hosts_from = "host";
};

struct DiscoveryRules {
  std::vector<FamilyExpectation> families;
  std::vector<HeartbeatSeries> heartbeats;
  double gap_threshold_seconds = 0;
  double gap_resolution_seconds = 0;
  std::vector<std::string> ignored_instance_hosts;
  // Selectors of series that name a node both ways, `ip` and a name in `instance` (Ray's node
  // metrics): an exporter scraped by address is named through them.
  std::vector<std::string> address_names;
  std::string step_metric;
  std::string staleness_metric;
  int64_t wrong_db_max_steps_ahead = 0;
  int64_t wrong_db_max_steps_behind = 0;
};

// Errors name the file (and the key) that is wrong.
StatusOr<DiscoveryRules> LoadDiscoveryRules(const std::string& path);

struct TimeRange {
  double start = 0;   // seconds, first sample
  double end = 0;     // seconds, last sample
};

// `--window START..END`: each end ISO-8601 (UTC unless an offset is given) or epoch seconds, the
// start before the end. The message names what is wrong, not the flag.
StatusOr<TimeRange> ParseTimeRange(const std::string& text);

struct ObservabilityGap {
  std::string kind;     // missing-family | host-missing | host-missing-family | silent-interval | query-failed |
                        // outside-run-window
  std::string host;     // when about one node
  std::string family;   // family id, when about one family
  double from = 0, to = 0;   // silent-interval only
  std::string detail;   // one readable sentence
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ObservabilityGap, kind, host, family, from, to, detail)

struct DiscoveryInputs {
  // Exact range from the blocks' meta.json (private copy); when unset, found by queries inside
  // `search_window`, which is then required (a remote endpoint is never asked about "now"). With
  // known_range, search_window (the log's window) only bounds a range longer than any job's.
  std::optional<TimeRange> known_range{};
  std::optional<TimeRange> search_window{};
  std::vector<std::string> expected_hosts{};   // the job's nodelist, from its log
  // address -> node name, from the job's log (JobHeader::node_addresses): names an exporter scraped
  // by address that no series in the TSDB names.
  std::map<std::string, std::string> logged_addresses{};
  std::optional<int64_t> log_last_step{};      // last completed step in the log
  // Found before asking (blocks outside the job's run): added to the discovery's gaps.
  std::vector<ObservabilityGap> gaps{};
  // Set when nothing the source holds can be the job's (every block lies outside its run): discovery
  // fails with this, so no rule reads an absence of samples as a clean bill of health.
  std::string untrusted{};
  // The run's deadline (--deadline): discovery asks nothing more and walks no more answers past it,
  // and fails kDeadlineExceeded saying how far it got, so the pipeline reports the run incomplete.
  std::optional<std::chrono::steady_clock::time_point> deadline{};
};

struct StepTime {
  int64_t step = 0;
  double time = 0;
};

struct WrongDatabaseGuard {
  std::string status = "unverifiable";   // match | mismatch | unverifiable
  std::optional<int64_t> tsdb_last_step;
  std::optional<double> tsdb_last_step_time;
  std::optional<int64_t> log_last_step;
  std::string message;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WrongDatabaseGuard, status, tsdb_last_step, tsdb_last_step_time,
                                                log_last_step, message)

struct Discovery {
  std::vector<std::string> metric_names;
  TimeRange range;
  std::string range_source;                       // block-meta | queries
  std::vector<std::string> hosts;                 // sorted
  std::map<std::string, std::string> host_source; // host -> "host label" | "instance" | "ip"
  std::map<std::string, std::string> instance_to_host;
  std::vector<StepTime> step_times;               // real samples, by time
  int64_t staleness_fills_excluded = 0;
  std::vector<ObservabilityGap> gaps;
  WrongDatabaseGuard guard;
  double elapsed_seconds = 0;
  int queries = 0;

  bool HasMetric(const std::string& name) const;
  // Wall time of the last real sample of `step`; unset when the step was never recorded.
  std::optional<double> TimeOfStep(int64_t step) const;
  // The report's tsdb.discovery (the step map is summarised, not listed).
  nlohmann::json ToJson() const;
  std::vector<std::string> GapSentences() const;
};

// `selector` narrowed to series without a host label: {a="b"} -> {a="b", host=""}, name -> name{host=""}.
std::string WithoutHostLabel(const std::string& selector);

// Fails only when the endpoint cannot be asked at all (the metric-name query fails) or the inputs
// give no time range; each later question that fails becomes a `query-failed` gap instead, so the
// report can say which evidence is missing.
StatusOr<Discovery> Discover(QueryClient& client, const DiscoveryInputs& inputs, const DiscoveryRules& rules);

// Inputs for a private copy: the exact range from block metadata, unless a WAL extends the data
// past the blocks; then the range is searched in the blocks' span widened by the log's window (or
// by the ~3 h a head can hold when the log gives none).
//
// `logged_run` is when the job's log says it ran (either end may be unbounded, +-infinity, when the
// log cannot tell it; with the run's length the start is anchored on the data: AnchoredRun). A block
// lying wholly more than a day outside it
// (a node clock that was wrong when it was written, a block of another job) is named as an
// `outside-run-window` gap and left out of the range; when every block is, the inputs are
// `untrusted`: missing samples must never pass for a healthy job.
DiscoveryInputs InputsForSnapshot(const TsdbInventory& inventory, std::optional<TimeRange> log_window = std::nullopt,
                                  std::optional<LoggedRunSpan> logged_run = std::nullopt);

}  // namespace diagnose
