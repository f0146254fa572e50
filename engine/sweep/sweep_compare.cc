#include "engine/sweep/sweep_compare.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/core/text.h"

namespace diagnose::sweep {

namespace {

template <typename T>
StatusOr<T> Field(const nlohmann::json& j, const char* name, const std::string& where, T fallback) {
  if (!j.contains(name) || j[name].is_null()) return fallback;
  try {
    return j[name].get<T>();
  } catch (const nlohmann::json::exception&) {
    return ParseError(where + ": field '" + name + "' has the wrong type");
  }
}

PairOutcome Judge(const CellColumn& before, const CellColumn& now, const Comparison& c) {
  if (!before.ran || !now.ran) return PairOutcome::kNotRun;
  if (!now.pass) return before.pass ? PairOutcome::kNewBreakage : PairOutcome::kPreExisting;
  if (!before.pass) return PairOutcome::kFixed;
  const double d = c.delta_pct;
  if (std::fabs(d) <= kNoRegressionPct) return PairOutcome::kNoRegression;
  if (c.verdict == Verdict::kWithinNoise || c.verdict == Verdict::kNotCompared) return PairOutcome::kWithinNoise;
  if (d < -kRegressionPct) return PairOutcome::kRegression;
  if (d > kRegressionPct) return PairOutcome::kImprovement;
  return PairOutcome::kUnclear;
}

}  // namespace

const char* PairOutcomeName(PairOutcome o) {
  switch (o) {
    case PairOutcome::kNoRegression: return "no regression";
    case PairOutcome::kWithinNoise: return "within noise";
    case PairOutcome::kUnclear: return "2-5 % (beyond noise, below the regression bar)";
    case PairOutcome::kRegression: return "regression";
    case PairOutcome::kImprovement: return "improvement";
    case PairOutcome::kNewBreakage: return "new breakage";
    case PairOutcome::kPreExisting: return "pre-existing failure";
    case PairOutcome::kFixed: return "fixed";
    case PairOutcome::kNotRun: return "not run";
  }
  return "not run";
}

SweepSnapshot SnapshotOf(const SweepResult& result, const std::string& label) {
  SweepSnapshot s;
  s.label = label;
  std::map<CellKey, size_t> index;
  for (const JobResult& j : result.jobs) {
    if (!j.commit.empty() && std::find(s.commits.begin(), s.commits.end(), j.commit) == s.commits.end())
      s.commits.push_back(j.commit);
    auto [it, fresh] = index.try_emplace(j.cell, s.cells.size());
    if (fresh) s.cells.push_back({j.cell, {}});
    CellJobSnapshot job;
    job.id = j.id;
    job.outcome = JobOutcomeName(j.failure.outcome);
    job.detail = j.failure.detail;
    job.measured = j.in_leaderboard;
    job.sample = {j.steady.mean_tgs, j.steady.stddev_tgs, static_cast<int>(j.steady.steps_used.size())};
    job.mfu_pct = j.steady.mean_mfu_pct;
    s.cells[it->second].jobs.push_back(std::move(job));
  }
  return s;
}

StatusOr<SweepSnapshot> SnapshotFromJson(const nlohmann::json& j, const std::string& label) {
  if (!j.is_object() || !j.contains("jobs") || !j["jobs"].is_array())
    return ParseError(label + ": not a `diagnose sweep --format json` document (no jobs array)");
  SweepSnapshot s;
  s.label = label;
  std::map<CellKey, size_t> index;
  size_t n = 0;
  for (const auto& job : j["jobs"]) {
    const std::string where = label + ": jobs[" + std::to_string(n++) + "]";
    if (!job.is_object()) return ParseError(where + " is not an object");
    CellKey key;
    CellJobSnapshot snap;
    ASSIGN_OR_RETURN(key.model, Field<std::string>(job, "model", where, ""));
    ASSIGN_OR_RETURN(key.nodes, Field<int>(job, "nodes", where, 0));
    ASSIGN_OR_RETURN(key.config, Field<std::string>(job, "config", where, ""));
    ASSIGN_OR_RETURN(snap.id, Field<std::string>(job, "id", where, ""));
    ASSIGN_OR_RETURN(snap.outcome, Field<std::string>(job, "outcome", where, ""));
    ASSIGN_OR_RETURN(snap.detail, Field<std::string>(job, "detail", where, ""));
    ASSIGN_OR_RETURN(snap.measured, Field<bool>(job, "in_leaderboard", where, false));
    std::string commit;
    ASSIGN_OR_RETURN(commit, Field<std::string>(job, "commit", where, ""));
    if (!commit.empty() && std::find(s.commits.begin(), s.commits.end(), commit) == s.commits.end())
      s.commits.push_back(commit);
    if (job.contains("steady") && job["steady"].is_object()) {
      const auto& st = job["steady"];
      ASSIGN_OR_RETURN(snap.sample.mean, Field<double>(st, "mean_tgs", where + ".steady", 0.0));
      ASSIGN_OR_RETURN(snap.sample.stddev, Field<double>(st, "stddev_tgs", where + ".steady", 0.0));
      std::vector<int64_t> used;
      ASSIGN_OR_RETURN(used, Field<std::vector<int64_t>>(st, "steps_used", where + ".steady", {}));
      snap.sample.steps = static_cast<int>(used.size());
      if (st.contains("mean_mfu_pct") && st["mean_mfu_pct"].is_number())
        snap.mfu_pct = st["mean_mfu_pct"].get<double>();
    }
    if (!std::isfinite(snap.sample.mean) || !std::isfinite(snap.sample.stddev) || snap.sample.mean < 0 ||
        snap.sample.stddev < 0)
      return ParseError(where + ": steady-state numbers out of range");
    auto [it, fresh] = index.try_emplace(key, s.cells.size());
    if (fresh) s.cells.push_back({key, {}});
    s.cells[it->second].jobs.push_back(std::move(snap));
  }
  return s;
}

SweepComparison CompareSweeps(const std::vector<SweepSnapshot>& sweeps) {
  SweepComparison out;
  std::vector<CellKey> keys;
  for (const auto& s : sweeps) {
    out.labels.push_back(s.label);
    for (const auto& c : s.cells)
      if (std::find(keys.begin(), keys.end(), c.key) == keys.end()) keys.push_back(c.key);
  }
  std::sort(keys.begin(), keys.end());
  // Family: the cells a pair of sweeps compares, so ten models do not make one noise regression.
  const int family = std::max<int>(1, static_cast<int>(keys.size()));
  std::vector<std::vector<std::vector<JobSample>>> samples(keys.size(), std::vector<std::vector<JobSample>>(sweeps.size()));
  for (size_t k = 0; k < keys.size(); ++k) {
    CellComparison cell;
    cell.key = keys[k];
    for (size_t s = 0; s < sweeps.size(); ++s) {
      CellColumn col;
      auto it = std::find_if(sweeps[s].cells.begin(), sweeps[s].cells.end(),
                             [&](const CellSnapshot& c) { return c.key == keys[k]; });
      if (it != sweeps[s].cells.end()) {
        col.ran = true;
        double mfu = 0;
        int mfu_n = 0;
        for (const auto& job : it->jobs) {
          col.jobs.push_back(job.id);
          if (job.measured) {
            samples[k][s].push_back(job.sample);
            if (job.mfu_pct) mfu += *job.mfu_pct, ++mfu_n;
          } else if (job.outcome != "ok" && job.outcome != "running") {
            col.failure = job.outcome + (job.detail.empty() ? "" : " (" + job.detail + ")");
          }
        }
        col.pass = !samples[k][s].empty();
        col.tgs = MeanOfMeans(samples[k][s]);
        if (mfu_n > 0) col.mfu_pct = mfu / mfu_n;
        if (!col.pass && col.failure.empty()) col.failure = "no steady-state steps";
      }
      if (s > 0) {
        const CellColumn& before = cell.columns[s - 1];
        Comparison c;
        if (before.pass && col.pass) {
          c = CompareGroups(samples[k][s - 1], samples[k][s], family);
          col.vs_previous = c;
        }
        col.outcome = Judge(before, col, c);
      }
      cell.columns.push_back(std::move(col));
    }
    out.cells.push_back(std::move(cell));
  }
  for (size_t s = 0; s < sweeps.size(); ++s) {
    SweepVerdict v;
    v.label = sweeps[s].label;
    for (const auto& cell : out.cells) {
      const CellColumn& col = cell.columns[s];
      if (!col.ran) continue;
      ++v.cells_run;
      if (!col.pass) ++v.cells_failed;
      if (!col.outcome) continue;
      const std::string label = cell.key.Label();
      if (*col.outcome == PairOutcome::kRegression) v.regressions.push_back(label);
      if (*col.outcome == PairOutcome::kNewBreakage) v.new_breakage.push_back(label);
      if (*col.outcome == PairOutcome::kPreExisting) v.pre_existing.push_back(label);
    }
    v.broken_commit = v.cells_run > 0 && v.cells_failed == v.cells_run;
    v.stop_early = v.new_breakage.size() >= 2;
    if (v.broken_commit) {
      v.summary = "every cell failed: the commit is broken";
    } else if (s == 0) {
      v.summary = std::to_string(v.cells_run - v.cells_failed) + "/" + std::to_string(v.cells_run) + " cells pass";
    } else if (v.regressions.empty() && v.new_breakage.empty()) {
      v.summary = "no regression against " + sweeps[s - 1].label;
    } else {
      std::vector<std::string> parts;
      if (!v.regressions.empty()) parts.push_back("regression in " + JoinStrings(v.regressions));
      if (!v.new_breakage.empty()) parts.push_back("new breakage in " + JoinStrings(v.new_breakage));
      v.summary = JoinStrings(parts, "; ");
      if (v.stop_early) v.summary += " (2+ newly broken: stop, the commit is clearly broken)";
    }
    if (!v.pre_existing.empty()) v.summary += "; pre-existing failure in " + JoinStrings(v.pre_existing) + " (not blamed)";
    out.sweeps.push_back(std::move(v));
  }
  return out;
}

}  // namespace diagnose::sweep
