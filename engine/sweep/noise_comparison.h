// Is a variant's TGS really different from the baseline's? The tuning runbook hunts 1-3 % effects
// under 0.3-1 % noise, so a leaderboard ranked by means alone crowns noise. Each job's steady
// window gives a mean and a step-to-step spread; repeats of a variant give the run-to-run spread.
//
// Model: a job's mean = the variant's level + a run-to-run offset + the mean of its step noise.
// The variance of one job's mean is estimated from
//   - the pooled step variance / steps per job (what step noise alone puts on a mean), and
//   - the pooled variance of job means among repeats of the same variant (run-to-run, measured
//     only when the cell has repeats).
// The run-to-run estimate replaces the step one only when it exceeds it significantly (one-sided
// F test at 5 %): a couple of repeats estimate a variance with 1-2 degrees of freedom, and taking
// it whenever it happens to be larger would swap a well-measured spread for a Student t with
// df 2 half the time, for no evidence that runs differ by more than their steps do.
// A variant's level is the mean of its job means. The delta to the baseline gets a Student-t
// interval (Welch-Satterthwaite degrees of freedom where both sides carry their own estimate).
//
// Many variants are compared with one baseline, so the interval's level is Bonferroni-corrected
// over the cell's variants (family-wise error 5 %): with 40 profiles and no real effect, a
// per-comparison 95 % interval would crown one of them in most sweeps.
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
  // Variance of one job's mean under the model above, and the df that goes with it.
  double JobMeanVariance() const;
  int JobMeanDf() const;
  bool run_to_run_measured() const { return run_df > 0; }
};

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

// `family_size`: how many variants are compared with the same baseline in this cell (>= 1).
Comparison CompareMeans(double variant_mean, int variant_jobs, double baseline_mean, int baseline_jobs,
                        const NoiseModel& noise, int family_size);

// Two independent groups with their own spread (sweep-vs-sweep: one cell, two commits).
Comparison CompareGroups(const std::vector<JobSample>& before, const std::vector<JobSample>& after, int family_size);

double MeanOfMeans(const std::vector<JobSample>& jobs);

}  // namespace diagnose::sweep
