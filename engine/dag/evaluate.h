// Evaluates a compiled graph against an EvaluationContext: levels in topological order, query
// nodes of a level batched through QueryClient::RunBatch, every node ending ok, error or skipped
// (with the reason). A failed node skips its dependents; nothing aborts the run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/dag/context.h"
#include "engine/dag/graph.h"
#include "engine/report/report.h"
#include "engine/verdict/verdict.h"

namespace diagnose::dag {

enum class NodeHealth { kOk, kError, kSkipped };
// "ok" | "error" | "skipped": the words of `not_evaluated` and a finding's status.
std::string_view ToString(NodeHealth health);

struct NodeOutcome {
  std::string id;
  NodeHealth health = NodeHealth::kSkipped;
  std::string reason;                  // why error/skipped
  nlohmann::json value;                // the rule's result fields (README §3)
  std::vector<Evidence> evidence;      // what it ran or read
};

struct EvaluationResult {
  std::vector<NodeOutcome> nodes;                // same indices as graph.nodes()
  std::vector<Finding> findings;                 // verdict rules and rules with `finding`
  std::vector<verdict::Candidate> candidates;    // one per playbook with a fired verdict
  std::vector<std::string> not_evaluated;        // "<node>: <health>: <reason>"
  // Requests sent: each distinct question of the run once, a range question asked in pieces
  // (range_split.h) once per piece, and the series look-ups its estimate sent.
  int queries_run = 0;
  int queries_shared = 0;   // query rules answered by a request another rule of the run sent
  int queries_derived = 0;  // questions computed from another question's answer, not sent
  int batches = 0;
  int64_t points_returned = 0;   // samples and instant values in the answers, each request once
};

EvaluationResult Evaluate(const CompiledGraph& graph, const EvaluationContext& ctx);

}  // namespace diagnose::dag
