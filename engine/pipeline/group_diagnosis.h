// `diagnose nodes` judges throughput; a group it finds degraded or failed is a job `diagnose JOB`
// can explain. Diagnosing those jobs lets `nodes` show the decision a sweep driver gets from
// `diagnose JOB` (with the sweep policy's step) instead of a throughput-only `none` beside it.
#pragma once

#include <string>
#include <vector>

#include "engine/decision/node_health.h"
#include "engine/pipeline/pipeline.h"
#include "engine/report/report.h"

namespace diagnose {

struct GroupDiagnosis {
  std::string group;        // the bisection row's name
  std::string job;
  std::string root_cause;   // the cause the decision acts on
  Confidence confidence = Confidence::kInsufficientEvidence;
  Decision decision;
  std::string error;        // why the job could not be diagnosed ("" when it was)
};
void to_json(nlohmann::json& j, const GroupDiagnosis& diagnosis);

// Runs the full diagnosis (options as `diagnose JOB` would, job_ref replaced) of every row that is
// not healthy, in row order.
std::vector<GroupDiagnosis> DiagnoseUnhealthyGroups(const BisectionResult& bisection, const DiagnoseOptions& options);

// The decision `nodes` prints: with one diagnosed job, that job's decision (what `diagnose JOB`
// says), the throughput analysis kept in its notes, unless the bisection isolated hosts the
// diagnosis does not act on; otherwise the throughput decision, each job's
// diagnosis in its notes, so nothing is merged by a policy the sweep rules do not state.
Decision DecisionWithDiagnoses(const Decision& throughput, const std::vector<GroupDiagnosis>& diagnoses);

// "diagnose 8308: rdma-link-degradation (confirmed) -> retry-excluding-nodes, exclude a, b; <policy>"
std::string DiagnosisLine(const GroupDiagnosis& diagnosis);

}  // namespace diagnose
