// Analyses over lists of log-fact records (JobFacts JSON arrays such as `facts.classes`,
// `facts.events`, `facts.steps`), which the condition language cannot filter by itself:
//   select_records    the records whose field equals a value, with their hosts
//   checkpoint_steps  the periodic checkpoint steps of a run, their write times and which
//                     step-time spikes they explain
#pragma once

#include <map>
#include <string>

#include "engine/analysis/analysis.h"

namespace diagnose::analysis {

// input: a list of objects. args: field, equals (compared as text), host_field ("host").
// Result: items (matching records), count, hosts (distinct non-empty host_field values, sorted),
// values (map host -> matching records on that host).
StatusOr<Json> SelectRecords(const AnalysisView& in);

// input: [steps, period] or [steps, period, heartbeat_timeout] where steps is a list of step
// records ({step, seconds, ...}), period the checkpoint period in steps (null or <= 0: precondition
// failure, so the rule is skipped) and heartbeat_timeout seconds (a number or a numeric string such
// as a PASSTHROUGH_ARGS value; anything else is treated as unknown).
// args: x ("step"), y ("seconds"), write_offset (1: a save's cost lands in the step after it),
// spike_ratio (3), skip_first (5: compile and warm-up steps are never spikes).
// Result: period, checkpoint_steps (multiples of period within the logged range, step 0
// included), write_seconds (map step -> seconds of step+write_offset), max_write_seconds,
// max_write_step, median_seconds, spike_steps, expected_spikes (spikes on a checkpoint step or its
// write step), unexpected_spikes, count (checkpoints in range), current_checkpoint (the largest
// checkpoint step <= the last logged step: the save in progress when the log ends),
// heartbeat_timeout, write_fraction (max_write_seconds / heartbeat_timeout).
StatusOr<Json> CheckpointSteps(const AnalysisView& in);

// Adds the analyses above to the registry (called from Registry()).
void RegisterRecordAnalyses(std::map<std::string, AnalysisDef>& registry);

}  // namespace diagnose::analysis
