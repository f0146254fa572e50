// `diagnose fleet import`: every job of an outputs dir into one VictoriaMetrics, each job's
// samples under a label naming it, with what diagnose concluded about the job beside them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/json.h"
#include "engine/fleet/victoria_metrics.h"
#include "engine/job/job_location.h"
#include "engine/pipeline/pipeline.h"
#include "engine/report/decision_action.h"

namespace diagnose {

struct FleetImportOptions {
  std::string job_label = "slurm_job_id";
  // Re-import a job the store already holds completely (its series are deleted first). A job
  // held partly (an import cut short) is always replaced.
  bool force = false;
  double chunk_seconds = 3600;
  // How each job is diagnosed for its record (data dir, rulebook, deadline); job and outputs are
  // set per job.
  DiagnoseOptions diagnose;
  std::string prometheus_binary = "prometheus";
};

struct JobImport {
  std::string job;
  // imported | replaced | already-present | record-only (no TSDB) | failed
  std::string outcome;
  std::string detail;
  int64_t series = 0;
  int64_t samples = 0;          // written to the store, the record of the verdict included
  int64_t stored_samples = 0;   // counted back from the store afterwards
  int64_t non_finite_samples = 0;
  int metric_names = 0;
  std::string root_cause;
  DecisionAction action = DecisionAction::kNone;
  std::vector<std::string> excluded;
  double seconds = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(JobImport, job, outcome, detail, series, samples, stored_samples,
                                                non_finite_samples, metric_names, root_cause, action, excluded,
                                                seconds)

// Never throws and never stops at one job's failure: the outcome says what happened.
JobImport ImportJob(VictoriaMetricsStore& store, const JobLocation& job, const std::string& outputs_dir,
                    const FleetImportOptions& options);

// Every job, `parallel` at a time (each reads its snapshot through its own private Prometheus and
// diagnoses it; the store's client takes the writes in turn). `on_result` sees each result in the
// jobs' order, as soon as it and every job before it are done; the results come back in that order.
std::vector<JobImport> ImportJobs(VictoriaMetricsStore& store, const std::vector<JobLocation>& jobs,
                                  const std::string& outputs_dir, const FleetImportOptions& options, int parallel,
                                  const std::function<void(const JobImport&)>& on_result);

}  // namespace diagnose
