#include "engine/pipeline/profile_stage.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "engine/analysis/robust_statistics.h"
#include "engine/verdict/verdict.h"

namespace diagnose {

namespace {

namespace fs = std::filesystem;

// A family's time or the exposed communication grown by this share of the step against the
// baseline's window is named.
constexpr double kGrowthShareOfStep = 0.02;

std::string Fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// The devices one task's Memstats block names ("Using (GB) ... on rocm:N", one line per GPU):
// the most any (task, label) lists. 0 when the log has no Memstats.
int GpusPerNodeFromLog(const JobFacts& facts) {
  std::map<std::pair<int, std::string>, std::set<std::string>> devices;
  for (const auto& m : facts.memstats)
    if (!m.device.empty()) devices[{m.task, m.label}].insert(m.device);
  size_t most = 0;
  for (const auto& [key, names] : devices) most = std::max(most, names.size());
  return static_cast<int>(most);
}

// The trace's device planes per host: the most GPUs any one host's files hold.
int GpusPerNodeFromTrace(const profile::ProfileDrill& drill) {
  std::map<std::string, int> per_host;
  for (const auto& g : drill.per_gpu) ++per_host[g.host];
  int most = 0;
  for (const auto& [host, count] : per_host) most = std::max(most, count);
  return most;
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

std::optional<JobProfile> DrillJobProfile(const JobFacts& facts, const std::string& data_dir,
                                          std::optional<std::chrono::steady_clock::time_point> deadline) {
  if (facts.job_dir.empty()) return std::nullopt;
  const std::vector<std::string> files = FindJobTraceFiles(facts.job_dir);
  if (files.empty()) return std::nullopt;
  JobProfile result;
  auto families = profile::LoadKernelFamilies(profile::KernelFamiliesPath(data_dir));
  if (!families.ok()) {
    result.error = families.status().message();
    return result;
  }
  // The window is read once; a first drill finds the profiled steps, then the step time is taken
  // from the log's other steps and the same window drilled again.
  profile::DrillOptions options;
  options.read.deadline = deadline;
  // GPUs per node from the log when it says (Memstats lists every device); else from the trace,
  // which can then catch a missing host but not a GPU missing on every host.
  result.gpus_per_node = GpusPerNodeFromLog(facts);
  result.gpus_per_node_source = "the log's Memstats devices per task";
  options.expected_gpus = facts.header.nnodes * result.gpus_per_node;
  auto window = profile::ReadWindow(files, *families, options);
  if (!window.ok()) {
    result.error = window.status().message();
    return result;
  }
  profile::ProfileDrill drill = profile::AnalyzeWindow(*window, *families, options);
  bool expected_changed = false;
  if (result.gpus_per_node == 0) {
    result.gpus_per_node = GpusPerNodeFromTrace(drill);
    result.gpus_per_node_source = "the trace's device planes per host (the log names no device)";
    options.expected_gpus = facts.header.nnodes * result.gpus_per_node;
    expected_changed = options.expected_gpus > 0;
  }
  std::set<int64_t> excluded(drill.step_numbers.begin(), drill.step_numbers.end());
  if (drill.writeback_step) excluded.insert(*drill.writeback_step);
  const int64_t first_profiled = drill.step_numbers.empty() ? 0 : drill.step_numbers.front();
  std::vector<double> seconds, tgs, mfu;
  for (const auto& step : facts.steps) {
    // Steps before the window are warm-up (compilation, the first steps' slower pace).
    if (step.step < first_profiled || excluded.count(step.step) > 0 || step.seconds <= 0) continue;
    seconds.push_back(step.seconds);
    tgs.push_back(step.tokens_per_sec_per_device);
    if (step.mfu_pct) mfu.push_back(*step.mfu_pct);
    result.steps_used.push_back(step.step);
  }
  if (!seconds.empty() || expected_changed) {
    if (!seconds.empty()) {
      options.step_seconds = analysis::Median(seconds);
      options.step_source = "the log's median over steps " + std::to_string(result.steps_used.front()) + "-" +
                            std::to_string(result.steps_used.back()) + ", the profiled and writeback steps excluded";
      result.tgs = analysis::Median(tgs);
      if (!mfu.empty()) result.mfu_pct = analysis::Median(mfu);
    }
    // The window's own numbers do not change; only the step time (and what depends on it) does.
    drill = profile::AnalyzeWindow(*window, *families, options);
  }
  result.drill = std::move(drill);
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
  if (p.gpus_per_node > 0)
    lines.push_back("GPUs per node " + std::to_string(p.gpus_per_node) + " (from " + p.gpus_per_node_source + ")");
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
  j["gpus_per_node"] = p.gpus_per_node;
  j["gpus_per_node_source"] = p.gpus_per_node_source;
  return j;
}

nlohmann::json JobProfileGpuRows(const JobProfile& p) {
  nlohmann::json rows = nlohmann::json::array();
  if (!p.drill) return rows;
  for (const auto& g : p.drill->per_gpu) {
    const std::string stem = profile::TraceFileStem(g.file);
    rows.push_back({{"label", (stem.empty() ? g.host : stem) + " GPU " + std::to_string(g.device)},
                    {"file", g.file},
                    {"gpu", g.device},
                    {"kernel", g.kernel},
                    {"busy", g.busy},
                    {"compute", g.compute},
                    {"exposed_communication", g.exposed_comm},
                    {"overlap", g.overlap},
                    {"idle", g.idle}});
  }
  return rows;
}

namespace {

std::optional<double> SteadyTgs(const JobFacts& facts, const JobProfile* profile) {
  if (profile != nullptr && profile->tgs) return profile->tgs;
  if (facts.tgs.steady_tgs > 0) return facts.tgs.steady_tgs;
  return std::nullopt;
}

}  // namespace

namespace {

// The slower run and what it is measured against: a baseline job, or the job's own healthy level.
struct Slowdown {
  double tgs = 0;
  double reference_tgs = 0;
  std::string against;   // "below baseline 8111 (720.0)", "below its own healthy level (720.0, steps 0-19)"
};

// What the evidence shows first. A GPU slower than its peers makes every other GPU wait at the
// next collective, and communication no longer under compute makes the step wait for it: either
// leaves main-stream gaps, so the kernel before the gaps (the blocker) is the cause only when
// neither stands out.
enum class Lead { kSlowestGpu, kExposedCommunication, kMainStreamBlocker };

const char* LeadName(Lead lead) {
  switch (lead) {
    case Lead::kSlowestGpu: return "slowest-gpu";
    case Lead::kExposedCommunication: return "exposed-communication";
    case Lead::kMainStreamBlocker: break;
  }
  return "main-stream-blocker";
}

// Without a baseline's window, communication exposed for this share of the step is the story.
constexpr double kExposedShareOfStep = 0.05;

Lead ChooseLead(const profile::ProfileDrill& d, const profile::ProfileDrill* base) {
  const double step = d.step_seconds.value_or(d.median.busy);
  const double material = kGrowthShareOfStep * step;
  if (d.slow_gpu && d.slow_gpu->value - d.slow_gpu->median > material) return Lead::kSlowestGpu;
  const bool exposed = base != nullptr ? d.median.exposed_comm - base->median.exposed_comm > material
                                       : d.median.exposed_comm > kExposedShareOfStep * step;
  return exposed ? Lead::kExposedCommunication : Lead::kMainStreamBlocker;
}

// The family that grew most against the baseline's window, computed identically, and how step −
// total kernel changed; warns when the windows are not comparable.
void CompareWithBaselineWindow(const profile::ProfileDrill& d, const profile::ProfileDrill& base, Lead lead,
                               nlohmann::json& value, std::string& text) {
  const double material = kGrowthShareOfStep * d.step_seconds.value_or(d.median.busy);
  std::string grown;
  double growth = material;   // a family is named only past this: rounding is not growth
  for (size_t i = 0; i < d.families.size() && i < base.families.size(); ++i) {
    const double delta = d.families[i].seconds - base.families[i].seconds;
    if (delta > growth) {
      growth = delta;
      grown = d.families[i].label;
    }
  }
  if (base.step_minus_total) {
    value["baseline_step_minus_total_kernel_seconds"] = *base.step_minus_total;
    text += " (baseline " + Fixed(*base.step_minus_total, 2) + " s)";
  }
  if (!grown.empty()) {
    value["grown_family"] = grown;
    value["grown_seconds_per_gpu_step"] = growth;
    text += "; " + grown + " grew by " + Fixed(growth, 2) + " s/GPU/step";
  }
  // Communication that used to run under compute and now does not (overlap lost) shows here, not
  // in any family's own time. The exposed-communication lead has said it already.
  const double exposed_growth = d.median.exposed_comm - base.median.exposed_comm;
  if (exposed_growth > material) {
    value["exposed_communication_seconds_per_step"] = d.median.exposed_comm;
    value["baseline_exposed_communication_seconds_per_step"] = base.median.exposed_comm;
    if (lead != Lead::kExposedCommunication)
      text += "; exposed communication (not under compute) " + Fixed(base.median.exposed_comm, 2) + " -> " +
              Fixed(d.median.exposed_comm, 2) + " s/step on the median GPU";
  }
  if (base.launcher_mode != d.launcher_mode || base.gpus != d.gpus)
    text += "; WARNING: the baseline's window differs (" + base.launcher_mode + ", " + std::to_string(base.gpus) +
            " GPUs): per-kernel numbers are not comparable";
}

// "GPU 3 of host-02.proc0 (file): compute 12.34 s/step vs 10.10 on the median GPU (+22.2 %, robust
// z 41.0); its kernels: GEMM 9.80 vs 8.00 s/step".
std::string SlowestGpuText(const profile::Outlier& slow, nlohmann::json& value) {
  const double excess_pct = slow.median > 0 ? 100.0 * (slow.value - slow.median) / slow.median : 0;
  value["slowest_gpu"] = slow.what;
  value["slowest_gpu_file"] = slow.file;
  value["slowest_gpu_compute_seconds_per_step"] = slow.value;
  value["median_gpu_compute_seconds_per_step"] = slow.median;
  std::string text = "the slowest GPU is " + slow.what + " (" + slow.file + "): compute " + Fixed(slow.value, 2) +
                     " s/step vs " + Fixed(slow.median, 2) + " on the median GPU (+" + Fixed(excess_pct, 1) +
                     "%, robust z " + Fixed(slow.robust_z, 1) + ")";
  nlohmann::json rows = nlohmann::json::array();
  std::string kernels;
  for (const auto& f : slow.slower_families) {
    rows.push_back({{"family", f.label}, {"seconds_per_step", f.seconds}, {"median_gpu_seconds_per_step", f.median}});
    kernels += (kernels.empty() ? "" : ", ") + f.label + " " + Fixed(f.seconds, 2) + " vs " + Fixed(f.median, 2) +
               " s/step";
  }
  value["slowest_gpu_families"] = rows;
  if (!kernels.empty()) text += "; its kernels: " + kernels;
  return text;
}

// "communication is exposed (not under compute): 0.45 s/step on the median GPU; the collectives:
// RCCL 0.45 s/GPU/step (252 launches)".
std::string ExposedCommunicationText(const profile::ProfileDrill& d, const profile::ProfileDrill* base,
                                     nlohmann::json& value) {
  value["exposed_communication_seconds_per_step"] = d.median.exposed_comm;
  std::string text = "communication is exposed (not under compute): " + Fixed(d.median.exposed_comm, 2) +
                     " s/step on the median GPU";
  if (base != nullptr) text += " (" + Fixed(base->median.exposed_comm, 2) + " in the baseline's window)";
  std::vector<const profile::FamilyRow*> collectives;
  for (const auto& f : d.families)
    if (f.kind == profile::KernelKind::kCommunication && f.launches > 0) collectives.push_back(&f);
  std::stable_sort(collectives.begin(), collectives.end(), [](auto* a, auto* b) { return a->seconds > b->seconds; });
  nlohmann::json rows = nlohmann::json::array();
  std::string names;
  for (const auto* f : collectives) {
    rows.push_back({{"family", f->label}, {"seconds_per_gpu_step", f->seconds}, {"launches", f->launches}});
    names += (names.empty() ? "" : ", ") + f->label + " " + Fixed(f->seconds, 2) + " s/GPU/step (" +
             std::to_string(f->launches) + " launches)";
  }
  value["collectives"] = rows;
  if (!names.empty()) text += "; the collectives: " + names;
  return text;
}

// `profile/main-stream-blocker` from a drill with a blocker: evidence of kind `profile` naming the
// trace file, GPU, kernel and seconds, led by what the evidence shows first (ChooseLead).
Finding BlockerFinding(const JobFacts& subject, const profile::ProfileDrill& d, const Slowdown& slow,
                       const profile::ProfileDrill* base) {
  const profile::Blocker& b = *d.blocker;
  const double loss_pct = 100.0 * (slow.reference_tgs - slow.tgs) / slow.reference_tgs;
  const Lead lead = ChooseLead(d, base);
  nlohmann::json value = {{"lead", LeadName(lead)},
                          {"gpu", b.device},
                          {"kernel", b.kernel},
                          {"family", b.family},
                          {"gap_seconds_per_gpu_step", b.gap_seconds},
                          {"kernel_seconds_per_gpu_step", b.kernel_seconds},
                          {"worst_gap_seconds_per_step", b.worst_gap_seconds},
                          {"step_minus_total_kernel_seconds", *d.step_minus_total},
                          {"tgs", slow.tgs},
                          {"baseline_tgs", slow.reference_tgs}};
  const auto gap = [&](const std::string& of_gap) {
    return Fixed(b.gap_seconds, 2) + " s/GPU/step of " + of_gap + " (" + Fixed(b.worst_gap_seconds, 2) + " s on GPU " +
           std::to_string(b.device) + " of " + b.file + "), step - total kernel " + Fixed(*d.step_minus_total, 2) + " s";
  };
  std::string text = "job " + subject.id + " runs at " + Fixed(slow.tgs, 1) + " TGS, " + Fixed(loss_pct, 1) + "% " +
                     slow.against + "; ";
  switch (lead) {
    case Lead::kSlowestGpu:
      text += SlowestGpuText(*d.slow_gpu, value) + "; the other GPUs wait for it: " + gap("main-stream gap after " + b.kernel);
      break;
    case Lead::kExposedCommunication:
      text += ExposedCommunicationText(d, base, value) + "; the main stream waits for them: " + gap("gap after " + b.kernel);
      break;
    case Lead::kMainStreamBlocker:
      text += b.kernel + " blocks the main stream: " + gap("gap after it");
      break;
  }
  if (base != nullptr) CompareWithBaselineWindow(d, *base, lead, value, text);
  if (lead != Lead::kSlowestGpu && d.slow_gpu) {
    value["slowest_gpu"] = d.slow_gpu->what;
    value["slowest_gpu_file"] = d.slow_gpu->file;
    text += "; slowest GPU " + d.slow_gpu->what + ": compute " + Fixed(d.slow_gpu->value, 2) + " s/step vs median " +
            Fixed(d.slow_gpu->median, 2) + " (robust z " + Fixed(d.slow_gpu->robust_z, 1) + "), the others wait for it";
  }
  // The remedy is the blocking family's: it answers a blocker, not a slow GPU or lost overlap.
  if (lead == Lead::kMainStreamBlocker && !b.remedy.empty()) {
    value["remedy"] = b.remedy;
    text += ". Remedy: " + b.remedy;
  }
  Finding f;
  f.id = "profile/main-stream-blocker";
  f.playbook = "profile";
  f.status = FindingStatus::kFired;
  f.summary = text;
  Evidence e;
  e.kind = EvidenceKind::kProfile;
  e.query = lead == Lead::kSlowestGpu ? d.slow_gpu->file : b.file;
  e.value = value;
  e.text = text;
  f.evidence.push_back(e);
  return f;
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
  const profile::ProfileDrill* base =
      baseline_profile != nullptr && baseline_profile->drill ? &*baseline_profile->drill : nullptr;
  const Slowdown slowdown{*slow, *fast, "below baseline " + baseline.id + " (" + Fixed(*fast, 1) + ")"};
  return BlockerFinding(subject, *subject_profile.drill, slowdown, base);
}

std::optional<Finding> SlowPhaseProfileFinding(const JobFacts& subject, const JobProfile& profile) {
  if (!profile.drill || profile.drill->step_numbers.empty()) return std::nullopt;
  const profile::ProfileDrill& d = *profile.drill;
  const double healthy = subject.tgs.healthy_tgs;
  std::vector<const TgsDip*> dips;
  for (const auto& dip : subject.tgs.dips)
    if (dip.depth_pct >= kRegressionNoisePct) dips.push_back(&dip);
  if (healthy <= 0 || dips.empty()) return std::nullopt;   // never slower than its own healthy level
  const int64_t first = d.step_numbers.front(), last = d.step_numbers.back();
  const auto holds_window = [&](const TgsDip* dip) { return dip->first_step <= first && last <= dip->last_step; };
  const auto inside = std::find_if(dips.begin(), dips.end(), holds_window);
  const std::string window = "the profile window (steps " + std::to_string(first) + "-" + std::to_string(last) + ")";
  if (inside == dips.end() || !d.blocker || !d.step_minus_total) {
    // A window outside the slow stretch shows the healthy run (or half of each): what it holds
    // cannot say where the slowdown's time went.
    Finding f;
    f.id = "profile/main-stream-blocker";
    f.playbook = "profile";
    f.status = FindingStatus::kSkipped;
    const TgsDip& dip = inside == dips.end() ? *dips.front() : **inside;
    f.summary = "job " + subject.id + " ran " + Fixed(dip.depth_pct, 1) + "% below its own healthy level (" +
                Fixed(healthy, 1) + " TGS) over steps " + std::to_string(dip.first_step) + "-" +
                std::to_string(dip.last_step) + "; " + window +
                (inside == dips.end() ? " is not inside that slow stretch, so the profile cannot say where its time went: "
                                        "evidence insufficient (profile the slow steps, or give --baseline)"
                                      : " is inside it but shows no main-stream blocker with step - total kernel > 0");
    return f;
  }
  const TgsDip& dip = **inside;
  const Slowdown slowdown{dip.mean_tgs, healthy,
                          "below its own healthy level (" + Fixed(healthy, 1) + " TGS; slow over steps " +
                              std::to_string(dip.first_step) + "-" + std::to_string(dip.last_step) + ", " + window +
                              " inside them)"};
  return BlockerFinding(subject, d, slowdown, nullptr);
}

Diagnosis WithProfileVerdict(Diagnosis diagnosis, const Finding& finding, const ProfileReference& reference,
                             JobStatus subject_status) {
  const std::string& cause = diagnosis.verdict.root_cause;
  if (cause != "none" && cause != "unknown") return diagnosis;
  // Slow kernels explain lost throughput, not a job that failed or hung: that stays unexplained,
  // and its note with it.
  if (verdict::IsUnexplainedStatus(subject_status)) {
    const std::string_view what = subject_status == JobStatus::kFailed    ? "failed"
                                  : subject_status == JobStatus::kHanging ? "hangs"
                                                                          : "died";
    diagnosis.decision.notes.push_back("the profile explains the slowdown (" + finding.id + "), not why the job " +
                                       std::string(what));
    return diagnosis;
  }
  diagnosis.verdict.root_cause = "kernel-time-regression";
  diagnosis.verdict.domain = "software";
  diagnosis.verdict.confidence = Confidence::kLikely;
  diagnosis.verdict.summary = "Slower than " + reference.summary +
                              " with no system cause found; the profile shows where the time went: " + finding.summary;
  diagnosis.verdict.finding = finding.id;
  std::erase_if(diagnosis.decision.notes, verdict::IsUnexplainedNote);
  const nlohmann::json& value = finding.evidence.front().value;
  const std::string lead = value.value("lead", std::string());
  const std::string lower = "lower TGS than " + reference.chain;
  if (lead == "slowest-gpu") {
    diagnosis.causal_chain = {value.value("slowest_gpu", std::string()) + " is the slowest GPU: compute " +
                                  Fixed(value.value("slowest_gpu_compute_seconds_per_step", 0.0), 2) + " s/step vs " +
                                  Fixed(value.value("median_gpu_compute_seconds_per_step", 0.0), 2) + " on the median GPU",
                              "the other GPUs wait for it at each collective (step - total kernel > 0)", lower};
  } else if (lead == "exposed-communication") {
    diagnosis.causal_chain = {"communication no longer under compute: " +
                                  Fixed(value.value("exposed_communication_seconds_per_step", 0.0), 2) +
                                  " s/step exposed",
                              "the step waits for the collectives (step - total kernel > 0)", lower};
  } else {
    diagnosis.causal_chain = {"main-stream blocker " + value.value("kernel", std::string()),
                              "the GPU waits on the main stream (step - total kernel > 0)", lower};
  }
  return diagnosis;
}

}  // namespace diagnose
