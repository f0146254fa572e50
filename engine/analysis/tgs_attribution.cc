#include "engine/analysis/tgs_attribution.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/analysis/robust_statistics.h"
#include "engine/core/text.h"

namespace diagnose::analysis {
namespace {

double ArgOr(const AnalysisView& in, const std::string& name, double fallback) {
  return in.args.contains(name) && in.args[name].is_number() ? in.args[name].get<double>() : fallback;
}

struct StepPoint {
  double step = 0, time = 0, y = 0;   // y = log TGS
};

struct LevelFit {
  std::vector<double> beta, se;
  double sse = 0;
};

// Ordinary least squares of y on an intercept and the given 0/1 columns; nullopt when singular.
std::optional<LevelFit> LeastSquares(const std::vector<double>& y, const std::vector<const std::vector<double>*>& cols) {
  const size_t n = y.size(), k = cols.size() + 1;
  if (n <= k) return std::nullopt;
  auto x = [&](size_t i, size_t j) { return j == 0 ? 1.0 : (*cols[j - 1])[i]; };
  // [X'X | X'y | I], Gauss-Jordan with partial pivoting: the solution and the inverse's diagonal.
  std::vector<std::vector<double>> m(k, std::vector<double>(2 * k + 1, 0));
  for (size_t a = 0; a < k; ++a) {
    for (size_t b = 0; b < k; ++b)
      for (size_t i = 0; i < n; ++i) m[a][b] += x(i, a) * x(i, b);
    for (size_t i = 0; i < n; ++i) m[a][k] += x(i, a) * y[i];
    m[a][k + 1 + a] = 1;
  }
  for (size_t c = 0; c < k; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::abs(m[r][c]) > std::abs(m[piv][c])) piv = r;
    if (std::abs(m[piv][c]) < 1e-9 * static_cast<double>(n)) return std::nullopt;
    std::swap(m[c], m[piv]);
    const double d = m[c][c];
    for (double& v : m[c]) v /= d;
    for (size_t r = 0; r < k; ++r) {
      if (r == c || m[r][c] == 0) continue;
      const double f = m[r][c];
      for (size_t j = 0; j < m[r].size(); ++j) m[r][j] -= f * m[c][j];
    }
  }
  LevelFit fit;
  for (size_t a = 0; a < k; ++a) fit.beta.push_back(m[a][k]);
  for (size_t i = 0; i < n; ++i) {
    double pred = 0;
    for (size_t j = 0; j < k; ++j) pred += fit.beta[j] * x(i, j);
    fit.sse += (y[i] - pred) * (y[i] - pred);
  }
  const double var = std::max(fit.sse / static_cast<double>(n - k), 1e-12);
  for (size_t a = 0; a < k; ++a) fit.se.push_back(std::sqrt(var * std::max(m[a][k + 1 + a], 0.0)));
  return fit;
}

double IndicatorCorrelation(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= n, mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

// The job's steps as (step, time, log TGS), sorted, without step 0 (it carries compilation).
StatusOr<std::vector<StepPoint>> ReadStepPoints(const AnalysisView& in) {
  std::vector<StepPoint> pts;
  const StepClock clock(in.step_times);
  for (const auto& s : in.baseline_input) {
    if (!s.is_object() || !s.contains("step") || !s.contains("tokens_per_sec_per_device") || !s["step"].is_number() ||
        !s["tokens_per_sec_per_device"].is_number())
      continue;
    const double tgs = s["tokens_per_sec_per_device"].get<double>();
    StepPoint p;
    p.step = s["step"].get<double>();
    if (tgs <= 0) continue;
    if (!clock.TimeOf(p.step, &p.time))
      return FailedPreconditionError("tgs_attribution: discovery has no step->time map");
    p.y = std::log(tgs);
    pts.push_back(p);
  }
  std::sort(pts.begin(), pts.end(), [](const StepPoint& a, const StepPoint& b) { return a.step < b.step; });
  if (!pts.empty()) pts.erase(pts.begin());
  return pts;
}

// Spikes (checkpoint saves, pauses): far from the median of their +-2 neighbours. A dip of three
// steps or more keeps its own median and stays.
std::vector<bool> MarkSpikes(const std::vector<StepPoint>& pts, double noise) {
  std::vector<bool> spike(pts.size(), false);
  for (size_t i = 0; i < pts.size(); ++i) {
    std::vector<double> w;
    for (size_t j = i >= 2 ? i - 2 : 0; j <= std::min(pts.size() - 1, i + 2); ++j) w.push_back(pts[j].y);
    spike[i] = std::abs(pts[i].y - Median(w)) > std::max(5 * noise, 0.03);
  }
  return spike;
}

struct HostStates {
  std::vector<std::string> hosts;
  std::vector<std::vector<int>> state;   // per host and step: -1 ambiguous, 0 out, 1 in
  std::vector<bool> other;               // a fault of another kind (`windows`): in the fit, never blamed here
};

// Per host: 1 inside its error intervals, 0 outside, ambiguous at the edges (the step that
// straddles an onset; the rate window's smear after the last error).
void ReadHostStates(const Json& bursts_by_host, bool other, const std::vector<StepPoint>& pts, double step_seconds,
                    double smear, HostStates* states) {
  HostStates& out = *states;
  if (!bursts_by_host.is_object()) return;
  for (const auto& [host, bursts] : bursts_by_host.items()) {
    if (!bursts.is_array()) continue;
    std::vector<int> st(pts.size(), 0);
    for (const auto& b : bursts) {
      if (!b.is_object() || !b.contains("start") || !b.contains("end") || !b["start"].is_number() || !b["end"].is_number())
        continue;
      const double bs = b["start"].get<double>(), be = b["end"].get<double>();
      for (size_t i = 0; i < pts.size(); ++i) {
        const double t = pts[i].time;
        if (t >= bs + step_seconds && t <= be - smear) st[i] = 1;
        else if (t >= bs - step_seconds && t <= be + step_seconds && st[i] == 0) st[i] = -1;
      }
    }
    out.hosts.push_back(host);
    out.state.push_back(std::move(st));
    out.other.push_back(other);
  }
}

// The regression of log TGS on one 0/1 column per host, over the steps no spike and no ambiguous
// edge touches; a host is testable with enough steps both inside and outside its errors.
class AttributionModel {
 public:
  AttributionModel(const std::vector<StepPoint>& pts, const std::vector<bool>& spike, const HostStates& states,
                   const AnalysisView& in)
      : min_effect_(ArgOr(in, "min_effect_pct", 3) / 100.0),
        min_t_(ArgOr(in, "min_t", 8)),
        min_points_(static_cast<size_t>(std::max(1.0, ArgOr(in, "min_points", 3)))),
        col_(states.hosts.size()),
        testable_(states.hosts.size(), false) {
    for (size_t i = 0; i < pts.size(); ++i) {
      bool ok = !spike[i];
      for (const auto& st : states.state) ok = ok && st[i] >= 0;
      if (ok) used_.push_back(i);
    }
    for (size_t i : used_) y_.push_back(pts[i].y);
    for (size_t h = 0; h < states.hosts.size(); ++h) {
      size_t inside = 0;
      for (size_t i : used_) {
        col_[h].push_back(states.state[h][i] == 1 ? 1.0 : 0.0);
        inside += states.state[h][i] == 1;
      }
      testable_[h] = inside >= min_points_ && used_.size() - inside >= min_points_;
    }
  }

  size_t hosts() const { return col_.size(); }
  bool testable(size_t h) const { return testable_[h]; }
  const std::vector<double>& column(size_t h) const { return col_[h]; }
  const std::vector<double>& y() const { return y_; }
  double min_effect() const { return min_effect_; }
  double min_t() const { return min_t_; }
  size_t min_points() const { return min_points_; }

  std::optional<LevelFit> FitWith(const std::vector<size_t>& set) const {
    std::vector<const std::vector<double>*> cols;
    for (size_t h : set) cols.push_back(&col_[h]);
    return LeastSquares(y_, cols);
  }
  // A host's term in a fit explains TGS loss when it lowers TGS enough, clearly above the noise.
  bool Explains(const LevelFit& f, size_t term) const {
    const double b = f.beta[term + 1], se = f.se[term + 1];
    return b < 0 && 1 - std::exp(b) >= min_effect_ && -b / std::max(se, 1e-12) >= min_t_;
  }

 private:
  double min_effect_, min_t_;
  size_t min_points_;
  std::vector<size_t> used_;
  std::vector<double> y_;
  std::vector<std::vector<double>> col_;
  std::vector<bool> testable_;
};

bool Contains(const std::vector<size_t>& set, size_t h) { return std::find(set.begin(), set.end(), h) != set.end(); }

// Forward selection of the hosts whose terms explain TGS loss (the lowest residual first); a host
// that entered early may be made redundant by later ones: drop the weakest until all hold.
std::vector<size_t> SelectExplainingHosts(const AttributionModel& model) {
  std::vector<size_t> selected;
  for (;;) {
    std::optional<size_t> best;
    double best_sse = 0;
    for (size_t h = 0; h < model.hosts(); ++h) {
      if (!model.testable(h) || Contains(selected, h)) continue;
      auto set = selected;
      set.push_back(h);
      auto f = model.FitWith(set);
      if (!f || !model.Explains(*f, set.size() - 1)) continue;
      if (!best || f->sse < best_sse) best = h, best_sse = f->sse;
    }
    if (!best) break;
    selected.push_back(*best);
  }
  for (bool changed = true; changed && !selected.empty();) {
    changed = false;
    auto f = model.FitWith(selected);
    if (!f) break;
    std::optional<size_t> weakest;
    double weakest_t = 0;
    for (size_t j = 0; j < selected.size(); ++j) {
      if (model.Explains(*f, j)) continue;
      const double t = -f->beta[j + 1] / std::max(f->se[j + 1], 1e-12);
      if (!weakest || t < weakest_t) weakest = j, weakest_t = t;
    }
    if (weakest) {
      selected.erase(selected.begin() + static_cast<long>(*weakest));
      changed = true;
    }
  }
  return selected;
}

// Unselected host -> the selected hosts it cannot be told from (its errors at the same steps), when
// it explains the loss in their place.
std::map<size_t, std::vector<size_t>> HostsSharingAnEffect(const AttributionModel& model,
                                                           const std::vector<size_t>& selected) {
  std::map<size_t, std::vector<size_t>> shared;
  for (size_t h = 0; h < model.hosts(); ++h) {
    if (!model.testable(h) || Contains(selected, h)) continue;
    std::vector<size_t> twins, rest;
    for (size_t s : selected) (IndicatorCorrelation(model.column(h), model.column(s)) >= 0.9 ? twins : rest).push_back(s);
    if (twins.empty()) continue;
    rest.push_back(h);
    auto f = model.FitWith(rest);
    if (f && model.Explains(*f, rest.size() - 1)) shared[h] = twins;
  }
  return shared;
}

struct Contrast {
  double effect = 0, t = 0;
};

// Collectives wait for the slowest host, so costs do not add: a smaller fault under a larger one
// moves TGS only where it is the largest on, and an additive fit can miss it. The direct contrast
// catches that: the steps with a set of hosts in error against the steps with the same set minus
// this host, both observed (its own stretch against healthy steps, its end against the recovery).
std::map<size_t, Contrast> ContrastHosts(const AttributionModel& model, double noise) {
  // Medians and MADs: a group can hold steps another kind of fault slowed that no column marks
  // (one `windows` did not name), and those must not drag its level or inflate its spread.
  struct Group {
    std::vector<double> v;
    double n = 0, centre = 0, var = 0;
    void Finish() {
      n = static_cast<double>(v.size());
      centre = Median(v);
      const double mad = 1.4826 * Mad(v, centre);
      var = 1.5708 * mad * mad;   // (pi/2) sigma^2: the sampling variance of a median is that over n
    }
  };
  const double min_points = static_cast<double>(model.min_points());
  std::map<std::vector<bool>, Group> groups;
  for (size_t k = 0; k < model.y().size(); ++k) {
    std::vector<bool> key(model.hosts());
    for (size_t h = 0; h < model.hosts(); ++h) key[h] = model.column(h)[k] > 0;
    groups[key].v.push_back(model.y()[k]);
  }
  for (auto& [key, g] : groups) g.Finish();
  std::map<size_t, Contrast> contrasted;
  for (const auto& [key, with] : groups) {
    if (with.n < min_points) continue;
    for (size_t h = 0; h < model.hosts(); ++h) {
      if (!key[h] || !model.testable(h)) continue;
      auto other = key;
      other[h] = false;
      auto it = groups.find(other);
      if (it == groups.end() || it->second.n < min_points) continue;
      const Group& without = it->second;
      const double diff = without.centre - with.centre;
      const double floor = 1.5708 * noise * noise;
      const double se = std::sqrt(std::max(with.var, floor) / with.n + std::max(without.var, floor) / without.n);
      const Contrast c{1 - std::exp(-diff), diff / std::max(se, 1e-12)};
      if (c.effect >= model.min_effect() && c.t >= model.min_t() && c.t > contrasted[h].t) contrasted[h] = c;
    }
  }
  for (auto it = contrasted.begin(); it != contrasted.end();) it = it->second.t > 0 ? std::next(it) : contrasted.erase(it);
  return contrasted;
}

// One host's verdict in `out`: untested, no effect, or explains (with its effect, t, steps and the
// hosts it shares the effect with).
void WriteHostAttribution(size_t h, const std::vector<StepPoint>& pts, const HostStates& states,
                          const AttributionModel& model, const std::vector<size_t>& selected,
                          const std::optional<LevelFit>& final_fit, std::map<size_t, std::vector<size_t>>& shared,
                          std::map<size_t, Contrast>& contrasted, Json& out) {
  const std::string& host = states.hosts[h];
  const bool is_selected = Contains(selected, h);
  if (!model.testable(h)) {
    out["untested"].push_back(host);
    return;
  }
  if (!is_selected && !shared.count(h) && !contrasted.count(h)) {
    out["no_effect"].push_back(host);
    return;
  }
  Json d;
  double first = 1e300, last = -1e300;
  for (size_t i = 0; i < pts.size(); ++i)
    if (states.state[h][i] == 1) first = std::min(first, pts[i].step), last = std::max(last, pts[i].step);
  std::optional<LevelFit> f = final_fit;
  size_t term = 0;
  if (!is_selected && !shared.count(h)) {
    const Contrast& c = contrasted[h];
    d["effect_pct"] = c.effect * 100.0;
    d["t"] = c.t;
    d["first_step"] = first;
    d["last_step"] = last;
    out["details"][host] = d;
    out["explains"].push_back(host);
    out["explained_text"].push_back(host + ": steps " + FixedDecimal(first, 0) + "-" + FixedDecimal(last, 0) + " (-" +
                                    FixedDecimal(c.effect * 100.0, 1) + " % TGS where it is the slowest)");
    return;
  }
  if (is_selected) {
    term = static_cast<size_t>(std::find(selected.begin(), selected.end(), h) - selected.begin());
  } else {
    std::vector<size_t> rest;
    for (size_t s : selected)
      if (!Contains(shared[h], s)) rest.push_back(s);
    rest.push_back(h);
    f = model.FitWith(rest);
    term = rest.size() - 1;
    Json twins = Json::array();
    for (size_t s : shared[h]) twins.push_back(states.hosts[s]);
    d["shared_with"] = twins;
  }
  if (!f) return;
  const double effect = (1 - std::exp(f->beta[term + 1])) * 100.0;
  d["effect_pct"] = effect;
  d["t"] = -f->beta[term + 1] / std::max(f->se[term + 1], 1e-12);
  d["first_step"] = first;
  d["last_step"] = last;
  out["details"][host] = d;
  out["explains"].push_back(host);
  out["explained_text"].push_back(host + ": steps " + FixedDecimal(first, 0) + "-" + FixedDecimal(last, 0) + " (-" +
                                  FixedDecimal(effect, 1) + " % TGS" +
                                  (d.contains("shared_with") ? ", together with " + JoinStrings(d["shared_with"].get<std::vector<std::string>>(), ", ") : "") +
                                  ")");
}

}  // namespace

StatusOr<Json> TgsAttribution(const AnalysisView& in) {
  if (!in.input.is_object()) return InvalidArgumentError("tgs_attribution: input must be a map host -> bursts");
  if (!in.baseline_input.is_array())
    return InvalidArgumentError("tgs_attribution: baseline_input must be the job's steps (a list)");
  Json out = {{"explains", Json::array()}, {"no_effect", Json::array()}, {"untested", Json::array()},
              {"details", Json::object()}, {"explained_text", Json::array()}, {"others_explain", Json::array()}};
  ASSIGN_OR_RETURN(const std::vector<StepPoint> pts, ReadStepPoints(in));
  if (pts.size() < 6) return out;
  std::vector<double> gaps, diffs;
  for (size_t i = 1; i < pts.size(); ++i) {
    gaps.push_back(pts[i].time - pts[i - 1].time);
    diffs.push_back(pts[i].y - pts[i - 1].y);
  }
  const double step_seconds = std::max(1.0, Median(gaps));
  const double noise = 1.4826 * Mad(diffs, Median(diffs)) / std::sqrt(2.0);
  const std::vector<bool> spike = MarkSpikes(pts, noise);
  const double smear = ArgOr(in, "smear", 150);
  HostStates states;
  ReadHostStates(in.input, false, pts, step_seconds, smear, &states);
  if (states.hosts.empty()) return out;
  ReadHostStates(in.windows, true, pts, step_seconds, smear, &states);
  const AttributionModel model(pts, spike, states, in);
  const std::vector<size_t> selected = SelectExplainingHosts(model);
  std::map<size_t, std::vector<size_t>> shared = HostsSharingAnEffect(model, selected);
  std::map<size_t, Contrast> contrasted = ContrastHosts(model, noise);
  const std::optional<LevelFit> final_fit = model.FitWith(selected);
  for (size_t h = 0; h < model.hosts(); ++h) {
    if (!states.other[h]) {
      WriteHostAttribution(h, pts, states, model, selected, final_fit, shared, contrasted, out);
    } else if (model.testable(h) && (Contains(selected, h) || contrasted.count(h))) {
      out["others_explain"].push_back(states.hosts[h]);
    }
  }
  return out;
}

}  // namespace diagnose::analysis
