#include "engine/sweep/tuning_sweep.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "engine/core/text.h"

namespace diagnose::sweep {

namespace {

std::string NodelistOf(const JobFacts& facts) {
  if (!facts.header.hosts.empty()) return JoinStrings(facts.header.hosts, ",");
  return facts.header.nodelist;
}

// The passthrough args that tell a cell's jobs apart when they carry no TUNE_PROFILE.
std::map<std::string, std::string> VariantArgs(const JobFacts& facts) {
  std::map<std::string, std::string> args;
  for (const auto& [k, v] : facts.header.passthrough)
    if (!IsCellKey(k) && !IsBookkeepingKey(k)) args[k] = v;
  return args;
}

std::string Describe(const std::map<std::string, std::string>& args, const std::set<std::string>& keys) {
  std::vector<std::string> parts;
  for (const auto& k : keys)
    if (auto it = args.find(k); it != args.end()) parts.push_back(k + "=" + it->second);
  return parts.empty() ? "(as configured)" : JoinStrings(parts, " ");
}

void NameVariants(const std::vector<size_t>& cell_jobs, const std::vector<SweepJobInput>& inputs,
                  std::vector<JobResult>& jobs) {
  bool any_profile = false;
  for (size_t i : cell_jobs) any_profile |= TuneProfileOf(inputs[i].facts).has_value();
  if (any_profile) {
    for (size_t i : cell_jobs) jobs[i].variant = TuneProfileOf(inputs[i].facts).value_or(kBaselineProfile);
    return;
  }
  // No profiles: the keys whose value differs somewhere in the cell name the variant.
  std::map<std::string, std::set<std::string>> values;
  for (size_t i : cell_jobs)
    for (const auto& [k, v] : VariantArgs(inputs[i].facts)) values[k].insert(v);
  std::set<std::string> varying;
  for (const auto& [k, vs] : values) {
    size_t carrying = 0;
    for (size_t i : cell_jobs) carrying += VariantArgs(inputs[i].facts).count(k);
    if (vs.size() > 1 || carrying != cell_jobs.size()) varying.insert(k);
  }
  // The user's own tags (model-spec alias and tag) name variants first when they differ in the cell:
  // they are what the person who planned the sweep called each arm.
  std::set<std::string> tags;
  for (size_t i : cell_jobs) tags.insert(UserTagOf(inputs[i].facts));
  for (size_t i : cell_jobs) {
    std::string args = Describe(VariantArgs(inputs[i].facts), varying);
    if (tags.size() < 2) {
      jobs[i].variant = std::move(args);
      continue;
    }
    const std::string tag = UserTagOf(inputs[i].facts);
    jobs[i].variant = (tag.empty() ? std::string("(untagged)") : tag) + (varying.empty() ? "" : " " + args);
  }
}

std::vector<std::string> FlagsOf(const std::string& variant, const std::vector<size_t>& variant_jobs,
                                 const std::vector<SweepJobInput>& inputs) {
  // The latest artifact wins: a profile whose unknown flag was fixed is described by its fix.
  for (auto it = variant_jobs.rbegin(); it != variant_jobs.rend(); ++it) {
    const auto& profiles = inputs[*it].artifact.profile_flags;
    const std::string key = variant == kBaselineProfile ? "baseline" : variant;
    if (auto p = profiles.find(key); p != profiles.end()) return p->second;
  }
  return {};
}

// One result per job (in submission order) and the jobs of each cell; an artifact's notes become
// warnings.
std::map<CellKey, std::vector<size_t>> ReadJobs(const std::vector<SweepJobInput>& inputs, const std::vector<size_t>& order,
                                                std::vector<JobResult>& jobs, SweepResult* result) {
  std::map<CellKey, std::vector<size_t>> cells;
  for (size_t i : order) {
    const JobFacts& f = inputs[i].facts;
    JobResult& j = jobs[i];
    j.id = f.id;
    j.log_path = f.log_path;
    j.cell = CellOf(f);
    j.commit = inputs[i].artifact.commit;
    j.nodelist = NodelistOf(f);
    j.status = f.status;
    j.steady = MeasureSteadyState(f);
    j.failure = ClassifyJob(f, j.steady.measured());
    cells[j.cell].push_back(i);
    for (const auto& note : inputs[i].artifact.notes) result->warnings.push_back("job " + f.id + ": " + note);
  }
  return cells;
}

// The pinned nodelist: the one most jobs ran on (ties: the earliest submitted); the commits seen.
void PinNodelist(const std::vector<size_t>& cell_jobs, std::vector<JobResult>& jobs, CellResult* cell) {
  std::map<std::string, int> counts;
  for (size_t i : cell_jobs) ++counts[jobs[i].nodelist];
  int best = 0;
  for (size_t i : cell_jobs)
    if (counts[jobs[i].nodelist] > best) best = counts[jobs[i].nodelist], cell->pinned_nodelist = jobs[i].nodelist;
  for (size_t i : cell_jobs) {
    jobs[i].on_pinned_nodelist = jobs[i].nodelist == cell->pinned_nodelist;
    if (!jobs[i].on_pinned_nodelist) cell->off_nodelist_jobs.push_back(jobs[i].id);
    if (!jobs[i].commit.empty() &&
        std::find(cell->commits.begin(), cell->commits.end(), jobs[i].commit) == cell->commits.end())
      cell->commits.push_back(jobs[i].commit);
  }
}

// One variant: its jobs' samples (successful, measured, on the pinned nodelist unless off-nodelist
// jobs are included), what the recovery rules make of its failures, and its means.
VariantResult MeasureVariant(const std::string& name, const std::vector<size_t>& vj, const std::vector<SweepJobInput>& inputs,
                             const SweepOptions& options, std::vector<JobResult>& jobs, CellResult* cell) {
  VariantResult v;
  v.name = name;
  v.flags = FlagsOf(name, vj, inputs);
  std::vector<OrderedJobOutcome> outcomes;
  double seconds = 0, mfu = 0;
  int mfu_count = 0;
  for (size_t i : vj) {
    JobResult& j = jobs[i];
    v.jobs.push_back(j.id);
    outcomes.push_back({j.id, j.failure});
    const bool usable = j.failure.outcome == JobOutcome::kSucceeded && j.steady.measured() &&
                        (j.on_pinned_nodelist || options.include_off_nodelist);
    if (!usable) continue;
    j.in_leaderboard = true;
    v.measured_jobs.push_back(j.id);
    v.samples.push_back({j.steady.mean_tgs, j.steady.stddev_tgs, static_cast<int>(j.steady.steps_used.size())});
    seconds += j.steady.mean_step_seconds;
    if (j.steady.mean_mfu_pct) mfu += *j.steady.mean_mfu_pct, ++mfu_count;
  }
  v.failures = ApplyRecoveryRules(outcomes);
  if (v.failures.stop_sweep && !cell->stop_sweep) {
    cell->stop_sweep = true;
    cell->stop_reason = name + ": " + v.failures.explanation;
  }
  if (v.failures.dropped) {
    for (size_t i : vj) jobs[i].in_leaderboard = false;
    v.measured_jobs.clear();
    v.samples.clear();
  }
  if (!v.samples.empty()) {
    v.mean_tgs = MeanOfMeans(v.samples);
    v.mean_step_seconds = seconds / static_cast<double>(v.samples.size());
    if (mfu_count > 0) v.mean_mfu_pct = mfu / mfu_count;
  }
  return v;
}

// The baseline: baseline-deployed when the cell is a tuning sweep, else the first variant
// submitted (a batch-size sweep's first probe); it must have been measured. `names` are the
// variants in order of first submission.
void ChooseBaseline(const std::vector<std::string>& names, CellResult* cell) {
  auto measured_named = [&](const std::string& n) {
    return std::find_if(cell->variants.begin(), cell->variants.end(),
                        [&](const VariantResult& v) { return v.name == n && v.measured(); });
  };
  if (auto it = measured_named(kBaselineProfile); it != cell->variants.end()) {
    cell->baseline = kBaselineProfile;
    cell->baseline_reason = "TUNE_PROFILE empty or baseline (baseline-deployed)";
    return;
  }
  for (const auto& v : cell->variants)
    if (v.measured()) {
      cell->baseline = v.name;
      cell->baseline_reason = std::find(names.begin(), names.end(), std::string(kBaselineProfile)) != names.end()
                                  ? "baseline-deployed was not measured; the first measured variant instead"
                                  : "no TUNE_PROFILE in this cell; the first variant submitted";
      break;
    }
}

// Every measured variant against the baseline, with the cell's noise and family size; the variants
// then ranked measured first, fastest first. False when no baseline was measured.
bool CompareWithBaseline(CellResult* cell) {
  std::vector<std::vector<JobSample>> groups;
  for (const auto& v : cell->variants)
    if (v.measured()) groups.push_back(v.samples);
  cell->noise = EstimateNoise(groups);
  for (const auto& v : cell->variants) cell->family_size += v.measured() && v.name != cell->baseline;

  const VariantResult* baseline = nullptr;
  for (auto& v : cell->variants)
    if (v.name == cell->baseline) v.is_baseline = true, baseline = &v;
  if (baseline != nullptr) {
    std::vector<int> family_jobs;
    for (const auto& v : cell->variants)
      if (v.measured() && !v.is_baseline) family_jobs.push_back(static_cast<int>(v.samples.size()));
    const int baseline_jobs = static_cast<int>(baseline->samples.size());
    cell->family_critical = FamilyCritical(family_jobs, baseline_jobs, cell->noise);
    for (auto& v : cell->variants) {
      if (!v.measured() || v.is_baseline) continue;
      v.vs_baseline = CompareMeans(v.mean_tgs, static_cast<int>(v.samples.size()), baseline->mean_tgs, baseline_jobs,
                                   cell->noise, cell->family_critical);
    }
  }
  std::stable_sort(cell->variants.begin(), cell->variants.end(), [](const VariantResult& a, const VariantResult& b) {
    if (a.measured() != b.measured()) return a.measured();
    return a.mean_tgs > b.mean_tgs;
  });
  return baseline != nullptr;
}

// The winner: the best variant that beats the baseline beyond noise, and whether it is separable
// from the runner-up.
void ConcludeCell(bool has_baseline, CellResult* cell) {
  VariantResult* winner = nullptr;
  VariantResult* runner_up = nullptr;
  for (auto& v : cell->variants) {
    if (v.vs_baseline.verdict != Verdict::kBetter) continue;
    if (winner == nullptr) winner = &v;
    else if (runner_up == nullptr) runner_up = &v;
  }
  if (!has_baseline) {
    cell->conclusion = "no variant was measured; nothing to compare";
  } else if (cell->family_size == 0) {
    cell->conclusion = "only " + cell->baseline + " was measured; nothing to compare it with";
  } else if (winner == nullptr) {
    cell->conclusion = "no variant beats " + cell->baseline + " beyond noise (" + std::to_string(cell->family_size) +
                       " compared, " + FixedDecimal(100 * (1 - kFamilyAlpha), 0) + " % family-wise intervals, Dunnett)";
  } else {
    winner->is_winner = true;
    cell->winner = winner->name;
    cell->conclusion = winner->name + " beats " + cell->baseline + " by " + FixedDecimal(winner->vs_baseline.delta_pct, 2) +
                       " % [" + FixedDecimal(winner->vs_baseline.low_pct, 2) + ", " +
                       FixedDecimal(winner->vs_baseline.high_pct, 2) + "]";
    if (runner_up != nullptr) {
      const Comparison gap =
          CompareMeans(winner->mean_tgs, static_cast<int>(winner->samples.size()), runner_up->mean_tgs,
                       static_cast<int>(runner_up->samples.size()), cell->noise);
      cell->conclusion += gap.verdict == Verdict::kBetter
                              ? "; ahead of the runner-up " + runner_up->name + " beyond noise"
                              : "; not separable from the runner-up " + runner_up->name + " (" +
                                    FixedDecimal(gap.delta_pct, 2) + " % apart, within noise)";
    }
  }
  if (!cell->noise.run_to_run_measured())
    cell->conclusion += "; run-to-run noise unmeasured (no repeated variant): intervals reflect step noise only";
}

}  // namespace

bool IsNumericJobId(const std::string& id) {
  return !id.empty() && id.size() <= 18 &&
         std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool SubmittedBefore(const std::string& a, const std::string& b) {
  const bool da = IsNumericJobId(a), db = IsNumericJobId(b);
  if (da && db) return a.size() != b.size() ? a.size() < b.size() : a < b;
  if (da != db) return da;
  return a < b;
}

std::string ThroughputText(const SteadyState& steady) {
  if (!steady.measured()) return "";
  std::string text = WithThousands(steady.mean_tgs) + " TGS/device";
  if (steady.mean_mfu_pct) text += ", " + FixedDecimal(*steady.mean_mfu_pct, 1) + "% MFU";
  return text;
}

std::string ResultLine(const JobResult& job) {
  std::string line = job.cell.model.empty() ? "(unknown model)" : job.cell.model;
  line += " " + std::to_string(job.cell.nodes) + "N (job " + job.id + "): ";
  switch (job.failure.outcome) {
    case JobOutcome::kSucceeded:
      if (!job.steady.measured()) return line + "no steady-state steps — FAIL";
      return line + ThroughputText(job.steady) + " — PASS";
    case JobOutcome::kRunning:
      return line + "running";
    case JobOutcome::kOom:
      return line + "OOM — FAIL";
    default:
      return line + job.failure.detail + " — FAIL";
  }
}

SweepResult AnalyzeSweep(const std::vector<SweepJobInput>& inputs, const SweepOptions& options) {
  SweepResult result;
  std::vector<size_t> order(inputs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return SubmittedBefore(inputs[a].facts.id, inputs[b].facts.id); });

  std::vector<JobResult> jobs(inputs.size());
  for (auto& [key, cell_jobs] : ReadJobs(inputs, order, jobs, &result)) {
    CellResult cell;
    cell.key = key;
    NameVariants(cell_jobs, inputs, jobs);
    PinNodelist(cell_jobs, jobs, &cell);
    // Variants in order of first submission.
    std::vector<std::string> names;
    std::map<std::string, std::vector<size_t>> by_variant;
    for (size_t i : cell_jobs) {
      if (!by_variant.count(jobs[i].variant)) names.push_back(jobs[i].variant);
      by_variant[jobs[i].variant].push_back(i);
    }
    for (const auto& name : names) cell.variants.push_back(MeasureVariant(name, by_variant[name], inputs, options, jobs, &cell));
    ChooseBaseline(names, &cell);
    ConcludeCell(CompareWithBaseline(&cell), &cell);
    result.cells.push_back(std::move(cell));
  }
  for (size_t i : order) result.jobs.push_back(jobs[i]);
  return result;
}

}  // namespace diagnose::sweep
