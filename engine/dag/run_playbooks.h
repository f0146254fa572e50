// One call for the pipeline: select playbooks by their triggers, compile them into one graph,
// evaluate it and combine the verdicts. Fills the report's verdict, findings, decision,
// causal_chain and not_evaluated.
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/dag/context.h"
#include "engine/dag/evaluate.h"
#include "engine/dag/graph.h"
#include "engine/playbook/playbook.h"
#include "engine/report/report.h"
#include "engine/verdict/verdict.h"

namespace diagnose::dag {

struct PlaybookRun {
  std::vector<Selection> selected;            // which playbooks ran and why
  EvaluationResult evaluation;
  verdict::Combined combined;
  std::vector<std::string> problems;          // trigger conditions that could not be evaluated
};

// Fails only when the selected playbooks cannot be compiled (a library that did not lint clean).
// The job's failure classes from its facts JSON, the primary one first (verdict combination reads
// the primary as the symptom to explain or refute).
std::vector<std::string> FailureClassesOf(const nlohmann::json& facts);

StatusOr<PlaybookRun> RunPlaybooks(const playbook::Library& library, const EvaluationContext& ctx);

// Copies the run into a report: verdict, decision, findings, causal_chain, not_evaluated.
void FillReport(const PlaybookRun& run, Report* report);

}  // namespace diagnose::dag
