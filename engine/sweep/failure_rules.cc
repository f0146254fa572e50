#include "engine/sweep/failure_rules.h"

#include <algorithm>
#include <regex>
#include <utility>

#include "engine/core/bounded_regex.h"

namespace diagnose::sweep {

namespace {

constexpr int kFlakesToInfraFlake = 3;
constexpr int kTimeoutsToStop = 2;

const ClassMatch* FindClass(const JobFacts& facts, const std::string& id) {
  for (const auto& c : facts.classes)
    if (c.failure_class == id) return &c;
  return nullptr;
}

const LogEvent* FindEvent(const JobFacts& facts, const std::string& needle) {
  for (const auto& e : facts.events)
    if (e.where.text.find(needle) != std::string::npos) return &e;
  return nullptr;
}

std::string JoinIds(const std::vector<std::string>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + ids[i];
  return out;
}

// A rule that settles the variant on its own: it leaves the leaderboard, or (kStopSweep) the sweep
// stops.
VariantFailures Decisive(RecoveryRule rule, std::vector<std::string> deciding_jobs, std::string explanation) {
  VariantFailures v;
  v.rule = rule;
  v.dropped = rule != RecoveryRule::kStopSweep;
  v.stop_sweep = rule == RecoveryRule::kStopSweep;
  v.deciding_jobs = std::move(deciding_jobs);
  v.explanation = std::move(explanation);
  return v;
}

}  // namespace

const char* JobOutcomeName(JobOutcome o) {
  switch (o) {
    case JobOutcome::kSucceeded: return "ok";
    case JobOutcome::kRunning: return "running";
    case JobOutcome::kOom: return "oom";
    case JobOutcome::kUnknownFlag: return "unknown-flag";
    case JobOutcome::kRcclInitFlake: return "rccl-flake";
    case JobOutcome::kCoordinationTimeout: return "coordination-timeout";
    case JobOutcome::kOtherFailure: return "failed";
  }
  return "failed";
}

const char* RecoveryRuleName(RecoveryRule r) {
  switch (r) {
    case RecoveryRule::kNone: return "none";
    case RecoveryRule::kRetried: return "retried";
    case RecoveryRule::kRetryPending: return "retry";
    case RecoveryRule::kInfraFlake: return "infra-flake";
    case RecoveryRule::kFixFlag: return "fix-flag";
    case RecoveryRule::kDroppedObsoleteFlag: return "dropped-obsolete-flag";
    case RecoveryRule::kDroppedOom: return "dropped-oom";
    case RecoveryRule::kStopSweep: return "stop";
    case RecoveryRule::kFailed: return "failed";
  }
  return "none";
}

JobFailure ClassifyJob(const JobFacts& facts, bool steady_window_measured) {
  JobFailure f;
  const bool finished_ok = facts.status == JobStatus::kCompleted || facts.soft_success;
  if (steady_window_measured && (finished_ok || facts.status == JobStatus::kCancelled || facts.status == JobStatus::kFailed)) {
    // A full window was measured: the job produced what the sweep needs. Its teardown is not the
    // sweep's concern (cleanup exit=143), unless it died of OOM/flag errors before the window,
    // which cannot be the case when the window has steps.
    f.outcome = JobOutcome::kSucceeded;
    return f;
  }
  if (facts.status == JobStatus::kRunning) {
    f.outcome = JobOutcome::kRunning;
    return f;
  }
  if (finished_ok) {
    f.outcome = JobOutcome::kSucceeded;   // completed, but too short for a window: measured as nothing
    return f;
  }
  if (const ClassMatch* c = FindClass(facts, "oom-gpu"); c != nullptr || !facts.oom_allocation.empty()) {
    f.outcome = JobOutcome::kOom;
    f.detail = facts.oom_allocation.empty() ? "allocation not named" : facts.oom_allocation;
    if (c != nullptr) f.evidence = c->where;
    return f;
  }
  // The compile class's first line, else any notable line, that names the flag XLA refused.
  const ClassMatch* compile = FindClass(facts, "xla-compile-fail");
  const LogEvent* event = FindEvent(facts, "Unknown flag");
  const LogRef* flag_line = compile != nullptr && compile->where.text.find("Unknown flag") != std::string::npos
                                ? &compile->where
                                : event != nullptr ? &event->where : nullptr;
  if (flag_line != nullptr) {
    static const std::regex flag_re(R"(Unknown flag[^-]*(--xla_[A-Za-z0-9_]+))");
    std::cmatch m;
    f.outcome = JobOutcome::kUnknownFlag;
    const size_t flag_at = flag_line->text.find("Unknown flag");
    f.detail = BoundedRegexSearch(flag_line->text, flag_re, flag_at, flag_at, &m) ? m[1].str() : "";
    f.evidence = *flag_line;
    return f;
  }
  // The runbook's signature (xla-tuning recovery table: `DEADLINE_EXCEEDED: GetKeyValue() timed
  // out`), on the line triage classified or kept as notable.
  const ClassMatch* deadline = nullptr;
  for (const auto& c : facts.classes)
    if (c.where.text.find("DEADLINE_EXCEEDED") != std::string::npos) deadline = &c;
  const LogEvent* deadline_event = FindEvent(facts, "DEADLINE_EXCEEDED");
  if (deadline != nullptr || deadline_event != nullptr) {
    f.outcome = JobOutcome::kCoordinationTimeout;
    f.evidence = deadline != nullptr ? deadline->where : deadline_event->where;
    f.detail = "DEADLINE_EXCEEDED";
    return f;
  }
  const bool no_step = facts.steps.empty();
  const bool init_failure = facts.failure_class == "hang" || facts.failure_class == "cancelled-after-hang" ||
                            facts.failure_class == "nccl-timeout" || facts.failure_class == "cancelled" ||
                            facts.status == JobStatus::kHanging;
  // Killed or hung before the first step (the runbook: > 10 min, no completed step, NCCL WARN
  // spam). Init waves alone say nothing: every job that dies before step 0 has had them.
  if (no_step && init_failure) {
    f.outcome = JobOutcome::kRcclInitFlake;
    f.detail = facts.failure_class.empty() ? std::string(ToString(facts.status)) : facts.failure_class;
    if (!facts.classes.empty()) f.evidence = facts.classes.front().where;
    return f;
  }
  f.outcome = JobOutcome::kOtherFailure;
  f.detail = facts.failure_class.empty() ? std::string(ToString(facts.status)) : facts.failure_class;
  if (!facts.classes.empty()) f.evidence = facts.classes.front().where;
  return f;
}

VariantFailures ApplyRecoveryRules(const std::vector<OrderedJobOutcome>& jobs) {
  VariantFailures v;
  int flakes = 0, timeouts = 0;
  std::vector<std::string> flake_ids, timeout_ids, flag_ids, other_ids;
  std::vector<std::string> unknown_flags;
  bool succeeded_later = false;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto& job = jobs[i];
    const JobOutcome o = job.failure.outcome;
    if (o != JobOutcome::kRcclInitFlake) flakes = 0, flake_ids.clear();
    if (o != JobOutcome::kCoordinationTimeout) timeouts = 0, timeout_ids.clear();
    switch (o) {
      case JobOutcome::kSucceeded:
        succeeded_later = true;
        break;
      case JobOutcome::kRunning:
        break;
      case JobOutcome::kOom:
        return Decisive(RecoveryRule::kDroppedOom, {job.job_id},
                        "OOM in job " + job.job_id + " (allocation " + job.failure.detail +
                            "): same flags, same OOM; dropped without retry");
      case JobOutcome::kUnknownFlag: {
        flag_ids.push_back(job.job_id);
        const bool repeated = std::find(unknown_flags.begin(), unknown_flags.end(), job.failure.detail) !=
                              unknown_flags.end();
        unknown_flags.push_back(job.failure.detail);
        if (repeated)
          return Decisive(RecoveryRule::kDroppedObsoleteFlag, flag_ids,
                          "unknown flag " + job.failure.detail + " again after a fix (jobs " + JoinIds(flag_ids) +
                              "): obsolete in this XLA build; dropped");
        succeeded_later = false;
        break;
      }
      case JobOutcome::kRcclInitFlake:
        ++flakes;
        flake_ids.push_back(job.job_id);
        succeeded_later = false;
        if (flakes >= kFlakesToInfraFlake)
          return Decisive(RecoveryRule::kInfraFlake, flake_ids,
                          std::to_string(flakes) + " consecutive RCCL init flakes (jobs " + JoinIds(flake_ids) +
                              "): infra-flake, profile dropped");
        break;
      case JobOutcome::kCoordinationTimeout:
        ++timeouts;
        timeout_ids.push_back(job.job_id);
        succeeded_later = false;
        if (timeouts >= kTimeoutsToStop)
          return Decisive(RecoveryRule::kStopSweep, timeout_ids,
                          "2 consecutive JAX coordination timeouts (jobs " + JoinIds(timeout_ids) +
                              "): the coordination service may be sick; stop the sweep");
        break;
      case JobOutcome::kOtherFailure:
        other_ids.push_back(job.job_id);
        succeeded_later = false;
        break;
    }
  }
  // No terminal rule fired: say what the failures that happened asked for.
  std::vector<std::string> failed;
  for (const auto& job : jobs)
    if (job.failure.outcome != JobOutcome::kSucceeded && job.failure.outcome != JobOutcome::kRunning)
      failed.push_back(job.job_id);
  if (failed.empty()) return v;
  v.deciding_jobs = failed;
  if (succeeded_later) {
    v.rule = RecoveryRule::kRetried;
    v.explanation = "failed in job(s) " + JoinIds(failed) + ", a later resubmission succeeded";
    return v;
  }
  const OrderedJobOutcome& last = [&]() -> const OrderedJobOutcome& {
    for (size_t i = jobs.size(); i-- > 0;)
      if (jobs[i].failure.outcome != JobOutcome::kRunning) return jobs[i];
    return jobs.back();
  }();
  switch (last.failure.outcome) {
    case JobOutcome::kUnknownFlag:
      v.rule = RecoveryRule::kFixFlag;
      v.explanation = "unknown flag " + last.failure.detail + " in job " + last.job_id +
                      ": remove it from the profile's train_env.sh arm and resubmit";
      break;
    case JobOutcome::kRcclInitFlake:
    case JobOutcome::kCoordinationTimeout:
      v.rule = RecoveryRule::kRetryPending;
      v.explanation = std::string(JobOutcomeName(last.failure.outcome)) + " in job " + last.job_id +
                      ": resubmit the same profile on the same nodelist";
      break;
    default:
      v.rule = RecoveryRule::kFailed;
      v.explanation = "job " + last.job_id + " failed (" + last.failure.detail + ")";
      break;
  }
  return v;
}

}  // namespace diagnose::sweep
