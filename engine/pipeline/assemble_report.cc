#include "engine/pipeline/assemble_report.h"

#include "engine/tsdb/endpoint_options.h"

namespace diagnose {

namespace {

bool NamesACause(const std::string& root_cause) { return root_cause != "none" && root_cause != "unknown"; }

// The playbooks' reading replaces the logs' when it names a cause from metrics, or when the logs
// named none and the playbooks offered any explanation.
bool PlaybooksDecide(const LogAssessment& logs, const dag::PlaybookOutcome& playbooks) {
  if (NamesACause(playbooks.verdict.root_cause)) return true;
  return playbooks.explained && !NamesACause(logs.verdict.root_cause);
}

void Append(std::vector<std::string>* to, const std::vector<std::string>& from) {
  to->insert(to->end(), from.begin(), from.end());
}

// No action on the logs alone when the metrics could not be read; re-running is the remedy.
Decision IncompleteDecision(const std::string& incomplete) {
  Decision decision;
  decision.action = DecisionAction::kNone;
  decision.notes.push_back(incomplete +
                           ". No action is taken on the logs alone; re-run diagnose once the metrics can be read.");
  return decision;
}

}  // namespace

Diagnosis Diagnose(const LogAssessment& subject, const dag::PlaybookOutcome& playbooks,
                   const std::vector<std::string>& metrics_notes) {
  Diagnosis d;
  if (PlaybooksDecide(subject, playbooks)) {
    d.verdict = playbooks.verdict;
    d.decision = playbooks.decision;
    d.causal_chain = playbooks.causal_chain;
    // The logs' questions for the TSDB were answered by the playbooks; triage's caveats still hold.
    Append(&d.decision.notes, subject.decision.notes);
  } else {
    d.verdict = subject.verdict;
    d.decision = subject.decision;
    d.decision.notes.clear();
    for (const auto& question : subject.tsdb_questions) d.decision.notes.push_back("ask the TSDB: " + question);
    Append(&d.decision.notes, subject.decision.notes);
    Append(&d.decision.notes, playbooks.decision.notes);
  }
  Append(&d.decision.notes, metrics_notes);
  return d;
}

std::vector<std::string> MetricsNotes(const std::vector<AssessedJob>& jobs) {
  std::vector<std::string> notes;
  for (const auto& job : jobs) {
    Append(&notes, job.tsdb.notes);
    if (job.tsdb.state == TsdbAvailability::kUnavailable)
      notes.push_back("TSDB of job " + job.logs.job.id + " unavailable: " + job.tsdb.reason +
                      "; conclusions rest on the logs only");
  }
  return notes;
}

Report AssembleReport(const ReportParts& parts) {
  Report report;
  for (const auto& job : parts.jobs) {
    report.jobs.push_back(job.logs.job);
    report.facts[job.logs.job.id] = job.facts;
  }
  if (!parts.jobs.empty()) report.findings = parts.jobs.front().logs.findings;
  report.findings.insert(report.findings.end(), parts.playbooks.findings.begin(), parts.playbooks.findings.end());
  report.findings.insert(report.findings.end(), parts.profile_findings.begin(), parts.profile_findings.end());

  report.verdict = parts.diagnosis.verdict;
  if (parts.incompleteness)
    report.verdict.summary = "Diagnosis incomplete (diagnose could not read the job's metrics); from the logs alone: " +
                             report.verdict.summary;
  report.causal_chain = parts.diagnosis.causal_chain;
  report.not_evaluated = parts.playbooks.not_evaluated;

  for (const auto& job : parts.jobs) {
    report.tsdb.push_back(job.tsdb);
    if (!job.step_times.empty()) report.step_times[job.logs.job.id] = job.step_times;
    // Links carry no userinfo (a browser asks for the credentials): the source shows the password as ***.
    if (job.tsdb.mode == TsdbMode::kRemote && job.tsdb.state == TsdbAvailability::kRemote)
      report.graph_endpoint = SplitUrlCredentials(job.tsdb.source).url;
  }

  if (parts.incompleteness) {
    report.incomplete = "diagnosis incomplete: " + parts.incompleteness->reason;
    report.decision = IncompleteDecision(*report.incomplete);
  } else {
    report.decision = parts.sweep ? parts.sweep->decision : parts.diagnosis.decision;
    Append(&report.decision.notes, parts.fleet.notes);
  }
  if (std::string left_out = SlurmExcludeOmissionNote(report.decision.exclude); !left_out.empty())
    report.decision.notes.push_back(std::move(left_out));
  if (parts.profile) {
    report.profile = JobProfileJson(*parts.profile);
    report.profile_lines = JobProfileLines(*parts.profile);
    report.profile_gpus = JobProfileGpuRows(*parts.profile);
  }
  return report;
}

}  // namespace diagnose
