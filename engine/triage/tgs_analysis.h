// TGS (tokens/s/device) timeline analysis (maxtext-slurm-formats.md §4.7): isolated step-time
// spikes (checkpoint saves) are set aside, the rest is split into phases of constant throughput by
// binary segmentation with boundary refinement, a hinge fit tests for a gradual decline, and the
// pattern is named. All thresholds come from the signature table.
#pragma once

#include <optional>
#include <vector>

#include "engine/core/status.h"
#include "engine/report/job_facts.h"
#include "engine/triage/signature_table.h"

namespace diagnose {

struct TgsOptions {
  int warmup_steps = 0;          // leading logical steps left out of segmentation (compile)
  int steady_first = 0;          // steady window, as logical-step indices [first, last]
  int steady_last = 0;
  int recent_steps = 0;          // recent window length
  double spike_pct = 0;          // deviation from the local median that makes a spike
  int spike_window = 0;          // half-width of the local median window
  int spike_max_run = 0;         // longer runs of outliers are phases, not spikes
  int min_phase_steps = 0;
  double min_shift_pct = 0;      // smallest mean shift between adjacent phases (within one standard error)
  double min_shift_t = 0;        // and its minimum t statistic
  int max_phases = 0;
  double degradation_pct = 0;    // recent vs steady drop that counts as degradation
  int min_dip_steps = 0;         // the material-dip rule (below)
  double min_dip_seconds = 0;
};

// The material-dip rule. Phases come from change points on the spike-free step series (a single
// split, or a dip-shaped pair of splits when a short dip inside a long series moves no single split
// enough). A dip is a run of adjacent phases each below the healthy level (the best phase) by at
// least min_shift_pct (a shift counts when the floor lies within one standard error of it: noise
// moves a measured shift around the floor), whose mean depth is also at least min_shift_t standard errors of the job's
// own step noise (depth >= t * noise / sqrt(steps)), and which lasts at least min_dip_steps steps
// and min_dip_seconds of wall time. A slow stretch that ends before the steady window
// (steady_first) is the start's ramp, not a dip. Every such dip is reported, whatever the pattern
// label.

// Reads tgs_* thresholds; kNotFound naming the table file when one is missing.
StatusOr<TgsOptions> TgsOptionsFromTable(const SignatureTable& table);

TgsAnalysis AnalyzeTgs(const std::vector<StepRecord>& steps, std::optional<int64_t> checkpoint_period,
                       const TgsOptions& options);

}  // namespace diagnose
