// Is a variant's TGS really different from the baseline's? The tuning runbook hunts 1-3 % effects
// under 0.3-1 % noise, so a leaderboard ranked by means alone crowns noise. Each job's steady
// window gives a mean and a step-to-step spread; repeats of a variant give the run-to-run spread.
//
// Model: a job's mean = the variant's level + a run-to-run offset + the mean of its step noise.
// The variance of one job's mean is estimated from
//   - the pooled step variance / steps per job (what step noise alone puts on a mean), and
//   - the pooled variance of job means among repeats of the same variant (run-to-run, measured
//     only when the cell has repeats).
// The run-to-run estimate counts only when it exceeds the step one significantly (one-sided F test
// at 5 %): a couple of repeats estimate a variance with 1-2 degrees of freedom, and taking it
// whenever it happens to be larger would swap a well-measured spread for a Student t with df 2 half
// the time, for no evidence that runs differ by more than their steps do.
//
// When the repeats do say so, their 2-4 degrees of freedom alone would make every interval of the
// cell useless (a family-wise t quantile at df 2 is ~26), and by chance that happens in 5 % of cells
// whose runs do not differ at all. A tuning sweep holds another measure of the same spread: the
// single-run variants around their bulk. Each of their job means carries the run-to-run offset and
// the step noise like a repeat does, plus the variant's own effect, so their robust spread (biweight
// midvariance, blind to the few far-off real effects and widened by the near ones: it errs wide)
// is pooled with the repeats' estimate, weighted by degrees of freedom.
//
// A variant's level is the mean of its job means. The delta to the baseline gets a Student-t
// interval (Welch-Satterthwaite degrees of freedom where both sides carry their own estimate).
//
// Many variants are compared with one baseline, so the interval's level is corrected over the
// cell's variants (family-wise error 5 %): with 40 profiles and no real effect, a per-comparison 95 %
// interval would crown one of them in most sweeps. The correction is Dunnett's: the critical value
// of the largest |t| over the family, whose comparisons share the baseline's mean and so are
// positively correlated (corr = lambda_i lambda_j, lambda_i^2 = n_i / (n_i + n_baseline)). It holds
// the family-wise error at exactly 5 % where Bonferroni's 5 % / K spends it on comparisons that
// cannot all err independently.
#pragma once

#include <string>
#include <vector>

namespace diagnose::sweep {

// One job's steady window, as the comparison sees it.
struct JobSample {
  double mean = 0;
  double stddev = 0;   // step-to-step, sample
  int steps = 0;
};

struct NoiseModel {
  double step_variance = 0;      // pooled within-job variance of step TGS
  int step_df = 0;
  double run_variance = 0;       // pooled variance of job means among repeats (0 when unmeasured)
  int run_df = 0;
  double mean_steps = 0;         // steps per job, for the step part of a job mean's variance
  bool run_to_run_dominates = false;   // the F test above
  double bulk_variance = 0;      // biweight midvariance of the single-run variants' job means
  int bulk_df = 0;               // its degrees of freedom (0: fewer than kMinBulkRuns single runs)
  // Variance of one job's mean under the model above, and the df that goes with it.
  double JobMeanVariance() const;
  int JobMeanDf() const;
  bool run_to_run_measured() const { return run_df > 0; }
};

// Fewer single-run variants than this measure no bulk: the repeats alone speak for run-to-run noise.
inline constexpr int kMinBulkRuns = 10;
// The biweight midvariance's efficiency against the sample variance at the normal, measured 0.90
// at 30 runs (20,000 draws); its degrees of freedom are this share of the sample variance's.
inline constexpr double kBiweightEfficiency = 0.87;

// Tukey's biweight midvariance (c = 9 MADs): a spread estimate that gives far-off values no weight.
// 0 for fewer than two values or no spread.
double BiweightMidvariance(const std::vector<double>& values);

// `groups`: the job samples of each variant of one cell (only successful, measured jobs).
NoiseModel EstimateNoise(const std::vector<std::vector<JobSample>>& groups);

enum class Verdict { kBetter, kWorse, kWithinNoise, kNotCompared };
const char* VerdictName(Verdict v);   // "better" | "worse" | "within noise" | "not compared"

struct Comparison {
  double delta_pct = 0;      // (variant - baseline) / baseline * 100
  double low_pct = 0;        // the interval on delta_pct
  double high_pct = 0;
  double confidence = 0;     // the per-comparison level the interval has (after correction)
  double df = 0;
  Verdict verdict = Verdict::kNotCompared;
};

inline constexpr double kFamilyAlpha = 0.05;

// Dunnett's two-sided critical value: the c with P(max_i |T_i| <= c) = 1 - alpha, where
// T_i = (Z_i) / S, Z_i standard normal with corr(Z_i, Z_j) = lambda_i lambda_j and S^2 ~ chi2(df) / df
// (df <= 0: S = 1). Computed by quadrature over the shared baseline term and S and bisection on c:
// deterministic, the same answer for the same family. `lambdas` in [0, 1).
double MaxStatisticCritical(const std::vector<double>& lambdas, double df, double alpha = kFamilyAlpha);

// The Dunnett critical value for variants with `variant_jobs` jobs each against a baseline of
// `baseline_jobs` jobs, at the noise model's degrees of freedom.
double FamilyCritical(const std::vector<int>& variant_jobs, int baseline_jobs, const NoiseModel& noise);

// One variant against the baseline with the family's critical value (FamilyCritical).
Comparison CompareMeans(double variant_mean, int variant_jobs, double baseline_mean, int baseline_jobs,
                        const NoiseModel& noise, double family_critical);
// A single comparison (family of one): the plain Student-t interval.
Comparison CompareMeans(double variant_mean, int variant_jobs, double baseline_mean, int baseline_jobs,
                        const NoiseModel& noise);

// Two independent groups with their own spread (sweep-vs-sweep: one cell, two commits).
Comparison CompareGroups(const std::vector<JobSample>& before, const std::vector<JobSample>& after, int family_size);

double MeanOfMeans(const std::vector<JobSample>& jobs);

}  // namespace diagnose::sweep
