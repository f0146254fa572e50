#include "engine/sweep/steady_state.h"

#include <cmath>

#include "engine/analysis/robust_statistics.h"

namespace diagnose::sweep {

namespace {

constexpr int64_t kWarmupEnd = 5;         // steps 0-4: compilation and warmup
constexpr int64_t kProfiledWindowStart = 9;
constexpr int64_t kWindowEnd = 14;

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double SampleStddev(const std::vector<double>& values, double mean) {
  if (values.size() < 2) return 0;
  double sum = 0;
  for (double v : values) sum += (v - mean) * (v - mean);
  return std::sqrt(sum / static_cast<double>(values.size() - 1));
}

}  // namespace

bool ProfilerOn(const JobFacts& facts, std::string* evidence) {
  auto set = [&](const std::string& text) {
    if (evidence != nullptr) *evidence = text;
  };
  if (auto it = facts.config.find("profiler"); it != facts.config.end()) {
    set("Config param profiler: " + it->second);
    const std::string& v = it->second;
    return !v.empty() && v != "\"\"" && v != "''" && v != "None";
  }
  if (auto it = facts.header.passthrough.find("profiler"); it != facts.header.passthrough.end()) {
    set("PASSTHROUGH_ARGS profiler=" + it->second);
    return !it->second.empty();
  }
  set("");
  return false;
}

SteadyState MeasureSteadyState(const JobFacts& facts) {
  SteadyState s;
  s.profiler_on = ProfilerOn(facts, &s.profiler_evidence);
  s.first_step = s.profiler_on ? kProfiledWindowStart : kWarmupEnd;
  s.last_step = kWindowEnd;

  std::vector<const StepRecord*> window;
  for (const StepRecord& step : facts.steps)
    if (step.step >= s.first_step && step.step <= s.last_step && step.tokens_per_sec_per_device > 0)
      window.push_back(&step);
  if (window.empty()) return s;

  std::vector<double> values;
  for (const StepRecord* step : window) values.push_back(step->tokens_per_sec_per_device);
  const double median = analysis::Median(values);
  const double spread = 1.4826 * analysis::Mad(values, median);
  const double limit = std::max(kOutlierRobustSigmas * spread, median * kOutlierFloorPct / 100.0);

  double seconds = 0, mfu = 0;
  int mfu_count = 0;
  for (const StepRecord* step : window) {
    if (window.size() >= 3 && std::fabs(step->tokens_per_sec_per_device - median) > limit) {
      s.outlier_steps.push_back(step->step);
      continue;
    }
    s.steps_used.push_back(step->step);
    s.tgs.push_back(step->tokens_per_sec_per_device);
    seconds += step->seconds;
    if (step->mfu_pct) {
      mfu += *step->mfu_pct;
      ++mfu_count;
    }
    if (s.first_line.empty()) s.first_line = step->where;
    s.last_line = step->where;
  }
  s.mean_tgs = Mean(s.tgs);
  s.stddev_tgs = SampleStddev(s.tgs, s.mean_tgs);
  if (!s.steps_used.empty()) s.mean_step_seconds = seconds / static_cast<double>(s.steps_used.size());
  if (mfu_count > 0) s.mean_mfu_pct = mfu / mfu_count;
  return s;
}

}  // namespace diagnose::sweep
