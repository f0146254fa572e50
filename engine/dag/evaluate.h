// Evaluates a compiled graph against an EvaluationContext: levels in topological order, query
// nodes of a level batched through QueryClient::RunBatch, every node ending ok, error or skipped
// (with the reason). A failed node skips its dependents; nothing aborts the run.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/dag/context.h"
#include "engine/dag/graph.h"
#include "engine/report/report.h"
#include "engine/verdict/verdict.h"

namespace diagnose::dag {

struct NodeOutcome {
  std::string id;
  std::string health = "skipped";      // ok | error | skipped
  std::string reason;                  // why error/skipped
  nlohmann::json value;                // the rule's result fields (README §3)
  std::vector<Evidence> evidence;      // what it ran or read
};

struct EvaluationResult {
  std::vector<NodeOutcome> nodes;                // same indices as graph.nodes()
  std::vector<Finding> findings;                 // verdict rules and rules with `finding`
  std::vector<verdict::Candidate> candidates;    // one per playbook with a fired verdict
  std::vector<std::string> not_evaluated;        // "<node>: <health>: <reason>"
  int queries_run = 0;
  int batches = 0;
};

EvaluationResult Evaluate(const CompiledGraph& graph, const EvaluationContext& ctx);

// Helpers shared with explain.
// The host a series belongs to (README §3.1 host key): host label, else instance_hosts[instance],
// else instance without :port, else instance_hosts[ip], else ip; "" when none.
std::string HostOfSeries(const Labels& labels, const nlohmann::json& instance_hosts);
// Built-in, shared (rules/common) and playbook windows resolved against the context: {name: {start, end}} (missing when
// they cannot be computed; `problems` says why).
nlohmann::json ResolveWindows(const playbook::Library& library, const playbook::PlaybookSpec* playbook,
                              const EvaluationContext& ctx,
                              const nlohmann::json& params, const nlohmann::json& thresholds,
                              std::map<std::string, std::string>* problems);
// A playbook's params evaluated (literals and expressions).
nlohmann::json ResolveParams(const playbook::PlaybookSpec* playbook, const EvaluationContext& ctx,
                             const nlohmann::json& thresholds, std::map<std::string, std::string>* problems);

}  // namespace diagnose::dag
