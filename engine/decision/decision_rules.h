// Sweep decision rules (rules/sweep/decisions.yaml) as compiled data: signals over triage facts,
// ordered rules giving a base decision, per-rule limits and escalations, sweep-wide limits, and the
// node-health / bisection thresholds. Loading validates every action and root cause against the
// contract vocabulary and reports errors as file:line:col.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/decision/exclude_scope.h"
#include "engine/decision/node_status.h"
#include "engine/report/decision_action.h"
#include "engine/report/job_status.h"

namespace diagnose {

// A detector over JobFacts. Fires when any of its sources matches; yields the hosts it fired on.
struct SignalSpec {
  std::string id;
  std::vector<std::string> classes;        // ClassMatch.failure_class ids
  // Fires only when the job's primary failure class is one of these (a cause, not an echo of one
  // elsewhere in the log); its hosts are where that class matched.
  std::vector<std::string> primary_classes;
  std::vector<std::string> events;         // LogEvent.kind
  std::vector<JobStatus> statuses;
  std::vector<std::string> text_patterns;  // as written, for messages
  std::vector<std::regex> text;            // over classes[].where.text and events[].where.text
  std::optional<std::vector<int>> node_exit_codes_except;   // NODE_EXIT lines with other codes
};

struct RuleCondition {
  std::string signal;                        // required signal ("" = none required)
  std::string also;                          // a second signal that must fire too
  std::string hosts = "any";                 // any | one | several | all: spread of `signal`
  std::vector<JobStatus> status;             // facts.status in
  std::vector<std::string> hang_phase;       // computed phase in
  std::optional<bool> final_step_reached;
  std::optional<bool> soft_success;
  std::vector<int> summary_exit;             // JOB SUMMARY exit code in
  std::vector<std::string> failure_class;    // primary class in
  std::vector<std::string> not_failure_class;   // primary class not in
};

struct RuleOutcome {
  DecisionAction action = DecisionAction::kNone;
  std::string exclude = "none";              // none | signal-hosts
  int exclude_priority = 1;
  ExcludeScope exclude_scope = ExcludeScope::kJob;
  std::string root_cause;                    // "" = keep the diagnosis's
  bool record_allocation = false;
  std::string note;                          // template: {hosts} {last_step} {exit_code} ...
};

struct EscalationStep {
  int count = 0;
  DecisionAction then = DecisionAction::kNone;
  std::string root_cause;                    // optional override when it fires
};

struct RuleLimits {
  std::optional<int> max_retries;            // overrides the sweep-wide retries per job
  std::optional<EscalationStep> consecutive;           // this rule firing N times in a retry chain
  std::optional<EscalationStep> repeat_on_other_nodes; // same rule excluded other hosts earlier
  std::optional<EscalationStep> repeat_on_configs;     // same rule on N distinct configs in the sweep
  std::string on_recurrence_same_nodes;      // "" | exclude-suspects
};

struct DecisionRule {
  std::string id;
  RuleCondition when;
  RuleOutcome decision;
  RuleLimits limits;
  std::string where;                         // file:line:col of the rule, for notes and errors
};

struct SweepLimits {
  int max_retries_per_job = 2;
  DecisionAction retries_exceeded_action = DecisionAction::kNoRetry;
  int max_excluded_nodes_per_sweep = 2;
  DecisionAction excluded_nodes_exceeded_action = DecisionAction::kStopSweep;
  int model_sweep_failing_models = 2;
  DecisionAction model_sweep_action = DecisionAction::kStopSweep;
  std::string baseline_variant = "baseline";
};

struct NodeHealthThresholds {
  int steady_first_step = 5;
  int steady_last_step = 14;
  int min_steady_steps = 5;
  double healthy_within_pct = 2.0;
  double degraded_below_pct = 5.0;
  std::vector<NodeStatus> exclude_statuses{NodeStatus::kDegraded, NodeStatus::kUnhealthy};
};

struct BisectionThresholds {
  double degraded_below_pct = 5.0;
  int first_step = 0;
};

struct DecisionRules {
  std::string source;                        // the YAML file it came from
  SweepLimits limits;
  std::vector<std::string> hang_phases;
  std::map<std::string, SignalSpec> signals;
  // Log signals that localise a recurring hang, in order: the first one logged on some hosts (not
  // all) names the suspects (each id must be a defined signal).
  std::vector<std::string> hang_suspect_signals;
  // Root causes that name no failure mechanism: a metric-backed verdict with one of these leaves the
  // log's sweep rules in charge (each must be in the contract's vocabulary).
  std::vector<std::string> not_a_mechanism;
  bool NamesMechanism(const std::string& root_cause) const {
    return std::find(not_a_mechanism.begin(), not_a_mechanism.end(), root_cause) == not_a_mechanism.end();
  }
  // How the sweep's progress line names a root cause (batch-sweep runbook: "grok-1 8N (job 9805):
  // OOM — FAIL"): the label, and the label when the job also hung ("{phase}" is the hang phase;
  // empty = "hang <phase> (<root cause>)"). Causes not listed are named by their id.
  struct ProgressLabel {
    std::string label;
    std::string hung;
  };
  std::map<std::string, ProgressLabel> progress_labels;
  std::vector<DecisionRule> rules;
  NodeHealthThresholds node_health;
  BisectionThresholds bisection;
};

// Hang phases the engine computes from JobFacts (the batch-sweep hang-phase table, plus the AMD
// fork's barrier-after-compile ordering); rules map them to actions.
inline constexpr char kHangBeforeMemstats[] = "before-memstats";
inline constexpr char kHangAfterMemstatsBeforeStep0[] = "after-memstats-before-step0";
inline constexpr char kHangAfterBarrierBeforeStep0[] = "after-barrier-before-step0";
inline constexpr char kHangAfterStep0[] = "after-step0";
bool IsKnownHangPhase(const std::string& phase);

// Parses YAML text; `source_name` names the file in error messages.
StatusOr<DecisionRules> ParseDecisionRules(const std::string& yaml_text, const std::string& source_name);
// Loads <data_dir>/rules/sweep/decisions.yaml (data_dir as pipeline.h DefaultDataDir()).
StatusOr<DecisionRules> LoadDecisionRules(const std::string& data_dir);

}  // namespace diagnose
