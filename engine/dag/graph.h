// The compiled rule graph: one Boost.Graph DAG over every rule of the selected playbooks plus the
// shared rules they use (each shared rule is one node, evaluated once). Nodes are grouped into
// topological levels (explain's order); the evaluator sends a query node as soon as what it needs
// is final, not level by level.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/dag/context.h"
#include "engine/playbook/playbook.h"

namespace diagnose::dag {

struct GraphNode {
  std::string id;                                  // "<playbook>/<rule>" or "common/<rule>"
  const playbook::RuleSpec* rule = nullptr;
  const playbook::PlaybookSpec* playbook = nullptr;   // null for shared rules
  int level = 0;
  std::vector<int> deps;                           // node indices this node needs
  std::vector<int> after;                          // evaluated before it, not needed (fallbacks)
};

// Why a playbook was selected (for explain and the report).
struct Selection {
  std::string playbook;
  std::string reason;
};

// A trigger condition that fails to evaluate does not select its playbook; the run goes on and the
// report says which trigger could not be judged and why.
struct PlaybookSelection {
  std::vector<Selection> selected;
  std::vector<std::string> trigger_problems;   // "<playbook>: trigger <file:line:col>: <why>"
};

// Playbooks whose triggers match the context (README §2), in library order, plus explicit requests.
PlaybookSelection SelectPlaybooks(const playbook::Library& library, const EvaluationContext& ctx);

class CompiledGraph {
 public:
  // Fails (kNotFound) when a playbook id is unknown; the library must have loaded without errors.
  static StatusOr<CompiledGraph> Compile(const playbook::Library& library, const std::vector<std::string>& playbook_ids);

  const std::vector<GraphNode>& nodes() const { return nodes_; }
  const std::vector<std::vector<int>>& levels() const { return levels_; }
  const std::vector<const playbook::PlaybookSpec*>& playbooks() const { return playbooks_; }
  const playbook::Library& library() const { return *library_; }
  int IndexOf(const std::string& id) const;
  // Topological order: by level, then id (deterministic).
  std::vector<int> TopologicalOrder() const;

 private:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  const playbook::Library* library_ = nullptr;
  Graph graph_;
  std::vector<GraphNode> nodes_;
  std::map<std::string, int> index_;
  std::vector<std::vector<int>> levels_;
  std::vector<const playbook::PlaybookSpec*> playbooks_;
};

// The compiled form as deterministic JSON (`diagnose explain`): playbooks, nodes in topological
// order with their level, needs, kind and definition, and the edges. With `ctx`, query nodes also
// carry the resolved PromQL and window (or why they cannot be resolved).
// Source positions under `source_root` are printed relative to it, so the output does not depend on
// where the tree is checked out.
nlohmann::json ExplainJson(const CompiledGraph& graph, const EvaluationContext* ctx, const std::string& source_root = "");

}  // namespace diagnose::dag
