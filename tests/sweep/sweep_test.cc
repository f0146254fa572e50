// engine/sweep: the steady window, the noise-aware comparison, the runbook's recovery rules, the
// nodelist check and the leaderboard, on JobFacts built in memory.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "engine/sweep/failure_rules.h"
#include "engine/sweep/job_variant.h"
#include "engine/sweep/noise_comparison.h"
#include "engine/sweep/steady_state.h"
#include "engine/sweep/sweep_html.h"
#include "engine/sweep/sweep_render.h"
#include "engine/sweep/tuning_sweep.h"

namespace diagnose::sweep {
namespace {

JobFacts Job(const std::string& id, const std::string& profile, const std::vector<double>& tgs_by_step,
             bool profiler = false, const std::string& nodelist = "n1,n2") {
  JobFacts f;
  f.id = id;
  f.log_path = id + "-JAX-llama2-70b.log";
  f.status = JobStatus::kCompleted;
  f.header.model_name = "llama2-70b";
  f.header.nnodes = 2;
  f.header.nodelist = nodelist;
  f.header.passthrough["steps"] = "15";
  if (!profile.empty()) f.header.passthrough["_env_TUNE_PROFILE"] = profile;
  if (profiler) f.config["profiler"] = "xplane";
  for (size_t s = 0; s < tgs_by_step.size(); ++s) {
    StepRecord r;
    r.step = static_cast<int64_t>(s);
    r.tokens_per_sec_per_device = tgs_by_step[s];
    r.seconds = 4096.0 / tgs_by_step[s];
    r.mfu_pct = tgs_by_step[s] / 60;
    r.where = {f.log_path, static_cast<int64_t>(100 + s), "completed step: " + std::to_string(s)};
    f.steps.push_back(r);
  }
  return f;
}

std::vector<double> Steps(double level, double noise_pct, std::mt19937& rng, int count = 15) {
  std::normal_distribution<double> noise(0, level * noise_pct / 100);
  std::vector<double> v;
  for (int s = 0; s < count; ++s) v.push_back(s < 5 ? level * 0.5 : level + noise(rng));
  return v;
}

TEST(SteadyState, ProfilerOffUsesSteps5To14) {
  std::vector<double> tgs(15, 1000);
  for (int s = 0; s < 5; ++s) tgs[s] = 10;   // warmup must not count
  const SteadyState s = MeasureSteadyState(Job("1", "", tgs));
  EXPECT_FALSE(s.profiler_on);
  EXPECT_EQ(s.first_step, 5);
  EXPECT_EQ(s.last_step, 14);
  EXPECT_EQ(s.steps_used.size(), 10u);
  EXPECT_DOUBLE_EQ(s.mean_tgs, 1000);
  EXPECT_EQ(s.first_line.line, 105);
}

TEST(SteadyState, ProfilerOnUsesSteps9To14AndSkipsTheDumpStep) {
  std::vector<double> tgs(15, 2000);
  tgs[8] = 50;   // the profile-dump step
  tgs[6] = 1500;
  const SteadyState s = MeasureSteadyState(Job("1", "", tgs, /*profiler=*/true));
  EXPECT_TRUE(s.profiler_on);
  EXPECT_EQ(s.profiler_evidence, "Config param profiler: xplane");
  EXPECT_EQ(s.first_step, 9);
  EXPECT_EQ(s.steps_used.size(), 6u);
  EXPECT_DOUBLE_EQ(s.mean_tgs, 2000);
}

TEST(SteadyState, AnOutlierStepInsideTheWindowIsLeftOutAndNamed) {
  std::mt19937 rng(3);
  std::vector<double> tgs = Steps(2000, 0.5, rng);
  tgs[11] = 1200;
  const SteadyState s = MeasureSteadyState(Job("1", "", tgs));
  ASSERT_EQ(s.outlier_steps.size(), 1u);
  EXPECT_EQ(s.outlier_steps[0], 11);
  EXPECT_NEAR(s.mean_tgs, 2000, 20);
  // Ordinary noise is not an outlier.
  const SteadyState clean = MeasureSteadyState(Job("2", "", Steps(2000, 1.0, rng)));
  EXPECT_TRUE(clean.outlier_steps.empty());
}

TEST(NoiseComparison, RunToRunNoiseReplacesStepNoiseOnlyWhenSignificantlyLarger) {
  // Step sd 10 over 10 steps: a job mean carries variance 10 from its steps.
  auto job = [](double mean) { return JobSample{mean, 10, 10}; };
  NoiseModel calm = EstimateNoise({{job(1000), job(1003), job(998)}});
  EXPECT_FALSE(calm.run_to_run_dominates);
  EXPECT_NEAR(calm.JobMeanVariance(), 10, 1e-9);
  EXPECT_EQ(calm.JobMeanDf(), 27);
  NoiseModel rough = EstimateNoise({{job(1000), job(1030), job(970), job(1015), job(985)}});
  EXPECT_TRUE(rough.run_to_run_dominates);
  EXPECT_NEAR(rough.JobMeanVariance(), rough.run_variance, 1e-9);
  EXPECT_EQ(rough.JobMeanDf(), 4);
}

TEST(NoiseComparison, BetterWorseAndWithinNoise) {
  NoiseModel m;
  m.step_variance = 20 * 20;   // 1 % of 2000
  m.step_df = 90;
  m.mean_steps = 10;
  EXPECT_EQ(CompareMeans(2060, 1, 2000, 3, m).verdict, Verdict::kBetter);
  EXPECT_EQ(CompareMeans(1940, 1, 2000, 3, m).verdict, Verdict::kWorse);
  EXPECT_EQ(CompareMeans(2005, 1, 2000, 3, m).verdict, Verdict::kWithinNoise);
  // The same delta among 40 comparisons needs more to count.
  const Comparison one = CompareMeans(2030, 1, 2000, 3, m);
  const Comparison forty = CompareMeans(2030, 1, 2000, 3, m, FamilyCritical(std::vector<int>(40, 1), 3, m));
  EXPECT_GT(forty.high_pct - forty.low_pct, one.high_pct - one.low_pct);
  EXPECT_GT(forty.confidence, one.confidence);
  EXPECT_NEAR(one.confidence, 0.95, 1e-9);
  EXPECT_NEAR(one.delta_pct, 1.5, 1e-9);
}

TEST(NoiseComparison, MaxStatisticCriticalIsDunnettsTabledValue) {
  // Dunnett (1955), two-sided 5 %, equal group sizes (lambda^2 = 1/2), infinite df: 2.21 for two
  // comparisons, 2.44 for four.
  const double half = std::sqrt(0.5);
  EXPECT_NEAR(MaxStatisticCritical({half, half}, 0), 2.21, 0.01);
  EXPECT_NEAR(MaxStatisticCritical({half, half, half, half}, 0), 2.44, 0.01);
  // One comparison: the Student t quantile.
  EXPECT_NEAR(MaxStatisticCritical({0.5}, 12), 2.1788, 1e-3);
  // Uncorrelated comparisons: Sidak's value; correlated ones need less, Bonferroni more.
  const double sidak = 3.0157;   // the normal quantile at (1 + 0.95^(1/20)) / 2
  EXPECT_NEAR(MaxStatisticCritical(std::vector<double>(20, 0.0), 0), sidak, 0.01);
  const double dunnett = MaxStatisticCritical(std::vector<double>(20, 0.5), 0);
  EXPECT_LT(dunnett, sidak);
  EXPECT_GT(dunnett, 1.96);
  // Few degrees of freedom widen it; the same family gives the same value.
  EXPECT_GT(MaxStatisticCritical(std::vector<double>(20, 0.5), 8), dunnett + 0.5);
  EXPECT_EQ(MaxStatisticCritical(std::vector<double>(20, 0.5), 8), MaxStatisticCritical(std::vector<double>(20, 0.5), 8));
}

TEST(NoiseComparison, BiweightSpreadIgnoresFarOffValues) {
  std::vector<double> values;
  for (int i = 0; i < 30; ++i) values.push_back(1000 + (i % 2 == 0 ? 1 : -1) * (i % 5));   // sd ~2.9
  const double clean = BiweightMidvariance(values);
  EXPECT_GT(clean, 4);
  EXPECT_LT(clean, 16);
  values.push_back(1060);   // a real +6 % effect
  values.push_back(940);
  EXPECT_NEAR(BiweightMidvariance(values), clean, 0.25 * clean);
  EXPECT_EQ(BiweightMidvariance({1000}), 0);
}

TEST(NoiseComparison, RepeatsThatSpreadByChancePoolWithTheSingleRunsInsteadOfTwoDf) {
  // Step sd 10 over 10 steps: a job mean carries variance 10. Three baseline repeats that happen to
  // spread (variance 49 between them), and 30 single-run variants whose means spread by ~4.
  auto job = [](double mean) { return JobSample{mean, 10, 10}; };
  std::vector<std::vector<JobSample>> groups = {{job(1000), job(1007), job(993)}};
  for (int v = 0; v < 30; ++v) groups.push_back({job(1000 + 2 * (v % 7 - 3))});
  const NoiseModel noise = EstimateNoise(groups);
  ASSERT_TRUE(noise.run_to_run_dominates);
  EXPECT_EQ(noise.run_df, 2);
  EXPECT_EQ(noise.bulk_df, static_cast<int>(kBiweightEfficiency * 29));
  // Neither the repeats' 49 on 2 df nor step noise alone: the pooled spread, on 27 df.
  EXPECT_GT(noise.JobMeanVariance(), 10);
  EXPECT_LT(noise.JobMeanVariance(), 49);
  EXPECT_EQ(noise.JobMeanDf(), 2 + noise.bulk_df);
  // Without enough single runs the repeats speak alone.
  groups.resize(5);
  const NoiseModel few = EstimateNoise(groups);
  EXPECT_EQ(few.bulk_df, 0);
  EXPECT_EQ(few.JobMeanDf(), few.run_df);
}

TEST(FailureRules, ThreeConsecutiveRcclFlakesDropTheProfileAsInfraFlake) {
  JobFailure flake{JobOutcome::kRcclInitFlake, "hang", {}};
  const VariantFailures v = ApplyRecoveryRules({{"10", flake}, {"11", flake}, {"12", flake}});
  EXPECT_EQ(v.rule, RecoveryRule::kInfraFlake);
  EXPECT_TRUE(v.dropped);
  EXPECT_EQ(v.deciding_jobs, (std::vector<std::string>{"10", "11", "12"}));
  // Two flakes then a success: retried, kept.
  const VariantFailures r = ApplyRecoveryRules({{"10", flake}, {"11", flake}, {"12", {}}});
  EXPECT_EQ(r.rule, RecoveryRule::kRetried);
  EXPECT_FALSE(r.dropped);
  // A success between flakes resets the count.
  EXPECT_NE(ApplyRecoveryRules({{"1", flake}, {"2", flake}, {"3", {}}, {"4", flake}}).rule, RecoveryRule::kInfraFlake);
}

TEST(FailureRules, OomIsDroppedWithItsAllocationUnknownFlagIsFixedOnceCoordinationStops) {
  const VariantFailures oom = ApplyRecoveryRules({{"7", {JobOutcome::kOom, "221.71GiB", {}}}});
  EXPECT_EQ(oom.rule, RecoveryRule::kDroppedOom);
  EXPECT_NE(oom.explanation.find("221.71GiB"), std::string::npos);
  const JobFailure flag{JobOutcome::kUnknownFlag, "--xla_gpu_old_flag", {}};
  EXPECT_EQ(ApplyRecoveryRules({{"8", flag}}).rule, RecoveryRule::kFixFlag);
  EXPECT_EQ(ApplyRecoveryRules({{"8", flag}, {"9", {}}}).rule, RecoveryRule::kRetried);
  EXPECT_EQ(ApplyRecoveryRules({{"8", flag}, {"9", flag}}).rule, RecoveryRule::kDroppedObsoleteFlag);
  const JobFailure coord{JobOutcome::kCoordinationTimeout, "", {}};
  EXPECT_EQ(ApplyRecoveryRules({{"5", coord}}).rule, RecoveryRule::kRetryPending);
  const VariantFailures stop = ApplyRecoveryRules({{"5", coord}, {"6", coord}});
  EXPECT_TRUE(stop.stop_sweep);
}

TEST(FailureRules, ClassifiesFromTriageFacts) {
  JobFacts oom;
  oom.status = JobStatus::kFailed;
  oom.failure_class = "oom-gpu";
  oom.oom_allocation = "12.5GiB";
  oom.classes.push_back({"oom-gpu", 90, "training", 0, "", {"x.log", 40, "RESOURCE_EXHAUSTED"}, 1});
  JobFailure f = ClassifyJob(oom, false);
  EXPECT_EQ(f.outcome, JobOutcome::kOom);
  EXPECT_EQ(f.detail, "12.5GiB");
  EXPECT_EQ(f.evidence.line, 40);

  JobFacts flag;
  flag.status = JobStatus::kFailed;
  flag.failure_class = "xla-compile-fail";
  flag.classes.push_back({"xla-compile-fail", 84, "training", 0, "",
                          {"y.log", 9, "F0101 parse_flags_from_env.cc:226] Unknown flag in XLA_FLAGS: --xla_gpu_nope=1"}, 1});
  f = ClassifyJob(flag, false);
  EXPECT_EQ(f.outcome, JobOutcome::kUnknownFlag);
  EXPECT_EQ(f.detail, "--xla_gpu_nope");

  JobFacts flake;
  flake.status = JobStatus::kCancelled;
  flake.failure_class = "cancelled-after-hang";
  flake.nccl_init_bursts = 2;
  EXPECT_EQ(ClassifyJob(flake, false).outcome, JobOutcome::kRcclInitFlake);
  // A Python error before the first step is not a flake, whatever NCCL printed during init.
  JobFacts python;
  python.status = JobStatus::kFailed;
  python.failure_class = "python-exception";
  python.nccl_init_bursts = 1;
  EXPECT_EQ(ClassifyJob(python, false).outcome, JobOutcome::kOtherFailure);

  // Cleanup exit=143 after the last step: the window was measured, the job counts.
  JobFacts soft = Job("1", "", std::vector<double>(15, 100));
  soft.status = JobStatus::kCancelled;
  EXPECT_EQ(ClassifyJob(soft, true).outcome, JobOutcome::kSucceeded);
}

TEST(JobVariant, ParsesTuneProfileArmsAndGitSummary) {
  const auto profiles = ParseTuneProfiles(R"(TUNE_PROFILE="${TUNE_PROFILE:-baseline}"
TUNE_FLAGS=""
case "${TUNE_PROFILE}" in
  baseline) ;;
  restore_default)
    TUNE_FLAGS+=" --xla_gpu_enable_pipelined_p2p=false"
    ;;
  Gco1G|Gco1G-b) TUNE_FLAGS+=" --xla_gpu_all_gather_combine_threshold_bytes=1073741824" ;;
  *)
    echo "[train_env.sh] WARNING: unknown TUNE_PROFILE='$TUNE_PROFILE'" >&2
    ;;
