#include "engine/sweep/sweep_render.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engine/core/text.h"

namespace diagnose::sweep {

namespace {

std::string Pct(double v, int precision = 2) { return (v >= 0 ? "+" : "") + FixedDecimal(v, precision) + " %"; }

std::string Interval(const Comparison& c) {
  if (c.verdict == Verdict::kNotCompared) return "—";
  return Pct(c.delta_pct) + " [" + FixedDecimal(c.low_pct, 2) + ", " + FixedDecimal(c.high_pct, 2) + "]";
}

std::string Cite(const LogRef& ref) {
  if (ref.empty()) return "";
  return ref.file + ":" + std::to_string(ref.line);
}

std::string Window(const SteadyState& s) {
  std::string w = "steps " + std::to_string(s.first_step) + "-" + std::to_string(s.last_step) +
                  (s.profiler_on ? " (profiler on)" : " (profiler off)");
  if (!s.outlier_steps.empty()) {
    std::vector<std::string> steps;
    for (int64_t o : s.outlier_steps) steps.push_back(std::to_string(o));
    w += ", outlier step" + std::string(steps.size() > 1 ? "s " : " ") + JoinStrings(steps) + " left out";
  }
  return w;
}

std::string FlagsText(const VariantResult& v) { return v.flags.empty() ? "" : JoinStrings(v.flags, " "); }

std::string EscapeCell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

std::vector<const VariantResult*> Measured(const CellResult& cell) {
  std::vector<const VariantResult*> out;
  for (const auto& v : cell.variants)
    if (v.measured()) out.push_back(&v);
  return out;
}

nlohmann::json ComparisonToJson(const Comparison& c) {
  return {{"delta_pct", c.delta_pct}, {"low_pct", c.low_pct},     {"high_pct", c.high_pct},
          {"confidence", c.confidence}, {"df", c.df}, {"verdict", VerdictName(c.verdict)}};
}

nlohmann::json RefJson(const LogRef& r) {
  if (r.empty()) return nullptr;
  return {{"file", r.file}, {"line", r.line}, {"text", r.text}};
}

}  // namespace

std::string FormatSweepText(const SweepResult& result) {
  std::ostringstream out;
  for (const CellResult& cell : result.cells) {
    out << "== " << cell.key.Label() << " — " << cell.variants.size() << " variant(s), baseline " << cell.baseline
        << " ==\n";
    out << "nodelist " << (cell.pinned_nodelist.empty() ? "(unknown)" : cell.pinned_nodelist);
    if (!cell.off_nodelist_jobs.empty())
      out << "; off the pinned nodelist (kept out): " << JoinStrings(cell.off_nodelist_jobs);
    out << "\n";
    out << "verdict: " << cell.conclusion << "\n";
    if (cell.stop_sweep) out << "STOP: " << cell.stop_reason << "\n";
    int rank = 0;
    for (const auto& v : cell.variants) {
      out << "  ";
      if (v.measured()) {
        out << (v.is_winner ? "* " : "  ") << ++rank << ". " << v.name << "  " << WithThousands(v.mean_tgs)
            << " TGS  " << FixedDecimal(v.mean_step_seconds, 3) << " s/step";
        if (v.is_baseline) out << "  (baseline)";
        else out << "  " << Interval(v.vs_baseline) << " " << VerdictName(v.vs_baseline.verdict);
        out << "  jobs " << JoinStrings(v.measured_jobs);
      } else {
        out << "     " << v.name << "  not measured";
      }
      if (v.failures.rule != RecoveryRule::kNone)
        out << "  [" << RecoveryRuleName(v.failures.rule) << ": " << v.failures.explanation << "]";
      out << "\n";
    }
  }
  for (const auto& w : result.warnings) out << "warning: " << w << "\n";
  return out.str();
}

std::string FormatSweepMarkdown(const SweepResult& result) {
  std::ostringstream out;
  for (const CellResult& cell : result.cells) {
    const auto measured = Measured(cell);
    const VariantResult* base = nullptr;
    for (const auto& v : cell.variants)
      if (v.is_baseline) base = &v;
    std::vector<std::string> ids;
    for (const auto& j : result.jobs)
      if (j.cell == cell.key) ids.push_back(j.id);
    std::sort(ids.begin(), ids.end(), SubmittedBefore);

    out << "# " << (cell.key.model.empty() ? "(unknown model)" : cell.key.model) << " tuning\n\n";
    out << "- **Cell**: " << cell.key.Label() << "\n";
    out << "- **Nodelist**: " << (cell.pinned_nodelist.empty() ? "(unknown)" : cell.pinned_nodelist) << "\n";
    out << "- **Commit**: " << (cell.commits.empty() ? "(no git_summary.txt)" : JoinStrings(cell.commits, "; "))
        << "\n";
    out << "- **Jobs**: " << ids.size() << " (" << (ids.empty() ? "" : ids.front() + "–" + ids.back()) << "), "
        << measured.size() << " variant(s) measured\n";
    if (base != nullptr)
      out << "- **Baseline**: " << base->name << " at " << WithThousands(base->mean_tgs) << " TGS/device ("
          << cell.baseline_reason << ")\n";
    out << "- **Steady state**: mean Tokens/s/device of steps 9-14 with the profiler on, 5-14 off; outlier steps "
           "left out and named per job\n";
    out << "- **Noise**: step sd " << FixedDecimal(base && base->mean_tgs > 0 ? 100 * std::sqrt(cell.noise.step_variance) / base->mean_tgs : 0, 2)
        << " %, run-to-run "
        << (cell.noise.run_to_run_measured()
                ? FixedDecimal(base && base->mean_tgs > 0 ? 100 * std::sqrt(cell.noise.run_variance) / base->mean_tgs : 0, 2) + " %"
                : std::string("unmeasured"))
        << (!cell.noise.run_to_run_dominates ? ""
            : cell.noise.bulk_df > 0        ? " (beyond step noise: pooled with the single runs' spread)"
                                            : " (beyond step noise: used)")
        << "; intervals are " << FixedDecimal(100 * (1 - kFamilyAlpha), 0) << " % family-wise over "
        << cell.family_size << " comparisons (Dunnett, |t| <= " << FixedDecimal(cell.family_critical, 2) << ")\n\n";

    out << "## TL;DR\n\n" << cell.conclusion << ".\n";
    if (cell.stop_sweep) out << "\n**Sweep stopped**: " << cell.stop_reason << ".\n";
    out << "\n## Leaderboard\n\n";
    out << "| Rank | Profile | Flags | TGS/device | Step time (s) | Δ vs " << cell.baseline
        << " [interval] | Verdict | Jobs |\n|---|---|---|---|---|---|---|---|\n";
    auto row = [&](size_t i) {
      const VariantResult& v = *measured[i];
      out << "| " << i + 1 << " | " << (v.is_winner ? "**" + EscapeCell(v.name) + "** (winner)" : EscapeCell(v.name))
          << " | " << EscapeCell(FlagsText(v)) << " | " << WithThousands(v.mean_tgs) << " | "
          << FixedDecimal(v.mean_step_seconds, 3) << " | " << (v.is_baseline ? "baseline" : Interval(v.vs_baseline))
          << " | " << (v.is_baseline ? "—" : VerdictName(v.vs_baseline.verdict)) << " | "
          << JoinStrings(v.measured_jobs) << " |\n";
    };
    if (measured.size() <= kLeaderboardTop + kLeaderboardBottom) {
      for (size_t i = 0; i < measured.size(); ++i) row(i);
    } else {
      for (size_t i = 0; i < kLeaderboardTop; ++i) row(i);
      out << "| … | " << measured.size() - kLeaderboardTop - kLeaderboardBottom
          << " more | | | | | | |\n";
      for (size_t i = measured.size() - kLeaderboardBottom; i < measured.size(); ++i) row(i);
    }

    out << "\n## Negative findings\n\n";
    bool any = false;
    for (const VariantResult* v : measured) {
      if (v->is_baseline || v->vs_baseline.verdict == Verdict::kBetter) continue;
      any = true;
      out << "- " << EscapeCell(v->name) << (v->flags.empty() ? "" : " (`" + FlagsText(*v) + "`)") << ": "
          << Interval(v->vs_baseline) << ", " << VerdictName(v->vs_baseline.verdict) << "\n";
    }
    if (!any) out << "- none: every measured variant beats the baseline beyond noise\n";

    out << "\n## Failures and recovery\n\n";
    any = false;
    for (const auto& v : cell.variants) {
      if (v.failures.rule == RecoveryRule::kNone) continue;
      any = true;
      out << "- " << EscapeCell(v.name) << ": **" << RecoveryRuleName(v.failures.rule) << "** — "
          << v.failures.explanation << "\n";
    }
    if (!cell.off_nodelist_jobs.empty()) {
      any = true;
      out << "- off the pinned nodelist (kept out of the leaderboard): " << JoinStrings(cell.off_nodelist_jobs) << "\n";
    }
    if (!any) out << "- none\n";

    out << "\n## Appendix: jobs\n\n| Job | Profile | Status | TGS/device | Window | Evidence |\n|---|---|---|---|---|---|\n";
    std::vector<const JobResult*> cell_jobs;
    for (const auto& j : result.jobs)
      if (j.cell == cell.key) cell_jobs.push_back(&j);
    std::sort(cell_jobs.begin(), cell_jobs.end(),
              [](const JobResult* a, const JobResult* b) { return SubmittedBefore(a->id, b->id); });
    for (const JobResult* j : cell_jobs) {
      out << "| " << j->id << " | " << EscapeCell(j->variant) << " | " << JobOutcomeName(j->failure.outcome)
          << (j->failure.detail.empty() ? "" : " (" + EscapeCell(j->failure.detail) + ")")
          << (j->on_pinned_nodelist ? "" : ", off nodelist") << " | "
          << (j->steady.measured() ? WithThousands(j->steady.mean_tgs) : "—") << " | "
          << (j->steady.measured() ? Window(j->steady) : "—") << " | "
          << EscapeCell(j->steady.measured() ? Cite(j->steady.first_line) + "–" + std::to_string(j->steady.last_line.line)
                                             : Cite(j->failure.evidence))
          << " |\n";
    }
    out << "\n";
  }
  return out.str();
}

nlohmann::json SweepJson(const SweepResult& result) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const JobResult& j : result.jobs) {
    nlohmann::json steady = {{"window", {j.steady.first_step, j.steady.last_step}},
                             {"profiler_on", j.steady.profiler_on},
                             {"profiler_evidence", j.steady.profiler_evidence},
                             {"steps_used", j.steady.steps_used},
                             {"outlier_steps", j.steady.outlier_steps},
                             {"mean_tgs", j.steady.mean_tgs},
                             {"stddev_tgs", j.steady.stddev_tgs},
                             {"mean_step_seconds", j.steady.mean_step_seconds},
                             {"mean_mfu_pct", j.steady.mean_mfu_pct ? nlohmann::json(*j.steady.mean_mfu_pct) : nullptr},
                             {"first_line", RefJson(j.steady.first_line)},
                             {"last_line", RefJson(j.steady.last_line)}};
    jobs.push_back({{"id", j.id},
                    {"log", j.log_path},
                    {"model", j.cell.model},
                    {"nodes", j.cell.nodes},
                    {"config", j.cell.config},
                    {"variant", j.variant},
                    {"commit", j.commit},
                    {"nodelist", j.nodelist},
                    {"status", j.status},
                    {"outcome", JobOutcomeName(j.failure.outcome)},
                    {"detail", j.failure.detail},
                    {"evidence", RefJson(j.failure.evidence)},
                    {"on_pinned_nodelist", j.on_pinned_nodelist},
                    {"in_leaderboard", j.in_leaderboard},
                    {"steady", steady},
                    {"line", ResultLine(j)}});
  }
  nlohmann::json cells = nlohmann::json::array();
  for (const CellResult& c : result.cells) {
    nlohmann::json variants = nlohmann::json::array();
    for (const VariantResult& v : c.variants) {
      variants.push_back({{"name", v.name},
                          {"flags", v.flags},
                          {"jobs", v.jobs},
                          {"measured_jobs", v.measured_jobs},
                          {"mean_tgs", v.measured() ? nlohmann::json(v.mean_tgs) : nullptr},
                          {"mean_step_seconds", v.measured() ? nlohmann::json(v.mean_step_seconds) : nullptr},
                          {"mean_mfu_pct", v.mean_mfu_pct ? nlohmann::json(*v.mean_mfu_pct) : nullptr},
                          {"is_baseline", v.is_baseline},
                          {"is_winner", v.is_winner},
                          {"vs_baseline", v.measured() && !v.is_baseline ? ComparisonToJson(v.vs_baseline) : nullptr},
                          {"failures",
                           {{"rule", RecoveryRuleName(v.failures.rule)},
                            {"explanation", v.failures.explanation},
                            {"deciding_jobs", v.failures.deciding_jobs},
                            {"dropped", v.failures.dropped}}}});
    }
    cells.push_back({{"model", c.key.model},
                     {"nodes", c.key.nodes},
                     {"config", c.key.config},
                     {"label", c.key.Label()},
                     {"pinned_nodelist", c.pinned_nodelist},
                     {"off_nodelist_jobs", c.off_nodelist_jobs},
                     {"baseline", c.baseline},
                     {"baseline_reason", c.baseline_reason},
                     {"noise",
                      {{"step_variance", c.noise.step_variance},
                       {"step_df", c.noise.step_df},
                       {"run_variance", c.noise.run_variance},
                       {"run_df", c.noise.run_df},
                       {"mean_steps", c.noise.mean_steps},
                       {"run_to_run_used", c.noise.run_to_run_dominates},
                       {"bulk_variance", c.noise.bulk_variance},
                       {"bulk_df", c.noise.bulk_df},
                       {"job_mean_variance", c.noise.JobMeanVariance()},
                       {"job_mean_df", c.noise.JobMeanDf()}}},
                     {"family_size", c.family_size},
                     {"family_critical", c.family_critical},
                     {"winner", c.winner ? nlohmann::json(*c.winner) : nullptr},
                     {"conclusion", c.conclusion},
                     {"stop_sweep", c.stop_sweep},
                     {"stop_reason", c.stop_reason},
                     {"commits", c.commits},
                     {"variants", variants}});
  }
  return {{"kind", "diagnose-sweep"}, {"version", 1}, {"jobs", jobs}, {"cells", cells}, {"warnings", result.warnings}};
}

