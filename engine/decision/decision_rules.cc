#include "engine/decision/decision_rules.h"

#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "engine/core/bounded_yaml.h"
#include "engine/report/report.h"

namespace diagnose {

namespace {

std::string Where(const std::string& source, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  Status Error(const YAML::Node& node, const std::string& message) const {
    return InvalidArgumentError(Where(source_, node) + ": " + message);
  }

  StatusOr<std::string> String(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) return Error(node, what + " must be a string");
    return node.as<std::string>();
  }

  StatusOr<int> Int(const YAML::Node& node, const std::string& what) const {
    int value = 0;
    if (!node.IsScalar() || !YAML::convert<int>::decode(node, value))
      return Error(node, what + " must be an integer");
    return value;
  }

  StatusOr<double> Double(const YAML::Node& node, const std::string& what) const {
    double value = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value))
      return Error(node, what + " must be a number");
    return value;
  }

  StatusOr<bool> Bool(const YAML::Node& node, const std::string& what) const {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value))
      return Error(node, what + " must be true or false");
    return value;
  }

  StatusOr<std::vector<JobStatus>> JobStatuses(const YAML::Node& node, const std::string& what) const {
    ASSIGN_OR_RETURN(std::vector<std::string> words, Strings(node, what));
    std::vector<JobStatus> out;
    for (const auto& word : words) {
      const std::optional<JobStatus> status = ParseJobStatus(word);
      if (!status) return Error(node, "'" + word + "' is not a job status");
      out.push_back(*status);
    }
    return out;
  }
  StatusOr<std::vector<std::string>> Strings(const YAML::Node& node, const std::string& what) const {
    std::vector<std::string> out;
    if (node.IsScalar()) {
      out.push_back(node.as<std::string>());
      return out;
    }
    if (!node.IsSequence()) return Error(node, what + " must be a list of strings");
    for (const auto& item : node) {
      ASSIGN_OR_RETURN(std::string s, String(item, what + " item"));
      out.push_back(std::move(s));
    }
    return out;
  }

  StatusOr<std::vector<int>> Ints(const YAML::Node& node, const std::string& what) const {
    std::vector<int> out;
    if (!node.IsSequence()) return Error(node, what + " must be a list of integers");
    for (const auto& item : node) {
      ASSIGN_OR_RETURN(int v, Int(item, what + " item"));
      out.push_back(v);
    }
    return out;
  }

  // Rejects keys a section does not know, so a typo is an error instead of a silently ignored rule.
  Status OnlyKeys(const YAML::Node& map, const std::set<std::string>& known, const std::string& what) const {
    if (!map.IsMap()) return Error(map, what + " must be a mapping");
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      if (!known.count(key)) return Error(kv.first, "unknown key '" + key + "' in " + what);
    }
    return Status::Ok();
  }

  StatusOr<DecisionAction> Action(const YAML::Node& node, const std::string& what) const {
    ASSIGN_OR_RETURN(std::string word, String(node, what));
    const std::optional<DecisionAction> action = ParseDecisionAction(word);
    if (!action) return Error(node, what + " '" + word + "' is not a contract decision action");
    return *action;
  }

  StatusOr<std::string> RootCause(const YAML::Node& node, const std::string& what) const {
    ASSIGN_OR_RETURN(std::string cause, String(node, what));
    if (!IsKnownRootCause(cause)) return Error(node, what + " '" + cause + "' is not a contract root cause");
    return cause;
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

StatusOr<SignalSpec> ReadSignal(const Reader& r, const std::string& id, const YAML::Node& node) {
  RETURN_IF_ERROR(r.OnlyKeys(node, {"classes", "primary_classes", "events", "statuses", "text", "node_exit_codes_except"},
                             "signal '" + id + "'"));
  SignalSpec s;
  s.id = id;
  if (node["classes"]) { ASSIGN_OR_RETURN(s.classes, r.Strings(node["classes"], "classes")); }
  if (node["primary_classes"]) { ASSIGN_OR_RETURN(s.primary_classes, r.Strings(node["primary_classes"], "primary_classes")); }
  if (node["events"]) { ASSIGN_OR_RETURN(s.events, r.Strings(node["events"], "events")); }
  if (node["statuses"]) { ASSIGN_OR_RETURN(s.statuses, r.JobStatuses(node["statuses"], "statuses")); }
  if (node["node_exit_codes_except"]) {
    ASSIGN_OR_RETURN(std::vector<int> codes, r.Ints(node["node_exit_codes_except"], "node_exit_codes_except"));
    s.node_exit_codes_except = std::move(codes);
  }
  if (node["text"]) {
    const YAML::Node text = node["text"];
    ASSIGN_OR_RETURN(s.text_patterns, r.Strings(text, "text"));
    size_t i = 0;
    for (const auto& pattern : s.text_patterns) {
      const YAML::Node item = text.IsSequence() ? text[i] : text;
      ++i;
      try {
        s.text.emplace_back(pattern, std::regex::ECMAScript | std::regex::optimize);
      } catch (const std::regex_error& e) {
        return r.Error(item, "invalid regex '" + pattern + "': " + e.what());
      }
    }
  }
  if (s.classes.empty() && s.primary_classes.empty() && s.events.empty() && s.statuses.empty() && s.text.empty() &&
      !s.node_exit_codes_except)
    return r.Error(node, "signal '" + id + "' has no source (classes, primary_classes, events, statuses, text, node_exit_codes_except)");
  return s;
}

StatusOr<EscalationStep> ReadEscalation(const Reader& r, const YAML::Node& node, const std::string& what,
                                        bool needs_count) {
  RETURN_IF_ERROR(r.OnlyKeys(node, {"count", "then", "root_cause"}, what));
  EscalationStep step;
  if (needs_count) {
    if (!node["count"]) return r.Error(node, what + " needs 'count'");
    ASSIGN_OR_RETURN(step.count, r.Int(node["count"], what + ".count"));
    if (step.count < 1) return r.Error(node["count"], what + ".count must be >= 1");
  }
  if (!node["then"]) return r.Error(node, what + " needs 'then'");
  ASSIGN_OR_RETURN(step.then, r.Action(node["then"], what + ".then"));
  if (node["root_cause"]) { ASSIGN_OR_RETURN(step.root_cause, r.RootCause(node["root_cause"], what + ".root_cause")); }
  return step;
}

StatusOr<DecisionRule> ReadRule(const Reader& r, const YAML::Node& node, const DecisionRules& rules) {
  RETURN_IF_ERROR(r.OnlyKeys(node, {"id", "when", "decision", "limits"}, "rule"));
  DecisionRule rule;
  rule.where = Where(r.source(), node);
  if (!node["id"]) return r.Error(node, "rule needs an 'id'");
  ASSIGN_OR_RETURN(rule.id, r.String(node["id"], "id"));
  const std::string what = "rule '" + rule.id + "'";

  const YAML::Node when = node["when"];
  if (!when) return r.Error(node, what + " needs 'when'");
  RETURN_IF_ERROR(r.OnlyKeys(when, {"signal", "also", "hosts", "status", "hang_phase", "final_step_reached",
                                    "soft_success", "summary_exit", "failure_class", "not_failure_class"},
                             what + " when"));
  auto known_signal = [&](const YAML::Node& n, std::string* out) -> Status {
    ASSIGN_OR_RETURN(*out, r.String(n, "signal"));
    if (!rules.signals.count(*out)) return r.Error(n, what + " uses unknown signal '" + *out + "'");
    return Status::Ok();
  };
  if (when["signal"]) RETURN_IF_ERROR(known_signal(when["signal"], &rule.when.signal));
  if (when["also"]) RETURN_IF_ERROR(known_signal(when["also"], &rule.when.also));
  if (when["hosts"]) {
    ASSIGN_OR_RETURN(rule.when.hosts, r.String(when["hosts"], "hosts"));
    static const std::set<std::string> kSpreads{"any", "one", "several", "all"};
    if (!kSpreads.count(rule.when.hosts)) return r.Error(when["hosts"], "hosts must be any|one|several|all");
    if (rule.when.signal.empty()) return r.Error(when["hosts"], "hosts needs a 'signal' to measure the spread of");
  }
  if (when["status"]) {
    ASSIGN_OR_RETURN(rule.when.status, r.JobStatuses(when["status"], "status"));
  }
  if (when["hang_phase"]) {
    ASSIGN_OR_RETURN(rule.when.hang_phase, r.Strings(when["hang_phase"], "hang_phase"));
    for (const auto& p : rule.when.hang_phase) {
      bool known = false;
      for (const auto& q : rules.hang_phases) known = known || p == q;
      if (!known) return r.Error(when["hang_phase"], "'" + p + "' is not listed in hang_phases");
    }
  }
  if (when["final_step_reached"]) { ASSIGN_OR_RETURN(rule.when.final_step_reached, r.Bool(when["final_step_reached"], "final_step_reached")); }
  if (when["soft_success"]) { ASSIGN_OR_RETURN(rule.when.soft_success, r.Bool(when["soft_success"], "soft_success")); }
  if (when["summary_exit"]) { ASSIGN_OR_RETURN(rule.when.summary_exit, r.Ints(when["summary_exit"], "summary_exit")); }
  if (when["failure_class"]) { ASSIGN_OR_RETURN(rule.when.failure_class, r.Strings(when["failure_class"], "failure_class")); }
  if (when["not_failure_class"]) {
    ASSIGN_OR_RETURN(rule.when.not_failure_class, r.Strings(when["not_failure_class"], "not_failure_class"));
  }

  const YAML::Node decision = node["decision"];
  if (!decision) return r.Error(node, what + " needs 'decision'");
  RETURN_IF_ERROR(r.OnlyKeys(decision, {"action", "exclude", "exclude_priority", "exclude_scope", "root_cause",
                                        "record_allocation", "note"},
                             what + " decision"));
  if (!decision["action"]) return r.Error(decision, what + " decision needs 'action'");
  ASSIGN_OR_RETURN(rule.decision.action, r.Action(decision["action"], "action"));
  if (decision["exclude"]) {
    ASSIGN_OR_RETURN(rule.decision.exclude, r.String(decision["exclude"], "exclude"));
    if (rule.decision.exclude != "none" && rule.decision.exclude != "signal-hosts")
      return r.Error(decision["exclude"], "exclude must be none|signal-hosts");
    if (rule.decision.exclude == "signal-hosts" && rule.when.signal.empty())
      return r.Error(decision["exclude"], "exclude: signal-hosts needs a 'signal' in when");
  }
  if (rule.decision.action == DecisionAction::kRetryExcludingNodes && rule.decision.exclude == "none")
    return r.Error(decision, what + ": retry-excluding-nodes needs 'exclude: signal-hosts'");
  if (decision["exclude_priority"]) {
    ASSIGN_OR_RETURN(rule.decision.exclude_priority, r.Int(decision["exclude_priority"], "exclude_priority"));
    if (rule.decision.exclude_priority < 1 || rule.decision.exclude_priority > 4)
      return r.Error(decision["exclude_priority"], "exclude_priority must be 1..4 (contract priority table)");
  }
  if (decision["exclude_scope"]) {
    ASSIGN_OR_RETURN(const std::string scope, r.String(decision["exclude_scope"], "exclude_scope"));
    const std::optional<ExcludeScope> parsed = ParseExcludeScope(scope);
    if (!parsed) return r.Error(decision["exclude_scope"], "exclude_scope must be job|sweep");
    rule.decision.exclude_scope = *parsed;
  }
  if (decision["root_cause"]) { ASSIGN_OR_RETURN(rule.decision.root_cause, r.RootCause(decision["root_cause"], "root_cause")); }
  if (decision["record_allocation"]) { ASSIGN_OR_RETURN(rule.decision.record_allocation, r.Bool(decision["record_allocation"], "record_allocation")); }
  if (decision["note"]) { ASSIGN_OR_RETURN(rule.decision.note, r.String(decision["note"], "note")); }

  if (const YAML::Node limits = node["limits"]) {
    RETURN_IF_ERROR(r.OnlyKeys(limits, {"max_retries", "consecutive", "repeat_on_other_nodes", "repeat_on_configs",
                                        "on_recurrence_same_nodes"},
                               what + " limits"));
    if (limits["max_retries"]) {
      ASSIGN_OR_RETURN(int n, r.Int(limits["max_retries"], "max_retries"));
      if (n < 0) return r.Error(limits["max_retries"], "max_retries must be >= 0");
      rule.limits.max_retries = n;
    }
    if (limits["consecutive"]) {
      ASSIGN_OR_RETURN(EscalationStep s, ReadEscalation(r, limits["consecutive"], what + " consecutive", true));
      rule.limits.consecutive = s;
    }
    if (limits["repeat_on_other_nodes"]) {
      if (rule.decision.exclude != "signal-hosts")
        return r.Error(limits["repeat_on_other_nodes"], "repeat_on_other_nodes needs 'exclude: signal-hosts'");
      ASSIGN_OR_RETURN(EscalationStep s,
                       ReadEscalation(r, limits["repeat_on_other_nodes"], what + " repeat_on_other_nodes", false));
      rule.limits.repeat_on_other_nodes = s;
    }
    if (limits["repeat_on_configs"]) {
      ASSIGN_OR_RETURN(EscalationStep s,
                       ReadEscalation(r, limits["repeat_on_configs"], what + " repeat_on_configs", true));
      rule.limits.repeat_on_configs = s;
    }
    if (limits["on_recurrence_same_nodes"]) {
      ASSIGN_OR_RETURN(rule.limits.on_recurrence_same_nodes,
                       r.String(limits["on_recurrence_same_nodes"], "on_recurrence_same_nodes"));
      if (rule.limits.on_recurrence_same_nodes != "exclude-suspects")
        return r.Error(limits["on_recurrence_same_nodes"], "on_recurrence_same_nodes must be exclude-suspects");
    }
  }
  return rule;
}

}  // namespace