esac
case "${TUNE_PROFILE:-}" in
  nccl_chan8) export NCCL_NCHANNELS_PER_NET_PEER=8 ;;
esac
)");
  ASSERT_TRUE(profiles.count("baseline"));
  EXPECT_TRUE(profiles.at("baseline").empty());
  EXPECT_EQ(profiles.at("restore_default"), std::vector<std::string>{"--xla_gpu_enable_pipelined_p2p=false"});
  EXPECT_EQ(profiles.at("Gco1G-b"), std::vector<std::string>{"--xla_gpu_all_gather_combine_threshold_bytes=1073741824"});
  EXPECT_EQ(profiles.at("nccl_chan8"), std::vector<std::string>{"NCCL_NCHANNELS_PER_NET_PEER=8"});
  EXPECT_FALSE(profiles.count("*"));

  std::string commit, branch;
  ParseGitSummary("=== GIT SUMMARY BEGIN ===\n[BRANCH]\nmain\n[LAST COMMIT]\nf64d93f Fix pp (Mon) <a>\n"
                  "[DIFF]\n[LAST COMMIT]\nnot this\n=== GIT SUMMARY END ===\n",
                  &commit, &branch);
  EXPECT_EQ(commit, "f64d93f Fix pp (Mon) <a>");
  EXPECT_EQ(branch, "main");
}

