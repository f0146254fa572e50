// Hosts against their peers: outliers of one value, a delta between two jobs and whether it is
// uniform, and the series that moved first.
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

StatusOr<Json> PeerOutliers(const AnalysisView& in) {
  if (!in.input.is_object()) return InvalidArgumentError("peer_outliers needs a map key -> number");
  std::vector<double> vals;
  for (const auto& [k, v] : in.input.items())
    if (v.is_number()) vals.push_back(v.get<double>());
  Json out = {{"outliers", Json::object()}, {"hosts", Json::array()}, {"scores", Json::object()},
              {"median", nullptr}, {"mad", nullptr}};
  if (vals.empty()) return out;
  double med = Median(vals), mad = Mad(vals, med);
  out["median"] = med;
  out["mad"] = mad;
  std::string dir = ArgStr(in, "direction");
  double threshold = Arg(in, "mad_threshold"), min_abs = Arg(in, "min_abs_deviation");
  // An effect size next to the peers' own level: a deviation that is tiny against the median is
  // not material however small the MAD of very uniform peers.
  min_abs = std::max(min_abs, Arg(in, "min_rel_deviation") * std::fabs(med));
  std::set<std::string> hosts;
  for (const auto& [k, v] : in.input.items()) {
    if (!v.is_number()) continue;
    double dev = v.get<double>() - med;
    // 0.6745 makes the MAD score comparable to a z-score for normal data (Iglewicz & Hoaglin).
    double score = mad > 0 ? 0.6745 * dev / mad : (dev == 0 ? 0 : std::copysign(1e9, dev));
    out["scores"][k] = score;
    bool side = dir == "both" ? true : dir == "low" ? dev < 0 : dev > 0;
    if (side && std::fabs(score) > threshold && std::fabs(dev) > min_abs) {
      out["outliers"][k] = v;
      hosts.insert(HostOfKey(k));
    }
  }
  for (const auto& h : hosts) out["hosts"].push_back(h);
  return out;
}

StatusOr<Json> UniformDelta(const AnalysisView& in) {
  if (!in.input.is_object() || !in.baseline_input.is_object())
    return InvalidArgumentError("uniform_delta needs two maps host -> number");
  std::vector<double> base_vals;
  for (const auto& [k, v] : in.baseline_input.items())
    if (v.is_number()) base_vals.push_back(v.get<double>());
  Json out = {{"deltas", Json::object()}, {"hosts", Json::array()}, {"count", 0}, {"median", nullptr},
              {"min", nullptr}, {"max", nullptr}, {"spread_pct", nullptr}, {"uniform", false}, {"paired", true}};
  if (base_vals.empty()) return out;
  // A host both jobs ran on is compared with itself; a host only the subject ran on (another
  // allocation, or a partly overlapping one) with the baseline's median, so every subject host counts.
  const double base_median = Median(base_vals);
  bool any_common = false;
  std::vector<double> deltas;
  for (const auto& [k, v] : in.input.items()) {
    if (!v.is_number()) continue;
    double b = base_median;
    if (in.baseline_input.contains(k) && in.baseline_input[k].is_number()) {
      b = in.baseline_input[k].get<double>();
      any_common = true;
    }
    double d = v.get<double>() - b;
    out["deltas"][k] = d;
    out["hosts"].push_back(k);
    deltas.push_back(d);
  }
  out["paired"] = any_common;
  if (deltas.empty()) return out;
  double med = Median(deltas);
  double lo = *std::min_element(deltas.begin(), deltas.end());
  double hi = *std::max_element(deltas.begin(), deltas.end());
  double spread = std::fabs(med) > 0 ? (hi - lo) / std::fabs(med) * 100 : (hi - lo == 0 ? 0 : 1e9);
  out["count"] = deltas.size();
  out["median"] = med;
  out["min"] = lo;
  out["max"] = hi;
  out["spread_pct"] = spread;
  out["uniform"] = spread <= Arg(in, "max_spread_pct") && std::fabs(med) >= Arg(in, "min_delta");
  // Robust view: one noisy host (a short baseline, a checkpoint writer) cannot make a delta that
  // every other host shares look non-uniform.
  out["mad"] = Mad(deltas, med);
  const double band = Arg(in, "max_spread_pct") / 100 * std::fabs(med);
  const auto within = std::count_if(deltas.begin(), deltas.end(), [&](double d) { return std::fabs(d - med) <= band; });
  out["within_fraction"] = static_cast<double>(within) / deltas.size();
  return out;
}

StatusOr<Json> EarliestAnomaly(const AnalysisView& in) {
  if (!in.input.is_object()) return InvalidArgumentError("earliest_anomaly needs a map family -> series");
  size_t base_n = static_cast<size_t>(std::max(1.0, Arg(in, "baseline_points")));
  double k = Arg(in, "mad_threshold"), rel = Arg(in, "min_rel_change");
  Json out = {{"onsets", Json::object()}, {"keys", Json::object()}, {"order", Json::array()},
              {"clean", Json::array()}, {"first", nullptr}, {"first_onset", nullptr}};
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [family, data] : in.input.items()) {
    auto series = ToSeriesMap(data);
    double best = std::numeric_limits<double>::infinity();
    std::string best_key;
    for (const auto& [key, pts] : series) {
      if (pts.size() <= base_n) continue;
      std::vector<double> base;
      for (size_t i = 0; i < base_n; ++i) base.push_back(pts[i].y);
      double med = Median(base), mad = Mad(base, med);
      double limit = std::max({k * 1.4826 * mad, rel * std::fabs(med), 1e-9});
      for (size_t i = base_n; i < pts.size(); ++i) {
        if (std::fabs(pts[i].y - med) > limit) {
          if (pts[i].x < best) {
            best = pts[i].x;
            best_key = key;
          }
          break;
        }
      }
    }
    if (std::isfinite(best)) {
      out["onsets"][family] = best;
      out["keys"][family] = best_key;
      order.emplace_back(best, family);
    } else {
      out["clean"].push_back(family);
    }
  }
  std::sort(order.begin(), order.end());
  for (const auto& [t, f] : order) out["order"].push_back(f);
  if (!order.empty()) {
    out["first"] = order[0].second;
    out["first_onset"] = order[0].first;
  }
  return out;
}

}  // namespace diagnose::analysis
