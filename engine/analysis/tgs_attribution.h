// tgs_attribution: which hosts' error intervals explain a job's TGS series, several faults at once.
//
// Testing one host at a time against the TGS just before its errors began fails when faults
// overlap: the second host's errors start while TGS is already down, so "TGS did not move" and the
// host goes free, and the recovery at the end of its errors is credited to nobody. Instead the
// series is explained jointly: log TGS = level + sum over hosts of effect_h x [host h in error],
// fitted by least squares on the job's steps (robust to checkpoint spikes: points far off the fit
// are set aside and the fit repeated). Hosts enter by forward selection while one still explains a
// significant share (effect at least `min_effect_pct`, t at least `min_t` against the job's own
// residual step noise); a host whose interval cannot be told apart from a selected host's (the same
// steps) shares that host's explanation when it is significant in its place. Costs need not add
// (collectives wait for the slowest host): a host is also credited when the steps with some set of
// hosts in error, itself included, run clearly slower than the steps with that set minus itself.
#pragma once

#include "engine/analysis/analysis.h"

namespace diagnose::analysis {

// Faults of another kind overlap too (a throttling GPU under a failing link): TGS stays down after
// the link recovers, and without that fault in the model the link's own cost vanishes into the
// baseline. Their intervals (`windows`) enter the fit and the contrasts as columns like any host's,
// so each suspect is judged against the steps no other known fault touched; they are reported in
// `others_explain`, never blamed here (their own playbook judges them).
//
// input: map host -> list of {start, end} bursts (epoch seconds; burst_phase_correlation's `bursts`);
// baseline_input: the job's steps (objects with `step` and the TGS field); step times from discovery;
// windows (optional): map host -> list of {start, end}, the intervals of faults of other kinds.
// args: smear (the rate window: a burst ends up to this long after the last error), min_effect_pct,
// min_t, min_points (steps needed inside and outside a host's interval).
// Result: `explains` (hosts), `no_effect` (tested, explain nothing), `untested`, `details`
// (host -> {effect_pct, t, first_step, last_step, shared_with}), `explained_text` (one sentence
// part per explaining host: "<host>: steps a-b (-x.x % TGS)"), `others_explain` (hosts of `windows`
// whose intervals explain part of the series).
StatusOr<Json> TgsAttribution(const AnalysisView& in);

}  // namespace diagnose::analysis
