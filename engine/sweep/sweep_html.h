// `diagnose sweep --format html`: one self-contained page (no script, no network: a CSP forbids
// both), per cell the conclusion, a chart of each shown variant's delta to the baseline with its
// family-wise interval (the winner marked, zero drawn), and the leaderboard and failures as tables.
#pragma once

#include <string>

#include "engine/sweep/tuning_sweep.h"

namespace diagnose::sweep {

std::string RenderSweepHtml(const SweepResult& result);

}  // namespace diagnose::sweep
