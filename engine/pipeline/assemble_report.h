// The report is assembled in one place from what each stage returned, and each report field has
// exactly one writer: AssembleReport. The stages never touch a Report:
//
//   triage            -> JobFacts and a LogAssessment per job (engine/triage/log_assessment.h)
//   metrics           -> a TsdbState per job, step times, and an Incompleteness when diagnose itself
//                        failed to read metrics it needed
//   playbooks         -> a PlaybookOutcome (engine/dag/run_playbooks.h)
//   diagnosis         -> Diagnose(): the logs' reading refined by the playbooks (engine/report Diagnosis)
//   sweep policy      -> a SweepDecision (engine/decision/refine.h), skipped when incomplete
//   fleet record      -> a FleetCitation
//
// AssembleReport then writes, in this order: jobs, facts, findings (the logs', then the
// playbooks'), verdict, causal_chain, not_evaluated, tsdb, step_times, graph_endpoint, decision,
// incomplete. Timings are the caller's.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/dag/run_playbooks.h"
#include "engine/decision/refine.h"
#include "engine/pipeline/profile_stage.h"
#include "engine/report/report.h"
#include "engine/triage/log_assessment.h"

namespace diagnose {

// diagnose could not read metrics it needed (a tsdb entry is "failed"): the report says so, its
// verdict rests on the logs alone, and no action is taken.
struct Incompleteness {
  std::string reason;   // "metrics of job 7938: ..." joined by "; "
};

// What the fleet store says about the subject's hosts (earlier jobs' exclusions), or why it was not read.
struct FleetCitation {
  std::vector<std::string> notes;
};

// One job's triage and metrics, in jobs[] order (subject first).
struct AssessedJob {
  JobFacts facts;
  LogAssessment logs;
  TsdbState tsdb;
  std::vector<std::pair<int64_t, double>> step_times;   // from the TSDB's step counter
};

// The logs' reading of the subject refined by the playbooks: a cause the playbooks named from
// metrics wins, and so does their reading when the logs named no cause; otherwise the log verdict
// stands (a GPU OOM stays a GPU OOM). `metrics_notes` are what the TSDB stage has to say (clock
// skew, a TSDB unavailable), appended to the decision's notes.
Diagnosis Diagnose(const LogAssessment& subject, const dag::PlaybookOutcome& playbooks,
                   const std::vector<std::string>& metrics_notes);

// What the TSDB stage says about the jobs, in the decision's words.
std::vector<std::string> MetricsNotes(const std::vector<AssessedJob>& jobs);

struct ReportParts {
  std::vector<AssessedJob> jobs;
  dag::PlaybookOutcome playbooks;
  Diagnosis diagnosis;
  std::optional<Incompleteness> incompleteness;
  std::optional<SweepDecision> sweep;   // absent when incomplete
  FleetCitation fleet;
  std::optional<JobProfile> profile;    // the subject's profiler window, when it has one
  std::vector<Finding> profile_findings;   // after the playbooks' (profile/main-stream-blocker)
};

Report AssembleReport(const ReportParts& parts);

}  // namespace diagnose
