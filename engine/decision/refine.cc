#include "engine/decision/refine.h"

#include <algorithm>
#include <map>
#include <set>
#include <type_traits>

#include "engine/core/bounded_regex.h"
#include "engine/core/text.h"

namespace diagnose {

namespace {

template <typename T>
bool Contains(const std::vector<T>& list, const std::type_identity_t<T>& v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

// Maps a host as printed (FQDN from `hostname`, or a task id) onto the header's host list.
std::string CanonicalHost(const JobFacts& facts, const std::string& host, int task) {
  const auto& hosts = facts.header.hosts;
  if (!host.empty()) {
    if (Contains(hosts, host)) return host;
    const std::string short_name = host.substr(0, host.find('.'));
    if (Contains(hosts, short_name)) return short_name;
    return host;
  }
  if (task >= 0 && static_cast<size_t>(task) < hosts.size()) return hosts[task];
  return "";
}

struct SignalHit {
  bool fired = false;
  std::vector<std::string> hosts;   // distinct, in first-seen order
  std::string first_line;
};

void AddHost(SignalHit* hit, const std::string& host) {
  hit->fired = true;
  if (!host.empty() && !Contains(hit->hosts, host)) hit->hosts.push_back(host);
}

bool AnyMatch(const std::vector<std::regex>& patterns, const std::string& text) {
  for (const auto& re : patterns)
    if (BoundedRegexSearch(text, re)) return true;
  return false;
}

SignalHit EvaluateSignal(const SignalSpec& spec, const JobFacts& facts, JobStatus status) {
  SignalHit hit;
  if (Contains(spec.statuses, status)) hit.fired = true;
  for (const auto& m : facts.classes) {
    if (Contains(spec.classes, m.failure_class) || (!spec.text.empty() && AnyMatch(spec.text, m.where.text))) {
      AddHost(&hit, CanonicalHost(facts, m.host, m.task));
      if (hit.first_line.empty()) hit.first_line = m.where.text;
    }
  }
  // Triage keeps one ClassMatch per class but an event per matching line (kind = class id, bounded
  // per kind), so class ids are looked up among the events too: that is where the per-host spread is.
  for (const auto& e : facts.events) {
    if (Contains(spec.events, e.kind) || Contains(spec.classes, e.kind) || (!spec.text.empty() && AnyMatch(spec.text, e.where.text))) {
      AddHost(&hit, CanonicalHost(facts, e.host, e.task));
      if (hit.first_line.empty()) hit.first_line = e.where.text;
    }
  }
  if (Contains(spec.primary_classes, facts.failure_class)) {
    for (const auto& m : facts.classes)
      if (m.failure_class == facts.failure_class) AddHost(&hit, CanonicalHost(facts, m.host, m.task));
    for (const auto& e : facts.events)
      if (e.kind == facts.failure_class) AddHost(&hit, CanonicalHost(facts, e.host, e.task));
  }
  if (spec.node_exit_codes_except) {
    for (const auto& x : facts.node_exits)
      if (std::find(spec.node_exit_codes_except->begin(), spec.node_exit_codes_except->end(), x.exit_code) ==
          spec.node_exit_codes_except->end())
        AddHost(&hit, CanonicalHost(facts, x.host, x.task));
  }
  return hit;
}

// one | several | all | unknown (no host information).
std::string SpreadOf(const SignalHit& hit, const JobFacts& facts) {
  if (hit.hosts.empty()) return "unknown";
  const auto& job_hosts = facts.header.hosts;
  if (job_hosts.size() >= 2) {
    bool all = true;
    for (const auto& h : job_hosts) all = all && Contains(hit.hosts, h);
    if (all) return "all";
  }
  return hit.hosts.size() == 1 ? "one" : "several";
}

std::optional<int64_t> LastStepOf(const JobFacts& facts) {
  if (facts.progress.last_step) return facts.progress.last_step;
  if (!facts.steps.empty()) return facts.steps.back().step;
  return std::nullopt;
}

std::optional<int64_t> TotalStepsOf(const JobFacts& facts) {
  if (facts.progress.total_steps) return facts.progress.total_steps;
  auto it = facts.header.passthrough.find("steps");
  if (it != facts.header.passthrough.end()) {
    try {
      return std::stoll(it->second);
    } catch (...) {
    }
  }
  return std::nullopt;
}

JobStatus EffectiveStatus(const JobFacts& facts, const SweepContext& context) {
  if (context.stalled && (facts.status == JobStatus::kRunning || facts.status == JobStatus::kUnknownDeath)) return JobStatus::kHanging;
  return facts.status;
}

struct RuleMatch {
  const DecisionRule* rule = nullptr;
  SignalHit hit;
};

std::optional<RuleMatch> FirstMatchingRule(const DecisionRules& rules, const JobFacts& facts,
                                           JobStatus status, const std::string& phase) {
  std::map<std::string, SignalHit> hits;
  auto hit_of = [&](const std::string& id) -> const SignalHit& {
    auto it = hits.find(id);
    if (it == hits.end()) it = hits.emplace(id, EvaluateSignal(rules.signals.at(id), facts, status)).first;
    return it->second;
  };
  for (const auto& rule : rules.rules) {
    const RuleCondition& w = rule.when;
    if (!w.signal.empty()) {
      const SignalHit& hit = hit_of(w.signal);
      if (!hit.fired) continue;
      if (w.hosts != "any" && SpreadOf(hit, facts) != w.hosts) continue;
    }
    if (!w.also.empty() && !hit_of(w.also).fired) continue;
    if (!w.status.empty() && !Contains(w.status, status)) continue;
    if (!w.hang_phase.empty() && !Contains(w.hang_phase, phase)) continue;
    if (w.soft_success && facts.soft_success != *w.soft_success) continue;
    if (w.final_step_reached) {
      const auto last = LastStepOf(facts);
      const auto total = TotalStepsOf(facts);
      const bool reached = last && total && *total > 0 && *last >= *total - 1;
      if (reached != *w.final_step_reached) continue;
    }
    if (!w.summary_exit.empty() &&
        (!facts.summary.present ||
         std::find(w.summary_exit.begin(), w.summary_exit.end(), facts.summary.exit_code) == w.summary_exit.end()))
      continue;
    if (!w.failure_class.empty() && !Contains(w.failure_class, facts.failure_class)) continue;
    if (Contains(w.not_failure_class, facts.failure_class)) continue;
    RuleMatch match;
    match.rule = &rule;
    if (!w.signal.empty()) match.hit = hit_of(w.signal);
    return match;
  }
  return std::nullopt;
}

std::string ReplaceAll(std::string text, const std::string& key, const std::string& value) {
  for (size_t pos = text.find(key); pos != std::string::npos; pos = text.find(key, pos + value.size()))
    text.replace(pos, key.size(), value);
  return text;
}

std::string ExpandNote(const std::string& note, const JobFacts& facts, const SignalHit& hit,
                       const std::string& phase) {
  std::string out = note;
  out = ReplaceAll(out, "{hosts}", hit.hosts.empty() ? "the job's nodes" : JoinStrings(hit.hosts));
  const auto last = LastStepOf(facts);
  out = ReplaceAll(out, "{last_step}", last ? std::to_string(*last) : "?");
  out = ReplaceAll(out, "{exit_code}", facts.summary.present ? std::to_string(facts.summary.exit_code) : "?");
  out = ReplaceAll(out, "{failure_class}", facts.failure_class.empty() ? "unclassified" : facts.failure_class);
  out = ReplaceAll(out, "{allocation_clause}",
                   facts.oom_allocation.empty() ? "" : " while allocating " + facts.oom_allocation);
  out = ReplaceAll(out, "{phase}", phase);
  return out;
}

std::vector<std::string> ExcludedHosts(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& e : d.exclude) out.push_back(e.host);
  return out;
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// `limit` names the rules/sweep/decisions.yaml limit behind the step ("" for contract hygiene), so
// that every view of the decision can say which policy changed the action and with what numbers.
void SetAction(SweepDecision* sd, DecisionAction action, const std::string& why, const std::string& limit) {
  if (sd->decision.action == action) return;
  sd->decision.notes.push_back(why + ": " + std::string(ToString(sd->decision.action)) + " -> " +
                               std::string(ToString(action)));
  sd->decision.overrides.push_back({sd->decision.action, action, why, sd->rule, limit});
  sd->decision.action = action;
}

// Suspects for an escalated hang: the diagnosis's own exclusions first (playbooks that localised
// the hang), else the hosts where RCCL/NIC trouble or crashes were logged, if not every host.
std::vector<Exclusion> HangSuspects(const Diagnosis& diagnosis, const JobFacts& facts, const DecisionRules& rules,
                                    JobStatus status) {
  if (!diagnosis.decision.exclude.empty()) return diagnosis.decision.exclude;
  std::vector<Exclusion> out;
  for (const std::string& id : rules.hang_suspect_signals) {
    auto it = rules.signals.find(id);
    if (it == rules.signals.end()) continue;
    const SignalHit hit = EvaluateSignal(it->second, facts, status);
    const std::string spread = SpreadOf(hit, facts);
    if (spread != "one" && spread != "several") continue;
    for (const auto& h : hit.hosts) out.push_back({h, 2, "hang recurred; " + id + " logged on this host"});
    if (!out.empty()) break;
  }
  return out;
}

// What every step of RefineDecision reads: the diagnosis, the job, the sweep's history and rules,
// and what they say about this job (its status, hang phase, config and retry chain).
struct RefineInputs {
  const Diagnosis& diagnosis;
  const JobFacts& facts;
  const SweepHistory& history;
  const DecisionRules& rules;
  const SweepContext& context;
  JobStatus status;
  std::string phase;
  SweepConfig config;
  const HistoryEntry* predecessor;
  std::vector<const HistoryEntry*> chain;
};

// 1. Base decision: the first matching sweep rule, else the diagnosis's own decision. A cause the
// playbooks established from metrics (likely or confirmed) outranks the log-pattern sweep rules:
// e.g. every node exiting non-zero after a heartbeat false positive is the kill, not a config error.
// Likewise a symptom the metrics refuted (a "hang" whose GPUs kept training) is no reason to act.
// Returns the rule applied, if any.
const DecisionRule* ApplyFirstSweepRule(const RefineInputs& in, SweepDecision* sd) {
  const Diagnosis& diagnosis = in.diagnosis;
  const bool metric_backed = diagnosis.verdict.source == "playbooks" && diagnosis.verdict.confidence >= Confidence::kLikely;
  // Broken telemetry is not a failure mechanism: it leaves the log's sweep rules in charge.
  const bool names_mechanism = in.rules.NamesMechanism(diagnosis.verdict.root_cause);
  // `refuted` is only ever set from a likely or confirmed refutation.
  const bool refuted = diagnosis.verdict.source == "playbooks" && !diagnosis.verdict.refuted.empty();
  const bool metric_backed_cause = (metric_backed && names_mechanism) || refuted;
  auto match = metric_backed_cause ? std::nullopt : FirstMatchingRule(in.rules, in.facts, in.status, in.phase);
  if (!match) return nullptr;
  const DecisionRule* rule = match->rule;
  const RuleOutcome& out = rule->decision;
  Decision d;
  d.action = out.action;
  const std::string note = ExpandNote(out.note, in.facts, match->hit, in.phase);
  if (out.exclude == "signal-hosts")
    for (const auto& h : match->hit.hosts) d.exclude.push_back({h, out.exclude_priority, note});
  d.notes.push_back(note + " [sweep rule " + rule->id + "]");
  if (diagnosis.decision.action != d.action) {
    d.notes.push_back("diagnosis alone suggested " + std::string(ToString(diagnosis.decision.action)));
    d.overrides.push_back({diagnosis.decision.action, d.action, note, rule->id});
  }
  for (const auto& n : diagnosis.decision.notes) d.notes.push_back(n);
  sd->decision = std::move(d);
  sd->rule = rule->id;
  sd->exclude_scope = out.exclude_scope;
  if (!out.root_cause.empty()) sd->root_cause = out.root_cause;
  if (out.record_allocation) sd->oom_allocation = in.facts.oom_allocation;
  return rule;
}

// 2a. The rule fired on too many configs of this sweep, on other nodes before, or too many times in a
// row on this config: a configuration problem, escalated as the rule says.
void ApplyRepeatLimits(const RefineInputs& in, const DecisionRule& rule, SweepDecision* sd) {
  const RuleLimits& lim = rule.limits;
  const std::string& sweep = in.context.sweep;
  if (lim.repeat_on_configs) {
    std::vector<SweepConfig> configs{in.config};
    for (const auto& e : in.history.entries)
      if (e.sweep == sweep && e.rule == rule.id && e.job != in.facts.id &&
          std::find(configs.begin(), configs.end(), e.config) == configs.end())
        configs.push_back(e.config);
    if (static_cast<int>(configs.size()) >= lim.repeat_on_configs->count) {
      SetAction(sd, lim.repeat_on_configs->then,
                "'" + rule.id + "' fired on " + std::to_string(configs.size()) + " configs of this sweep (limit " +
                    std::to_string(lim.repeat_on_configs->count) + ")",
                rule.id + ".limits.repeat_on_configs");
      if (!lim.repeat_on_configs->root_cause.empty()) sd->root_cause = lim.repeat_on_configs->root_cause;
    }
  }
  if (lim.repeat_on_other_nodes && !sd->decision.exclude.empty()) {
    const std::vector<std::string> now_hosts = ExcludedHosts(sd->decision);
    for (const auto& e : in.history.entries) {
      if (e.sweep != sweep || e.rule != rule.id || e.job == in.facts.id || e.exclude.empty()) continue;
      bool disjoint = true;
      for (const auto& x : e.exclude) disjoint = disjoint && !Contains(now_hosts, x.host);
      if (!disjoint) continue;
      SetAction(sd, lim.repeat_on_other_nodes->then,
                "same error ('" + rule.id + "') earlier on a different node (job " + e.job + ": " +
                    e.exclude.front().host + ") - a configuration problem, not one bad node",
                rule.id + ".limits.repeat_on_other_nodes");
      if (!lim.repeat_on_other_nodes->root_cause.empty()) sd->root_cause = lim.repeat_on_other_nodes->root_cause;
      break;
    }
  }
  if (lim.consecutive) {
    int run = 1;
    for (auto it = in.chain.rbegin(); it != in.chain.rend() && (*it)->rule == rule.id; ++it) ++run;
    if (run >= lim.consecutive->count) {
      SetAction(sd, lim.consecutive->then,
                "'" + rule.id + "' " + std::to_string(run) + " times in a row on this config (limit " +
                    std::to_string(lim.consecutive->count) + ")",
                rule.id + ".limits.consecutive");
      if (!lim.consecutive->root_cause.empty()) sd->root_cause = lim.consecutive->root_cause;
    }
  }
}

// 2b. "Escalate only if the hang recurs on the same nodes": the previous attempt hung too, on
// exactly these hosts.
void ApplyHangRecurrence(const RefineInputs& in, const DecisionRule& rule, SweepDecision* sd) {
  const HistoryEntry* predecessor = in.predecessor;
  if (rule.limits.on_recurrence_same_nodes != "exclude-suspects" || !predecessor ||
      predecessor->status != JobStatus::kHanging || Sorted(predecessor->nodes) != Sorted(in.facts.header.hosts) ||
      sd->decision.action == DecisionAction::kStopSweep)
    return;
  std::vector<Exclusion> suspects = HangSuspects(in.diagnosis, in.facts, in.rules, in.status);
  if (!suspects.empty()) {
    sd->decision.exclude = suspects;
    SetAction(sd, DecisionAction::kRetryExcludingNodes,
              "hang recurred on the same nodes as job " + predecessor->job + "; excluding suspects",
              rule.id + ".limits.on_recurrence_same_nodes");
  } else {
    sd->decision.notes.push_back("hang recurred on the same nodes as job " + predecessor->job +
                                 " but no suspect node was identified; next time try _env_NCCL_DEBUG=INFO");
  }
}

// 3a. Sweep-wide limits: retries per config, and nodes excluded across the sweep.
void ApplyRetryAndExclusionLimits(const RefineInputs& in, const DecisionRule* rule, SweepDecision* sd) {
  const SweepLimits& limits = in.rules.limits;
  if (IsRetry(sd->decision.action)) {
    const int max_retries =
        rule && rule->limits.max_retries ? *rule->limits.max_retries : limits.max_retries_per_job;
    const int retries_done = static_cast<int>(in.chain.size());
    if (retries_done >= max_retries)
      SetAction(sd, limits.retries_exceeded_action,
                "this config was already retried " + std::to_string(retries_done) + " time(s) (limit " +
                    std::to_string(max_retries) + " per job)",
                rule && rule->limits.max_retries ? rule->id + ".limits.max_retries" : "limits.max_retries_per_job");
  }
  if (sd->decision.action != DecisionAction::kRetryExcludingNodes || !in.context.in_sweep) return;
  std::vector<std::string> excluded;
  for (const auto& e : in.history.entries) {
    if (e.sweep != in.context.sweep || e.job == in.facts.id) continue;
    if (e.action != DecisionAction::kRetryExcludingNodes && e.exclude_scope != ExcludeScope::kSweep) continue;
    for (const auto& x : e.exclude)
      if (!Contains(excluded, x.host)) excluded.push_back(x.host);
  }
  for (const auto& x : sd->decision.exclude)
    if (!Contains(excluded, x.host)) excluded.push_back(x.host);
  if (static_cast<int>(excluded.size()) > limits.max_excluded_nodes_per_sweep)
    SetAction(sd, limits.excluded_nodes_exceeded_action,
              std::to_string(excluded.size()) + " nodes excluded in this sweep (" + JoinStrings(excluded) + "; limit " +
                  std::to_string(limits.max_excluded_nodes_per_sweep) + "): the cluster is unhealthy",
              "limits.max_excluded_nodes_per_sweep");
}

// 3b. Model sweep early stop: models whose latest attempt in this sweep failed while the same model
// passed on the baseline (a baseline-variant entry, or any earlier sweep).
void ApplyModelSweepEarlyStop(const RefineInputs& in, SweepDecision* sd) {
  const SweepLimits& limits = in.rules.limits;
  const SweepContext& context = in.context;
  auto passed = [](JobStatus status, const std::string& root_cause) {
    return status == JobStatus::kCompleted || root_cause == "none";
  };
  const bool this_failed = !in.facts.soft_success && !passed(in.status, sd->root_cause);
  if (!this_failed || sd->decision.action == DecisionAction::kStopSweep || in.config.model.empty() ||
      context.variant == limits.baseline_variant)
    return;
  std::set<std::string> baseline_passed;
  std::map<std::string, bool> latest_failed;   // candidate model -> its latest attempt failed
  for (const auto& e : in.history.entries) {
    if (e.job == in.facts.id) continue;
    const bool is_baseline = e.sweep != context.sweep || e.variant == limits.baseline_variant;
    if (is_baseline) {
      if (passed(e.status, e.root_cause)) baseline_passed.insert(e.config.model);
    } else if (e.variant == context.variant) {
      latest_failed[e.config.model] = !passed(e.status, e.root_cause);
    }
  }
  latest_failed[in.config.model] = true;
  std::vector<std::string> regressed;
  for (const auto& [model, failed] : latest_failed)
    if (failed && baseline_passed.count(model)) regressed.push_back(model);
  if (baseline_passed.count(in.config.model) &&
      static_cast<int>(regressed.size()) >= limits.model_sweep_failing_models)
    SetAction(sd, limits.model_sweep_action,
              std::to_string(regressed.size()) + " models fail on this commit but passed on the baseline (" +
                  JoinStrings(regressed) + "): the commit is broken, stop early",
              "limits.model_sweep_failing_models");
}

// 4. Contract hygiene: exclusions only accompany retry-excluding-nodes, and that action always
// names someone to exclude; a host excluded for the whole sweep that ran this job is said.
void EnforceDecisionContract(const RefineInputs& in, SweepDecision* sd) {
  Decision& decision = sd->decision;
  if (decision.action == DecisionAction::kRetryExcludingNodes && decision.exclude.empty())
    SetAction(sd, DecisionAction::kRetrySameNodes, "no host to exclude was identified", "");
  if (decision.action != DecisionAction::kRetryExcludingNodes && !decision.exclude.empty()) {
    decision.notes.push_back("not excluding " + JoinStrings(ExcludedHosts(decision)) + " (action is " +
                             std::string(ToString(decision.action)) + ")");
    sd->found = std::move(decision.exclude);
    decision.exclude.clear();
  }
  if (decision.action != DecisionAction::kRetryWithChanges) decision.changes.clear();
  std::stable_sort(decision.exclude.begin(), decision.exclude.end(),
                   [](const Exclusion& a, const Exclusion& b) { return a.priority < b.priority; });
  for (const auto& e : in.history.entries) {
    if (e.sweep != in.context.sweep || e.exclude_scope != ExcludeScope::kSweep || e.job == in.facts.id) continue;
    for (const auto& x : e.exclude)
      if (Contains(in.facts.header.hosts, x.host))
        decision.notes.push_back(x.host + " was excluded for the whole sweep by job " + e.job + " (" + x.reason +
                                 ") but ran this job");
  }
}

}  // namespace

std::optional<ActionOverride> InSweepStep(const Diagnosis& diagnosis, const JobFacts& facts, const DecisionRules& rules,
                                          SweepContext context, const Decision& standalone) {
  context.in_sweep = true;
  const SweepDecision swept = RefineDecision(diagnosis, facts, SweepHistory{}, rules, context);
  if (swept.decision.action == standalone.action) return std::nullopt;
  for (auto it = swept.decision.overrides.rbegin(); it != swept.decision.overrides.rend(); ++it)
    if (it->to == swept.decision.action) return ActionOverride{standalone.action, it->to, it->reason, it->rule, it->limit};
  return std::nullopt;
}

std::string HangPhaseOf(const JobFacts& facts) {
  if (!facts.steps.empty() || facts.progress.last_step) return kHangAfterStep0;
  if (!facts.memstats.empty()) return kHangAfterMemstatsBeforeStep0;
  if (facts.barrier_passed) return kHangAfterBarrierBeforeStep0;
  return kHangBeforeMemstats;
}

SweepConfig SweepConfigOf(const JobFacts& facts) {
  SweepConfig config;
  config.model = !facts.header.model_name.empty() ? facts.header.model_name : facts.header.model_alias;
  config.args = facts.header.passthrough;
  return config;
}

SweepDecision RefineDecision(const Diagnosis& diagnosis, const JobFacts& facts, const SweepHistory& history,
                             const DecisionRules& rules, const SweepContext& context) {
  SweepDecision sd;
  sd.decision = diagnosis.decision;
  sd.root_cause = diagnosis.verdict.root_cause;
  const JobStatus status = EffectiveStatus(facts, context);
  const bool hung = status == JobStatus::kHanging || facts.failure_class == "hang";
  const std::string phase = HangPhaseOf(facts);
  if (hung) sd.hang_phase = phase;

  const SweepConfig config = SweepConfigOf(facts);
  const HistoryEntry* predecessor = FindRetryPredecessor(history, context.sweep, facts.id, config, facts.header.hosts);
  if (predecessor) sd.retry_of = predecessor->job;
  const RefineInputs in{diagnosis, facts, history, rules, context, status, phase, config, predecessor,
                        RetryChain(history, predecessor)};

  const DecisionRule* rule = ApplyFirstSweepRule(in, &sd);
  if (rule) {
    ApplyRepeatLimits(in, *rule, &sd);
    ApplyHangRecurrence(in, *rule, &sd);
  }
  ApplyRetryAndExclusionLimits(in, rule, &sd);
  ApplyModelSweepEarlyStop(in, &sd);
  EnforceDecisionContract(in, &sd);
  return sd;
}

HistoryEntry MakeHistoryEntry(const JobFacts& facts, const SweepDecision& decision, const SweepContext& context) {
  HistoryEntry e;
  e.time = context.now;
  e.sweep = context.sweep;
  e.job = facts.id;
  e.config = SweepConfigOf(facts);
  e.nodes = facts.header.hosts;
  e.status = EffectiveStatus(facts, context);
  e.action = decision.decision.action;
  e.exclude = decision.decision.exclude;
  e.exclude_scope = decision.exclude_scope;
  e.found = decision.found;
  e.changes = decision.decision.changes;
  e.root_cause = decision.root_cause;
  e.failure_class = facts.failure_class;
  e.rule = decision.rule;
  e.retry_of = decision.retry_of;
  e.variant = context.variant;
  e.oom_allocation = decision.oom_allocation;
  return e;
}

StatusOr<SweepDecision> DecideSweep(const DecisionRules& rules, const std::string& history_path, SweepContext context,
                                    const Diagnosis& diagnosis, const JobFacts& facts) {
  SweepHistory history;
  if (!history_path.empty()) {
    ASSIGN_OR_RETURN(history, LoadSweepHistory(history_path));
    if (context.sweep.empty()) context.sweep = DefaultSweepId(history_path);
    context.in_sweep = true;
  }
  // A log silent for longer than a live hang lasts is a job that is gone, not one that hangs:
  // triage's reading wins over a watcher's stall clock (a log first seen long after it stopped).
  if (facts.status == JobStatus::kUnknownDeath) context.stalled = false;
  SweepDecision sd = RefineDecision(diagnosis, facts, history, rules, context);
  if (!context.in_sweep) sd.decision.in_sweep = InSweepStep(diagnosis, facts, rules, context, sd.decision);
  for (const auto& w : history.warnings) sd.decision.notes.push_back("history: " + w);
  sd.decision.root_cause = PolicyRootCause(sd, diagnosis.verdict);
  if (!history_path.empty()) RETURN_IF_ERROR(AppendHistoryEntry(history_path, MakeHistoryEntry(facts, sd, context)));
  return sd;
}

std::string PolicyRootCause(const SweepDecision& decision, const Verdict& verdict) {
  // Only where the diagnosis named none: a cause it did name (even broken telemetry) is the answer.
  const bool differs = !decision.rule.empty() && verdict.root_cause == "unknown" &&
                       decision.root_cause != "unknown" && IsKnownRootCause(decision.root_cause);
  return differs ? decision.root_cause : "";
}

}  // namespace diagnose
