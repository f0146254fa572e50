#include "engine/triage/progress.h"

namespace diagnose {

Progress ComputeProgress(const std::vector<StepRecord>& steps, const ProgressInputs& in) {
  Progress p;
  p.total_steps = in.total_steps;
  p.checkpoint_period = in.checkpoint_period;
  if (steps.empty()) return p;
  p.first_step = steps.front().step;
  p.last_step = steps.back().step;
  for (const auto& s : steps) p.sum_step_seconds += s.seconds;
  size_t skip = static_cast<size_t>(in.skip_steps);
  if (steps.size() <= skip) skip = steps.size() > 1 ? 1 : 0;
  double sum = 0;
  for (size_t i = skip; i < steps.size(); ++i) sum += steps[i].seconds;
  p.step_time_seconds = steps.size() > skip ? sum / static_cast<double>(steps.size() - skip) : 0;
  if (in.wall_seconds && *in.wall_seconds > 0)
    p.unexplained_gap_seconds = static_cast<double>(*in.wall_seconds) - p.sum_step_seconds - in.setup_allowance_seconds;
  int64_t last = *p.last_step;
  if (in.checkpoint_period && *in.checkpoint_period > 0) {
    int64_t ckpt = last / *in.checkpoint_period * *in.checkpoint_period;
    if (ckpt > 0) {   // the step-0 save of a fresh start does not count
      p.last_checkpoint_step = ckpt;
      p.progress_lost_steps = last - ckpt;
    }
  }
  if (in.total_steps) {
    int64_t left = *in.total_steps - 1 - last;
    p.remaining_seconds = left > 0 ? static_cast<double>(left) * p.step_time_seconds : 0.0;
  }
  return p;
}

}  // namespace diagnose
