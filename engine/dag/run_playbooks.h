// One call for the pipeline: select playbooks by their triggers, compile them into one graph,
// evaluate it and combine the verdicts. The pipeline merges the run into its report.
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
  PlaybookSelection selection;                // which playbooks ran and why
  EvaluationResult evaluation;
  verdict::Combined combined;
};

// Fails only when the selected playbooks cannot be compiled (a library that did not lint clean).
// The job's failure classes from its facts JSON, the primary one first (verdict combination reads
// the primary as the symptom to explain or refute).
std::vector<std::string> FailureClassesOf(const nlohmann::json& facts);

StatusOr<PlaybookRun> RunPlaybooks(const playbook::Library& library, const EvaluationContext& ctx);

// What the run could not judge, in the report's `not_evaluated` words: the rules, then the triggers.
void AppendNotEvaluated(const PlaybookRun& run, std::vector<std::string>* not_evaluated);

}  // namespace diagnose::dag
