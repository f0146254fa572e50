#include "engine/triage/log_assessment.h"

#include <cstdio>

#include "engine/core/text.h"

namespace diagnose {

namespace {

Evidence LogEvidence(const LogRef& r) {
  Evidence e;
  e.kind = EvidenceKind::kLog;
  e.query = r.file + ":" + std::to_string(r.line);
  e.value = nullptr;
  e.text = r.text;
  return e;
}

}  // namespace

JobEntry JobEntryFromFacts(const JobFacts& f, JobRole role) {
  JobEntry j;
  j.id = f.id;
  j.role = role;
  j.dir = f.job_dir;
  j.status = f.status;
  j.failure_class = f.failure_class;
  j.hosts = f.header.hosts;
  j.first_step = f.progress.first_step;
  j.last_step = f.progress.last_step;
  j.total_steps = f.progress.total_steps;
  return j;
}

std::vector<Finding> LogFindings(const JobFacts& f, const SignatureTable& table) {
  std::vector<Finding> out;
  for (const auto& c : f.classes) {
    Finding fd;
    fd.id = "log-triage/" + c.failure_class;
    fd.playbook = "log-triage";
    fd.status = FindingStatus::kFired;
    if (!c.host.empty()) fd.hosts.push_back(c.host);
    const FailureSignature* sig = table.Find(c.failure_class);
    fd.summary = sig ? sig->summary : c.failure_class;
    if (c.count > 1) fd.summary += " (" + std::to_string(c.count) + " matching lines)";
    if (!c.where.empty()) fd.evidence.push_back(LogEvidence(c.where));
    for (const auto& e : f.events)
      if (e.kind == c.failure_class && fd.evidence.size() < 5 && e.where.line != c.where.line)
        fd.evidence.push_back(LogEvidence(e.where));
    out.push_back(std::move(fd));
  }
  if (f.heartbeat.present) {
    Finding fd;
    fd.id = "log-triage/heartbeat-accused";
    fd.playbook = "log-triage";
    fd.status = FindingStatus::kFired;
    fd.hosts = f.heartbeat.accused_hosts;
    std::string tasks;
    for (int t : f.heartbeat.accused_tasks) tasks += (tasks.empty() ? "" : ", ") + std::to_string(t);
    std::string alive;
    for (int t : f.heartbeat.self_reported_death_tasks) alive += (alive.empty() ? "" : ", ") + std::to_string(t);
    fd.summary = "coordinator accused task(s) " + tasks +
                 (alive.empty() ? "" : "; task(s) " + alive + " logged their own death, so they were alive");
    for (const auto& e : f.heartbeat.evidence) fd.evidence.push_back(LogEvidence(e));
    if (f.heartbeat.heartbeat_stop_time && f.heartbeat.crash_time) {
      Evidence d;
      d.kind = EvidenceKind::kDerived;
      d.window = TimeWindow{static_cast<double>(f.heartbeat.heartbeat_stop_time->epoch),
                            static_cast<double>(f.heartbeat.crash_time->epoch)};
      d.value = f.heartbeat.timeout_seconds;
      d.text = "heartbeats stopped ~" + f.heartbeat.heartbeat_stop_time->text + " = crash " +
               f.heartbeat.crash_time->text + " - timeout " + std::to_string(f.heartbeat.timeout_seconds) +
               " s (year from " + f.heartbeat.crash_time->year_source + ")";
      fd.evidence.push_back(d);
    }
    out.push_back(std::move(fd));
  }
  if (f.tgs.pattern != "insufficient-data" && f.tgs.pattern != "stable") {
    Finding fd;
    fd.id = "log-triage/tgs-" + f.tgs.pattern;
    fd.playbook = "log-triage";
    fd.status = FindingStatus::kFired;
    fd.summary = "TGS pattern " + f.tgs.pattern + ": steady " + FixedDecimal(f.tgs.steady_tgs, 0) + ", recent " +
                 FixedDecimal(f.tgs.recent_tgs, 0);
    Evidence d;
    d.kind = EvidenceKind::kDerived;
    d.query = "completed step lines";
    d.value = nlohmann::json(f.tgs.phases);
    std::string phases;
    for (const auto& p : f.tgs.phases)
      phases += (phases.empty() ? "" : "; ") + std::to_string(p.first_step) + "-" + std::to_string(p.last_step) +
                " ~" + FixedDecimal(p.mean_tgs, 0);
    d.text = "phases: " + phases;
    fd.evidence.push_back(d);
    out.push_back(std::move(fd));
  }
  return out;
}

LogAssessment AssessLogs(const JobFacts& f, const SignatureTable& table, JobRole role) {
  LogAssessment a;
  a.job = JobEntryFromFacts(f, role);
  a.findings = LogFindings(f, table);
  const FailureSignature* sig = f.failure_class.empty() ? nullptr : table.Find(f.failure_class);
  const ClassMatch* primary = f.classes.empty() ? nullptr : &f.classes.front();
  Verdict& verdict = a.verdict;
  if (sig && sig->verdict) {
    verdict.root_cause = sig->verdict->root_cause;
    verdict.confidence = sig->verdict->confidence;
    a.decision.action = sig->verdict->action;
    verdict.summary = sig->summary;
    if (primary && !primary->host.empty()) verdict.summary += " First seen on task " + std::to_string(primary->task) +
                                                              " (" + primary->host + ").";
    if (!f.oom_allocation.empty() && f.failure_class == "oom-gpu")
      verdict.summary += " The failed allocation was " + f.oom_allocation + ".";
    if (a.decision.action == DecisionAction::kRetryExcludingNodes && primary && !primary->host.empty())
      a.decision.exclude.push_back({primary->host, 1, f.failure_class + " at " + primary->where.file + ":" +
                                                          std::to_string(primary->where.line)});
  } else if (f.failure_class.empty() && f.status == JobStatus::kCompleted) {
    verdict.root_cause = "none";
    verdict.confidence = Confidence::kLikely;
    verdict.summary = "The job completed and its logs show no failure or throughput loss.";
  } else {
    verdict.root_cause = "unknown";
    verdict.confidence = Confidence::kInsufficientEvidence;
    verdict.summary = f.failure_class.empty()
                          ? "The job is " + std::string(ToString(f.status)) + "; the logs alone do not name a cause."
                          : (sig ? sig->summary : f.failure_class) + " The logs alone do not decide the root cause.";
    if (sig) a.tsdb_questions = sig->tsdb_questions;
  }
  verdict.domain = DomainOfRootCause(verdict.root_cause);
  a.decision.notes = f.notes;
  return a;
}

}  // namespace diagnose
