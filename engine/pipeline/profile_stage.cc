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

}  // namespace diagnose
