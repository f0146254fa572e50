#include "engine/sweep/sweep_html.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engine/core/text.h"
#include "engine/report/render.h"
#include "engine/sweep/sweep_render.h"

namespace diagnose::sweep {

namespace {

constexpr int kChartWidth = 900;
constexpr int kLabelWidth = 220;
constexpr int kRowHeight = 22;
constexpr int kAxisHeight = 34;

std::string Num(double v) { return FixedDecimal(v, 1); }

// The variants the chart shows: the markdown leaderboard's rows (top and bottom), baseline included.
std::vector<const VariantResult*> Shown(const CellResult& cell) {
  std::vector<const VariantResult*> measured;
  for (const auto& v : cell.variants)
    if (v.measured()) measured.push_back(&v);
  if (measured.size() <= kLeaderboardTop + kLeaderboardBottom) return measured;
  std::vector<const VariantResult*> shown(measured.begin(), measured.begin() + kLeaderboardTop);
  shown.insert(shown.end(), measured.end() - kLeaderboardBottom, measured.end());
  for (const auto* v : measured)
    if (v->is_baseline && std::find(shown.begin(), shown.end(), v) == shown.end()) shown.push_back(v);
  return shown;
}

std::string Chart(const CellResult& cell) {
  const auto shown = Shown(cell);
  double lo = -1, hi = 1;
  for (const auto* v : shown) {
    if (v->is_baseline) continue;
    lo = std::min(lo, v->vs_baseline.low_pct);
    hi = std::max(hi, v->vs_baseline.high_pct);
  }
  const double pad = 0.05 * (hi - lo);
  lo -= pad, hi += pad;
  const int plot = kChartWidth - kLabelWidth - 20;
  auto x = [&](double pct) { return kLabelWidth + plot * (pct - lo) / (hi - lo); };
  const int height = static_cast<int>(shown.size()) * kRowHeight + kAxisHeight;
  std::ostringstream svg;
  svg << "<svg class=\"sweep-chart\" role=\"img\" viewBox=\"0 0 " << kChartWidth << " " << height << "\" width=\""
      << kChartWidth << "\" height=\"" << height << "\"><title>" << HtmlEscape("TGS delta vs " + cell.baseline)
      << " with " << Num(100 * (1 - kFamilyAlpha)) << " % family-wise intervals</title>";
  svg << "<line class=\"zero\" x1=\"" << Num(x(0)) << "\" x2=\"" << Num(x(0)) << "\" y1=\"0\" y2=\""
      << height - kAxisHeight << "\"/>";
  for (size_t i = 0; i < shown.size(); ++i) {
    const VariantResult& v = *shown[i];
    const double y = i * kRowHeight + kRowHeight / 2.0;
    const std::string cls = v.is_baseline ? "baseline" : v.is_winner ? "winner" : v.vs_baseline.verdict == Verdict::kWorse ? "worse" : v.vs_baseline.verdict == Verdict::kBetter ? "better" : "noise";
    svg << "<g class=\"variant " << cls << "\" data-variant=\"" << HtmlEscape(v.name) << "\" data-verdict=\""
        << (v.is_baseline ? "baseline" : VerdictName(v.vs_baseline.verdict)) << "\">";
    svg << "<text class=\"label\" x=\"" << kLabelWidth - 8 << "\" y=\"" << Num(y + 4) << "\">" << HtmlEscape(v.name)
        << (v.is_winner ? " \xE2\x98\x85" : "") << "</text>";
    if (v.is_baseline) {
      svg << "<circle class=\"point\" cx=\"" << Num(x(0)) << "\" cy=\"" << Num(y) << "\" r=\"4\"><title>"
          << HtmlEscape(v.name + ": " + WithThousands(v.mean_tgs) + " TGS/device (baseline)") << "</title></circle>";
    } else {
      const Comparison& c = v.vs_baseline;
      svg << "<line class=\"interval\" x1=\"" << Num(x(c.low_pct)) << "\" x2=\"" << Num(x(c.high_pct)) << "\" y1=\""
          << Num(y) << "\" y2=\"" << Num(y) << "\"/>";
      svg << "<circle class=\"point\" cx=\"" << Num(x(c.delta_pct)) << "\" cy=\"" << Num(y) << "\" r=\"4\"><title>"
          << HtmlEscape(v.name + ": " + WithThousands(v.mean_tgs) + " TGS/device, " + FixedDecimal(c.delta_pct, 2) +
                        " % [" + FixedDecimal(c.low_pct, 2) + ", " + FixedDecimal(c.high_pct, 2) + "], " +
                        VerdictName(c.verdict))
          << "</title></circle>";
    }
    svg << "</g>";
  }
  const double axis_y = height - kAxisHeight + 14;
  for (double tick : {lo, 0.0, hi}) {
    svg << "<text class=\"tick\" x=\"" << Num(x(tick)) << "\" y=\"" << Num(axis_y) << "\">" << FixedDecimal(tick, 1)
        << " %</text>";
  }
  svg << "<text class=\"axis\" x=\"" << Num(kLabelWidth + plot / 2.0) << "\" y=\"" << Num(axis_y + 16)
      << "\">TGS delta vs " << HtmlEscape(cell.baseline) << "</text></svg>";
  return svg.str();
}

}  // namespace

std::string RenderSweepHtml(const SweepResult& result) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>diagnose sweep</title>\n<style>\n"
      << "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;max-width:1100px;color:#222}\n"
      << "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}\n"
      << ".sweep-chart .label{text-anchor:end;font-size:12px}.sweep-chart .tick,.sweep-chart .axis{text-anchor:middle;font-size:11px;fill:#555}\n"
      << ".sweep-chart .zero{stroke:#999;stroke-dasharray:3 3}.sweep-chart .interval{stroke:#777;stroke-width:2}\n"
      << ".sweep-chart .point{fill:#777}.winner .point,.better .point{fill:#1a7f37}.winner .interval{stroke:#1a7f37}\n"
      << ".worse .point{fill:#c62828}.baseline .point{fill:#1f4e9c}.winner .label{font-weight:bold}\n"
      << "tr.winner td{font-weight:bold}.conclusion{font-size:15px}\n</style></head><body>\n";
  out << "<h1>Sweep: " << result.cells.size() << " cell(s), " << result.jobs.size() << " job(s)</h1>\n";
  for (const CellResult& cell : result.cells) {
    out << "<section class=\"cell\" data-cell=\"" << HtmlEscape(cell.key.Label()) << "\"><h2>"
        << HtmlEscape(cell.key.Label()) << "</h2>\n<p class=\"conclusion\">" << HtmlEscape(cell.conclusion) << "</p>\n";
    if (cell.stop_sweep) out << "<p class=\"stop\"><strong>Sweep stopped:</strong> " << HtmlEscape(cell.stop_reason) << "</p>\n";
    out << "<p>Nodelist " << HtmlEscape(cell.pinned_nodelist);
    if (!cell.off_nodelist_jobs.empty())
      out << "; off the pinned nodelist (kept out): " << HtmlEscape(JoinStrings(cell.off_nodelist_jobs));
    out << "</p>\n";
    if (!cell.baseline.empty()) out << Chart(cell) << "\n";
    out << "<table class=\"leaderboard\"><tr><th>Rank</th><th>Profile</th><th>Flags</th><th>TGS/device</th>"
           "<th>Step time (s)</th><th>&Delta; vs baseline [interval]</th><th>Verdict</th><th>Jobs</th></tr>\n";
    int rank = 0;
    for (const auto& v : cell.variants) {
      if (!v.measured()) continue;
      const Comparison& c = v.vs_baseline;
      out << "<tr" << (v.is_winner ? " class=\"winner\"" : "") << "><td>" << ++rank << "</td><td>" << HtmlEscape(v.name)
          << "</td><td>" << HtmlEscape(JoinStrings(v.flags, " ")) << "</td><td>" << WithThousands(v.mean_tgs)
          << "</td><td>" << FixedDecimal(v.mean_step_seconds, 3) << "</td><td>"
          << (v.is_baseline ? std::string("baseline")
                            : FixedDecimal(c.delta_pct, 2) + " % [" + FixedDecimal(c.low_pct, 2) + ", " +
                                  FixedDecimal(c.high_pct, 2) + "]")
          << "</td><td>" << (v.is_baseline ? "" : VerdictName(c.verdict)) << "</td><td>"
          << HtmlEscape(JoinStrings(v.measured_jobs)) << "</td></tr>\n";
    }
    out << "</table>\n<h3>Failures and recovery</h3><ul>\n";
    bool any = false;
    for (const auto& v : cell.variants) {
      if (v.failures.rule == RecoveryRule::kNone) continue;
      any = true;
      out << "<li data-variant=\"" << HtmlEscape(v.name) << "\" data-rule=\"" << RecoveryRuleName(v.failures.rule)
          << "\">" << HtmlEscape(v.name) << ": <strong>" << RecoveryRuleName(v.failures.rule) << "</strong> &mdash; "
          << HtmlEscape(v.failures.explanation) << "</li>\n";
    }
    if (!any) out << "<li>none</li>\n";
    out << "</ul></section>\n";
  }
  for (const auto& w : result.warnings) out << "<p class=\"warning\">" << HtmlEscape(w) << "</p>\n";
  out << "</body></html>\n";
  return out.str();
}

}  // namespace diagnose::sweep