std::string FormatComparisonText(const SweepComparison& comparison) { return FormatComparisonMarkdown(comparison); }

std::string FormatComparisonMarkdown(const SweepComparison& cmp) {
  std::ostringstream out;
  for (const CellComparison& cell : cmp.cells) {
    out << "### " << cell.key.Label() << "\n\n| Sweep | Commit/label | Job | TGS | MFU | Δ vs prev [interval] | Outcome |\n"
        << "|---|---|---|---|---|---|---|\n";
    for (size_t s = 0; s < cell.columns.size(); ++s) {
      const CellColumn& col = cell.columns[s];
      out << "| " << s + 1 << " | " << EscapeCell(cmp.labels[s]) << " | " << (col.ran ? JoinStrings(col.jobs) : "—")
          << " | " << (!col.ran ? "not run" : col.pass ? WithThousands(col.tgs) : "FAIL: " + EscapeCell(col.failure))
          << " | " << (col.mfu_pct ? FixedDecimal(*col.mfu_pct, 1) + "%" : "—") << " | "
          << (col.vs_previous ? Interval(*col.vs_previous) : "—") << " | "
          << (col.outcome ? PairOutcomeName(*col.outcome) : "—") << " |\n";
    }
    out << "\n";
  }
  out << "### Verdict\n\n";
  for (size_t s = 0; s < cmp.sweeps.size(); ++s)
    out << "- sweep " << s + 1 << " (" << EscapeCell(cmp.sweeps[s].label) << "): " << cmp.sweeps[s].summary << "\n";
  return out.str();
}