TEST(JobVariant, CellsSplitOnParallelismNotOnTheProfile) {
  JobFacts a = Job("1", "p1", {}), b = Job("2", "p2", {}), c = Job("3", "p1", {});
  c.header.passthrough["dcn_pipeline_parallelism"] = "2";
  EXPECT_EQ(CellOf(a), CellOf(b));
  EXPECT_NE(CellOf(a), CellOf(c));
  EXPECT_EQ(CellOf(c).Label(), "llama2-70b 2N dcn_pipeline_parallelism=2");
  EXPECT_EQ(*TuneProfileOf(Job("4", "baseline", {})), kBaselineProfile);
}

std::vector<SweepJobInput> Inputs(const std::vector<JobFacts>& facts) {
  std::vector<SweepJobInput> v;
  for (const auto& f : facts) v.push_back({f, {}});
  return v;
}

TEST(TuningSweep, NamesTheRealWinnerAndNotTheNoise) {
  std::mt19937 rng(11);
  std::vector<JobFacts> jobs;
  int id = 100;
  for (int r = 0; r < 3; ++r) jobs.push_back(Job(std::to_string(id++), "baseline", Steps(2000, 0.8, rng)));
  for (int p = 0; p < 20; ++p) jobs.push_back(Job(std::to_string(id++), "null" + std::to_string(p), Steps(2000, 0.8, rng)));
  jobs.push_back(Job(std::to_string(id++), "good", Steps(2060, 0.8, rng)));   // +3 %
  const SweepResult r = AnalyzeSweep(Inputs(jobs));
  ASSERT_EQ(r.cells.size(), 1u);
  const CellResult& cell = r.cells[0];
  EXPECT_EQ(cell.baseline, kBaselineProfile);
  EXPECT_EQ(cell.family_size, 21);
  ASSERT_TRUE(cell.winner.has_value());
  EXPECT_EQ(*cell.winner, "good");
  EXPECT_TRUE(cell.noise.run_to_run_measured());

  // Without the real effect, none of the 20 null profiles is crowned.
  jobs.pop_back();
  const SweepResult null = AnalyzeSweep(Inputs(jobs));
  EXPECT_FALSE(null.cells[0].winner.has_value()) << null.cells[0].conclusion;
  EXPECT_NE(null.cells[0].conclusion.find("no variant beats"), std::string::npos);
}

