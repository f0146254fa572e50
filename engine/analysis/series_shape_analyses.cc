// The shape of a series over time: its phases (change points), a series that never changes
// (flatline), its steady level outside given windows, and its ratio between two windows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/analysis/analysis.h"
#include "engine/analysis/robust_statistics.h"
#include "engine/analysis/series_input.h"

namespace diagnose::analysis {

namespace {

// Binary segmentation on mean shifts. A split is kept when both sides have min_segment points, the
// means differ by min_shift_pct of the overall level, and the shift stands out from the noise
// (Welch-like t > 4), so noise and isolated spikes (checkpoints) do not create phases.
void Segment(const std::vector<Point>& pts, size_t b, size_t e, size_t min_seg, double min_shift, double level,
             int depth, std::vector<size_t>* cuts) {
  if (e - b < 2 * min_seg || depth > 6) return;
  double best_gain = 0;
  size_t best = 0;
  double total_mean = Mean(pts, b, e);
  double sse_total = 0;
  for (size_t i = b; i < e; ++i) sse_total += (pts[i].y - total_mean) * (pts[i].y - total_mean);
  // Prefix sums for O(n) split search.
  std::vector<double> s(e - b + 1, 0), s2(e - b + 1, 0);
  for (size_t i = b; i < e; ++i) {
    s[i - b + 1] = s[i - b] + pts[i].y;
    s2[i - b + 1] = s2[i - b] + pts[i].y * pts[i].y;
  }
  for (size_t k = b + min_seg; k + min_seg <= e; ++k) {
    size_t n1 = k - b, n2 = e - k;
    double sum1 = s[n1], sum2 = s[e - b] - s[n1];
    double sq1 = s2[n1], sq2 = s2[e - b] - s2[n1];
    double sse = (sq1 - sum1 * sum1 / n1) + (sq2 - sum2 * sum2 / n2);
    double gain = sse_total - sse;
    if (gain > best_gain) {
      best_gain = gain;
      best = k;
    }
  }
  if (best == 0) return;
  double m1 = Mean(pts, b, best), m2 = Mean(pts, best, e);
  double shift_pct = std::fabs(m2 - m1) / std::max(std::fabs(level), 1e-12) * 100;
  double v1 = Stddev(pts, b, best), v2 = Stddev(pts, best, e);
  double se = std::sqrt(v1 * v1 / (best - b) + v2 * v2 / (e - best));
  double t = se > 0 ? std::fabs(m2 - m1) / se : std::numeric_limits<double>::infinity();
  if (shift_pct < min_shift || t < 4) return;
  cuts->push_back(best);
  Segment(pts, b, best, min_seg, min_shift, level, depth + 1, cuts);
  Segment(pts, best, e, min_seg, min_shift, level, depth + 1, cuts);
}

}  // namespace

StatusOr<Json> ChangePoints(const AnalysisView& in) {
  std::string x = ArgStr(in, "x"), y = ArgStr(in, "y");
  ASSIGN_OR_RETURN(auto pts, ToPoints(in.input, x.empty() ? "x" : x, y.empty() ? "y" : y));
  Json out;
  out["segments"] = Json::array();
  out["change_points"] = Json::array();
  out["count"] = 0;
  out["first_change"] = nullptr;
  out["direction"] = nullptr;
  if (pts.empty()) return out;
  size_t min_seg = static_cast<size_t>(std::max(1.0, Arg(in, "min_segment")));
  std::vector<size_t> cuts;
  double level = Median([&] {
    std::vector<double> ys;
    for (const auto& p : pts) ys.push_back(p.y);
    return ys;
  }());
  Segment(pts, 0, pts.size(), min_seg, Arg(in, "min_shift_pct"), level, 0, &cuts);
  std::sort(cuts.begin(), cuts.end());
  size_t max_segments = static_cast<size_t>(std::max(1.0, Arg(in, "max_segments")));
  if (cuts.size() + 1 > max_segments) cuts.resize(max_segments - 1);
  std::vector<size_t> bounds = {0};
  bounds.insert(bounds.end(), cuts.begin(), cuts.end());
  bounds.push_back(pts.size());
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    size_t b = bounds[i], e = bounds[i + 1];
    out["segments"].push_back({{"first", pts[b].x}, {"last", pts[e - 1].x}, {"mean", Mean(pts, b, e)},
                               {"stddev", Stddev(pts, b, e)}, {"n", e - b}});
  }
  for (size_t c : cuts) out["change_points"].push_back(pts[c].x);
  out["count"] = cuts.size();
  if (!cuts.empty()) {
    out["first_change"] = pts[cuts[0]].x;
    out["direction"] = out["segments"][1]["mean"].get<double>() > out["segments"][0]["mean"].get<double>() ? "up" : "down";
  }
  return out;
}