nlohmann::json ComparisonJson(const SweepComparison& cmp) {
  nlohmann::json cells = nlohmann::json::array();
  for (const CellComparison& cell : cmp.cells) {
    nlohmann::json cols = nlohmann::json::array();
    for (const CellColumn& col : cell.columns)
      cols.push_back({{"ran", col.ran},
                      {"pass", col.pass},
                      {"jobs", col.jobs},
                      {"tgs", col.pass ? nlohmann::json(col.tgs) : nullptr},
                      {"mfu_pct", col.mfu_pct ? nlohmann::json(*col.mfu_pct) : nullptr},
                      {"failure", col.failure},
                      {"vs_previous", col.vs_previous ? ComparisonToJson(*col.vs_previous) : nullptr},
                      {"outcome", col.outcome ? nlohmann::json(PairOutcomeName(*col.outcome)) : nullptr}});
    cells.push_back({{"model", cell.key.model},
                     {"nodes", cell.key.nodes},
                     {"config", cell.key.config},
                     {"label", cell.key.Label()},
                     {"sweeps", cols}});
  }
  nlohmann::json sweeps = nlohmann::json::array();
  for (const SweepVerdict& v : cmp.sweeps)
    sweeps.push_back({{"label", v.label},
                      {"cells_run", v.cells_run},
                      {"cells_failed", v.cells_failed},
                      {"regressions", v.regressions},
                      {"new_breakage", v.new_breakage},
                      {"pre_existing", v.pre_existing},
                      {"broken_commit", v.broken_commit},
                      {"stop_early", v.stop_early},
                      {"summary", v.summary}});
  return {{"kind", "diagnose-sweep-compare"}, {"version", 1}, {"labels", cmp.labels}, {"cells", cells}, {"sweeps", sweeps}};
}

}  // namespace diagnose::sweep