TEST(TuningSweep, BaselineRepeatsThatSpreadByChanceDoNotHideARealWinner) {
  // The three baseline runs sit 0.6 % apart under 0.3 % step noise: the F test says runs differ.
  // On their 2 degrees of freedom alone no +3 % effect could ever show; pooled with the 31 single
  // runs' spread it does, and none of the 30 profiles without an effect is crowned.
  std::mt19937 rng(21);
  std::vector<JobFacts> jobs;
  int id = 500;
  for (double level : {1988.0, 2000.0, 2012.0}) jobs.push_back(Job(std::to_string(id++), "baseline", Steps(level, 0.3, rng)));
  for (int p = 0; p < 30; ++p) jobs.push_back(Job(std::to_string(id++), "null" + std::to_string(p), Steps(2000, 0.3, rng)));
  jobs.push_back(Job(std::to_string(id++), "good", Steps(2060, 0.3, rng)));
  const CellResult cell = AnalyzeSweep(Inputs(jobs)).cells.at(0);
  ASSERT_TRUE(cell.noise.run_to_run_dominates);
  EXPECT_GT(cell.noise.bulk_df, 20);
  EXPECT_GT(cell.noise.JobMeanDf(), cell.noise.run_df);
  ASSERT_TRUE(cell.winner.has_value()) << cell.conclusion;
  EXPECT_EQ(*cell.winner, "good");
  int better = 0;
  for (const auto& v : cell.variants) better += v.vs_baseline.verdict == Verdict::kBetter;
  EXPECT_EQ(better, 1);
  EXPECT_GT(cell.family_critical, 2.5);
}

