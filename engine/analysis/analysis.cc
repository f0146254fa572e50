// The analyses' registry (each family's analyses live in their own file: series_shape_analyses,
// peer_analyses, alignment_analyses, incident_analyses, record_analyses, tgs_attribution) and the
// conversions every family shares.
#include "engine/analysis/analysis.h"

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "engine/analysis/incident_analyses.h"
#include "engine/analysis/record_analyses.h"
#include "engine/analysis/series_input.h"

namespace diagnose::analysis {

bool ParseDurationSeconds(const std::string& text, double* seconds) {
  static const std::regex re("^([0-9]+)(ms|s|m|h|d|w|y)");
  std::string rest = text;
  double total = 0;
  if (rest.empty()) return false;
  std::smatch m;
  while (!rest.empty()) {
    if (!std::regex_search(rest, m, re)) {
      char* end = nullptr;
      double plain = std::strtod(rest.c_str(), &end);
      if (total == 0 && end && *end == '\0' && rest == text) {
        *seconds = plain;
        return true;
      }
      return false;
    }
    double n = std::stod(m[1].str());
    const std::string unit = m[2].str();
    double mult = unit == "ms" ? 0.001 : unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600
                : unit == "d" ? 86400 : unit == "w" ? 604800 : 31536000;
    total += n * mult;
    rest = m.suffix().str();
  }
  *seconds = total;
  return true;
}

StepClock::StepClock(const Json& step_times) {
  if (!step_times.is_array()) return;
  std::vector<Point> pts;
  for (const auto& p : step_times) {
    Point pt;
    if (ToPoint(p, "step", "time", &pt)) pts.push_back(pt);
  }
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  points_.reserve(pts.size());
  for (const Point& p : pts) points_.emplace_back(p.x, p.y);
}

bool StepClock::TimeOf(double step, double* epoch) const {
  if (points_.empty()) return false;
  if (points_.size() == 1) {
    *epoch = points_[0].second;
    return true;
  }
  // The first point from the second on whose step is not below `step`, else the last: the segment
  // that interpolates it (or extrapolates past either end).
  const auto at = std::lower_bound(points_.begin() + 1, points_.end() - 1, step,
                                   [](const std::pair<double, double>& p, double s) { return p.first < s; });
  const auto& [ax, ay] = *(at - 1);
  const auto& [bx, by] = *at;
  *epoch = bx == ax ? ay : ay + (step - ax) * (by - ay) / (bx - ax);
  return true;
}

bool StepToTime(const Json& step_times, double step, double* epoch) { return StepClock(step_times).TimeOf(step, epoch); }

const std::map<std::string, AnalysisDef>& Registry() {
  static const std::map<std::string, AnalysisDef> kRegistry = [] {
    std::map<std::string, AnalysisDef> r;
    r["change_points"] = {"change_points", "phase segmentation of a series by mean shifts",
                          {{"min_segment", {"number", 5, {}}}, {"min_shift_pct", {"number", 5, {}}},
                           {"max_segments", {"number", 8, {}}}, {"x", {"string", "x", {}}}, {"y", {"string", "y", {}}}},
                          {{"segments", "list"}, {"change_points", "list"}, {"count", "number"},
                           {"first_change", "number"}, {"direction", "string"}},
                          {"input"}, ChangePoints};
    r["peer_outliers"] = {"peer_outliers", "per-key outliers against peers (median/MAD)",
                          {{"direction", {"string", "high", {"high", "low", "both"}}},
                           {"mad_threshold", {"number", 3.5, {}}}, {"min_abs_deviation", {"number", 0, {}}},
                           {"min_rel_deviation", {"number", 0, {}}}},
                          {{"outliers", "map"}, {"hosts", "list"}, {"median", "number"}, {"mad", "number"}, {"scores", "map"}},
                          {"input"}, PeerOutliers};
    r["earliest_anomaly"] = {"earliest_anomaly", "which metric family moved first",
                             {{"baseline_points", {"number", 5, {}}}, {"mad_threshold", {"number", 4, {}}},
                              {"min_rel_change", {"number", 0.1, {}}}},
                             {{"first", "string"}, {"first_onset", "number"}, {"onsets", "map"}, {"order", "list"},
                              {"keys", "map"}, {"clean", "list"}},
                             {"input"}, EarliestAnomaly};
    r["align_by_step"] = {"align_by_step", "two jobs compared over their overlapping step range",
                          {{"x", {"string", "step", {}}}, {"y", {"string", "tokens_per_sec_per_device", {}}},
                           {"skip_first", {"number", 5, {}}}, {"min_overlap", {"number", 0, {}}},
                           {"center", {"string", "mean", {"mean", "median"}}}},
                          {{"overlap", "map"}, {"n", "number"}, {"subject_mean", "number"}, {"baseline_mean", "number"},
                           {"delta", "number"}, {"delta_pct", "number"}, {"basis", "string"}},
                          {"input", "baseline_input"}, AlignByStep};
    r["flatline"] = {"flatline", "series that never change (ghost data)",
                     {{"min_points", {"number", 6, {}}}, {"tolerance", {"number", 0, {}}}},
                     {{"flat", "map"}, {"hosts", "list"}, {"count", "number"}, {"fraction", "number"}},
                     {"input"}, Flatline};
    r["burst_phase_correlation"] = {"burst_phase_correlation", "per-host bursts that start/stop with phase boundaries",
                                    {{"threshold", {"number", 0, {}}}, {"tolerance", {"duration", 60, {}}},
                                     {"min_points", {"number", 1, {}}}},
                                    {{"hosts", "list"}, {"matches", "map"}, {"bursts", "map"}, {"phase_windows", "list"}},
                                    {"input", "phases"}, BurstPhaseCorrelation};
    r["uniform_delta"] = {"uniform_delta", "per-host delta between two jobs and whether it is uniform",
                          {{"max_spread_pct", {"number", 25, {}}}, {"min_delta", {"number", 0, {}}}},
                          {{"deltas", "map"}, {"hosts", "list"}, {"count", "number"}, {"median", "number"},
                           {"min", "number"}, {"max", "number"}, {"spread_pct", "number"}, {"uniform", "bool"},
                           {"paired", "bool"}, {"mad", "number"}, {"within_fraction", "number"}},
                          {"input", "baseline_input"}, UniformDelta};
    r["steady_level"] = {"steady_level", "per-key median level and noise of a series outside given windows (all of it when too little lies outside)",
                         {{"min_points", {"number", 3, {}}}},
                         {{"values", "map"}, {"spread", "map"}, {"n", "map"}, {"hosts", "list"}, {"count", "number"},
                          {"median", "number"}, {"spread_median", "number"}, {"excluded_points", "number"},
                          {"unwindowed", "list"}},
                         {"input"}, SteadyLevel};
    r["window_ratio"] = {"window_ratio", "per-key ratio of a series between two windows",
                         {{"aggregate", {"string", "avg", {"avg", "max", "min", "median"}}}},
                         {{"ratio", "map"}, {"first", "map"}, {"second", "map"}},
                         {"input", "windows"}, WindowRatio};
    AddIncidentAnalyses(&r);
    RegisterRecordAnalyses(r);
    return r;
  }();
  return kRegistry;
}

const AnalysisDef* FindAnalysis(const std::string& name) {
  auto it = Registry().find(name);
  return it == Registry().end() ? nullptr : &it->second;
}

}  // namespace diagnose::analysis
