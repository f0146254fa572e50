#include "engine/sweep/noise_comparison.h"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/students_t.hpp>

namespace diagnose::sweep {

namespace {

constexpr double kRunToRunTestAlpha = 0.05;

double TwoSidedCritical(double alpha, double df) {
  if (df < 1) df = 1;
  boost::math::students_t dist(df);
  return boost::math::quantile(boost::math::complement(dist, alpha / 2));
}

Comparison Interval(double variant_mean, double baseline_mean, double variance, double df, int family_size) {
  Comparison c;
  if (baseline_mean <= 0 || variant_mean <= 0) return c;
  const int family = std::max(family_size, 1);
  const double alpha = kFamilyAlpha / family;
  c.confidence = 1 - alpha;
  c.df = df;
  const double delta = variant_mean - baseline_mean;
  const double half = variance > 0 ? TwoSidedCritical(alpha, df) * std::sqrt(variance) : 0;
  c.delta_pct = 100 * delta / baseline_mean;
  c.low_pct = 100 * (delta - half) / baseline_mean;
  c.high_pct = 100 * (delta + half) / baseline_mean;
  if (variance <= 0) {
    c.verdict = Verdict::kNotCompared;   // no spread known at all: say nothing rather than guess
  } else if (c.low_pct > 0) {
    c.verdict = Verdict::kBetter;
  } else if (c.high_pct < 0) {
    c.verdict = Verdict::kWorse;
  } else {
    c.verdict = Verdict::kWithinNoise;
  }
  return c;
}

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kBetter: return "better";
    case Verdict::kWorse: return "worse";
    case Verdict::kWithinNoise: return "within noise";
    case Verdict::kNotCompared: return "not compared";
  }
  return "not compared";
}

double NoiseModel::JobMeanVariance() const {
  const double step_part = mean_steps > 0 ? step_variance / mean_steps : 0;
  if (run_to_run_dominates || step_part <= 0) return run_variance;
  return step_part;
}

int NoiseModel::JobMeanDf() const {
  const double step_part = mean_steps > 0 ? step_variance / mean_steps : 0;
  return run_to_run_dominates || step_part <= 0 ? run_df : step_df;
}

double MeanOfMeans(const std::vector<JobSample>& jobs) {
  if (jobs.empty()) return 0;
  double sum = 0;
  for (const auto& j : jobs) sum += j.mean;
  return sum / static_cast<double>(jobs.size());
}

NoiseModel EstimateNoise(const std::vector<std::vector<JobSample>>& groups) {
  NoiseModel noise;
  double step_ss = 0, run_ss = 0, steps = 0;
  int jobs = 0;
  for (const auto& group : groups) {
    for (const auto& job : group) {
      if (job.steps >= 2) {
        step_ss += job.stddev * job.stddev * (job.steps - 1);
        noise.step_df += job.steps - 1;
      }
      steps += job.steps;
      ++jobs;
    }
    if (group.size() >= 2) {
      const double m = MeanOfMeans(group);
      for (const auto& job : group) run_ss += (job.mean - m) * (job.mean - m);
      noise.run_df += static_cast<int>(group.size()) - 1;
    }
  }
  if (noise.step_df > 0) noise.step_variance = step_ss / noise.step_df;
  if (noise.run_df > 0) noise.run_variance = run_ss / noise.run_df;
  if (jobs > 0) noise.mean_steps = steps / jobs;
  const double step_part = noise.mean_steps > 0 ? noise.step_variance / noise.mean_steps : 0;
  if (noise.run_df > 0 && noise.step_df > 0 && step_part > 0) {
    boost::math::fisher_f f(noise.run_df, noise.step_df);
    noise.run_to_run_dominates =
        noise.run_variance / step_part > boost::math::quantile(boost::math::complement(f, kRunToRunTestAlpha));
  }
  return noise;
}

Comparison CompareMeans(double variant_mean, int variant_jobs, double baseline_mean, int baseline_jobs,
                        const NoiseModel& noise, int family_size) {
  if (variant_jobs < 1 || baseline_jobs < 1) return {};
  const double job_variance = noise.JobMeanVariance();
  const double variance = job_variance / variant_jobs + job_variance / baseline_jobs;
  return Interval(variant_mean, baseline_mean, variance, noise.JobMeanDf(), family_size);
}

Comparison CompareGroups(const std::vector<JobSample>& before, const std::vector<JobSample>& after, int family_size) {
  if (before.empty() || after.empty()) return {};
  const NoiseModel a = EstimateNoise({after});
  const NoiseModel b = EstimateNoise({before});
  const double va = a.JobMeanVariance() / after.size();
  const double vb = b.JobMeanVariance() / before.size();
  const double da = std::max(a.JobMeanDf(), 1), db = std::max(b.JobMeanDf(), 1);
  // Welch-Satterthwaite
  const double df = (va + vb) * (va + vb) / ((va * va) / da + (vb * vb) / db + 1e-300);
  return Interval(MeanOfMeans(after), MeanOfMeans(before), va + vb, df, family_size);
}

}  // namespace diagnose::sweep
