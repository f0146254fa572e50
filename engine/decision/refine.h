// Sweep decision refinement: turns a diagnosis (report + triage facts) into the action a sweep driver
// takes, using the rules in rules/sweep/decisions.yaml and the sweep's history (retry limits,
// node-exclusion budget, hang escalation, model-sweep early stop).
//
// The pipeline calls ApplySweepDecision after the verdict; `watch` and the epilog go through it too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/decision/decision_rules.h"
#include "engine/decision/sweep_history.h"
#include "engine/report/report.h"
#include "engine/triage/job_facts.h"

namespace diagnose {

struct SweepContext {
  std::string sweep;          // sweep id; entries of other sweeps only count as baseline passes
  std::string variant;        // model sweeps: which commit this job ran (e.g. candidate | baseline)
  int64_t now = 0;            // time stamped on the history entry
  bool stalled = false;       // the watcher saw no new step for the stall window: treat as hanging
  // Part of a sweep (a history file, or `watch`): sweep-wide limits such as the number of excluded
  // nodes apply only then; a standalone diagnosis reports what the job itself needs.
  bool in_sweep = false;
};

struct SweepDecision {
  Decision decision;                  // contract decision; action always from the vocabulary
  std::string rule;                   // sweep rule that gave the base decision ("" = the diagnosis's)
  std::string root_cause;             // the rule's cause when it names one, else the verdict's
  std::string exclude_scope = "job";  // job | sweep
  std::vector<Exclusion> found;       // exclusions dropped because the action is not retry-excluding-nodes
  std::string hang_phase;             // computed phase when the job hung ("" otherwise)
  std::optional<std::string> retry_of;    // earlier job of the same sweep this one retried
  std::string oom_allocation;
};

// Which phase a hung job stopped in: after-step0 when any step completed, else after Memstats, else
// after the BARRIER (AMD fork: barrier follows compilation), else before-memstats.
std::string HangPhaseOf(const JobFacts& facts);

// The model and passthrough args of the job (the identity used for retry accounting).
SweepConfig SweepConfigOf(const JobFacts& facts);

SweepDecision RefineDecision(const Report& diagnosis, const JobFacts& facts, const SweepHistory& history,
                             const DecisionRules& rules, const SweepContext& context);

HistoryEntry MakeHistoryEntry(const JobFacts& facts, const Report& diagnosis, const SweepDecision& decision,
                              const SweepContext& context);

// The one call for the pipeline: loads `history_path` (may not exist yet), refines report->decision
// in place (notes explain every step), and appends the decision to the history. `facts` is the
// subject job's triage output. Warnings about skipped history lines go into decision notes.
Status ApplySweepDecision(const DecisionRules& rules, const std::string& history_path, SweepContext context,
                          const JobFacts& facts, Report* report);

// JobFacts of the subject job from a report's `facts` extension (keyed by job id); nullopt when the
// report carries none or it does not parse.
std::optional<JobFacts> SubjectFactsOf(const Report& report);

}  // namespace diagnose
