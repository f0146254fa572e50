#include "engine/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "engine/core/iso_time.h"
#include "engine/core/url_encode.h"
#include "engine/core/text.h"
#include "engine/core/utf8.h"
#include "engine/report/first_screen.h"
#include "engine/report/render.h"
#include "engine/report/svg_chart.h"

namespace diagnose {

namespace {

using nlohmann::json;
using StepMap = std::vector<std::pair<int64_t, double>>;

constexpr size_t kMaxChartsPerFinding = 3;
constexpr size_t kMaxBlamedLines = 12;
constexpr size_t kHeatmapMinHosts = 16;
constexpr size_t kHeatmapColumns = 120;
// Bars beyond this many GPUs make a page no one scrolls; the JSON keeps every GPU's medians.
constexpr size_t kMaxProfileBars = 256;
// A phase this far below the best phase is drawn as degraded (the triage's own phase split decides
// where phases are; this only picks the shade).
constexpr double kDegradedShadeFraction = 0.95;

// default-src 'none': no fetch, image, font or script can leave the file, whatever a label holds.
constexpr const char* kHead = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
)";

constexpr const char* kStyle = R"(<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1b1b;max-width:1000px;margin:1.5em auto;padding:0 1em}
h1{font-size:1.35em;margin:.2em 0}h2{font-size:1.15em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1em;margin:1.2em 0 .3em}.verdict{font-size:1.2em;font-weight:600}.verdict.bad{color:#b3261e}
.verdict.none{color:#1e7b34}.verdict.unknown{color:#9a6700}.incomplete{background:#fde7e9;border:1px solid #b3261e;padding:.5em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}
pre.promql{background:#f6f8fa;border:1px solid #e1e4e8;padding:.4em;white-space:pre-wrap;word-break:break-all;margin:.2em 0;user-select:all}
.muted{color:#666}li,p{overflow-wrap:anywhere}.quote{font-family:ui-monospace,monospace;font-size:.9em;background:#f6f8fa;padding:0 .3em}
figure.chart{margin:.6em 0}figure.chart svg{max-width:100%;height:auto;background:#fff}figcaption{color:#555;font-size:.9em}
svg text{font:11px system-ui,sans-serif;fill:#333}svg .title{font-weight:600;font-size:12px}svg .grid{stroke:#eee}
svg .axis{stroke:#888}svg .series,svg .tgs-line,svg .median{fill:none;stroke-width:1.6}svg .series.blamed{stroke-width:2.2}
svg .median{stroke:#4a6fa5 !important;stroke-dasharray:4 2}svg path.band,svg rect.band{fill:#4a6fa5;opacity:.2;stroke:none}
svg .phase{fill:#8c8c8c;opacity:.10}svg .phase.degraded{fill:#d55e00;opacity:.13}svg .phase.outline{fill:none;stroke:#d55e00;opacity:.6}
svg .checkpoint{stroke:#777;stroke-dasharray:2 3}svg .onset{stroke:#b3261e;stroke-width:2;stroke-dasharray:7 3}
svg .host.blamed{fill:#b3261e;font-weight:600}svg .row-highlight{fill:none;stroke:#b3261e;stroke-width:.8}
svg .secondary{fill:#777}svg .bar-part.compute{fill:#0072b2}svg .bar-part.exposed-comm{fill:#d55e00}
svg .bar-part.idle{fill:#bbb}svg .bar-part.overlap{fill:#009e73;opacity:.45}svg .step-mark{stroke:#1b1b1b;stroke-width:1.5}details{margin-top:2em}summary{cursor:pointer;font-weight:600}
@media print{details{display:none}}
</style></head><body>
)";

std::string Esc(const std::string& s) { return HtmlEscape(ValidUtf8(s)); }

std::string HostOfKey(const std::string& key) { return key.substr(0, key.find('/')); }

std::vector<svg::Point> PointsOf(const json& list) {
  std::vector<svg::Point> pts;
  if (!list.is_array()) return pts;
  for (const auto& p : list)
    if (p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number())
      pts.push_back({p[0].get<double>(), p[1].get<double>()});
  return pts;
}

// Median and range across series at each timestamp they share (range queries are step-aligned).
svg::Band BandOf(const std::vector<const json*>& lists, const std::string& label, double x_offset = 0, double x_scale = 1) {
  std::map<double, std::vector<double>> at;
  for (const json* l : lists)
    for (const auto& p : PointsOf(*l)) at[p.x].push_back(p.y);
  svg::Band b;
  b.label = label;
  // Thin to at most ~500 columns by keeping every k-th timestamp: a band is context, not evidence.
  const size_t stride = std::max<size_t>(1, at.size() / 500);
  size_t i = 0;
  for (auto& [x, ys] : at) {
    if (i++ % stride) continue;
    std::sort(ys.begin(), ys.end());
    b.x.push_back((x - x_offset) * x_scale);
    b.low.push_back(ys.front());
    b.high.push_back(ys.back());
    b.median.push_back(ys.size() % 2 ? ys[ys.size() / 2] : (ys[ys.size() / 2 - 1] + ys[ys.size() / 2]) / 2);
  }
  return b;
}

std::vector<svg::Shade> PhaseShades(const JobFacts* facts, const StepMap& steps) {
  std::vector<svg::Shade> out;
  if (facts == nullptr || steps.size() < 2) return out;
  const auto& phases = facts->tgs.phases;
  if (phases.size() < 2) return out;
  double best = 0;
  for (const auto& ph : phases) best = std::max(best, ph.mean_tgs);
  for (const auto& ph : phases) {
    const double a = static_cast<double>(ph.first_step), b = static_cast<double>(ph.last_step), mean = ph.mean_tgs;
    auto t0 = TimeOfStep(steps, a - 1), t1 = TimeOfStep(steps, b);
    if (!t0 || !t1) continue;
    char label[160];
    std::snprintf(label, sizeof label, "steps %.0f-%.0f: mean TGS %.0f", a, b, mean);
    out.push_back({*t0, *t1, mean < best * kDegradedShadeFraction ? "phase degraded" : "phase", label});
  }
  return out;
}

std::string ChartFigure(const std::string& kind, const std::vector<std::pair<std::string, std::string>>& attrs,
                        const std::string& svg, const std::string& caption) {
  std::string out = "<figure class=\"chart\" data-chart=\"" + kind + "\"";
  for (const auto& [k, v] : attrs) out += " data-" + k + "=\"" + Esc(v) + "\"";
  out += ">" + svg;
  if (!caption.empty()) out += "<figcaption>" + caption + "</figcaption>";
  return out + "</figure>\n";
}

// Whether a chart sets its blamed hosts apart: every blamed host's peak lies beyond the others'
// (above their 90th percentile by half again, or below their 10th by a third). A chart where the
// blamed hosts sit inside the crowd shows nothing about why they were blamed.
bool SeparatesBlamedHosts(const Evidence& e, const std::set<std::string>& blamed) {
  std::map<std::string, double> peaks;
  for (const auto& [key, list] : e.series->items()) {
    double& peak = peaks.try_emplace(HostOfKey(key), -INFINITY).first->second;
    for (const auto& p : PointsOf(list)) peak = std::max(peak, p.y);
  }
  std::vector<double> in, out;
  for (const auto& [host, peak] : peaks)
    if (std::isfinite(peak)) (blamed.count(host) ? in : out).push_back(peak);
  if (in.empty() || out.empty()) return true;
  std::sort(out.begin(), out.end());
  const double high = out[std::min(out.size() - 1, out.size() * 9 / 10)];
  const double low = out[out.size() / 10];
  const double lowest_blamed = *std::min_element(in.begin(), in.end());
  const double highest_blamed = *std::max_element(in.begin(), in.end());
  return lowest_blamed > std::max(high * 1.5, high + 1e-9) || highest_blamed < low / 1.5;
}

std::string TgsChart(const Report& r, const JobEntry& job) {
  const JobFacts* facts = FactsOf(r, job.id);
  if (facts == nullptr) return "";
  svg::LineChart c;
  c.title = "TGS, job " + job.id;
  c.y_label = "tokens/s/device";
  c.x_axis = svg::Axis::kNumber;
  c.x_label = "step (wall time UTC below)";
  svg::Line line;
  line.label = "TGS";
  line.css_class = "tgs-line";
  line.data["job"] = job.id;
  for (const auto& st : facts->steps) line.points.push_back({static_cast<double>(st.step), st.tokens_per_sec_per_device});
  if (line.points.size() < 2) return "";
  c.lines.push_back(std::move(line));
  const TgsAnalysis& tgs = facts->tgs;
  const auto& phases = tgs.phases;
  double best = 0;
  for (const auto& ph : phases) best = std::max(best, ph.mean_tgs);
  if (phases.size() > 1)
    for (const auto& ph : phases) {
      const double a = static_cast<double>(ph.first_step), b = static_cast<double>(ph.last_step), mean = ph.mean_tgs;
      char label[160];
      std::snprintf(label, sizeof label, "steps %.0f-%.0f: mean TGS %.0f", a, b, mean);
      c.shades.push_back({a - 0.5, b + 0.5, mean < best * kDegradedShadeFraction ? "phase degraded" : "phase", label});
    }
  for (const int64_t saved : facts->checkpoint_saves)
    c.markers.push_back({static_cast<double>(saved), "checkpoint", "checkpoint saved at step " + std::to_string(saved)});
  auto steps = r.step_times.find(job.id);
  // The red line says throughput left its healthy level: only where triage found it did (a drop, or
  // a material dip). Another finding's onset on a steady TGS line would read as a slowdown.
  std::optional<int64_t> left_healthy = tgs.degradation_onset_step;
  if (!left_healthy && !tgs.dips.empty()) left_healthy = tgs.dips.front().first_step;
  if (left_healthy)
    c.markers.push_back({static_cast<double>(*left_healthy), "onset",
                         "throughput left its healthy level at step " + std::to_string(*left_healthy)});
  if (steps != r.step_times.end() && steps->second.size() >= 2) {
    const double lo = c.lines[0].points.front().x, hi = c.lines[0].points.back().x;
    for (double s : svg::NiceTicks(lo, hi, 6))
      if (auto t = TimeOfStep(steps->second, s)) c.secondary_ticks.emplace_back(s, IsoUtc(*t).substr(11, 5));
  }
  std::string caption = "Shaded: TGS phases (orange: below the best phase); dotted: checkpoints";
  caption += left_healthy ? "; red dashed: where throughput first left its healthy level." : ".";
  if (c.secondary_ticks.empty()) caption += " No step map in the TSDB: wall time not shown.";
  return ChartFigure("tgs", {{"job", job.id}}, svg::RenderLineChart(c), caption);
}

std::string SeriesChart(const Report& r, const Finding& f, const std::string& finding_ids, const Evidence& e,
                        const std::set<std::string>& blamed) {
  svg::LineChart c;
  c.title = ValidUtf8(e.text.empty() ? e.query : e.text, 90, true);
  c.x_axis = svg::Axis::kUnixTime;
  c.x_label = "UTC";
  std::vector<const json*> rest;
  size_t rest_hosts = 0;
  std::set<std::string> seen_rest;
  for (const auto& [key, list] : e.series->items()) {
    const std::string host = HostOfKey(key);
    if (blamed.count(host) && c.lines.size() < kMaxBlamedLines) {
      svg::Line l;
      l.label = key;
      l.css_class = "series blamed";
      l.data["host"] = host;
      l.points = PointsOf(list);
      c.lines.push_back(std::move(l));
    } else {
      rest.push_back(&list);
      if (seen_rest.insert(host).second) ++rest_hosts;
    }
  }
  if (!rest.empty()) c.bands.push_back(BandOf(rest, "other " + std::to_string(rest_hosts) + " hosts"));
  if (!r.jobs.empty()) {
    auto steps = r.step_times.find(r.jobs.front().id);
    if (steps != r.step_times.end()) c.shades = PhaseShades(FactsOf(r, r.jobs.front().id), steps->second);
  }
  if (f.onset) c.markers.push_back({*f.onset, "onset", "earliest anomaly " + IsoUtc(*f.onset)});
  std::string caption = "Blamed hosts drawn as lines, the rest as a band (median dashed, min-max shaded)";
  if (!c.shades.empty()) caption += "; shaded: TGS phases in wall time";
  return ChartFigure("series", {{"finding", finding_ids}}, svg::RenderLineChart(c), caption + ".");
}

// Both jobs on one axis (time since each job's window start): the restore's extra threads show as
// one line sitting above the other.
std::string BaselineChart(const Report& r, const std::string& finding_ids, const Evidence& subject, const Evidence& baseline) {
  svg::LineChart c;
  c.title = ValidUtf8(subject.text.empty() ? subject.query : subject.text, 90, true) + " (both jobs)";
  c.x_axis = svg::Axis::kElapsedMinutes;
  c.x_label = "minutes since the job's window start";
  const std::string subject_id = r.jobs.empty() ? "subject" : r.jobs.front().id;
  std::string baseline_id = "baseline";
  for (const auto& j : r.jobs)
    if (j.role == JobRole::kBaseline) baseline_id = j.id;
  using JobSeries = std::pair<const Evidence*, const std::string*>;
  for (const auto& [e, id] : {JobSeries{&subject, &subject_id}, JobSeries{&baseline, &baseline_id}}) {
    std::vector<const json*> lists;
    for (const auto& [key, list] : e->series->items()) lists.push_back(&list);
    const double start = e->window ? e->window->start : 0;
    svg::Band b = BandOf(lists, "job " + *id + " range", start, 1.0 / 60);
    svg::Line l;
    l.label = "job " + *id + " (median of " + std::to_string(lists.size()) + ")";
    l.css_class = "series";
    l.data["job"] = *id;
    for (size_t i = 0; i < b.x.size(); ++i) l.points.push_back({b.x[i], b.median[i]});
    b.data["job"] = *id;
    b.draw_median = false;
    c.lines.push_back(std::move(l));
    if (lists.size() > 1) c.bands.push_back(std::move(b));
  }
  return ChartFigure("baseline", {{"finding", finding_ids}}, svg::RenderLineChart(c),
                     "Each job's median across its hosts as a line, its min-max as a band.");
}

std::string Heatmap(const Report& r, const Finding& f, const Evidence& e, const std::set<std::string>& blamed) {
  std::map<std::string, std::map<double, double>> per_host;   // devices folded by max
  double t0 = 1e300, t1 = -1e300;
  for (const auto& [key, list] : e.series->items())
    for (const auto& p : PointsOf(list)) {
      auto& slot = per_host[HostOfKey(key)][p.x];
      slot = std::max(slot, p.y);
      t0 = std::min(t0, p.x), t1 = std::max(t1, p.x);
    }
  if (per_host.size() < kHeatmapMinHosts || !(t1 > t0)) return "";
  svg::Heatmap h;
  h.title = "per host: " + ValidUtf8(e.text.empty() ? e.query : e.text, 80, true);
  h.value_label = "";
  const size_t cols = kHeatmapColumns;
  h.column_width = (t1 - t0) / static_cast<double>(cols);
  for (size_t c = 0; c < cols; ++c) h.column_start.push_back(t0 + h.column_width * static_cast<double>(c));
  std::vector<std::pair<std::string, double>> order;
  for (const auto& [host, pts] : per_host) {
    double peak = 0;
    for (const auto& [t, v] : pts) peak = std::max(peak, v);
    order.emplace_back(host, peak);
  }
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    if (blamed.count(a.first) != blamed.count(b.first)) return blamed.count(a.first) > 0;
    return a.second > b.second;
  });
  for (const auto& [host, peak] : order) {
    h.rows.push_back(host);
    h.highlighted.push_back(blamed.count(host) > 0);
    h.cells.push_back(svg::BinSamples(per_host[host], t0, h.column_width, cols));
  }
  if (!r.jobs.empty()) {
    auto steps = r.step_times.find(r.jobs.front().id);
    if (steps != r.step_times.end()) h.shades = PhaseShades(FactsOf(r, r.jobs.front().id), steps->second);
  }
  return ChartFigure("heatmap", {{"finding", f.id}}, svg::RenderHeatmap(h),
                     "Hosts (blamed first, then by peak) against time; darker is higher; outlined: TGS phases.");
}

std::string EvidenceList(const Report& r, const Finding& f) {
  std::ostringstream out;
  out << "<ul class=\"evidence\">";
  for (const auto& e : f.evidence) {
    out << "<li>";
    if (e.role == JobRole::kBaseline) out << "<span class=\"muted\">baseline job</span> ";
    if (e.kind == EvidenceKind::kPromql) {
      out << "<pre class=\"promql\">" << Esc(e.query) << "</pre>";
      if (e.window) out << "<span class=\"muted\">" << Esc(IsoWindow(*e.window)) << "</span> ";
      if (!e.text.empty()) out << Esc(e.text) << " ";
      if (e.window && !r.graph_endpoint.empty()) {
        const std::string url = GraphPageUrl(r.graph_endpoint, e.query, *e.window);
        if (!url.empty()) out << "<a class=\"graph-link\" href=\"" << HtmlEscape(url) << "\">graph</a>";
      }
      if (auto strongest = StrongestEvidence(Finding{f.id, f.playbook, f.status, f.hosts, {e}, "", std::nullopt}))
        out << "<br><span class=\"muted\">" << Esc(strongest->detail) << "</span>";
    } else if (e.kind == EvidenceKind::kLog) {
      out << "<code>" << Esc(e.query) << "</code> <span class=\"quote\">" << Esc(ValidUtf8(e.text, 400, true)) << "</span>";
    } else {
      out << Esc(e.text.empty() ? e.query : e.text);
      if (!e.value.is_null()) out << " <span class=\"muted\">" << Esc(ValidUtf8(FormatEvidenceValue(e.value), 300, true)) << "</span>";
    }
    out << "</li>";
  }
  out << "</ul>\n";
  return out.str();
}

std::string Header(const Report& r, const FirstScreen& s) {
  std::ostringstream out;
  out << "<header><h1>" << Esc(s.jobs.empty() ? "diagnose report" : s.jobs.front()) << "</h1>";
  for (size_t i = 1; i < s.jobs.size(); ++i) out << "<div>" << Esc(s.jobs[i]) << "</div>";
  for (const auto& d : s.job_details) out << "<div class=\"muted\">" << Esc(d) << "</div>";
  if (s.incomplete)
    out << "<p class=\"incomplete\"><b>INCOMPLETE:</b> " << Esc(*s.incomplete) << " (exit status 3; the decision is none)</p>";
  const std::string tone = r.verdict.root_cause == "none" ? "none" : r.verdict.root_cause == "unknown" ? "unknown" : "bad";
  out << "<h2>What happened</h2><p class=\"verdict " << tone << "\">" << Esc(s.verdict) << "</p><p>" << Esc(s.summary) << "</p>";
  if (!s.causal_chain.empty()) out << "<p class=\"muted\">chain: " << Esc(s.causal_chain) << "</p>";
  if (!s.refuted.empty()) out << "<p class=\"muted\">refuted: " << Esc(s.refuted) << "</p>";
  if (!s.runner_up.empty()) out << "<p class=\"muted\">runner-up: " << Esc(s.runner_up) << "</p>";
  out << "<h2>What to do</h2><p class=\"verdict\">" << Esc(s.action) << "</p>";
  if (!s.policy.empty()) out << "<p class=\"policy\">sweep policy: " << Esc(s.policy) << "</p>";
  if (!r.decision.exclude.empty()) {
    out << "<table class=\"exclusions\"><tr><th>exclude</th><th>priority</th><th>reason</th></tr>";
    for (const auto& x : r.decision.exclude)
      out << "<tr data-blamed-host=\"" << Esc(x.host) << "\"><td><b>" << Esc(x.host) << "</b></td><td>" << x.priority
          << "</td><td>" << Esc(x.reason) << "</td></tr>";
    out << "</table>";
  }
  if (!s.changes.empty() || !r.decision.notes.empty()) {
    out << "<ul>";
    for (const auto& c : s.changes) out << "<li>change <code>" << Esc(c) << "</code></li>";
    for (const auto& n : r.decision.notes) out << "<li>" << Esc(n) << "</li>";
    out << "</ul>";
  }
  out << "</header>\n";
  return out.str();
}


double NumberOr(const json& j, const char* key, double fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string StringOr(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Per GPU: compute, exposed communication and idle add up to the step (wall time); overlap is
// kernel time hidden under other kernels, so it is drawn past the step mark, not inside it.
std::string ProfileBars(const Report& r) {
  if (!r.profile_gpus.is_array() || r.profile_gpus.empty()) return "";
  svg::StackedBars bars;
  bars.title = "Step-time decomposition per GPU (s per step)";
  bars.x_label = "seconds per step";
  bars.parts = {{"compute", "compute"}, {"exposed communication", "exposed-comm"}, {"idle", "idle"}, {"overlap", "overlap"}};
  bars.marker = NumberOr(r.profile, "step_seconds", 0);
  bars.marker_label = "step time " + FixedDecimal(bars.marker, 2) + " s";
  size_t shown = 0;
  for (const auto& gpu : r.profile_gpus) {
    if (!gpu.is_object()) continue;
    if (++shown > kMaxProfileBars) break;
    svg::BarRow row;
    row.label = ValidUtf8(StringOr(gpu, "label"), 28, true);
    row.data = {{"gpu", std::to_string(static_cast<long long>(NumberOr(gpu, "gpu", 0)))},
                {"file", ValidUtf8(StringOr(gpu, "file"))}};
    row.values = {NumberOr(gpu, "compute", 0), NumberOr(gpu, "exposed_communication", 0), NumberOr(gpu, "idle", 0),
                  NumberOr(gpu, "overlap", 0)};
    bars.rows.push_back(std::move(row));
  }
  std::string caption = "One bar per GPU: compute + exposed communication + idle = the step";
  caption += bars.marker > 0 ? " (dark line: the step time, " + Esc(StringOr(r.profile, "step_source")) + ")"
                             : " (step time unknown: idle not drawn)";
  caption += "; overlap (kernel time under other kernels) drawn after it.";
  if (shown > kMaxProfileBars)
    caption += " First " + std::to_string(kMaxProfileBars) + " of " + std::to_string(r.profile_gpus.size()) + " GPUs.";
  return ChartFigure("profile-bars", {}, svg::RenderStackedBars(bars), caption);
}

std::string ProfileFamilyTable(const json& profile) {
  const auto families = profile.find("families");
  if (families == profile.end() || !families->is_array()) return "";
  std::ostringstream out;
  out << "<table class=\"kernel-families\"><tr><th>kernel family</th><th>kind</th><th>s per GPU per step</th>"
         "<th>launches</th></tr>";
  for (const auto& f : *families) {
    if (!f.is_object() || NumberOr(f, "launches", 0) <= 0) continue;
    out << "<tr data-family=\"" << Esc(StringOr(f, "id")) << "\"><td>" << Esc(StringOr(f, "label")) << "</td><td>"
        << Esc(StringOr(f, "kind")) << "</td><td>" << FixedDecimal(NumberOr(f, "seconds_per_gpu_step", 0), 3)
        << "</td><td>" << FixedDecimal(NumberOr(f, "launches", 0), 0) << "</td></tr>";
    const auto kernels = f.find("kernels");
    if (kernels == f.end() || !kernels->is_array()) continue;
    for (const auto& k : *kernels)
      if (k.is_object())
        out << "<tr class=\"kernel\"><td>&nbsp;&nbsp;" << Esc(ValidUtf8(StringOr(k, "name"), 80, true))
            << "</td><td></td><td>" << FixedDecimal(NumberOr(k, "seconds_per_gpu_step", 0), 3) << "</td><td>"
            << FixedDecimal(NumberOr(k, "launches", 0), 0) << "</td></tr>";
  }
  out << "<tr class=\"total\"><td><b>total kernel time (all streams)</b></td><td></td><td>"
      << FixedDecimal(NumberOr(profile, "total_kernel_seconds", 0), 3) << "</td><td></td></tr>";
  const auto minus = profile.find("step_minus_total_kernel_seconds");
  if (minus != profile.end() && minus->is_number())
    out << "<tr class=\"step-minus-total\"><td>step &minus; total kernel</td><td></td><td>"
        << (minus->get<double>() >= 0 ? "+" : "") << FixedDecimal(minus->get<double>(), 3)
        << "</td><td>" << (minus->get<double>() > 0 ? "main-stream stalls" : "overlap") << "</td></tr>";
  out << "</table>\n";
  return out.str();
}

std::string ProfileSection(const Report& r) {
  if (!r.profile.is_object() || r.profile.empty()) return "";
  std::ostringstream out;
  out << "<h2>Profile</h2>\n";
  if (const std::string error = StringOr(r.profile, "error"); !error.empty())
    return out.str() + "<p class=\"incomplete\">profile window not read: " + Esc(error) + "</p>\n";
  out << ProfileBars(r) << ProfileFamilyTable(r.profile);
  return out.str();
}

std::string ThroughputSection(const Report& r) {
  std::ostringstream out;
  out << "<h2>Throughput</h2>\n";
  if (r.jobs.size() > 1) {
    // Both jobs' TGS over steps on one axis.
    svg::LineChart c;
    c.title = "TGS, both jobs";
    c.y_label = "tokens/s/device";
    c.x_axis = svg::Axis::kNumber;
    c.x_label = "step";
    for (const auto& job : r.jobs) {
      svg::Line l;
      l.label = "job " + job.id + (job.role == JobRole::kBaseline ? " (baseline)" : "");
      l.css_class = "series";
      l.data["job"] = job.id;
      if (const JobFacts* facts = FactsOf(r, job.id))
        for (const auto& st : facts->steps) l.points.push_back({static_cast<double>(st.step), st.tokens_per_sec_per_device});
      c.lines.push_back(std::move(l));
    }
    out << ChartFigure("baseline", {{"metric", "tgs"}}, svg::RenderLineChart(c), "Both jobs' TGS over steps.");
  }
  for (const auto& job : r.jobs) {
    std::string chart = TgsChart(r, job);
    out << (chart.empty() ? "<p class=\"muted\">Job " + Esc(job.id) + ": too few step lines for a TGS timeline.</p>\n" : chart);
  }
  return out.str();
}

bool ChartedSeries(const Evidence& e) {
  return e.kind == EvidenceKind::kPromql && e.series && e.series->is_object() && !e.series->empty();
}

std::string ChartKey(const Evidence& e) { return std::string(ToString(e.role)) + '\x1f' + e.query; }

// Which fired findings cite each charted query, which queries are drawn already, and where the
// heatmap goes: shared by every finding's section, so a query several cite is drawn once.
struct ChartPlan {
  std::set<std::string> excluded;
  std::map<std::string, std::vector<const Finding*>> citing;
  std::set<std::string> charted;
  const Evidence* heatmap_source = nullptr;
  const Finding* heatmap_finding = nullptr;

  // A query several findings cite is drawn once, under the first, and names all of them.
  std::string IdsCiting(const Evidence& e) {
    std::string ids;
    for (const Finding* f : citing[ChartKey(e)]) ids += (ids.empty() ? "" : " ") + f->id;
    return ids;
  }
  // Its highlighted hosts are those any of the citing findings blames.
  std::set<std::string> BlamedBy(const Evidence& e) {
    std::set<std::string> blamed;
    for (const Finding* f : citing[ChartKey(e)])
      for (const auto& h : f->hosts) blamed.insert(HostOfKey(h));
    return blamed.empty() ? excluded : blamed;
  }
};

ChartPlan PlanCharts(const Report& r, const std::vector<const Finding*>& fired) {
  ChartPlan plan;
  for (const auto& x : r.decision.exclude) plan.excluded.insert(x.host);
  for (const Finding* f : fired)
    for (const auto& e : f->evidence) {
      if (!ChartedSeries(e)) continue;
      auto& citers = plan.citing[ChartKey(e)];
      if (citers.empty() || citers.back() != f) citers.push_back(f);
    }
  // The heatmap: the first per-host family over 16+ hosts that is not zero everywhere (a family
  // that never moved has nothing to shade), the deciding finding's first.
  for (const Finding* f : fired) {
    for (const auto& e : f->evidence) {
      if (!ChartedSeries(e) || e.role != JobRole::kSubject) continue;
      std::set<std::string> hosts;
      bool moved = false;
      for (const auto& [key, list] : e.series->items()) {
        hosts.insert(HostOfKey(key));
        for (const auto& p : PointsOf(list)) moved = moved || p.y != 0;
      }
      if (hosts.size() >= kHeatmapMinHosts && moved) {
        plan.heatmap_source = &e;
        plan.heatmap_finding = f;
        return plan;
      }
    }
  }
  return plan;
}

// Charts in order of what they prove: a subject/baseline pair of one query, then series that set
// the blamed hosts against the rest, then the blamed alone, then the rest.
struct EvidenceRanking {
  static constexpr int kNoContrast = 4;
  const Finding& finding;
  const std::set<std::string>& blamed;
  // A finding that puts hosts up for exclusion is shown by the charts that set them apart; one
  // where they overlap the rest (congestion every host saw) comes last and only if nothing else does.
  bool excludes = false;

  const Evidence* PartnerOf(const Evidence& e) const {
    for (const auto& other : finding.evidence)
      if (&other != &e && ChartedSeries(other) && other.role != e.role && other.query == e.query) return &other;
    return nullptr;
  }
  // Blamed hosts beside the others show the contrast; blamed hosts alone show only their shape.
  int Rank(const Evidence& e) const {
    if (e.role == JobRole::kSubject && PartnerOf(e)) return 0;
    bool some_blamed = false, some_other = false;
    for (const auto& [key, list] : e.series->items()) (blamed.count(HostOfKey(key)) ? some_blamed : some_other) = true;
    if (some_blamed && some_other && excludes && !SeparatesBlamedHosts(e, blamed)) return kNoContrast;
    return some_blamed && some_other ? 1 : some_blamed ? 2 : 3;
  }
};

std::string FindingHeading(const Finding& f) {
  std::string out = "<section class=\"finding\" data-finding=\"" + Esc(f.id) + "\"><h3>" + Esc(f.id);
  if (!f.hosts.empty()) {
    out += " <span class=\"muted\">[";
    for (size_t i = 0; i < f.hosts.size(); ++i) out += (i ? ", " : "") + Esc(f.hosts[i]);
    out += "]</span>";
  }
  return out + "</h3><p>" + Esc(f.summary) + "</p>\n";
}

std::string FindingSection(const Report& r, const Finding& f, ChartPlan& plan) {
  std::ostringstream out;
  out << FindingHeading(f);
  std::set<std::string> blamed;
  for (const auto& h : f.hosts) blamed.insert(HostOfKey(h));
  if (blamed.empty()) blamed = plan.excluded;
  const EvidenceRanking ranking{
      f, blamed, std::any_of(blamed.begin(), blamed.end(), [&](const std::string& h) { return plan.excluded.count(h) > 0; })};
  std::vector<const Evidence*> candidates;
  for (const auto& e : f.evidence)
    if (ChartedSeries(e)) candidates.push_back(&e);
  // Within a rank, the query over more series first: it sets the blamed hosts against more peers.
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Evidence* a, const Evidence* b) {
    const int ra = ranking.Rank(*a), rb = ranking.Rank(*b);
    return ra != rb ? ra < rb : a->series->size() > b->series->size();
  });
  size_t charts = 0;
  std::vector<std::string> drawn_before;
  for (const Evidence* ep : candidates) {
    const Evidence& e = *ep;
    if (!plan.charted.insert(ChartKey(e)).second) {
      if (plan.citing[ChartKey(e)].front() != &f) drawn_before.push_back(plan.citing[ChartKey(e)].front()->id);
      continue;
    }
    if (charts >= kMaxChartsPerFinding || (charts > 0 && ranking.Rank(e) == EvidenceRanking::kNoContrast)) {
      plan.charted.erase(ChartKey(e));   // left for a later finding that cites it
      continue;
    }
    const Evidence* partner = e.role == JobRole::kSubject ? ranking.PartnerOf(e) : nullptr;
    if (partner) {
      plan.charted.insert(ChartKey(*partner));
      out << BaselineChart(r, plan.IdsCiting(e), e, *partner);
    } else {
      out << SeriesChart(r, f, plan.IdsCiting(e), e, plan.BlamedBy(e));
    }
    ++charts;
  }
  if (&f == plan.heatmap_finding) out << Heatmap(r, f, *plan.heatmap_source, plan.BlamedBy(*plan.heatmap_source));
  std::sort(drawn_before.begin(), drawn_before.end());
  drawn_before.erase(std::unique(drawn_before.begin(), drawn_before.end()), drawn_before.end());
  for (const auto& id : drawn_before) out << "<p class=\"muted\">Its series are charted above, under " << Esc(id) << ".</p>\n";
  out << EvidenceList(r, f) << "</section>\n";
  return out.str();
}

std::string FiredFindingsSection(const Report& r) {
  std::vector<const Finding*> fired;
  for (const auto& f : r.findings)
    if (f.status == FindingStatus::kFired) fired.push_back(&f);
  // The deciding finding first; the rest in evaluation order.
  std::stable_partition(fired.begin(), fired.end(), [&](const Finding* f) { return f->id == r.verdict.finding; });
  std::string out = "<h2>Fired findings (" + std::to_string(fired.size()) + ")</h2>\n";
  ChartPlan plan = PlanCharts(r, fired);
  for (const Finding* f : fired) out += FindingSection(r, *f, plan);
  return out;
}

}  // namespace

std::optional<double> TimeOfStep(const StepMap& steps, double step) {
  if (steps.size() < 2) return std::nullopt;
  auto it = std::lower_bound(steps.begin(), steps.end(), step,
                             [](const std::pair<int64_t, double>& p, double s) { return static_cast<double>(p.first) < s; });
  size_t hi = it == steps.end() ? steps.size() - 1 : static_cast<size_t>(it - steps.begin());
  if (hi == 0) hi = 1;
  const auto& a = steps[hi - 1];
  const auto& b = steps[hi];
  if (b.first == a.first) return a.second;
  return a.second + (step - static_cast<double>(a.first)) * (b.second - a.second) / static_cast<double>(b.first - a.first);
}

std::string GraphPageUrl(const std::string& endpoint, const std::string& query, const TimeWindow& window) {
  if (endpoint.rfind("http://", 0) != 0 && endpoint.rfind("https://", 0) != 0) return "";
  std::string base = endpoint;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const long range = std::max(60L, static_cast<long>(std::ceil(window.end - window.start)));
  std::string end = IsoUtc(window.end);
  if (end.size() >= 19) end = end.substr(0, 10) + " " + end.substr(11, 8);
  return base + "/graph?g0.expr=" + UrlEncode(query) + "&g0.tab=0&g0.range_input=" + std::to_string(range) +
         "s&g0.end_input=" + UrlEncode(end);
}

std::string RenderHtmlReport(const Report& r, const std::string& details_html) {
  const FirstScreen screen = BuildFirstScreen(r, 1000);
  std::ostringstream out;
  out << kHead << "<title>" << Esc("diagnose: " + (r.jobs.empty() ? std::string("report") : "job " + r.jobs.front().id) +
                                   ": " + r.verdict.root_cause)
      << "</title>\n" << kStyle;
  out << Header(r, screen);
  out << ThroughputSection(r);
  out << ProfileSection(r);
  out << FiredFindingsSection(r);
  out << "<p class=\"muted\">" << screen.clear << " checks clear";
  if (screen.skipped) out << ", " << screen.skipped << " skipped for insufficient evidence";
  if (screen.errors) out << ", " << screen.errors << " could not be evaluated";
  out << ".</p>\n";
  out << "<details><summary>Every check with its evidence</summary>\n" << details_html << "</details>\n";
  out << "<footer class=\"muted\">diagnose " << DIAGNOSE_VERSION << "; times UTC.</footer></body></html>\n";
  return out.str();
}

}  // namespace diagnose