bool IsKnownHangPhase(const std::string& phase) {
  return phase == kHangBeforeMemstats || phase == kHangAfterMemstatsBeforeStep0 ||
         phase == kHangAfterBarrierBeforeStep0 || phase == kHangAfterStep0;
}

StatusOr<DecisionRules> ParseDecisionRules(const std::string& yaml_text, const std::string& source_name) {
  auto parsed = LoadBoundedYaml(yaml_text, source_name);
  if (!parsed.ok()) {
    if (parsed.status().code() == StatusCode::kParse) return InvalidArgumentError(parsed.status().message());
    return parsed.status();
  }
  const YAML::Node root = *parsed;
  Reader r(source_name);
  DecisionRules rules;
  rules.source = source_name;
  try {
    RETURN_IF_ERROR(r.OnlyKeys(root, {"version", "limits", "hang_phases", "signals", "hang_suspect_signals",
                                      "not_a_mechanism", "progress_labels", "rules", "node_health", "bisection"},
                               "decision rules"));
    if (const YAML::Node l = root["limits"]) {
      RETURN_IF_ERROR(r.OnlyKeys(l, {"max_retries_per_job", "retries_exceeded_action", "max_excluded_nodes_per_sweep",
                                     "excluded_nodes_exceeded_action", "model_sweep_failing_models",
                                     "model_sweep_action", "baseline_variant"},
                                 "limits"));
      SweepLimits& s = rules.limits;
      if (l["max_retries_per_job"]) { ASSIGN_OR_RETURN(s.max_retries_per_job, r.Int(l["max_retries_per_job"], "max_retries_per_job")); }
      if (l["retries_exceeded_action"]) { ASSIGN_OR_RETURN(s.retries_exceeded_action, r.Action(l["retries_exceeded_action"], "retries_exceeded_action")); }
      if (l["max_excluded_nodes_per_sweep"]) { ASSIGN_OR_RETURN(s.max_excluded_nodes_per_sweep, r.Int(l["max_excluded_nodes_per_sweep"], "max_excluded_nodes_per_sweep")); }
      if (l["excluded_nodes_exceeded_action"]) { ASSIGN_OR_RETURN(s.excluded_nodes_exceeded_action, r.Action(l["excluded_nodes_exceeded_action"], "excluded_nodes_exceeded_action")); }
      if (l["model_sweep_failing_models"]) { ASSIGN_OR_RETURN(s.model_sweep_failing_models, r.Int(l["model_sweep_failing_models"], "model_sweep_failing_models")); }
      if (l["model_sweep_action"]) { ASSIGN_OR_RETURN(s.model_sweep_action, r.Action(l["model_sweep_action"], "model_sweep_action")); }
      if (l["baseline_variant"]) { ASSIGN_OR_RETURN(s.baseline_variant, r.String(l["baseline_variant"], "baseline_variant")); }
    }
    if (root["hang_phases"]) {
      ASSIGN_OR_RETURN(rules.hang_phases, r.Strings(root["hang_phases"], "hang_phases"));
      for (const auto& phase : rules.hang_phases)
        if (!IsKnownHangPhase(phase))
          return r.Error(root["hang_phases"], "'" + phase + "' is not a hang phase the engine computes");
    }
    if (const YAML::Node signals = root["signals"]) {
      if (!signals.IsMap()) return r.Error(signals, "signals must be a mapping of id -> spec");
      for (const auto& kv : signals) {
        const std::string id = kv.first.as<std::string>();
        ASSIGN_OR_RETURN(SignalSpec spec, ReadSignal(r, id, kv.second));
        rules.signals.emplace(id, std::move(spec));
      }
    }
    if (const YAML::Node ids = root["hang_suspect_signals"]) {
      ASSIGN_OR_RETURN(rules.hang_suspect_signals, r.Strings(ids, "hang_suspect_signals"));
      for (const auto& id : rules.hang_suspect_signals)
        if (!rules.signals.count(id)) return r.Error(ids, "hang_suspect_signals: '" + id + "' is not a signal defined here");
    }
    if (const YAML::Node labels = root["progress_labels"]) {
      if (!labels.IsMap()) return r.Error(labels, "progress_labels must be a mapping of root cause -> {label, hung}");
      for (const auto& kv : labels) {
        ASSIGN_OR_RETURN(std::string cause, r.RootCause(kv.first, "progress_labels"));
        RETURN_IF_ERROR(r.OnlyKeys(kv.second, {"label", "hung"}, "progress_labels." + cause));
        DecisionRules::ProgressLabel l;
        ASSIGN_OR_RETURN(l.label, r.String(kv.second["label"], "progress_labels." + cause + ".label"));
        if (kv.second["hung"]) { ASSIGN_OR_RETURN(l.hung, r.String(kv.second["hung"], "progress_labels." + cause + ".hung")); }
        rules.progress_labels[cause] = l;
      }
    }
    if (const YAML::Node causes = root["not_a_mechanism"]) {
      ASSIGN_OR_RETURN(rules.not_a_mechanism, r.Strings(causes, "not_a_mechanism"));
      for (const auto& cause : rules.not_a_mechanism)
        if (!IsKnownRootCause(cause)) return r.Error(causes, "not_a_mechanism: '" + cause + "' is not a root cause of the contract");
    }
    if (const YAML::Node list = root["rules"]) {
      if (!list.IsSequence()) return r.Error(list, "rules must be a list");
      std::set<std::string> ids;
      for (const auto& item : list) {
        ASSIGN_OR_RETURN(DecisionRule rule, ReadRule(r, item, rules));
        if (!ids.insert(rule.id).second) return r.Error(item, "duplicate rule id '" + rule.id + "'");
        rules.rules.push_back(std::move(rule));
      }
    }
    if (const YAML::Node n = root["node_health"]) {
      RETURN_IF_ERROR(r.OnlyKeys(n, {"steady_first_step", "steady_last_step", "min_steady_steps", "healthy_within_pct",
                                     "degraded_below_pct", "exclude_statuses"},
                                 "node_health"));
      NodeHealthThresholds& t = rules.node_health;
      if (n["steady_first_step"]) { ASSIGN_OR_RETURN(t.steady_first_step, r.Int(n["steady_first_step"], "steady_first_step")); }
      if (n["steady_last_step"]) { ASSIGN_OR_RETURN(t.steady_last_step, r.Int(n["steady_last_step"], "steady_last_step")); }
      if (n["min_steady_steps"]) { ASSIGN_OR_RETURN(t.min_steady_steps, r.Int(n["min_steady_steps"], "min_steady_steps")); }
      if (n["healthy_within_pct"]) { ASSIGN_OR_RETURN(t.healthy_within_pct, r.Double(n["healthy_within_pct"], "healthy_within_pct")); }
      if (n["degraded_below_pct"]) { ASSIGN_OR_RETURN(t.degraded_below_pct, r.Double(n["degraded_below_pct"], "degraded_below_pct")); }
      if (n["exclude_statuses"]) {
        ASSIGN_OR_RETURN(std::vector<std::string> words, r.Strings(n["exclude_statuses"], "exclude_statuses"));
        t.exclude_statuses.clear();
        for (const auto& word : words) {
          const std::optional<NodeStatus> status = ParseNodeStatus(word);
          if (!status) return r.Error(n["exclude_statuses"], "'" + word + "' is not a node status");
          t.exclude_statuses.push_back(*status);
        }
      }
      if (t.healthy_within_pct > t.degraded_below_pct)
        return r.Error(n, "healthy_within_pct must not exceed degraded_below_pct");
    }
    if (const YAML::Node b = root["bisection"]) {
      RETURN_IF_ERROR(r.OnlyKeys(b, {"degraded_below_pct", "first_step"}, "bisection"));
      if (b["degraded_below_pct"]) { ASSIGN_OR_RETURN(rules.bisection.degraded_below_pct, r.Double(b["degraded_below_pct"], "degraded_below_pct")); }
      if (b["first_step"]) { ASSIGN_OR_RETURN(rules.bisection.first_step, r.Int(b["first_step"], "first_step")); }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(source_name + ":" + std::to_string(e.mark.line + 1) + ":" +
                                std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  return rules;
}

StatusOr<DecisionRules> LoadDecisionRules(const std::string& data_dir) {
  const std::string path = data_dir + "/rules/sweep/decisions.yaml";
  auto text = ReadYamlFile(path);
  if (!text.ok()) return text.status().WithContext("sweep decision rules");
  return ParseDecisionRules(*text, path);
}

}  // namespace diagnose
