// Built-in analyses the incident playbooks need beyond the generic set (playbooks/README.md §3.3):
// the TGS recovery test after a host's retransmit bursts stop, and the choice of a non-accused
// neighbour task for heartbeat liveness comparisons. Registered into analysis::Registry().
#pragma once

#include <map>
#include <string>

#include "engine/analysis/analysis.h"

namespace diagnose::analysis {

// recovery_after_bursts. input: map key -> list of {start, end} bursts (burst_phase_correlation's
// `bursts`); baseline_input: the job's steps (objects with `step` and the TGS field); step times
// come from discovery. For every burst that ended before the data did and during which TGS was
// degraded, checks that TGS returned to its pre-burst level within `max_steps` steps of the
// retransmits stopping. `smear` is the rate window of the burst series: a burst measured through
// rate(x[w]) ends up to w after the last retransmit. A burst during which TGS stayed at its
// pre-burst level is `no_effect` only when that level was the job's healthy one (the highest
// median of `reference_steps` steps); one that began while TGS was already down is untested and
// its key listed in `masked`: another fault's slowdown hides its own cost.
StatusOr<Json> RecoveryAfterBursts(const AnalysisView& in);

// task_neighbours. input: [accused_tasks, task_ordered_hosts]. Picks, deterministically, the task
// adjacent to an accused task that is itself not accused: for accused tasks in ascending order,
// t+1 then t-1, first one that exists. Result: `task`, `host` (null when none), `candidates`.
StatusOr<Json> TaskNeighbours(const AnalysisView& in);

// config_diff. input and baseline_input: maps key -> value (e.g. `Config param` values or
// PASSTHROUGH_ARGS of two jobs). Result: `changed` (key -> [subject, baseline]), `only_subject`,
// `only_baseline` (key -> value), `keys` (every differing key, sorted), `same` (count of equal keys).
StatusOr<Json> ConfigDiff(const AnalysisView& in);

void AddIncidentAnalyses(std::map<std::string, AnalysisDef>* registry);

}  // namespace diagnose::analysis
