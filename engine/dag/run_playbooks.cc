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
  run.combined = verdict::Combine(run.evaluation.candidates, ParseJobStatus(ctx.facts.value("status", "")), FailureClassesOf(ctx.facts));
  return run;
}

PlaybookOutcome OutcomeOf(const PlaybookRun& run) {
  PlaybookOutcome out;
  out.findings = run.evaluation.findings;
  out.not_evaluated = run.evaluation.not_evaluated;
  for (const auto& p : run.selection.trigger_problems) out.not_evaluated.push_back("trigger: " + p);
  out.verdict = run.combined.verdict;
  out.verdict.source = "playbooks";
  out.decision = run.combined.decision;
  out.causal_chain = run.combined.causal_chain;
  out.explained = !run.evaluation.candidates.empty();
  return out;
}

}  // namespace diagnose::dag