TEST(TuningSweep, AJobOffThePinnedNodelistIsFlaggedAndKeptOut) {
  std::mt19937 rng(5);
  std::vector<JobFacts> jobs = {Job("1", "baseline", Steps(2000, 0.5, rng)), Job("2", "baseline", Steps(2000, 0.5, rng)),
                                Job("3", "fast", Steps(2000, 0.5, rng)),
                                Job("4", "fast", Steps(2300, 0.5, rng), false, "n7,n8")};
  const SweepResult r = AnalyzeSweep(Inputs(jobs));
  const CellResult& cell = r.cells[0];
  EXPECT_EQ(cell.pinned_nodelist, "n1,n2");
  EXPECT_EQ(cell.off_nodelist_jobs, std::vector<std::string>{"4"});
  EXPECT_FALSE(cell.winner.has_value());
  EXPECT_FALSE(r.jobs[3].in_leaderboard);
  SweepOptions include;
  include.include_off_nodelist = true;
  EXPECT_TRUE(AnalyzeSweep(Inputs(jobs), include).jobs[3].in_leaderboard);
}

TEST(TuningSweep, DroppedProfilesLeaveTheLeaderboardAndTheMarkdownHasTheRunbookSections) {
  std::mt19937 rng(9);
  JobFacts oom = Job("5", "big", {});
  oom.status = JobStatus::kFailed;
  oom.failure_class = "oom-gpu";
  oom.oom_allocation = "221.71GiB";
  std::vector<JobFacts> jobs = {Job("1", "", Steps(2000, 0.5, rng)), Job("2", "", Steps(2000, 0.5, rng)),
                                Job("3", "x", Steps(2010, 0.5, rng)), oom};
  // No TUNE_PROFILE on 1 and 2 while the cell has profiles: they are baseline-deployed.
  const SweepResult r = AnalyzeSweep(Inputs(jobs));
  const CellResult& cell = r.cells[0];
  EXPECT_EQ(cell.baseline, kBaselineProfile);
  const auto big = std::find_if(cell.variants.begin(), cell.variants.end(), [](auto& v) { return v.name == "big"; });
  ASSERT_NE(big, cell.variants.end());
  EXPECT_EQ(big->failures.rule, RecoveryRule::kDroppedOom);
  EXPECT_FALSE(big->measured());
  const std::string md = FormatSweepMarkdown(r);
  for (const char* section : {"# llama2-70b tuning", "## TL;DR", "## Leaderboard", "## Negative findings",
                              "## Failures and recovery", "## Appendix: jobs", "dropped-oom", "221.71GiB"})
    EXPECT_NE(md.find(section), std::string::npos) << section;
  EXPECT_EQ(ResultLine(r.jobs[3]), "llama2-70b 2N (job 5): OOM — FAIL");
  EXPECT_NE(ResultLine(r.jobs[0]).find(" TGS/device, "), std::string::npos);
}

