#include "engine/analysis/analysis.h"
#include "engine/analysis/robust_statistics.h"

#include "engine/analysis/incident_analyses.h"
#include "engine/analysis/record_analyses.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <set>

namespace diagnose::analysis {
namespace {

struct Point {
  double x = 0;
  double y = 0;
};


double Mean(const std::vector<Point>& pts, size_t b, size_t e) {
  double s = 0;
  for (size_t i = b; i < e; ++i) s += pts[i].y;
  return e > b ? s / (e - b) : 0;
}

double Stddev(const std::vector<Point>& pts, size_t b, size_t e) {
  if (e - b < 2) return 0;
  double m = Mean(pts, b, e), s = 0;
  for (size_t i = b; i < e; ++i) s += (pts[i].y - m) * (pts[i].y - m);
  return std::sqrt(s / (e - b - 1));
}

// The host part of a reduction key ("chi2822/ionic_0" -> "chi2822").
std::string HostOfKey(const std::string& key) { return key.substr(0, key.find('/')); }

bool ToPoint(const Json& item, const std::string& x, const std::string& y, Point* out) {
  if (item.is_array() && item.size() >= 2 && item[0].is_number() && item[1].is_number()) {
    *out = {item[0].get<double>(), item[1].get<double>()};
    return true;
  }
  if (item.is_object() && item.contains(x) && item.contains(y) && item[x].is_number() && item[y].is_number()) {
    *out = {item[x].get<double>(), item[y].get<double>()};
    return true;
  }
  return false;
}

// A series from: a list of [x, y] pairs or objects, or a map holding exactly one such list.
StatusOr<std::vector<Point>> ToPoints(const Json& input, const std::string& x, const std::string& y) {
  const Json* list = &input;
  if (input.is_object()) {
    if (input.contains("series") && input["series"].is_object()) return ToPoints(input["series"], x, y);
    if (input.size() != 1)
      return InvalidArgumentError("expected one series, got a map of " + std::to_string(input.size()));
    list = &input.begin().value();
  }
  if (!list->is_array()) return InvalidArgumentError("expected a list of points");
  std::vector<Point> pts;
  for (const auto& item : *list) {
    Point p;
    if (ToPoint(item, x, y, &p) && std::isfinite(p.y)) pts.push_back(p);
  }
  std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  return pts;
}

// map key -> list of [t, v]; accepts a query result object (its `series`) too.
std::map<std::string, std::vector<Point>> ToSeriesMap(const Json& input) {
  std::map<std::string, std::vector<Point>> out;
  const Json& m = input.is_object() && input.contains("series") && input["series"].is_object() ? input["series"] : input;
  if (!m.is_object()) return out;
  for (const auto& [k, v] : m.items()) {
    if (!v.is_array()) continue;
    auto& pts = out[k];
    for (const auto& item : v) {
      Point p;
      if (ToPoint(item, "t", "v", &p) && std::isfinite(p.y)) pts.push_back(p);
    }
    std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  }
  return out;
}

double Arg(const AnalysisInput& in, const std::string& name) {
  return in.args.contains(name) && in.args[name].is_number() ? in.args[name].get<double>() : 0;
}
std::string ArgStr(const AnalysisInput& in, const std::string& name) {
  return in.args.contains(name) && in.args[name].is_string() ? in.args[name].get<std::string>() : "";
}

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

bool StepToTime(const Json& step_times, double step, double* epoch) {
  if (!step_times.is_array()) return false;
  std::vector<Point> pts;
  for (const auto& p : step_times) {
    Point pt;
    if (ToPoint(p, "step", "time", &pt)) pts.push_back(pt);
  }
  if (pts.empty()) return false;
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  if (pts.size() == 1) {
    *epoch = pts[0].y;
    return true;
  }
  size_t i = 1;
  while (i + 1 < pts.size() && pts[i].x < step) ++i;
  const Point& a = pts[i - 1];
  const Point& b = pts[i];
  *epoch = b.x == a.x ? a.y : a.y + (step - a.x) * (b.y - a.y) / (b.x - a.x);
  return true;
}

StatusOr<Json> ChangePoints(const AnalysisInput& in) {
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

StatusOr<Json> PeerOutliers(const AnalysisInput& in) {
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

StatusOr<Json> EarliestAnomaly(const AnalysisInput& in) {
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

StatusOr<Json> AlignByStep(const AnalysisInput& in) {
  std::string x = ArgStr(in, "x"), y = ArgStr(in, "y");
  ASSIGN_OR_RETURN(auto s, ToPoints(in.input, x, y));
  ASSIGN_OR_RETURN(auto b, ToPoints(in.baseline_input, x, y));
  Json out = {{"overlap", nullptr}, {"n", 0}, {"subject_mean", nullptr}, {"baseline_mean", nullptr},
              {"delta", nullptr}, {"delta_pct", nullptr}, {"basis", nullptr}};
  if (s.empty() || b.empty()) return out;
  const double skip = Arg(in, "skip_first");
  const bool median = ArgStr(in, "center") == "median";
  // Warm-up steps after each run's first step are not steady state.
  const double subject_first = s.front().x + skip, baseline_first = b.front().x + skip;
  auto level_in = [&](const std::vector<Point>& pts, double lo, double hi, int* n) {
    std::vector<double> ys;
    for (const auto& p : pts)
      if (p.x >= lo && p.x <= hi) ys.push_back(p.y);
    *n = static_cast<int>(ys.size());
    if (ys.empty()) return 0.0;
    if (median) return Median(ys);
    double sum = 0;
    for (double v : ys) sum += v;
    return sum / ys.size();
  };
  double lo = std::max(subject_first, baseline_first);
  double hi = std::min(s.back().x, b.back().x);
  int ns = 0, nb = 0;
  double ms = 0, mb = 0;
  if (lo <= hi) {
    ms = level_in(s, lo, hi, &ns);
    mb = level_in(b, lo, hi, &nb);
  }
  std::string basis = "overlap";
  // A baseline stopped right after the step a restore started from shares few or no steady steps
  // with it; the two runs of one configuration are then compared by their own steady states.
  if (std::min(ns, nb) < Arg(in, "min_overlap")) {
    basis = "steady-states";
    ms = level_in(s, subject_first, s.back().x, &ns);
    mb = level_in(b, baseline_first, b.back().x, &nb);
    if (ns > 0 && nb > 0) {
      lo = std::min(subject_first, baseline_first);
      hi = std::max(s.back().x, b.back().x);
    }
  }
  if (ns == 0 || nb == 0) return out;
  out["overlap"] = {{"first", lo}, {"last", hi}};
  out["n"] = std::min(ns, nb);
  out["subject_mean"] = ms;
  out["baseline_mean"] = mb;
  out["delta"] = ms - mb;
  out["delta_pct"] = mb != 0 ? Json((ms - mb) / mb * 100) : Json();
  out["basis"] = basis;
  return out;
}

StatusOr<Json> Flatline(const AnalysisInput& in) {
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

StatusOr<Json> BurstPhaseCorrelation(const AnalysisInput& in) {
  auto series = ToSeriesMap(in.input);
  double threshold = Arg(in, "threshold"), tol = Arg(in, "tolerance");
  size_t min_points = static_cast<size_t>(std::max(1.0, Arg(in, "min_points")));
  // Phases as wall-time windows.
  std::vector<std::pair<double, double>> phases;
  if (in.phases.is_array()) {
    for (const auto& p : in.phases) {
      if (!p.is_object()) continue;
      if (p.contains("start") && p.contains("end") && p["start"].is_number() && p["end"].is_number()) {
        phases.emplace_back(p["start"].get<double>(), p["end"].get<double>());
      } else if ((p.contains("first_step") && p.contains("last_step")) || (p.contains("first") && p.contains("last"))) {
        // Steps: facts.tgs.phases ({first_step, last_step}) or change_points segments ({first, last}).
        const Json& f = p.contains("first_step") ? p["first_step"] : p["first"];
        const Json& l = p.contains("last_step") ? p["last_step"] : p["last"];
        double a = 0, b = 0;
        if (!f.is_number() || !l.is_number()) continue;
        if (!StepToTime(in.step_times, f.get<double>(), &a) || !StepToTime(in.step_times, l.get<double>(), &b))
          return FailedPreconditionError("burst_phase_correlation: phases are given as steps but discovery has no step->time map");
        phases.emplace_back(a, b);
      }
    }
  }
  Json out = {{"hosts", Json::array()}, {"matches", Json::object()}, {"bursts", Json::object()},
              {"phase_windows", Json::array()}};
  for (const auto& [a, b] : phases) out["phase_windows"].push_back({{"start", a}, {"end", b}});
  std::set<std::string> hosts;
  for (const auto& [key, pts] : series) {
    // Bursts: maximal runs above the threshold.
    std::vector<std::pair<double, double>> bursts;
    size_t i = 0;
    while (i < pts.size()) {
      if (pts[i].y <= threshold) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j + 1 < pts.size() && pts[j + 1].y > threshold) ++j;
      if (j - i + 1 >= min_points) bursts.emplace_back(pts[i].x, pts[j].x);
      i = j + 1;
    }
    std::string host = HostOfKey(key);
    for (const auto& [bs, be] : bursts) out["bursts"][key].push_back({{"start", bs}, {"end", be}});
    for (size_t p = 0; p < phases.size(); ++p) {
      for (const auto& [bs, be] : bursts) {
        if (std::fabs(bs - phases[p].first) <= tol && std::fabs(be - phases[p].second) <= tol) {
          auto& m = out["matches"][host];
          if (std::find(m.begin(), m.end(), Json(p)) == m.end()) m.push_back(p);
          hosts.insert(host);
        }
      }
    }
  }
  for (const auto& h : hosts) out["hosts"].push_back(h);
  return out;
}

StatusOr<Json> UniformDelta(const AnalysisInput& in) {
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

StatusOr<Json> SteadyLevel(const AnalysisInput& in) {
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

StatusOr<Json> WindowRatio(const AnalysisInput& in) {
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
                         {{"aggregate", {"string", "avg", {"avg", "max", "min"}}}},
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
