#include "engine/dag/run_playbooks.h"

#include <algorithm>

namespace diagnose::dag {

std::vector<std::string> FailureClassesOf(const nlohmann::json& facts) {
  std::vector<std::string> classes;
  const std::string primary = facts.is_object() ? facts.value("failure_class", "") : "";
  if (!primary.empty()) classes.push_back(primary);
  if (facts.is_object() && facts.contains("classes") && facts["classes"].is_array())
    for (const auto& c : facts["classes"])
      if (c.is_object() && c.contains("failure_class") && c["failure_class"].is_string() &&
          std::find(classes.begin(), classes.end(), c["failure_class"].get<std::string>()) == classes.end())
        classes.push_back(c["failure_class"].get<std::string>());
  return classes;
}

StatusOr<PlaybookRun> RunPlaybooks(const playbook::Library& library, const EvaluationContext& ctx) {
  PlaybookRun run;
  run.selection = SelectPlaybooks(library, ctx);
  std::vector<std::string> ids;
  for (const auto& s : run.selection.selected) ids.push_back(s.playbook);
  auto graph = CompiledGraph::Compile(library, ids);
  if (!graph.ok()) return graph.status();
  run.evaluation = Evaluate(*graph, ctx);
  run.combined = verdict::Combine(run.evaluation.candidates, ctx.facts.value("status", ""), FailureClassesOf(ctx.facts));
  return run;
}

void AppendNotEvaluated(const PlaybookRun& run, std::vector<std::string>* not_evaluated) {
  not_evaluated->insert(not_evaluated->end(), run.evaluation.not_evaluated.begin(), run.evaluation.not_evaluated.end());
  for (const auto& p : run.selection.trigger_problems) not_evaluated->push_back("trigger: " + p);
}

}  // namespace diagnose::dag