TEST(TuningSweep, WithoutProfilesTheVaryingPassthroughArgNamesTheVariant) {
  std::mt19937 rng(2);
  JobFacts a = Job("1", "", Steps(1190, 0.5, rng)), b = Job("2", "", Steps(1400, 0.5, rng));
  a.header.passthrough["per_device_batch_size"] = "8";
  b.header.passthrough["per_device_batch_size"] = "16";
  const SweepResult r = AnalyzeSweep(Inputs({a, b}));
  EXPECT_EQ(r.cells[0].baseline, "per_device_batch_size=8");
  EXPECT_EQ(r.jobs[1].variant, "per_device_batch_size=16");
  EXPECT_EQ(r.cells[0].variants[0].name, "per_device_batch_size=16");
}

// EXP_TAG is the model spec's tag joined to the encoded passthrough args (formats §1.1): the user's
// tag names the arm when the args alone do not tell the jobs apart.
TEST(JobVariant, TheUsersTagIsWhatRemainsOfExpTagOnceTheEncodedArgsAreTakenOff) {
  JobFacts f = Job("1", "", {});
  f.header.passthrough["_env_XLA_PYTHON_CLIENT_MEM_FRACTION"] = ".93";
  f.header.exp_tag = "fp8-rerun-steps_15-_env_XLA_PYTHON_CLIENT_MEM_FRACTION_.93";
  EXPECT_EQ(UserTagOf(f), "fp8-rerun");
  f.header.exp_tag = "_env_XLA_PYTHON_CLIENT_MEM_FRACTION_.93-steps_15";   // args only, any order
  EXPECT_EQ(UserTagOf(f), "");
  f.header.model_alias = "l70";
  EXPECT_EQ(UserTagOf(f), "l70");
  f.header.exp_tag = "bf16-steps_15-_env_XLA_PYTHON_CLIENT_MEM_FRACTION_.93";
  EXPECT_EQ(UserTagOf(f), "l70:bf16");
}

TEST(TuningSweep, WithoutProfilesOrVaryingArgsTheUsersTagNamesTheVariant) {
  std::mt19937 rng(3);
  JobFacts a = Job("1", "", Steps(1190, 0.5, rng)), b = Job("2", "", Steps(1400, 0.5, rng));
  a.header.exp_tag = "fp8-steps_15";
  b.header.exp_tag = "bf16-steps_15";
  const SweepResult r = AnalyzeSweep(Inputs({a, b}));
  ASSERT_EQ(r.cells.size(), 1u);
  EXPECT_EQ(r.jobs[0].variant, "fp8");
  EXPECT_EQ(r.jobs[1].variant, "bf16");
  EXPECT_EQ(r.cells[0].baseline, "fp8");   // no TUNE_PROFILE: the first variant submitted
}

