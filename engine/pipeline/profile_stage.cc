#include "engine/pipeline/profile_stage.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "engine/analysis/robust_statistics.h"

namespace diagnose {

namespace {

namespace fs = std::filesystem;

// AMD Instinct nodes carry 8 GPUs; the launcher's log does not print the count.
constexpr int kGpusPerNode = 8;

std::string Fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

}  // namespace

std::vector<std::string> FindJobTraceFiles(const std::string& job_dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& run : fs::directory_iterator(job_dir, ec)) {
    if (!run.is_directory(ec) || run.is_symlink(ec)) continue;
    const fs::path profile = run.path() / "tensorboard" / "plugins" / "profile";
    if (!fs::is_directory(profile, ec)) continue;
    for (const auto& window : fs::directory_iterator(profile, ec)) {
      if (!window.is_directory(ec) || window.is_symlink(ec)) continue;
      for (const auto& file : fs::directory_iterator(window.path(), ec)) {
        const std::string name = file.path().filename().string();
        if (file.is_regular_file(ec) && !file.is_symlink(ec) && name.ends_with(".trace.json.gz"))
          files.push_back(file.path().string());
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::optional<JobProfile> DrillJobProfile(const JobFacts& facts, const std::string& data_dir) {
  if (facts.job_dir.empty()) return std::nullopt;
  const std::vector<std::string> files = FindJobTraceFiles(facts.job_dir);
  if (files.empty()) return std::nullopt;
  JobProfile result;
  auto families = profile::LoadKernelFamilies(profile::KernelFamiliesPath(data_dir));
  if (!families.ok()) {
    result.error = families.status().message();
    return result;
  }
  // A first pass finds the profiled steps; the step time is then taken from the log's other steps.
  profile::DrillOptions options;
  options.expected_gpus = facts.header.nnodes * kGpusPerNode;
  auto drill = profile::RunDrill(files, *families, options);
  if (!drill.ok()) {
    result.error = drill.status().message();
    return result;
  }
  std::set<int64_t> excluded(drill->step_numbers.begin(), drill->step_numbers.end());
  if (drill->writeback_step) excluded.insert(*drill->writeback_step);
  const int64_t first_profiled = drill->step_numbers.empty() ? 0 : drill->step_numbers.front();
  std::vector<double> seconds, tgs, mfu;
  for (const auto& step : facts.steps) {
    // Steps before the window are warm-up (compilation, the first steps' slower pace).
    if (step.step < first_profiled || excluded.count(step.step) > 0 || step.seconds <= 0) continue;
    seconds.push_back(step.seconds);
    tgs.push_back(step.tokens_per_sec_per_device);
    if (step.mfu_pct) mfu.push_back(*step.mfu_pct);
    result.steps_used.push_back(step.step);
  }
  if (!seconds.empty()) {
    options.step_seconds = analysis::Median(seconds);
    options.step_source = "the log's median over steps " + std::to_string(result.steps_used.front()) + "-" +
                          std::to_string(result.steps_used.back()) + ", the profiled and writeback steps excluded";
    result.tgs = analysis::Median(tgs);
    if (!mfu.empty()) result.mfu_pct = analysis::Median(mfu);
    // The window's own numbers do not change; only the step time (and what depends on it) does.
    drill = profile::RunDrill(files, *families, options);
    if (!drill.ok()) {
      result.error = drill.status().message();
      return result;
    }
  }
  result.drill = std::move(*drill);
  return result;
}

std::vector<std::string> JobProfileLines(const JobProfile& p) {
  std::vector<std::string> lines;
  if (!p.error.empty()) {
    lines.push_back("profile window not read: " + p.error);
    return lines;
  }
  if (!p.drill) return lines;
  const profile::ProfileDrill& d = *p.drill;
  std::string throughput = "throughput";
  if (p.tgs) throughput += ": TGS " + Fixed(*p.tgs, 1) + " tokens/s/device";
  if (p.mfu_pct) throughput += ", MFU " + Fixed(*p.mfu_pct, 2) + "%";
  if (d.step_seconds) throughput += ", step " + Fixed(*d.step_seconds, 2) + " s (" + d.step_source + ")";
  lines.push_back(throughput);
  lines.push_back("profile: " + std::to_string(d.files.size()) + " file(s), GPUs " + std::to_string(d.gpus) + ", " +
                  d.launcher_mode + ", " + std::to_string(d.steps) + " profiled steps (" + d.steps_source + ")" +
                  (d.writeback_step ? ", writeback step " + std::to_string(*d.writeback_step) : "") + ", divisor " +
                  std::to_string(d.divisor));
  std::string decomposition = "step-time decomposition per GPU (median, s/step): busy " + Fixed(d.median.busy, 2) +
                              " = compute " + Fixed(d.median.compute, 2) + " + exposed comm " +
                              Fixed(d.median.exposed_comm, 2) + "; overlap " + Fixed(d.median.overlap, 2);
  if (d.step_seconds) decomposition += "; idle " + Fixed(d.median.idle, 2);
  lines.push_back(decomposition);
  lines.push_back("kernels (s/GPU/step):");
  std::vector<const profile::FamilyRow*> rows;
  for (const auto& f : d.families)
    if (f.launches > 0) rows.push_back(&f);
  std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->seconds > b->seconds; });
  for (const auto* f : rows) lines.push_back("  " + f->label + " " + Fixed(f->seconds, 3) + " (" +
                                             std::to_string(f->launches) + " launches)");
  std::string total = "  total kernel " + Fixed(d.total_kernel, 3);
  if (d.step_minus_total)
    total += "; step - total kernel " + std::string(*d.step_minus_total >= 0 ? "+" : "") +
             Fixed(*d.step_minus_total, 3) + ": " + profile::ReadStepMinusTotal(*d.step_minus_total);
  lines.push_back(total);
  if (d.blocker)
    lines.push_back("main-stream blocker: " + d.blocker->kernel + ", " + Fixed(d.blocker->gap_seconds, 2) +
                    " s/GPU/step of gap after it (worst GPU " + std::to_string(d.blocker->device) + " of " +
                    d.blocker->file + ")");
  if (d.slow_gpu)
    lines.push_back("slowest GPU: " + d.slow_gpu->what + ", compute " + Fixed(d.slow_gpu->value, 2) + " s/step vs median " +
                    Fixed(d.slow_gpu->median, 2) + " (robust z " + Fixed(d.slow_gpu->robust_z, 1) + ")");
  for (const auto& w : d.warnings) lines.push_back("profile warning: " + w);
  return lines;
}

nlohmann::json JobProfileJson(const JobProfile& p) {
  nlohmann::json j = p.drill ? profile::DrillJson(*p.drill) : nlohmann::json::object();
  // The per-GPU rows are for `diagnose profile`; the report keeps the medians and the outliers.
  j.erase("per_gpu");
  if (!p.error.empty()) j["error"] = p.error;
  j["tgs"] = p.tgs ? nlohmann::json(*p.tgs) : nlohmann::json(nullptr);
  j["mfu_pct"] = p.mfu_pct ? nlohmann::json(*p.mfu_pct) : nlohmann::json(nullptr);
  return j;
}

namespace {

std::optional<double> SteadyTgs(const JobFacts& facts, const JobProfile* profile) {
  if (profile != nullptr && profile->tgs) return profile->tgs;
  if (facts.tgs.steady_tgs > 0) return facts.tgs.steady_tgs;
  return std::nullopt;
}

}  // namespace

std::optional<Finding> ProfileRegressionFinding(const JobFacts& subject, const JobProfile& subject_profile,
                                                const JobFacts& baseline, const JobProfile* baseline_profile) {
  if (!subject_profile.drill || !subject_profile.drill->blocker || !subject_profile.drill->step_minus_total)
    return std::nullopt;
  const std::optional<double> slow = SteadyTgs(subject, &subject_profile);
  const std::optional<double> fast = SteadyTgs(baseline, baseline_profile);
  if (!slow || !fast || *fast <= 0) return std::nullopt;
  const double loss_pct = 100.0 * (*fast - *slow) / *fast;
  if (loss_pct < kRegressionNoisePct) return std::nullopt;
  const profile::ProfileDrill& d = *subject_profile.drill;
  const profile::Blocker& b = *d.blocker;
  const profile::ProfileDrill* base =
      baseline_profile != nullptr && baseline_profile->drill ? &*baseline_profile->drill : nullptr;

  nlohmann::json value = {{"gpu", b.device},
                          {"kernel", b.kernel},
                          {"family", b.family},
                          {"gap_seconds_per_gpu_step", b.gap_seconds},
                          {"kernel_seconds_per_gpu_step", b.kernel_seconds},
                          {"worst_gap_seconds_per_step", b.worst_gap_seconds},
                          {"step_minus_total_kernel_seconds", *d.step_minus_total},
                          {"tgs", *slow},
                          {"baseline_tgs", *fast}};
  std::string text = "job " + subject.id + " runs at " + Fixed(*slow, 1) + " TGS, " + Fixed(loss_pct, 1) +
                     "% below baseline " + baseline.id + " (" + Fixed(*fast, 1) + "); " + b.kernel +
                     " blocks the main stream: " + Fixed(b.gap_seconds, 2) + " s/GPU/step of gap after it (" +
                     Fixed(b.worst_gap_seconds, 2) + " s on GPU " + std::to_string(b.device) + " of " + b.file +
                     "), step - total kernel " + Fixed(*d.step_minus_total, 2) + " s";
  if (base != nullptr) {
    // Which family grew most against the baseline's window, computed identically.
    std::string grown;
    double growth = 0;
    for (size_t i = 0; i < d.families.size() && i < base->families.size(); ++i) {
      const double delta = d.families[i].seconds - base->families[i].seconds;
      if (delta > growth) {
        growth = delta;
        grown = d.families[i].label;
      }
    }
    if (base->step_minus_total) {
      value["baseline_step_minus_total_kernel_seconds"] = *base->step_minus_total;
      text += " (baseline " + Fixed(*base->step_minus_total, 2) + " s)";
    }
    if (!grown.empty()) {
      value["grown_family"] = grown;
      value["grown_seconds_per_gpu_step"] = growth;
      text += "; " + grown + " grew by " + Fixed(growth, 2) + " s/GPU/step";
    }
    if (base->launcher_mode != d.launcher_mode || base->gpus != d.gpus)
      text += "; WARNING: the baseline's window differs (" + base->launcher_mode + ", " + std::to_string(base->gpus) +
              " GPUs): per-kernel numbers are not comparable";
  }
  if (!b.remedy.empty()) {
    value["remedy"] = b.remedy;
    text += ". Remedy: " + b.remedy;
  }
  Finding f;
  f.id = "profile/main-stream-blocker";
  f.playbook = "profile";
  f.status = FindingStatus::kFired;
  f.summary = text;
  Evidence e;
  e.kind = "profile";
  e.query = b.file;
  e.value = value;
  e.text = text;
  f.evidence.push_back(e);
  return f;
}

Diagnosis WithProfileVerdict(Diagnosis diagnosis, const Finding& finding) {
  const std::string& cause = diagnosis.verdict.root_cause;
  if (cause != "none" && cause != "unknown") return diagnosis;
  diagnosis.verdict.root_cause = "kernel-time-regression";
  diagnosis.verdict.domain = "software";
  diagnosis.verdict.confidence = Confidence::kLikely;
  diagnosis.verdict.summary = "Slower than its baseline with no system cause found; the profile shows where the time went: " +
                              finding.summary;
  diagnosis.verdict.finding = finding.id;
  diagnosis.causal_chain = {"main-stream blocker " + finding.evidence.front().value.value("kernel", std::string()),
                            "the GPU waits on the main stream (step - total kernel > 0)", "lower TGS than the baseline"};
  return diagnosis;
}

}  // namespace diagnose
