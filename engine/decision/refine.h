// Sweep decision refinement: turns a diagnosis (verdict + decision + triage facts) into the action a
// sweep driver takes, using the rules in rules/sweep/decisions.yaml and the sweep's history (retry
// limits, node-exclusion budget, hang escalation, model-sweep early stop).
//
// The pipeline calls DecideSweep after the diagnosis (`watch` through the pipeline); the report
// takes the SweepDecision's decision as it is, and never has its verdict rewritten by it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/decision/decision_rules.h"
#include "engine/decision/exclude_scope.h"
#include "engine/decision/sweep_history.h"
#include "engine/report/report.h"
#include "engine/report/job_facts.h"

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
  ExcludeScope exclude_scope = ExcludeScope::kJob;
  std::vector<Exclusion> found;       // exclusions dropped because the action is not retry-excluding-nodes
  std::string hang_phase;             // computed phase when the job hung ("" otherwise)
  std::optional<std::string> retry_of;    // earlier job of the same sweep this one retried
  std::string oom_allocation;
};

// A report and the sweep decision its decision is; no sweep decision when the diagnosis was
// incomplete (no action is decided from the logs alone).
struct DecidedReport {
  Report report;
  std::optional<SweepDecision> sweep;
};

// Which phase a hung job stopped in: after-step0 when any step completed, else after Memstats, else
// after the BARRIER (AMD fork: barrier follows compilation), else before-memstats.
std::string HangPhaseOf(const JobFacts& facts);

// The model and passthrough args of the job (the identity used for retry accounting).
SweepConfig SweepConfigOf(const JobFacts& facts);

SweepDecision RefineDecision(const Diagnosis& diagnosis, const JobFacts& facts, const SweepHistory& history,
                             const DecisionRules& rules, const SweepContext& context);

// What a sweep with the default policy and no history yet would make of `standalone` (the decision of
// a diagnosis outside a sweep, which skips the sweep-wide limits): the step that changes its action,
// or nullopt when a sweep would act the same.
std::optional<ActionOverride> InSweepStep(const Diagnosis& diagnosis, const JobFacts& facts, const DecisionRules& rules,
                                          SweepContext context, const Decision& standalone);

HistoryEntry MakeHistoryEntry(const JobFacts& facts, const SweepDecision& decision, const SweepContext& context);

// The one call for the pipeline: loads `history_path` (may not exist yet), refines the diagnosis's
// decision (notes explain every step), and appends the decision to the history. `facts` is the
// subject job's triage output. Warnings about skipped history lines go into decision notes.
StatusOr<SweepDecision> DecideSweep(const DecisionRules& rules, const std::string& history_path, SweepContext context,
                                    const Diagnosis& diagnosis, const JobFacts& facts);

// The cause the sweep policy acted on where it differs from the verdict: a sweep rule's cause where
// the verdict named none (`unknown`); "" otherwise (report extension `decision.root_cause`).
std::string PolicyRootCause(const SweepDecision& decision, const Verdict& verdict);

}  // namespace diagnose
