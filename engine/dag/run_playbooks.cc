#include "engine/dag/run_playbooks.h"

#include <algorithm>

namespace diagnose::dag {

StatusOr<PlaybookRun> RunPlaybooks(const playbook::Library& library, const EvaluationContext& ctx) {
  PlaybookRun run;
  run.selected = SelectPlaybooks(library, ctx, &run.problems);
  std::vector<std::string> ids;
  for (const auto& s : run.selected) ids.push_back(s.playbook);
  auto graph = CompiledGraph::Compile(library, ids);
  if (!graph.ok()) return graph.status();
  run.evaluation = Evaluate(*graph, ctx);
  std::vector<std::string> classes;
  if (ctx.facts.contains("classes") && ctx.facts["classes"].is_array())
    for (const auto& c : ctx.facts["classes"])
      if (c.is_object() && c.contains("failure_class") && c["failure_class"].is_string())
        classes.push_back(c["failure_class"].get<std::string>());
  std::string primary = ctx.facts.value("failure_class", "");
  if (!primary.empty() && std::find(classes.begin(), classes.end(), primary) == classes.end()) classes.push_back(primary);
  run.combined = verdict::Combine(run.evaluation.candidates, ctx.facts.value("status", ""), classes);
  return run;
}

void FillReport(const PlaybookRun& run, Report* report) {
  report->verdict = run.combined.verdict;
  report->decision = run.combined.decision;
  report->causal_chain = run.combined.causal_chain;
  report->findings = run.evaluation.findings;
  report->not_evaluated = run.evaluation.not_evaluated;
  for (const auto& p : run.problems) report->not_evaluated.push_back("trigger: " + p);
}

}  // namespace diagnose::dag
