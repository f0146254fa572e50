#include "engine/verdict/verdict.h"

#include <algorithm>
#include <set>

namespace diagnose::verdict {
namespace {

bool NamesCause(const Candidate& c) { return c.root_cause != "none" && c.root_cause != "unknown"; }

// A `none` verdict of at least likely confidence that accounts for every failure class of a job
// that is still alive: the playbook refutes the symptom rather than explaining a fault. A job that
// failed, or one with any symptom left unexplained, is never refuted into "nothing wrong".
const Candidate* FindRefuter(const std::vector<Candidate>& neutral, std::optional<JobStatus> job_status,
                             const std::vector<std::string>& failure_classes) {
  if (failure_classes.empty() || (job_status != JobStatus::kHanging && job_status != JobStatus::kRunning)) return nullptr;
  for (const auto& c : neutral) {
    if (c.root_cause != "none" || c.confidence < Confidence::kLikely) continue;
    const bool explains_all = std::all_of(failure_classes.begin(), failure_classes.end(), [&](const std::string& fc) {
      return std::find(c.explains.begin(), c.explains.end(), fc) != c.explains.end();
    });
    if (explains_all) return &c;
  }
  return nullptr;
}

std::string Describe(const Candidate& c) {
  return c.playbook + "/" + c.rule + ": " + c.root_cause + " (" + std::string(ToString(c.confidence)) + ")";
}

// A symptom is a failure class other than the healthy ones: a completed job with no class has
// nothing for `unknown` to leave unexplained.
bool HasSymptom(const std::vector<std::string>& failure_classes) {
  return std::any_of(failure_classes.begin(), failure_classes.end(),
                     [](const std::string& fc) { return !fc.empty() && fc != "none" && fc != "completed"; });
}

// A slowdown is a symptom; it ends no job.
bool IsSlowdownClass(const std::string& fc) { return fc == "tgs-degradation"; }

bool Explains(const Candidate& c, const std::string& fc) {
  return std::find(c.explains.begin(), c.explains.end(), fc) != c.explains.end();
}

// A job that did not complete ended for a reason (a hang, a dead node, a crash, a kill). A cause
// established at least `likely` that explains how it ended is the root cause of the failure, above
// a cause that explains only a slowdown earlier in the run, whatever their confidences: a link that
// cost 7 % of TGS did not stop the job a node's death stopped.
bool ExplainsTheEnd(const Candidate& c, std::optional<JobStatus> job_status, const std::vector<std::string>& failure_classes) {
  if (job_status == JobStatus::kCompleted || job_status == JobStatus::kRunning || c.confidence < Confidence::kLikely) return false;
  return std::any_of(failure_classes.begin(), failure_classes.end(),
                     [&](const std::string& fc) { return !IsSlowdownClass(fc) && Explains(c, fc); });
}

// Two causes established at least `likely` that explain the same symptom are two faults of one
// job: which is more certain says nothing about which came first. The root is the earliest anomaly
// (a throttling host at the end of a run does not explain the links that slowed it for the hundred
// steps before); confidence decides only between causes without that common ground.
bool EarliestDecides(const Candidate& a, const Candidate& b) {
  if (a.confidence < Confidence::kLikely || b.confidence < Confidence::kLikely || !a.onset || !b.onset ||
      *a.onset == *b.onset)
    return false;
  return std::any_of(a.explains.begin(), a.explains.end(), [&](const std::string& fc) { return Explains(b, fc); });
}

// Why `loser` ranks below `winner`, in the order the ranking applies its criteria.
std::string WhyLost(const Candidate& winner, const Candidate& loser, std::optional<JobStatus> job_status,
                    const std::vector<std::string>& failure_classes) {
  if (loser.yields && !winner.yields) return "a gap in what can be seen yields to a failure mechanism";
  if (ExplainsTheEnd(winner, job_status, failure_classes) && !ExplainsTheEnd(loser, job_status, failure_classes))
    return "it explains a slowdown during the run, not how the job ended";
  if (EarliestDecides(winner, loser))
    return "its anomaly began " + std::to_string(static_cast<long long>(*loser.onset - *winner.onset)) +
           " s after the winner's, which explains the same symptom (the earliest anomaly is the root)";
  if (winner.confidence != loser.confidence)
    return "lower confidence (" + std::string(ToString(loser.confidence)) + " vs " + std::string(ToString(winner.confidence)) + ")";
  const double ow = winner.onset.value_or(1e300), ol = loser.onset.value_or(1e300);
  if (ow != ol) {
    if (ol >= 1e300) return "its onset could not be placed in time; the winner's anomaly came first";
    return "its anomaly began " + std::to_string(static_cast<long long>(ol - ow)) + " s after the winner's (not the earliest anomaly)";
  }
  return "equal confidence and onset: playbook order";
}

// A failure mechanism outranks a candidate that `yields` (broken telemetry says what cannot be
// concluded), which is the verdict only when no other cause was found (a ghost exporter on one
// host must not hide a node that died). Then what explains how a failed job ended, then between
// two causes of one symptom established at least likely the earliest onset, then confidence,
// then the earliest onset (the root cause is what moved first), then the playbook order, so the
// result never depends on evaluation timing.
void RankCauses(std::vector<Candidate>& causes, std::optional<JobStatus> job_status,
                const std::vector<std::string>& failure_classes) {
  std::stable_sort(causes.begin(), causes.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.yields != b.yields) return b.yields;
    const bool a_end = ExplainsTheEnd(a, job_status, failure_classes), b_end = ExplainsTheEnd(b, job_status, failure_classes);
    if (a_end != b_end) return a_end;
    if (EarliestDecides(a, b)) return *a.onset < *b.onset;
    if (a.confidence != b.confidence) return a.confidence > b.confidence;
    double oa = a.onset.value_or(1e300), ob = b.onset.value_or(1e300);
    if (oa != ob) return oa < ob;
    return a.playbook_order < b.playbook_order;
  });
}

