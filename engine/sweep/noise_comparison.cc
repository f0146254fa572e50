#include "engine/sweep/noise_comparison.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include "engine/analysis/robust_statistics.h"

namespace diagnose::sweep {

namespace {

constexpr double kRunToRunTestAlpha = 0.05;

double TwoSidedCritical(double alpha, double df) {
  if (df < 1) df = 1;
  boost::math::students_t dist(df);
  return boost::math::quantile(boost::math::complement(dist, alpha / 2));
}

// The interval delta +- critical * sqrt(variance) and its verdict; `confidence` is the per-comparison
// level that critical value has at `df`.
Comparison IntervalWithCritical(double variant_mean, double baseline_mean, double variance, double df, double critical) {
  Comparison c;
  if (baseline_mean <= 0 || variant_mean <= 0) return c;
  c.df = df;
  boost::math::students_t dist(std::max(df, 1.0));
  c.confidence = 1 - 2 * boost::math::cdf(boost::math::complement(dist, critical));
  const double delta = variant_mean - baseline_mean;
  const double half = variance > 0 ? critical * std::sqrt(variance) : 0;
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

// Bonferroni over `family_size` independent comparisons (sweep compare: one per cell).
Comparison Interval(double variant_mean, double baseline_mean, double variance, double df, int family_size) {
  const double alpha = kFamilyAlpha / std::max(family_size, 1);
  return IntervalWithCritical(variant_mean, baseline_mean, variance, df, TwoSidedCritical(alpha, df));
}

// Nodes and weights of an equal-probability midpoint rule: the (k + 1/2)/M quantiles of a
// distribution, each weighing 1/M. Smooth bounded integrands need no tail refinement.
template <typename Distribution>
std::vector<double> MidpointQuantiles(const Distribution& dist, int count) {
  std::vector<double> nodes;
  for (int k = 0; k < count; ++k) nodes.push_back(boost::math::quantile(dist, (k + 0.5) / count));
  return nodes;
}

constexpr int kSharedTermNodes = 256;
constexpr int kScaleNodes = 96;
constexpr double kLargeDf = 1e5;   // beyond this S is 1 for all practical purposes

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

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
  if (!run_to_run_dominates && step_part > 0) return step_part;
  if (bulk_df <= 0) return run_variance;
  const double pooled = (run_df * run_variance + bulk_df * bulk_variance) / (run_df + bulk_df);
  return std::max(pooled, step_part);
}

int NoiseModel::JobMeanDf() const {
  const double step_part = mean_steps > 0 ? step_variance / mean_steps : 0;
  if (!run_to_run_dominates && step_part > 0) return step_df;
  if (bulk_df <= 0) return run_df;
  const double pooled = (run_df * run_variance + bulk_df * bulk_variance) / (run_df + bulk_df);
  return pooled >= step_part ? run_df + bulk_df : step_df;
}

double BiweightMidvariance(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double median = analysis::Median(values);
  const double mad = analysis::Mad(values, median);
  if (mad <= 0) return 0;
  double numerator = 0, denominator = 0;
  for (double v : values) {
    const double u = (v - median) / (9 * mad);
    if (std::fabs(u) >= 1) continue;
    const double w = 1 - u * u;
    numerator += (v - median) * (v - median) * w * w * w * w;
    denominator += w * (1 - 5 * u * u);
  }
  if (denominator == 0) return 0;
  return static_cast<double>(values.size()) * numerator / (denominator * denominator);
}

double MaxStatisticCritical(const std::vector<double>& lambdas, double df, double alpha) {
  if (lambdas.empty()) return 0;
  // Comparisons with the same lambda contribute the same factor: integrate over distinct values.
  std::map<double, int> counts;
  for (double l : lambdas) ++counts[std::clamp(l, 0.0, 0.999999)];
  const std::vector<double> shared = MidpointQuantiles(boost::math::normal(), kSharedTermNodes);
  std::vector<double> scales = {1.0};
  if (df > 0 && df < kLargeDf) {
    scales = MidpointQuantiles(boost::math::chi_squared(df), kScaleNodes);
    for (double& s : scales) s = std::sqrt(s / df);
  }
  auto coverage = [&](double c) {
    double total = 0;
    for (double s : scales)
      for (double w : shared) {
        double log_p = 0;
        for (const auto& [lambda, count] : counts) {
          const double spread = std::sqrt(1 - lambda * lambda);
          const double p = NormalCdf((c * s - lambda * w) / spread) - NormalCdf((-c * s - lambda * w) / spread);
          if (p <= 0) {
            log_p = -INFINITY;
            break;
          }
          log_p += count * std::log(p);
        }
        total += std::exp(log_p);
      }
    return total / (static_cast<double>(scales.size()) * static_cast<double>(shared.size()));
  };
  // Between one comparison's critical value and Bonferroni's: positive correlation puts it there.
  double low = TwoSidedCritical(alpha, df > 0 ? df : kLargeDf);
  double high = TwoSidedCritical(alpha / static_cast<double>(lambdas.size()), df > 0 ? df : kLargeDf);
  if (lambdas.size() == 1) return low;
  for (int i = 0; i < 40 && high - low > 1e-6; ++i) {
    const double mid = (low + high) / 2;
    (coverage(mid) < 1 - alpha ? low : high) = mid;
  }
  return high;
}

double FamilyCritical(const std::vector<int>& variant_jobs, int baseline_jobs, const NoiseModel& noise) {
  std::vector<double> lambdas;
  for (int n : variant_jobs)
    if (n > 0 && baseline_jobs > 0) lambdas.push_back(std::sqrt(static_cast<double>(n) / (n + baseline_jobs)));
  return MaxStatisticCritical(lambdas, std::max(noise.JobMeanDf(), 1));
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
  std::vector<double> single_runs;
  for (const auto& group : groups)
    if (group.size() == 1) single_runs.push_back(group[0].mean);
  if (static_cast<int>(single_runs.size()) >= kMinBulkRuns) {
    noise.bulk_variance = BiweightMidvariance(single_runs);
    if (noise.bulk_variance > 0)
      noise.bulk_df = static_cast<int>(kBiweightEfficiency * static_cast<double>(single_runs.size() - 1));
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
                        const NoiseModel& noise, double family_critical) {
  if (variant_jobs < 1 || baseline_jobs < 1) return {};
  const double job_variance = noise.JobMeanVariance();
  const double variance = job_variance / variant_jobs + job_variance / baseline_jobs;
  return IntervalWithCritical(variant_mean, baseline_mean, variance, noise.JobMeanDf(), family_critical);
}

Comparison CompareMeans(double variant_mean, int variant_jobs, double baseline_mean, int baseline_jobs,
                        const NoiseModel& noise) {
  return CompareMeans(variant_mean, variant_jobs, baseline_mean, baseline_jobs, noise,
                      TwoSidedCritical(kFamilyAlpha, noise.JobMeanDf()));
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