TEST(SweepHtml, ChartsEachVariantWithItsIntervalAndEscapesNames) {
  std::mt19937 rng(6);
  std::vector<JobFacts> jobs = {Job("1", "", Steps(2000, 0.5, rng)), Job("2", "", Steps(2000, 0.5, rng)),
                                Job("3", "<script>x</script>", Steps(2100, 0.5, rng))};
  const std::string html = RenderSweepHtml(AnalyzeSweep(Inputs(jobs)));
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  EXPECT_NE(html.find("class=\"variant winner\""), std::string::npos);
  EXPECT_NE(html.find("class=\"interval\""), std::string::npos);
}

SweepSnapshot Sweep(const std::string& label, const std::vector<std::tuple<std::string, double, bool>>& cells,
                    std::mt19937& rng) {
  std::vector<SweepJobInput> inputs;
  int id = 0;
  for (const auto& [model, tgs, pass] : cells) {
    JobFacts f = Job(label + std::to_string(id++), "", pass ? Steps(tgs, 0.5, rng) : std::vector<double>{});
    f.header.model_name = model;
    if (!pass) f.status = JobStatus::kFailed, f.failure_class = "python-exception";
    inputs.push_back({f, {}});
  }
  return SnapshotOf(AnalyzeSweep(inputs), label);
}

TEST(SweepCompare, AppliesTheRunbookOutcomeTable) {
  std::mt19937 rng(4);
  const SweepSnapshot main = Sweep("main", {{"a", 2000, true}, {"b", 1000, true}, {"c", 500, false}, {"d", 800, true}}, rng);
  const SweepSnapshot cand =
      Sweep("cand", {{"a", 2004, true}, {"b", 900, true}, {"c", 500, false}, {"d", 800, false}}, rng);
  const SweepComparison cmp = CompareSweeps({main, cand});
  ASSERT_EQ(cmp.cells.size(), 4u);
  auto outcome = [&](const std::string& model) {
    for (const auto& c : cmp.cells)
      if (c.key.model == model) return *c.columns[1].outcome;
    return PairOutcome::kNotRun;
  };
  EXPECT_EQ(outcome("a"), PairOutcome::kNoRegression);
  EXPECT_EQ(outcome("b"), PairOutcome::kRegression);
  EXPECT_EQ(outcome("c"), PairOutcome::kPreExisting);
  EXPECT_EQ(outcome("d"), PairOutcome::kNewBreakage);
  EXPECT_EQ(cmp.sweeps[1].regressions, std::vector<std::string>{"b 2N"});
  EXPECT_FALSE(cmp.sweeps[1].broken_commit);

  const SweepSnapshot broken = Sweep("broken", {{"a", 0, false}, {"b", 0, false}, {"c", 0, false}, {"d", 0, false}}, rng);
  const SweepComparison b = CompareSweeps({main, broken});
  EXPECT_TRUE(b.sweeps[1].broken_commit);
  EXPECT_TRUE(b.sweeps[1].stop_early);
}

TEST(SweepCompare, ASavedJsonRoundTripsAndBadFieldsAreRefused) {
  std::mt19937 rng(8);
  std::vector<SweepJobInput> inputs = {{Job("1", "", Steps(2000, 0.5, rng)), {}}};
  const SweepResult r = AnalyzeSweep(inputs);
  StatusOr<SweepSnapshot> back = SnapshotFromJson(SweepJson(r), "saved.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->cells.size(), 1u);
  EXPECT_TRUE(back->cells[0].jobs[0].measured);
  EXPECT_NEAR(back->cells[0].jobs[0].sample.mean, r.jobs[0].steady.mean_tgs, 1e-9);
  EXPECT_EQ(back->cells[0].jobs[0].sample.steps, 10);

  nlohmann::json bad = SweepJson(r);
  bad["jobs"][0]["nodes"] = "two";
  EXPECT_FALSE(SnapshotFromJson(bad, "bad.json").ok());
  EXPECT_FALSE(SnapshotFromJson(nlohmann::json::array(), "arr.json").ok());
}

}  // namespace
}  // namespace diagnose::sweep
