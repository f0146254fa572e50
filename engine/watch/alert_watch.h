// `watch --alerts`: the exported alerts polled on a live endpoint, and one diagnosis per (job, root
// cause) the moment an alert names it. Diagnoses run on their own thread, in the order the alerts
// fired: a diagnosis takes seconds to minutes on a fleet store, and the polls (each covering the
// evaluations since the previous one) must keep their rhythm meanwhile, or the next alert is late
// by the length of every diagnosis before it.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "engine/alerting/rule_export.h"
#include "engine/core/status.h"
#include "engine/tsdb/query_client.h"

namespace diagnose {

struct AlertWatchOptions {
  std::string endpoint;        // the URL, for the lines it prints
  // The store's job label (`--job-label`): a firing alert's value of it names the job. Empty: every
  // alert belongs to `default_job` (a job's own Prometheus).
  std::string job_label;
  double poll_seconds = 60;
  bool once = false;           // one poll, then the diagnoses it started, then return
  std::function<double()> now;                                   // seconds since the epoch
  std::function<StatusOr<std::string>()> default_job;           // the job an unlabelled alert belongs to
  // The rendered report of `job` diagnosed through the endpoint.
  std::function<StatusOr<std::string>(const std::string& job)> diagnose;
  std::function<void(const std::string&)> print;                // stdout: alerts and reports
  std::function<void(const std::string&)> note;                 // stderr: the poll's own state
};

// Polls until `stop` (or once). Returns an error only when `once` and the poll fails; a failed poll
// of a long watch is retried with a doubling wait (capped at 5 minutes) and said in one line.
Status RunAlertWatch(const alerting::RuleExport& rules, QueryClient& client, const AlertWatchOptions& options,
                     const std::atomic<bool>& stop);

// The job an alert names: its `job_label` value when that is a plain job id (letters, digits, `._-`,
// not starting with a dot), else an error naming the label; an endpoint's answers are not trusted to
// be paths.
StatusOr<std::string> JobOfAlert(const Labels& labels, const std::string& job_label);

}  // namespace diagnose
