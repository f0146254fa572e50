// Two records aligned on a common axis: two jobs over their overlapping steps, and per-host bursts
// against phase boundaries.
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

StatusOr<Json> AlignByStep(const AnalysisView& in) {
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

StatusOr<Json> BurstPhaseCorrelation(const AnalysisView& in) {
  auto series = ToSeriesMap(in.input);
  double threshold = Arg(in, "threshold"), tol = Arg(in, "tolerance");
  size_t min_points = static_cast<size_t>(std::max(1.0, Arg(in, "min_points")));
  // Phases as wall-time windows.
  std::vector<std::pair<double, double>> phases;
  if (in.phases.is_array()) {
    const StepClock clock(in.step_times);
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
        if (!clock.TimeOf(f.get<double>(), &a) || !clock.TimeOf(l.get<double>(), &b))
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

}  // namespace diagnose::analysis