void SortExclusions(std::vector<Exclusion>* exclude) {
  std::stable_sort(exclude->begin(), exclude->end(), [](const Exclusion& a, const Exclusion& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.host < b.host;
  });
}

// Several faults of different kinds in one job (a bad link and a throttling GPU slowing it, or
// a link that slowed it before a node died and hung it): each established at least `likely`,
// explaining the root's symptom or another symptom the job showed, and calling for exclusion,
// has its hosts excluded too; the root's own entry wins for a host both name.
void ExcludeSecondFaults(const Candidate& root, const std::vector<const Candidate*>& effects,
                         const std::vector<std::string>& failure_classes, Combined* out) {
  std::set<std::string> excluded;
  for (const auto& x : out->decision.exclude) excluded.insert(x.host);
  for (const auto* e : effects) {
    if (e->action != DecisionAction::kRetryExcludingNodes || e->confidence < Confidence::kLikely || e->yields) continue;
    const bool shown_symptom = std::any_of(e->explains.begin(), e->explains.end(), [&](const std::string& fc) {
      return Explains(root, fc) || std::find(failure_classes.begin(), failure_classes.end(), fc) != failure_classes.end();
    });
    if (!shown_symptom) continue;
    std::string added;
    for (const auto& x : e->exclude)
      if (excluded.insert(x.host).second) {
        out->decision.exclude.push_back(x);
        added += (added.empty() ? "" : ", ") + x.host;
      }
    if (!added.empty())
      out->decision.notes.push_back("also excluded for " + e->root_cause + " (" + e->playbook + ", " + std::string(ToString(e->confidence)) +
                                    "), a second fault in the same job: " + added);
  }
  SortExclusions(&out->decision.exclude);
}

