// What one evaluation of the rule graph reads: log facts, discovery and query clients for the
// subject and, with --baseline, the baseline job. Plain data + borrowed clients; the caller owns
// everything and keeps it alive during Evaluate().
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

struct EvaluationContext {
  // The subject's JobFacts JSON (engine/triage/job_facts.h); read by playbooks as `facts`.
  nlohmann::json facts = nlohmann::json::object();
  // The baseline's JobFacts JSON, or null without --baseline; read as `baseline`.
  nlohmann::json baseline_facts;
  // Discovery JSON of each TSDB, null when there is none. Keys: `metrics` (list of names),
  // `hosts` (list), `range` ({start, end} epoch seconds), `instance_hosts` (map instance or ip ->
  // host), `step_times` ([[step, epoch], ...]). Read as `discovery` / `baseline_discovery`.
  nlohmann::json discovery;
  nlohmann::json baseline_discovery;
  // Why `discovery` is null although there is a TSDB ("discovery failed: ..."): the reason every
  // rule that needs the job's time range gives for not running.
  std::string discovery_failure;
  // Null when the job has no TSDB: query rules are then `skipped` with reason "no TSDB".
  QueryClient* subject = nullptr;
  QueryClient* baseline = nullptr;
  // Playbooks requested explicitly (--playbook ID): selected whatever their triggers say.
  std::vector<std::string> requested_playbooks;
  // The run's --deadline: rules not evaluated by then are skipped with that reason (an expression
  // over a million hosts an endpoint returned must not hold an epilog past it).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Called once, on the evaluating thread, when no query is left to send or answer (the rules
  // still to judge read only what was answered): the caller may close its metrics source then,
  // while they are judged.
  std::function<void()> on_last_query_answered;
};

}  // namespace diagnose::dag