StatusOr<Json> Flatline(const AnalysisView& in) {
  auto series = ToSeriesMap(in.input);
  size_t min_points = static_cast<size_t>(std::max(2.0, Arg(in, "min_points")));
  double tol = Arg(in, "tolerance");
  Json out = {{"flat", Json::object()}, {"hosts", Json::array()}, {"count", 0}, {"fraction", 0.0}};
  std::set<std::string> hosts;
  int eligible = 0, flat = 0;
  for (const auto& [key, pts] : series) {
    if (pts.size() < min_points) continue;
    ++eligible;
    double lo = pts[0].y, hi = pts[0].y;
    for (const auto& p : pts) {
      lo = std::min(lo, p.y);
      hi = std::max(hi, p.y);
    }
    if (hi - lo <= tol) {
      ++flat;
      out["flat"][key] = pts[0].y;
      hosts.insert(HostOfKey(key));
    }
  }
  for (const auto& h : hosts) out["hosts"].push_back(h);
  out["count"] = flat;
  out["fraction"] = eligible ? static_cast<double>(flat) / eligible : 0.0;
  return out;
}

StatusOr<Json> SteadyLevel(const AnalysisView& in) {
  auto series = ToSeriesMap(in.input);
  std::vector<std::pair<double, double>> excluded;
  if (in.windows.is_array()) {
    for (const auto& w : in.windows) {
      if (w.is_object() && w.contains("start") && w.contains("end") && w["start"].is_number() && w["end"].is_number())
        excluded.emplace_back(w["start"].get<double>(), w["end"].get<double>());
    }
  } else if (!in.windows.is_null()) {
    return InvalidArgumentError("steady_level: `windows` must be a list of {start, end} to leave out");
  }
  const size_t min_points = static_cast<size_t>(std::max(1.0, Arg(in, "min_points")));
  Json out = {{"values", Json::object()}, {"spread", Json::object()}, {"n", Json::object()},
              {"hosts", Json::array()},   {"count", 0},               {"median", nullptr},
              {"spread_median", nullptr}, {"excluded_points", 0}};
  std::set<std::string> hosts;
  std::vector<double> levels, spreads;
  int dropped = 0;
  Json unwindowed = Json::array();
  for (const auto& [key, pts] : series) {
    std::vector<double> kept, all;
    int dropped_here = 0;
    for (const auto& p : pts) {
      all.push_back(p.y);
      const bool inside = std::any_of(excluded.begin(), excluded.end(),
                                      [&](const auto& w) { return p.x >= w.first && p.x <= w.second; });
      if (inside) ++dropped_here;
      else kept.push_back(p.y);
    }
    // A series that lies (almost) wholly inside the windows (a short baseline cancelled right after
    // a save) keeps its level from every point: biased by the disturbance, but a level, where
    // nothing would leave the comparison without its reference. Named in `unwindowed`.
    if (kept.size() < min_points && all.size() >= min_points) {
      kept = std::move(all);
      dropped_here = 0;
      unwindowed.push_back(key);
    }
    dropped += dropped_here;
    if (kept.size() < min_points) continue;
    const double level = Median(kept);
    // 1.4826 * MAD estimates the standard deviation of normal noise.
    const double spread = 1.4826 * Mad(kept, level);
    out["values"][key] = level;
    out["spread"][key] = spread;
    out["n"][key] = kept.size();
    hosts.insert(HostOfKey(key));
    levels.push_back(level);
    spreads.push_back(spread);
  }
  for (const auto& h : hosts) out["hosts"].push_back(h);
  out["count"] = levels.size();
  out["excluded_points"] = dropped;
  out["unwindowed"] = unwindowed;
  if (!levels.empty()) {
    out["median"] = Median(levels);
    out["spread_median"] = Median(spreads);
  }
  return out;
}

StatusOr<Json> WindowRatio(const AnalysisView& in) {
  auto series = ToSeriesMap(in.input);
  if (!in.windows.is_array() || in.windows.size() != 2)
    return InvalidArgumentError("window_ratio needs `windows`: a list of two {start, end}");
  auto bounds = [&](const Json& w, double* a, double* b) {
    if (!w.is_object() || !w.contains("start") || !w.contains("end") || !w["start"].is_number() || !w["end"].is_number())
      return false;
    *a = w["start"].get<double>();
    *b = w["end"].get<double>();
    return true;
  };
  double a0, a1, b0, b1;
  if (!bounds(in.windows[0], &a0, &a1) || !bounds(in.windows[1], &b0, &b1))
    return InvalidArgumentError("window_ratio: each window needs numeric start and end");
  std::string agg = ArgStr(in, "aggregate");
  auto aggregate = [&](const std::vector<Point>& pts, double s, double e, bool* ok) {
    std::vector<double> v;
    for (const auto& p : pts)
      if (p.x >= s && p.x <= e) v.push_back(p.y);
    *ok = !v.empty();
    if (v.empty()) return 0.0;
    if (agg == "max") return *std::max_element(v.begin(), v.end());
    if (agg == "min") return *std::min_element(v.begin(), v.end());
    // A window's typical level: a checkpoint save that idles the GPUs for part of it moves the
    // mean but not the median.
    if (agg == "median") return Median(std::move(v));
    double sum = 0;
    for (double x : v) sum += x;
    return sum / v.size();
  };
  Json out = {{"ratio", Json::object()}, {"first", Json::object()}, {"second", Json::object()}};
  for (const auto& [key, pts] : series) {
    bool ok1 = false, ok2 = false;
    double f = aggregate(pts, a0, a1, &ok1), s = aggregate(pts, b0, b1, &ok2);
    if (!ok1 || !ok2) continue;
    out["first"][key] = f;
    out["second"][key] = s;
    if (f != 0) out["ratio"][key] = s / f;
  }
  return out;
}

}  // namespace diagnose::analysis