// The verdict and decision of the top-ranked cause, and the causal chain: root, then the other fired
// causes by onset (effects), then the symptoms they explain.
void VerdictFromRootCause(const std::vector<Candidate>& causes, const std::vector<std::string>& failure_classes,
                          Combined* out) {
  const Candidate& root = causes.front();
  out->verdict.root_cause = root.root_cause;
  out->verdict.domain = DomainOfRootCause(root.root_cause);
  out->verdict.confidence = root.confidence;
  out->verdict.summary = root.summary;
  out->verdict.finding = root.playbook + "/" + root.rule;
  out->decision.action = root.action;
  out->decision.exclude = root.exclude;
  SortExclusions(&out->decision.exclude);
  out->decision.changes = root.changes;
  out->decision.notes = root.notes;
  out->causal_chain.push_back(root.root_cause + " (" + root.playbook + ")");
  std::vector<const Candidate*> effects;
  for (size_t i = 1; i < causes.size(); ++i) effects.push_back(&causes[i]);
  std::stable_sort(effects.begin(), effects.end(), [](const Candidate* a, const Candidate* b) {
    return a->onset.value_or(1e300) < b->onset.value_or(1e300);
  });
  std::set<std::string> seen = {root.root_cause};
  for (const auto* e : effects) {
    if (seen.insert(e->root_cause).second)
      out->causal_chain.push_back(e->root_cause + " (" + e->playbook + ")");
    out->decision.notes.push_back("also found: " + e->summary + " [" + Describe(*e) + "]");
  }
  if (root.action == DecisionAction::kRetryExcludingNodes) ExcludeSecondFaults(root, effects, failure_classes, out);
  std::set<std::string> explained(root.explains.begin(), root.explains.end());
  for (const auto* e : effects) explained.insert(e->explains.begin(), e->explains.end());
  for (const auto& fc : failure_classes)
    if (explained.count(fc) && seen.insert("symptom:" + fc).second) out->causal_chain.push_back("symptom: " + fc);
}

// A slowdown triage measured that no candidate accounts for: the playbooks that came back clean (a
// network with no errors, GPUs within their limits) rule their own families out, they do not
// explain the loss, so "nothing wrong" would hide it.
bool HasUnexplainedSlowdown(const std::vector<Candidate>& neutral, const std::vector<std::string>& failure_classes) {
  return std::any_of(failure_classes.begin(), failure_classes.end(), [&](const std::string& fc) {
    return IsSlowdownClass(fc) && std::none_of(neutral.begin(), neutral.end(), [&](const Candidate& c) { return Explains(c, fc); });
  });
}

// No cause named: the metrics refute the log's symptoms, or a failure or a slowdown stays
// unexplained (never let "nothing found" hide it), or a job that completed with no symptom is healthy.
void VerdictWithoutCause(const Candidate* refuter, const std::vector<Candidate>& neutral,
                         std::optional<JobStatus> job_status, const std::vector<std::string>& failure_classes,
                         Combined* out) {
  const bool slowdown_unexplained = HasUnexplainedSlowdown(neutral, failure_classes);
  if (refuter) {
    // e.g. a "hang" while every GPU kept training: nothing is wrong that a retry would fix, and the
    // symptoms are reported as refuted.
    out->verdict.root_cause = "none";
    out->verdict.domain = "none";
    out->verdict.confidence = refuter->confidence;
    out->verdict.summary = refuter->summary;
    out->verdict.finding = refuter->playbook + "/" + refuter->rule;
    out->decision.action = refuter->action;
  } else if (IsUnexplainedStatus(job_status) || slowdown_unexplained ||
             (HasSymptom(failure_classes) &&
              std::any_of(neutral.begin(), neutral.end(), [](const Candidate& c) { return c.root_cause == "unknown"; }))) {
    out->verdict.root_cause = "unknown";
    out->verdict.domain = "none";
    out->verdict.confidence = Confidence::kInsufficientEvidence;
    std::string classes;
    for (const auto& fc : failure_classes) classes += (classes.empty() ? "" : ", ") + fc;
    // The playbook that saw the symptom and ruled its families out says what was checked and what
    // to do next; the generic sentence is for when none did.
    const auto said = std::find_if(neutral.begin(), neutral.end(),
                                   [](const Candidate& c) { return c.root_cause == "unknown" && !c.summary.empty(); });
    if (IsUnexplainedStatus(job_status)) {
      out->verdict.summary = "The job is " + std::string(ToString(*job_status)) + (classes.empty() ? "" : " (" + classes + ")") +
                             " and no playbook could name a cause.";
    } else if (said != neutral.end()) {
      out->verdict.summary = "The evidence is insufficient to name a cause: " + said->summary;
      out->verdict.finding = said->playbook + "/" + said->rule;
    } else if (slowdown_unexplained) {
      out->verdict.summary = "The job slowed (" + classes + ") and no playbook tied the loss to a cause: the findings that fired are the leads.";
    } else {
      out->verdict.summary = "The evidence is insufficient to name a cause.";
    }
    out->decision.action = DecisionAction::kNone;
    const std::string unexplained = IsUnexplainedStatus(job_status) || classes.empty() ? std::string(ToString(*job_status)) : classes;
    out->decision.notes.push_back(UnexplainedNote(unexplained));
  } else {
    // An anomaly no playbook could tie to a loss (e.g. a host's low-level background retransmits)
    // is noted, never turned into `unknown`.
    out->verdict.root_cause = "none";
    out->verdict.domain = "none";
    const Candidate* first_none = nullptr;
    for (const auto& c : neutral)
      if (c.root_cause == "none") {
        first_none = &c;
        break;
      }
    out->verdict.confidence = first_none ? first_none->confidence : Confidence::kPossible;
    out->verdict.summary = first_none ? first_none->summary : "No playbook found a problem.";
    if (first_none) out->verdict.finding = first_none->playbook + "/" + first_none->rule;
    out->decision.action = DecisionAction::kNone;
    for (const auto& c : neutral)
      if (c.root_cause == "unknown" && !c.summary.empty())
        out->decision.notes.push_back("noted, not a failure (the job completed with no symptom): " + c.summary);
  }
}

}  // namespace

