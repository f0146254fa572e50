#include "engine/decision/decision_rules.h"

#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "engine/core/bounded_yaml.h"
#include "engine/core/yaml_reader.h"
#include "engine/report/report.h"

namespace diagnose {

namespace {

// rules/sweep/decisions.yaml's own words on top of the typed getters: job statuses, contract
// actions and root causes.
class Reader : public YamlReader {
 public:
  using YamlReader::YamlReader;

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

  StatusOr<DecisionAction> Action(const YAML::Node& node, const std::string& what) const {
    ASSIGN_OR_RETURN(std::string word, String(node, what));
    const std::optional<DecisionAction> action = ParseDecisionAction(word);
    if (!action) return Error(node, what + " '" + word + "' is not a contract decision action");
    return *action;
  }

  // A list of words `known` accepts each of, into `out`; the first it does not is an error,
  // `unknown` with the word in place of its {}.
  template <typename Known>
  Status KnownWords(const YAML::Node& node, const std::string& what, std::vector<std::string>& out, Known known,
                    const char* unknown) const {
    ASSIGN_OR_RETURN(out, Strings(node, what));
    for (const auto& word : out)
      if (!known(word)) return Error(node, fmt::format(fmt::runtime(unknown), word));
    return Status::Ok();
  }

  StatusOr<std::string> RootCause(const YAML::Node& node, const std::string& what) const {
    ASSIGN_OR_RETURN(std::string cause, String(node, what));
    if (!IsKnownRootCause(cause)) return Error(node, what + " '" + cause + "' is not a contract root cause");
    return cause;
  }
};

StatusOr<SignalSpec> ReadSignal(const Reader& r, const std::string& id, const YAML::Node& node) {
  RETURN_IF_ERROR(r.OnlyKeys(node, {"classes", "primary_classes", "events", "statuses", "text", "node_exit_codes_except"},
                             "signal '" + id + "'"));
  SignalSpec s;
  s.id = id;
  RETURN_IF_ERROR(ReadOptional(r, node, "classes", s.classes, &Reader::Strings));
  RETURN_IF_ERROR(ReadOptional(r, node, "primary_classes", s.primary_classes, &Reader::Strings));
  RETURN_IF_ERROR(ReadOptional(r, node, "events", s.events, &Reader::Strings));
  RETURN_IF_ERROR(ReadOptional(r, node, "statuses", s.statuses, &Reader::JobStatuses));
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
  rule.where = r.Where(node);
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
  RETURN_IF_ERROR(ReadOptional(r, when, "final_step_reached", rule.when.final_step_reached, &Reader::Bool));
  RETURN_IF_ERROR(ReadOptional(r, when, "soft_success", rule.when.soft_success, &Reader::Bool));
  RETURN_IF_ERROR(ReadOptional(r, when, "summary_exit", rule.when.summary_exit, &Reader::Ints));
  RETURN_IF_ERROR(ReadOptional(r, when, "failure_class", rule.when.failure_class, &Reader::Strings));
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
  RETURN_IF_ERROR(ReadOptional(r, decision, "root_cause", rule.decision.root_cause, &Reader::RootCause));
  RETURN_IF_ERROR(ReadOptional(r, decision, "record_allocation", rule.decision.record_allocation, &Reader::Bool));
  RETURN_IF_ERROR(ReadOptional(r, decision, "note", rule.decision.note, &Reader::String));

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

Status ReadLimits(const Reader& r, const YAML::Node& l, SweepLimits& s) {
  RETURN_IF_ERROR(r.OnlyKeys(l, {"max_retries_per_job", "retries_exceeded_action", "max_excluded_nodes_per_sweep",
                                 "excluded_nodes_exceeded_action", "model_sweep_failing_models", "model_sweep_action",
                                 "baseline_variant"},
                             "limits"));
  RETURN_IF_ERROR(ReadOptional(r, l, "max_retries_per_job", s.max_retries_per_job, &Reader::Int));
  RETURN_IF_ERROR(ReadOptional(r, l, "retries_exceeded_action", s.retries_exceeded_action, &Reader::Action));
  RETURN_IF_ERROR(ReadOptional(r, l, "max_excluded_nodes_per_sweep", s.max_excluded_nodes_per_sweep, &Reader::Int));
  RETURN_IF_ERROR(ReadOptional(r, l, "excluded_nodes_exceeded_action", s.excluded_nodes_exceeded_action, &Reader::Action));
  RETURN_IF_ERROR(ReadOptional(r, l, "model_sweep_failing_models", s.model_sweep_failing_models, &Reader::Int));
  RETURN_IF_ERROR(ReadOptional(r, l, "model_sweep_action", s.model_sweep_action, &Reader::Action));
  RETURN_IF_ERROR(ReadOptional(r, l, "baseline_variant", s.baseline_variant, &Reader::String));
  return Status::Ok();
}

void ReadSignals(Reader& r, const YAML::Node& signals, DecisionRules& rules) {
  r.Each(signals, YAML::NodeType::Map, "signals must be a mapping of id -> spec", [&](const auto& kv) -> Status {
    ASSIGN_OR_RETURN(const std::string id, r.String(kv.first, "signal id"));
    ASSIGN_OR_RETURN(SignalSpec spec, ReadSignal(r, id, kv.second));
    rules.signals.emplace(id, std::move(spec));
    return Status::Ok();
  });
}

Status ReadProgressLabels(const Reader& r, const YAML::Node& labels, DecisionRules& rules) {
  if (!labels.IsMap()) return r.Error(labels, "progress_labels must be a mapping of root cause -> {label, hung}");
  for (const auto& kv : labels) {
    ASSIGN_OR_RETURN(std::string cause, r.RootCause(kv.first, "progress_labels"));
    RETURN_IF_ERROR(r.OnlyKeys(kv.second, {"label", "hung"}, "progress_labels." + cause));
    DecisionRules::ProgressLabel l;
    ASSIGN_OR_RETURN(l.label, r.String(kv.second["label"], "progress_labels." + cause + ".label"));
    if (kv.second["hung"]) { ASSIGN_OR_RETURN(l.hung, r.String(kv.second["hung"], "progress_labels." + cause + ".hung")); }
    rules.progress_labels[cause] = l;
  }
  return Status::Ok();
}

void ReadRules(Reader& r, const YAML::Node& list, DecisionRules& rules) {
  std::set<std::string> ids;
  r.Each(list, YAML::NodeType::Sequence, "rules must be a list", [&](const YAML::Node& item) -> Status {
    ASSIGN_OR_RETURN(DecisionRule rule, ReadRule(r, item, rules));
    if (!ids.insert(rule.id).second) return r.Error(item, "duplicate rule id '" + rule.id + "'");
    rules.rules.push_back(std::move(rule));
    return Status::Ok();
  });
}

Status ReadNodeHealth(const Reader& r, const YAML::Node& n, NodeHealthThresholds& t) {
  RETURN_IF_ERROR(r.OnlyKeys(n, {"steady_first_step", "steady_last_step", "min_steady_steps", "healthy_within_pct",
                                 "degraded_below_pct", "exclude_statuses"},
                             "node_health"));
  RETURN_IF_ERROR(ReadOptional(r, n, "steady_first_step", t.steady_first_step, &Reader::Int));
  RETURN_IF_ERROR(ReadOptional(r, n, "steady_last_step", t.steady_last_step, &Reader::Int));
  RETURN_IF_ERROR(ReadOptional(r, n, "min_steady_steps", t.min_steady_steps, &Reader::Int));
  RETURN_IF_ERROR(ReadOptional(r, n, "healthy_within_pct", t.healthy_within_pct, &Reader::Double));
  RETURN_IF_ERROR(ReadOptional(r, n, "degraded_below_pct", t.degraded_below_pct, &Reader::Double));
  if (n["exclude_statuses"]) {
    ASSIGN_OR_RETURN(std::vector<std::string> words, r.Strings(n["exclude_statuses"], "exclude_statuses"));
    t.exclude_statuses.clear();
    for (const auto& word : words) {
      const std::optional<NodeStatus> status = ParseNodeStatus(word);
      if (!status) return r.Error(n["exclude_statuses"], "'" + word + "' is not a node status");
      t.exclude_statuses.push_back(*status);
    }
  }
  if (t.healthy_within_pct > t.degraded_below_pct) return r.Error(n, "healthy_within_pct must not exceed degraded_below_pct");
  return Status::Ok();
}

Status ReadBisection(const Reader& r, const YAML::Node& b, BisectionThresholds& bisection) {
  RETURN_IF_ERROR(r.OnlyKeys(b, {"degraded_below_pct", "first_step"}, "bisection"));
  RETURN_IF_ERROR(ReadOptional(r, b, "degraded_below_pct", bisection.degraded_below_pct, &Reader::Double));
  RETURN_IF_ERROR(ReadOptional(r, b, "first_step", bisection.first_step, &Reader::Int));
  return Status::Ok();
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
  // Each section, and each signal and rule within, is one part: a mistake in one still lets the
  // others be read and checked, so the error lists every mistake of the file.
  r.Part([&] {
    return r.OnlyKeys(root, {"version", "limits", "hang_phases", "signals", "hang_suspect_signals", "not_a_mechanism",
                             "progress_labels", "rules", "node_health", "bisection"},
                      "decision rules");
  });
  if (const YAML::Node l = root["limits"]) r.Part([&] { return ReadLimits(r, l, rules.limits); });
  if (const YAML::Node phases = root["hang_phases"]) {
    r.Part([&] {
      return r.KnownWords(phases, "hang_phases", rules.hang_phases, IsKnownHangPhase,
                          "'{}' is not a hang phase the engine computes");
    });
  }
  if (const YAML::Node signals = root["signals"]) ReadSignals(r, signals, rules);
  if (const YAML::Node ids = root["hang_suspect_signals"]) {
    const auto defined = [&](const std::string& id) { return rules.signals.count(id) > 0; };
    r.Part([&] {
      return r.KnownWords(ids, "hang_suspect_signals", rules.hang_suspect_signals, defined,
                          "hang_suspect_signals: '{}' is not a signal defined here");
    });
  }
  if (const YAML::Node labels = root["progress_labels"]) r.Part([&] { return ReadProgressLabels(r, labels, rules); });
  if (const YAML::Node causes = root["not_a_mechanism"]) {
    r.Part([&] {
      return r.KnownWords(causes, "not_a_mechanism", rules.not_a_mechanism, IsKnownRootCause,
                          "not_a_mechanism: '{}' is not a root cause of the contract");
    });
  }
  if (const YAML::Node list = root["rules"]) ReadRules(r, list, rules);
  if (const YAML::Node n = root["node_health"]) r.Part([&] { return ReadNodeHealth(r, n, rules.node_health); });
  if (const YAML::Node b = root["bisection"]) r.Part([&] { return ReadBisection(r, b, rules.bisection); });
  RETURN_IF_ERROR(r.Finish());
  return rules;
}

StatusOr<DecisionRules> LoadDecisionRules(const std::string& data_dir) {
  const std::string path = data_dir + "/rules/sweep/decisions.yaml";
  auto text = ReadYamlFile(path);
  if (!text.ok()) return text.status().WithContext("sweep decision rules");
  return ParseDecisionRules(*text, path);
}

}  // namespace diagnose
