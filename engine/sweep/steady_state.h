// A job's steady-state throughput as the tuning runbooks define it (xla-tuning "Steady-state TGS
// computation", batch-sweep "extract steady-state TGS"): the mean of rank 0's steps 9-14 when the
// profiler is on (steps 5-8 sit inside the capture window and the profile-dump step is a massive
// outlier), steps 5-14 when it is off. Steps come from triage's StepRecords, never a second parser.
//
// A single outlier step inside the window (a profile dump, a checkpoint, a hiccup on one node)
// would move a 6-step mean by several percent, more than the 1-3 % effects a sweep hunts. Such a
// step is left out and named, so the window and what was dropped from it are both on the record.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/log_ref.h"
#include "engine/report/job_facts.h"

namespace diagnose::sweep {

struct SteadyState {
  int64_t first_step = 0;              // the window the runbook prescribes, inclusive
  int64_t last_step = 0;
  bool profiler_on = false;
  std::string profiler_evidence;       // "Config param profiler: xplane" or the passthrough arg
  std::vector<double> tgs;             // Tokens/s/device of the steps used, in step order
  std::vector<int64_t> steps_used;
  std::vector<int64_t> outlier_steps;  // inside the window, left out (see OutlierStep)
  double mean_tgs = 0;                 // over steps_used
  double stddev_tgs = 0;               // sample standard deviation over steps_used (0 for one step)
  double mean_step_seconds = 0;
  std::optional<double> mean_mfu_pct;
  LogRef first_line;                   // the window's first and last step lines, for citation
  LogRef last_line;
  bool measured() const { return !steps_used.empty(); }
};

// A step whose TGS lies further from the window's median than this many robust standard deviations
// (1.4826 MAD), and at least kOutlierFloorPct away, is an outlier. The floor keeps a window whose
// MAD happens to be tiny from discarding ordinary noise.
inline constexpr double kOutlierRobustSigmas = 5.0;
inline constexpr double kOutlierFloorPct = 2.0;

// Whether the job ran with the profiler on, from `Config param profiler:` (MaxText prints every
// config key) else the passthrough `profiler=`; an empty value means off.
bool ProfilerOn(const JobFacts& facts, std::string* evidence = nullptr);

SteadyState MeasureSteadyState(const JobFacts& facts);

}  // namespace diagnose::sweep