bool IsUnexplainedStatus(std::optional<JobStatus> status) {
  return status == JobStatus::kFailed || status == JobStatus::kHanging || status == JobStatus::kUnknownDeath;
}

namespace {
constexpr std::string_view kUnexplainedPrefix = "unexplained ";
constexpr std::string_view kUnexplainedAdvice = ": inspect the findings and the logs before retrying";
}  // namespace

std::string UnexplainedNote(const std::string& what) {
  return std::string(kUnexplainedPrefix) + what + std::string(kUnexplainedAdvice);
}

bool IsUnexplainedNote(const std::string& note) {
  return note.size() > kUnexplainedPrefix.size() + kUnexplainedAdvice.size() && note.starts_with(kUnexplainedPrefix) &&
         note.ends_with(kUnexplainedAdvice);
}

Combined Combine(std::vector<Candidate> candidates, std::optional<JobStatus> job_status,
                 const std::vector<std::string>& failure_classes) {
  Combined out;
  std::vector<Candidate> causes, neutral;
  for (auto& c : candidates) (NamesCause(c) ? causes : neutral).push_back(std::move(c));
  RankCauses(causes, job_status, failure_classes);
  for (const auto& c : causes) out.ranking.push_back(Describe(c));
  for (const auto& c : neutral) out.ranking.push_back(Describe(c));
  for (size_t i = 1; i < causes.size(); ++i) {
    if (causes[i].root_cause == causes[0].root_cause) continue;
    out.verdict.runner_up = Describe(causes[i]) + ": " + WhyLost(causes[0], causes[i], job_status, failure_classes);
    break;
  }

  // Broken telemetry found next to a refuted symptom (e.g. a scrape gap on a job whose GPUs all kept
  // training) leaves the refutation standing: the gap is the verdict, and nothing should be killed.
  const bool only_telemetry = std::all_of(causes.begin(), causes.end(), [](const Candidate& c) { return c.yields; });
  const Candidate* refuter = only_telemetry ? FindRefuter(neutral, job_status, failure_classes) : nullptr;
  if (refuter)
    for (const auto& fc : failure_classes)
      if (std::find(refuter->explains.begin(), refuter->explains.end(), fc) != refuter->explains.end())
        out.verdict.refuted.push_back(fc);

  if (!causes.empty()) VerdictFromRootCause(causes, failure_classes, &out);
  else VerdictWithoutCause(refuter, neutral, job_status, failure_classes, &out);
  // A neutral explanation's advice ("do not cancel on the log's silence") directs the action only
  // when no cause was found; beside a cause it would contradict the decision, so only its summary
  // is kept as context.
  for (const auto& c : neutral) {
    if (causes.empty())
      for (const auto& n : c.notes) out.decision.notes.push_back(n);
    if (!causes.empty() && !c.summary.empty()) out.decision.notes.push_back(c.playbook + ": " + c.summary);
  }
  return out;
}

}  // namespace diagnose::verdict
