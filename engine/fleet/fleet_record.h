// What diagnose concluded about each job, kept in the fleet store next to the job's metrics so a
// host's record across jobs is one PromQL query away: `diagnose fleet import` writes it, `diagnose
// fleet nodes` reads it back.
//
//   diagnose_job_verdict{<job label>, status, failure_class, root_cause, action, confidence}
//   diagnose_host_verdict{<job label>, host, state, priority, reason, findings, root_cause}
//
// One sample each, at the job's end, whose value is that time (Unix seconds): last_over_time()
// gives it back on Prometheus and VictoriaMetrics alike, where timestamp() of a function does not.
// state is `excluded` (the decision excludes the host), `named` (a fired finding names it, the
// decision does not exclude it) or `clean`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/core/json.h"
#include "engine/core/status.h"
#include "engine/discovery/discovery.h"
#include "engine/report/report.h"
#include "engine/tsdb/query_client.h"

namespace diagnose {

inline constexpr const char* kJobVerdictMetric = "diagnose_job_verdict";
inline constexpr const char* kHostVerdictMetric = "diagnose_host_verdict";

// The record series of the subject job of `report`, stamped `at` (Unix seconds).
std::vector<Series> VerdictRecordSeries(const Report& report, double at);

struct HostJobRecord {
  std::string job;
  std::string state;          // excluded | named | clean
  int priority = 0;
  std::string reason;
  std::string findings;       // comma-separated finding ids
  std::string root_cause;     // the job's
  double time = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HostJobRecord, job, state, priority, reason, findings, root_cause, time)

struct FleetHost {
  std::string host;
  int jobs = 0;
  int excluded = 0;
  int named = 0;
  std::vector<HostJobRecord> records;   // newest first
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FleetHost, host, jobs, excluded, named, records)

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TimeRange, start, end)

struct FleetNodes {
  std::string store;
  std::string job_label;
  TimeRange window;
  int jobs = 0;
  // Most excluded first, then most named, then by name.
  std::vector<FleetHost> hosts;
  // Excluded in at least `repeat_threshold` jobs: the hosts to take out of the pool.
  std::vector<std::string> repeat_offenders;
  int repeat_threshold = 2;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FleetNodes, store, job_label, window, jobs, hosts, repeat_offenders,
                                                repeat_threshold)

// Reads every host record whose job ended inside `window` from `store` and builds each host's
// record across jobs. A store without records is kNotFound, saying how records get there.
StatusOr<FleetNodes> ReadFleetNodes(QueryClient& store, const std::string& job_label, TimeRange window,
                                    int repeat_threshold = 2);

// What the store's records of earlier jobs (ended before `at`, within `lookback_seconds`) say about
// this job's hosts, as decision notes: a host this decision excludes that was excluded before, and
// a host it keeps that was excluded in `repeat_threshold` or more earlier jobs. Empty when the
// store holds no such record; an error only when the store cannot be asked.
StatusOr<std::vector<std::string>> FleetRecordNotes(QueryClient& store, const std::string& job_label,
                                                    const std::string& job_id, const std::vector<std::string>& hosts,
                                                    const std::vector<std::string>& excluded, double at,
                                                    double lookback_seconds, int repeat_threshold = 2);

// Builds the table from record series (labels as written by VerdictRecordSeries); pure, for tests.
FleetNodes BuildFleetNodes(const std::vector<Series>& host_records, const std::string& job_label,
                           int repeat_threshold = 2);

}  // namespace diagnose
