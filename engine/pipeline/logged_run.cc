#include "engine/pipeline/logged_run.h"

#include <cmath>

namespace diagnose {

std::optional<LoggedRunSpan> LoggedRun(const JobFacts& facts) {
  const RunWindow& w = facts.run_window;
  LoggedRunSpan run;
  if (w.start && w.start_source == "artifact-id") run.start = static_cast<double>(*w.start);
  if (w.end) run.end = static_cast<double>(*w.end);
  if (!std::isfinite(run.start) && !std::isfinite(run.end)) return std::nullopt;
  if (facts.summary.present && facts.summary.wall_seconds > 0) run.length_seconds = facts.summary.wall_seconds;
  return run;
}

}  // namespace diagnose
