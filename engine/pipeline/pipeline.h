// The whole pipeline: locate -> triage -> TSDB -> playbooks (DAG) -> verdict -> decision -> report.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/background_work.h"
#include "engine/core/data_dir.h"
#include "engine/core/json.h"
#include "engine/core/status.h"
#include "engine/decision/refine.h"
#include "engine/discovery/discovery.h"  // TimeRange
#include "engine/pipeline/rulebook.h"
#include "engine/report/report.h"
#include "engine/report/job_facts.h"
#include "engine/tsdb/endpoint_options.h"  // RemoteEndpointOptions
#include "engine/tsdb/query_client.h"

namespace diagnose {

// What a diagnosis run from the command line may spend reaching metrics unless told otherwise.
inline constexpr double kDefaultDeadlineSeconds = 60;

struct DiagnoseOptions {
  std::string job_ref;
  std::string outputs_dir;                  // resolved by DefaultOutputsDir when empty
  std::optional<std::string> baseline_ref;
  RemoteEndpointOptions remote;             // remote.url empty = private Prometheus on the snapshot
  bool logs_only = false;
  bool blocks_only = false;                 // serve a live job's completed blocks, no WAL
  std::string data_dir;                     // where rules/ and playbooks/ live
  // rules/ and playbooks/ already parsed (a summary or watcher shares one across jobs); loaded
  // from data_dir when null.
  std::shared_ptr<const Rulebook> rulebook;
  std::vector<std::string> forced_playbooks;    // --playbook ID
  // --playbooks DIR: playbooks of one's own, loaded on top of data_dir's (an id the data dir
  // already has is an error, not a silent replacement).
  std::vector<std::string> playbook_dirs;
  std::optional<int64_t> now;
  std::string history_file;                 // --history (sweep decisions)
  // The sweep this job belongs to, as `watch` follows it (sweep id, variant, stalled, its clock);
  // unset for a standalone diagnosis (its `now` then stamps the history entry).
  std::optional<SweepContext> sweep;
  // Called right before the sweep decision is made against history_file and appended to it: `watch`
  // diagnosing several jobs at once waits there until the jobs before this one have decided.
  std::function<void()> before_deciding;
  // --window: the subject's time range on an endpoint (--prometheus) instead of the log's run window.
  std::optional<TimeRange> window;
  // --job-label: the label that tells this job's series from other jobs' in a fleet store; every
  // selector sent to the endpoint gets LABEL="<job id>".
  std::string job_label;
  // --deadline: the whole run's budget for reaching metrics (0 = none). Past it, what was not
  // answered makes the diagnosis incomplete (exit 3) instead of holding an epilog.
  double deadline_seconds = 0;
  // Where the diagnosis hands the private servers it has stopped asking (each is stopped and its
  // copy removed there), so that they close while the verdict and the report are made and written;
  // it waits for them when destroyed. Null: they close beside the verdict and before RunDiagnosis
  // returns.
  BackgroundWork* closing = nullptr;
};

StatusOr<Report> RunDiagnosis(const DiagnoseOptions& options);
// The same, with the sweep decision the report's decision is (for `watch`, whose line names the
// sweep rules' cause and the hang phase).
StatusOr<DecidedReport> RunDecidedDiagnosis(const DiagnoseOptions& options);

// What playbooks read about a job, without evaluating them (`diagnose explain PLAYBOOK JOB`):
// the triage facts and, unless logs_only, the discovery of each TSDB (null when there is none).
struct JobEvaluationInputs {
  nlohmann::json facts;
  nlohmann::json discovery;
  nlohmann::json baseline_facts;
  nlohmann::json baseline_discovery;
  std::vector<std::string> notes;     // why a TSDB could not be opened
};
StatusOr<JobEvaluationInputs> PrepareJobInputs(const DiagnoseOptions& options);

// A job's metrics opened as a diagnosis opens them (private copy of the snapshot, or the
// --prometheus endpoint with --job-label and --window), for commands that ask their own questions
// (`rules replay`). Destroying it stops the private server and removes its copy.
class OpenedJobMetrics {
 public:
  virtual ~OpenedJobMetrics() = default;
  virtual QueryClient* client() = 0;                      // null when no TSDB could be read
  virtual std::optional<TimeRange> range() const = 0;     // where the job's series lie
  virtual std::string unavailable_reason() const = 0;     // why client() is null
  virtual std::string source() const = 0;                 // the copy's directory or the endpoint
  virtual const JobFacts& facts() const = 0;
};
StatusOr<std::unique_ptr<OpenedJobMetrics>> OpenJobMetrics(const DiagnoseOptions& options);

}  // namespace diagnose
