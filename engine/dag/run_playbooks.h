// One call for the pipeline: select playbooks by their triggers, compile them into one graph,
// evaluate it and combine the verdicts. The pipeline takes the run's PlaybookOutcome into the report.
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

// What the playbooks concluded, as the report takes it.
struct PlaybookOutcome {
  std::vector<Finding> findings;
  // What the run could not judge, in the report's `not_evaluated` words: the rules, then the triggers.
  std::vector<std::string> not_evaluated;
  // The combined verdict (source `playbooks`), its decision and causal chain.
  Verdict verdict;
  Decision decision;
  std::vector<std::string> causal_chain;
  // Whether any rule offered an explanation (a candidate), naming a cause or not.
  bool explained = false;
};

PlaybookOutcome OutcomeOf(const PlaybookRun& run);

}  // namespace diagnose::dag
