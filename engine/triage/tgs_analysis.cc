#include "engine/triage/tgs_analysis.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <set>

namespace diagnose {

namespace {

struct TgsSeries {
  std::vector<int64_t> step;
  std::vector<double> y;
};

// Prefix sums for O(1) segment mean / SSE.
struct Prefix {
  std::vector<double> s, s2;
  explicit Prefix(const std::vector<double>& y) : s(y.size() + 1, 0), s2(y.size() + 1, 0) {
    for (size_t i = 0; i < y.size(); ++i) {
      s[i + 1] = s[i] + y[i];
      s2[i + 1] = s2[i] + y[i] * y[i];
    }
  }
  double Mean(size_t a, size_t b) const { return (s[b] - s[a]) / static_cast<double>(b - a); }
  double Sse(size_t a, size_t b) const {
    double n = static_cast<double>(b - a);
    double sum = s[b] - s[a];
    return std::max(0.0, (s2[b] - s2[a]) - sum * sum / n);
  }
};

// Reorders `v` (callers pass a scratch window they refill anyway).
double Median(std::vector<double>& v) {
  if (v.empty()) return 0;
  size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + m, v.end());
  return v[m];
}

// Is a measured shift (percent of the level) at least the materiality floor? The floor is judged
// within one standard error of the measurement: step noise moves a measured shift around the floor,
// so a 2.1 % dip measured at 1.97 % with t = 9 is as likely a 2 % dip as a 1.9 % one, while t >= 8
// keeps the floor itself no lower than 8/9 of its value.
bool MaterialShift(double shift_pct, double se_pct, const TgsOptions& o) {
  return shift_pct + std::max(0.0, se_pct) >= o.min_shift_pct;
}

// A phase's own standard error (percent of `level`): its step spread over its step count.
double PhaseSePct(const TgsPhase& ph, double level) {
  const double n = static_cast<double>(std::max<int64_t>(1, ph.last_step - ph.first_step + 1));
  return level > 0 ? ph.stddev_tgs / std::sqrt(n) / level * 100.0 : 0.0;
}

// Is splitting [a,b) at k a real level change?
bool SignificantSplit(const Prefix& p, size_t a, size_t k, size_t b, const TgsOptions& o) {
  double m1 = p.Mean(a, k), m2 = p.Mean(k, b);
  double hi = std::max(std::abs(m1), std::abs(m2));
  if (hi <= 0) return false;
  double n1 = static_cast<double>(k - a), n2 = static_cast<double>(b - k);
  double var = (p.Sse(a, k) + p.Sse(k, b)) / std::max(1.0, n1 + n2 - 2);
  double se = std::sqrt(std::max(var, 1e-12) * (1 / n1 + 1 / n2));
  if (!MaterialShift(std::abs(m1 - m2) / hi * 100.0, se / hi * 100.0, o)) return false;
  return std::abs(m1 - m2) / se >= o.min_shift_t;
}

// Best split of [a,b) by SSE reduction with both sides >= min_len; 0 when none.
size_t BestSplit(const Prefix& p, size_t a, size_t b, size_t min_len) {
  if (b - a < 2 * min_len) return 0;
  double best = -1;
  size_t best_k = 0;
  for (size_t k = a + min_len; k + min_len <= b; ++k) {
    double cost = p.Sse(a, k) + p.Sse(k, b);
    if (best < 0 || cost < best) {
      best = cost;
      best_k = k;
    }
  }
  return best_k;
}

// Best dip-shaped split of [a,b): a middle piece [k1,k2) at another level than the rest. A short dip
// inside a long series barely moves the best single split (both sides keep most of the healthy
// steps), so binary segmentation alone misses it; the pair isolates it. Exhaustive for up to ~1,000
// points, on a grid refined around the best pair beyond.
struct PairSplit {
  size_t k1 = 0, k2 = 0;
};
// `dip_len`: the shortest middle (a dip of a few steps); `edge_len`: the shortest piece on either
// side (a dip that ends a few steps before the job does).
PairSplit BestPair(const Prefix& p, size_t a, size_t b, size_t dip_len, size_t edge_len) {
  PairSplit best;
  if (b - a < dip_len + 2 * edge_len) return best;
  double best_cost = -1;
  auto search = [&](size_t lo1, size_t hi1, size_t lo2, size_t hi2, size_t step) {
    for (size_t k1 = std::max(lo1, a + edge_len); k1 <= hi1 && k1 + dip_len + edge_len <= b; k1 += step)
      for (size_t k2 = std::max(lo2, k1 + dip_len); k2 <= hi2 && k2 + edge_len <= b; k2 += step) {
        const double cost = p.Sse(a, k1) + p.Sse(k1, k2) + p.Sse(k2, b);
        if (best_cost < 0 || cost < best_cost) best_cost = cost, best = {k1, k2};
      }
  };
  const size_t stride = std::max<size_t>(1, (b - a) / 1000);
  search(a, b, a, b, stride);
  if (stride > 1 && best.k1) {
    const PairSplit c = best;
    search(c.k1 > stride ? c.k1 - stride : a, c.k1 + stride, c.k2 > stride ? c.k2 - stride : a, c.k2 + stride, 1);
  }
  return best;
}

// Is the middle of a pair split a real level change against the rest of [a,b)?
bool SignificantPair(const Prefix& p, size_t a, PairSplit s, size_t b, const TgsOptions& o) {
  const double n_mid = static_cast<double>(s.k2 - s.k1), n_out = static_cast<double>((s.k1 - a) + (b - s.k2));
  const double mid = p.Mean(s.k1, s.k2);
  const double out = ((p.s[s.k1] - p.s[a]) + (p.s[b] - p.s[s.k2])) / n_out;
  const double hi = std::max(std::abs(mid), std::abs(out));
  if (hi <= 0) return false;
  const double var = (p.Sse(a, s.k1) + p.Sse(s.k1, s.k2) + p.Sse(s.k2, b)) / std::max(1.0, n_mid + n_out - 3);
  const double se = std::sqrt(std::max(var, 1e-12) * (1 / n_mid + 1 / n_out));
  if (!MaterialShift(std::abs(mid - out) / hi * 100.0, se / hi * 100.0, o)) return false;
  return std::abs(mid - out) / se >= o.min_shift_t;
}

void Segment(const Prefix& p, size_t a, size_t b, const TgsOptions& o, std::vector<size_t>* cuts) {
  if (static_cast<int>(cuts->size()) + 1 >= o.max_phases) return;
  size_t min_len = static_cast<size_t>(std::max(1, o.min_phase_steps));
  size_t k = BestSplit(p, a, b, min_len);
  if (k != 0 && SignificantSplit(p, a, k, b, o)) {
    cuts->push_back(k);
    Segment(p, a, k, o, cuts);
    Segment(p, k, b, o, cuts);
    return;
  }
  if (static_cast<int>(cuts->size()) + 2 >= o.max_phases) return;
  const size_t dip_len = static_cast<size_t>(std::clamp(o.min_dip_steps, 1, o.min_phase_steps));
  const PairSplit pair = BestPair(p, a, b, dip_len, dip_len);
  if (pair.k1 == 0 || !SignificantPair(p, a, pair, b, o)) return;
  cuts->push_back(pair.k1);
  cuts->push_back(pair.k2);
  Segment(p, a, pair.k1, o, cuts);
  Segment(p, pair.k1, pair.k2, o, cuts);
  Segment(p, pair.k2, b, o, cuts);
}

// Robust step-to-step noise of a series: the MAD of first differences (a level shift moves one
// difference, a spike was removed before), scaled to a standard deviation of one point.
double StepNoise(const std::vector<double>& y) {
  if (y.size() < 3) return 0;
  std::vector<double> d;
  for (size_t i = 1; i < y.size(); ++i) d.push_back(y[i] - y[i - 1]);
  const double med = Median(d);
  for (double& v : d) v = std::abs(v - med);
  return 1.4826 * Median(d) / std::sqrt(2.0);
}

// Ramp model: constant until onset c1, linear until c2, constant after (c2 == n: no plateau). A
// throughput that declines for a while and then settles (a routing shift, a leak that saturates)
// is one gradual decline, not a staircase of phases. Each (c1, c2) is O(1) through prefix sums; the
// search runs on a grid of at most ~kGrid candidates per boundary and refines around the best, so
// tens of thousands of steps stay cheap.
struct RampFit {
  double sse = -1;
  size_t onset = 0;
  size_t end = 0;
  double slope = 0;
};

RampFit FitRamp(const std::vector<double>& y, size_t min_len) {
  const size_t n = y.size();
  std::vector<double> py(n + 1, 0), piy(n + 1, 0);
  double syy = 0;
  for (size_t i = 0; i < n; ++i) {
    py[i + 1] = py[i] + y[i];
    piy[i + 1] = piy[i] + static_cast<double>(i) * y[i];
    syy += y[i] * y[i];
  }
  const double dn = static_cast<double>(n), sy = py[n];
  auto eval = [&](size_t c1, size_t c2, RampFit* best) {
    // x_i = 0 before c1, i - c1 on the ramp, L = c2 - c1 on the plateau.
    const double L = static_cast<double>(c2 - c1), tail = static_cast<double>(n - c2);
    const double sx = L * (L - 1) / 2 + L * tail;
    const double sxx = (L - 1) * L * (2 * L - 1) / 6 + L * L * tail;
    const double sxy = (piy[c2] - piy[c1]) - static_cast<double>(c1) * (py[c2] - py[c1]) + L * (py[n] - py[c2]);
    const double den = dn * sxx - sx * sx;
    if (den <= 0) return;
    const double b = (dn * sxy - sx * sy) / den;
    const double a = (sy - b * sx) / dn;
    const double sse = std::max(0.0, syy - a * sy - b * sxy);
    if (best->sse < 0 || sse < best->sse) *best = {sse, c1, c2, b};
  };
  RampFit best;
  if (n < 2 * min_len) return best;
  constexpr size_t kGrid = 300;
  const size_t stride = std::max<size_t>(1, n / kGrid);
  auto search = [&](size_t lo1, size_t hi1, size_t lo2, size_t hi2, size_t step) {
    for (size_t c1 = std::max(lo1, min_len); c1 <= hi1 && c1 + min_len <= n; c1 += step)
      for (size_t c2 = std::max(lo2, c1 + min_len); c2 <= std::min(hi2, n); c2 += step) eval(c1, c2, &best);
    // The open-ended ramp (no plateau) is always a candidate.
    for (size_t c1 = std::max(lo1, min_len); c1 <= hi1 && c1 + min_len <= n; c1 += step) eval(c1, n, &best);
  };
  search(0, n, 0, n, stride);
  if (stride > 1 && best.sse >= 0) {
    const size_t c1 = best.onset, c2 = best.end;
    search(c1 > stride ? c1 - stride : 0, c1 + stride, c2 > stride ? c2 - stride : 0, c2 + stride, 1);
  }
  return best;
}

double Bic(double sse, size_t n, int params) {
  double dn = static_cast<double>(n);
  return dn * std::log(std::max(sse / dn, 1e-9)) + params * std::log(dn);
}

}  // namespace

StatusOr<TgsOptions> TgsOptionsFromTable(const SignatureTable& t) {
  TgsOptions o;
  auto get = [&](const char* name, double* out) -> Status {
    ASSIGN_OR_RETURN(*out, t.Threshold(name));
    return Status::Ok();
  };
  double v;
  RETURN_IF_ERROR(get("tgs_warmup_steps", &v)); o.warmup_steps = static_cast<int>(v);
  RETURN_IF_ERROR(get("tgs_steady_first_step", &v)); o.steady_first = static_cast<int>(v);
  RETURN_IF_ERROR(get("tgs_steady_last_step", &v)); o.steady_last = static_cast<int>(v);
  RETURN_IF_ERROR(get("tgs_recent_steps", &v)); o.recent_steps = static_cast<int>(v);
  RETURN_IF_ERROR(get("tgs_spike_pct", &o.spike_pct));
  RETURN_IF_ERROR(get("tgs_spike_window", &v)); o.spike_window = static_cast<int>(v);
  RETURN_IF_ERROR(get("tgs_spike_max_run", &v)); o.spike_max_run = static_cast<int>(v);
  RETURN_IF_ERROR(get("tgs_min_phase_steps", &v)); o.min_phase_steps = static_cast<int>(v);
  RETURN_IF_ERROR(get("tgs_min_shift_pct", &o.min_shift_pct));
  RETURN_IF_ERROR(get("tgs_min_shift_t", &o.min_shift_t));
  RETURN_IF_ERROR(get("tgs_max_phases", &v)); o.max_phases = static_cast<int>(v);
  RETURN_IF_ERROR(get("tgs_degradation_pct", &o.degradation_pct));
  RETURN_IF_ERROR(get("tgs_min_dip_steps", &v)); o.min_dip_steps = static_cast<int>(v);
  RETURN_IF_ERROR(get("tgs_min_dip_seconds", &o.min_dip_seconds));
  return o;
}

namespace {

// Steps before the runbooks' steady window are the job's start (compile, autotuning, warm caches):
// a slow stretch that ends there is the ramp to the healthy level, not a fall from it.
bool EndsInStartRamp(const TgsPhase& phase, const std::vector<StepRecord>& steps, const TgsOptions& o) {
  const size_t steady_first = static_cast<size_t>(std::max(0, o.steady_first));
  return steady_first < steps.size() && phase.last_step < steps[steady_first].step;
}

// 1. Spikes: isolated departures from the steps on both sides (checkpoint saves, GC pauses). Each
// side's median is its own reference: a step next to a level change matches the side it belongs
// to, even when a checkpoint spike shares its window (one window across both would flag it).
std::vector<bool> MarkSpikes(const std::vector<StepRecord>& steps, const std::vector<double>& tgs, size_t warm,
                             const TgsOptions& o, std::vector<int64_t>* spike_steps) {
  const size_t n_all = steps.size();
  std::vector<bool> spike(n_all, false);
  std::vector<bool> outlier(n_all, false);
  std::vector<double> w;   // one buffer for every window: no allocation per step
  auto departs = [&](size_t i, size_t lo, size_t hi) {
    if (lo >= hi) return std::optional<bool>();
    w.assign(tgs.begin() + lo, tgs.begin() + hi);
    const double med = Median(w);
    return std::optional<bool>(med > 0 && std::abs(tgs[i] - med) / med * 100.0 > o.spike_pct);
  };
  for (size_t i = warm; i < n_all; ++i) {
    const size_t lo = i >= warm + o.spike_window ? i - o.spike_window : warm;
    const size_t hi = std::min(n_all, i + o.spike_window + 1);
    const auto left = departs(i, lo, i), right = departs(i, i + 1, hi);
    outlier[i] = left.value_or(true) && right.value_or(true) && (left || right);
  }
  for (size_t i = warm; i < n_all;) {
    if (!outlier[i]) { ++i; continue; }
    size_t j = i;
    while (j < n_all && outlier[j]) ++j;
    if (static_cast<int>(j - i) <= o.spike_max_run) {
      for (size_t k = i; k < j; ++k) {
        spike[k] = true;
        spike_steps->push_back(steps[k].step);
      }
    }
    i = j;
  }
  return spike;
}

// 2. Steady vs recent (spikes excluded).
void CompareSteadyWithRecent(const std::vector<double>& tgs, const std::vector<bool>& spike, const TgsOptions& o,
                             TgsAnalysis* out) {
  const size_t n_all = tgs.size();
  auto window_mean = [&](size_t a, size_t b) {
    double s = 0; int n = 0;
    for (size_t i = a; i < b && i < n_all; ++i)
      if (!spike[i]) { s += tgs[i]; ++n; }
    return n ? s / n : 0.0;
  };
  if (n_all <= static_cast<size_t>(o.steady_first)) return;
  out->steady_tgs = window_mean(o.steady_first, static_cast<size_t>(o.steady_last) + 1);
  size_t r0 = n_all > static_cast<size_t>(o.recent_steps) ? n_all - o.recent_steps : 0;
  out->recent_tgs = window_mean(std::max(r0, static_cast<size_t>(o.steady_last) + 1), n_all);
  if (out->recent_tgs == 0) out->recent_tgs = window_mean(r0, n_all);
  if (out->steady_tgs > 0) out->degradation_pct = (out->steady_tgs - out->recent_tgs) / out->steady_tgs * 100.0;
}

// 3. The cuts between phases: split recursively, then refine each boundary between its neighbours
// and drop boundaries that no longer matter.
// A throughput that fell a few steps into the job (a link that went bad at step 5 of 60) leaves a
// healthy lead shorter than min_len: binary segmentation never cuts it off (the whole job reads as
// one slow level) or cuts it min_len long, a slow step in it. The lead is a phase of its own when
// it is at least a dip long (min_dip_steps), faster than what follows (a slower lead is the start's
// ramp) and significant by the split test; the cut goes where it fits best.
void CutShortLeadingDrop(const Prefix& p, size_t n, size_t min_len, const TgsOptions& o, std::vector<size_t>* cuts) {
  const size_t lead = static_cast<size_t>(std::max(1, o.min_dip_steps));
  if (lead >= min_len) return;
  const bool at_min_len = !cuts->empty() && cuts->front() <= min_len;
  const size_t b = at_min_len ? (cuts->size() > 1 ? (*cuts)[1] : n) : (cuts->empty() ? n : cuts->front());
  if (b < min_len + lead) return;
  size_t best = 0;
  double best_cost = -1;
  for (size_t k = lead; k <= min_len; ++k) {
    const double cost = p.Sse(0, k) + p.Sse(k, b);
    if (best_cost < 0 || cost < best_cost) best_cost = cost, best = k;
  }
  if (best >= min_len || p.Mean(0, best) <= p.Mean(best, b) || !SignificantSplit(p, 0, best, b, o)) return;
  if (at_min_len) cuts->front() = best;
  else cuts->insert(cuts->begin(), best);
}

// Does cut c still mark a level change between its neighbours? Either as a single split, or as one
// end of a piece (with the cut before or after it) whose level differs from both sides pooled: a
// dip that recovers is measured against all the healthy steps around it, as the pair split found
// it, not against one side alone (a dip 18 steps into an 88-step job, shorter sides than a
// single-split test needs, stays a dip).
bool CutMatters(const Prefix& p, const std::vector<size_t>& cuts, size_t c, size_t n, const TgsOptions& o) {
  auto bound = [&](size_t i) { return i == 0 ? size_t{0} : i > cuts.size() ? n : cuts[i - 1]; };
  // bound(i) is the start of piece i: 0, then each cut, then n.
  if (SignificantSplit(p, bound(c), cuts[c], bound(c + 2), o)) return true;
  const bool closes_piece = c > 0 && SignificantPair(p, bound(c - 1), {cuts[c - 1], cuts[c]}, bound(c + 2), o);
  return closes_piece || (c + 1 < cuts.size() && SignificantPair(p, bound(c), {cuts[c], cuts[c + 1]}, bound(c + 3), o));
}

std::vector<size_t> PhaseCuts(const Prefix& p, size_t n, size_t min_len, const TgsOptions& o) {
  std::vector<size_t> cuts;
  Segment(p, 0, n, o, &cuts);
  std::sort(cuts.begin(), cuts.end());
  CutShortLeadingDrop(p, n, min_len, o, &cuts);
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t c = 0; c < cuts.size(); ++c) {
      size_t a = c == 0 ? 0 : cuts[c - 1];
      size_t b = c + 1 == cuts.size() ? n : cuts[c + 1];
      // A piece a dip-shaped pair split left shorter than min_len may stay that short.
      size_t k = BestSplit(p, a, b, std::min({min_len, cuts[c] - a, b - cuts[c]}));
      if (k) cuts[c] = k;
    }
    for (size_t c = 0; c < cuts.size();) {
      if (!CutMatters(p, cuts, c, n, o)) cuts.erase(cuts.begin() + c);
      else ++c;
    }
  }
  return cuts;
}

// The phases the cuts bound; returns their summed squared error (the piecewise-constant fit).
double AppendPhases(const std::vector<StepRecord>& steps, const TgsSeries& s, const Prefix& p,
                    const std::vector<size_t>& cuts, TgsAnalysis* out) {
  std::vector<size_t> bounds{0};
  bounds.insert(bounds.end(), cuts.begin(), cuts.end());
  bounds.push_back(s.y.size());
  double sse_pc = 0;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    size_t a = bounds[i], b = bounds[i + 1];
    TgsPhase ph;
    ph.first_step = i == 0 ? steps.front().step : s.step[a];
    ph.last_step = i + 2 == bounds.size() ? steps.back().step : s.step[b - 1];
    ph.mean_tgs = p.Mean(a, b);
    ph.stddev_tgs = std::sqrt(p.Sse(a, b) / static_cast<double>(b - a));
    sse_pc += p.Sse(a, b);
    out->phases.push_back(ph);
  }
  return sse_pc;
}

// 4. Gradual decline: a ramp (flat, linear, optionally flat again) explaining the series better
// than the phases. Step jitter cuts a ramp into a staircase of small phases; the ramp's fewer
// parameters win the information criterion unless the drops really are sharp. True when it did.
bool ReplacePhasesWithDecline(const std::vector<StepRecord>& steps, const TgsSeries& s, const Prefix& p,
                              size_t min_len, double sse_pc, const TgsOptions& o, TgsAnalysis* out) {
  const RampFit ramp = FitRamp(s.y, min_len);
  const size_t n = s.y.size();
  const size_t onset = ramp.onset;
  double level = p.Mean(0, std::max<size_t>(onset, 1));
  double drop_pct = level > 0 ? -ramp.slope * static_cast<double>(ramp.end - onset) / level * 100.0 : 0;
  const int ramp_params = ramp.end < n ? 5 : 4;
  if (!(ramp.sse >= 0 && ramp.slope < 0 && drop_pct >= o.min_shift_pct && out->phases.size() >= 2 &&
        Bic(ramp.sse, n, ramp_params) < Bic(sse_pc, n, 2 * static_cast<int>(out->phases.size()))))
    return false;
  out->pattern = "gradual-decline";
  out->decline_onset_step = s.step[onset];
  out->degradation_onset_step = s.step[onset];
  out->phases.clear();
  out->phases.push_back({steps.front().step, s.step[onset - 1], p.Mean(0, onset),
                         std::sqrt(p.Sse(0, onset) / onset)});
  out->phases.push_back({s.step[onset], steps.back().step, p.Mean(onset, n),
                         std::sqrt(p.Sse(onset, n) / (n - onset))});
  return true;
}

// 5. Name the phase layout: stable, periodic checkpoint spikes, one drop (to the end or not) or
// phased, from the phases that fall below the best one.
void NamePhaseLayout(const std::vector<StepRecord>& steps, std::optional<int64_t> checkpoint_period,
                     const TgsOptions& o, TgsAnalysis* out) {
  double baseline = out->phases.front().mean_tgs;
  for (const auto& ph : out->phases) baseline = std::max(baseline, ph.mean_tgs);
  std::vector<size_t> drops;
  for (size_t i = 0; i < out->phases.size(); ++i)
    if (MaterialShift((baseline - out->phases[i].mean_tgs) / baseline * 100.0, PhaseSePct(out->phases[i], baseline), o) &&
        !EndsInStartRamp(out->phases[i], steps, o))
      drops.push_back(i);
  // Drops separated by a recovery count as distinct phases; adjacent drop phases as one episode.
  if (!drops.empty()) out->degradation_onset_step = out->phases[drops.front()].first_step;
  int episodes = 0;
  for (size_t k = 0; k < drops.size(); ++k)
    if (k == 0 || drops[k] != drops[k - 1] + 1) ++episodes;
  bool periodic_spikes = out->spike_steps.size() >= 2;
  if (periodic_spikes && checkpoint_period && *checkpoint_period > 0) {
    int near = 0;
    for (int64_t st : out->spike_steps) {
      int64_t r = st % *checkpoint_period;
      if (r <= 1 || r >= *checkpoint_period - 1) ++near;
    }
    periodic_spikes = near * 2 >= static_cast<int>(out->spike_steps.size());
  }
  if (drops.empty() || out->phases.size() == 1) {
    out->pattern = periodic_spikes ? "periodic-checkpoint-spikes" : "stable";
  } else if (episodes >= 2 || drops.size() >= 2) {
    out->pattern = "phased";
  } else if (drops.front() + 1 == out->phases.size()) {
    out->pattern = "one-time-drop";
  } else {
    out->pattern = "constant-drop";
  }
}

TgsAnalysis SegmentTgs(const std::vector<StepRecord>& steps, std::optional<int64_t> checkpoint_period,
                       const TgsOptions& o) {
  TgsAnalysis out;
  const size_t n_all = steps.size();
  size_t warm = std::min(n_all, static_cast<size_t>(std::max(0, o.warmup_steps)));
  std::vector<double> tgs(n_all);
  for (size_t i = 0; i < n_all; ++i) tgs[i] = steps[i].tokens_per_sec_per_device;
  const std::vector<bool> spike = MarkSpikes(steps, tgs, warm, o, &out.spike_steps);
  CompareSteadyWithRecent(tgs, spike, o, &out);

  // Segmentation over non-warmup, non-spike points.
  TgsSeries s;
  for (size_t i = warm; i < n_all; ++i)
    if (!spike[i]) { s.step.push_back(steps[i].step); s.y.push_back(tgs[i]); }
  size_t min_len = static_cast<size_t>(std::max(1, o.min_phase_steps));
  if (s.y.size() < 2 * min_len) {
    if (!s.y.empty()) {
      Prefix p(s.y);
      double m = p.Mean(0, s.y.size());
      out.phases.push_back({steps.front().step, steps.back().step, m,
                            std::sqrt(p.Sse(0, s.y.size()) / s.y.size())});
    }
    out.pattern = "insufficient-data";
    return out;
  }
  Prefix p(s.y);
  const double sse_pc = AppendPhases(steps, s, p, PhaseCuts(p, s.y.size(), min_len, o), &out);
  if (ReplacePhasesWithDecline(steps, s, p, min_len, sse_pc, o, &out)) return out;
  NamePhaseLayout(steps, checkpoint_period, o, &out);
  return out;
}

// The material dips of an analysed series (the rule in tgs_analysis.h).
void FindDips(const std::vector<StepRecord>& steps, const TgsOptions& o, TgsAnalysis* out) {
  if (out->phases.size() < 2) return;
  const size_t warm = std::min(steps.size(), static_cast<size_t>(std::max(0, o.warmup_steps)));
  const std::set<int64_t> spikes(out->spike_steps.begin(), out->spike_steps.end());
  std::vector<double> y;
  for (size_t i = warm; i < steps.size(); ++i)
    if (!spikes.count(steps[i].step)) y.push_back(steps[i].tokens_per_sec_per_device);
  double healthy = 0;
  for (const auto& ph : out->phases) healthy = std::max(healthy, ph.mean_tgs);
  if (healthy <= 0) return;
  out->healthy_tgs = healthy;
  out->noise_pct = StepNoise(y) / healthy * 100.0;
  auto low = [&](const TgsPhase& ph) {
    return MaterialShift((healthy - ph.mean_tgs) / healthy * 100.0, PhaseSePct(ph, healthy), o);
  };
  for (size_t i = 0; i < out->phases.size();) {
    if (!low(out->phases[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out->phases.size() && low(out->phases[j])) ++j;
    TgsDip dip;
    dip.first_step = out->phases[i].first_step;
    dip.last_step = out->phases[j - 1].last_step;
    double sum = 0;
    for (size_t k = warm; k < steps.size(); ++k) {
      if (steps[k].step < dip.first_step || steps[k].step > dip.last_step) continue;
      dip.seconds += steps[k].seconds;
      if (spikes.count(steps[k].step)) continue;
      sum += steps[k].tokens_per_sec_per_device;
      ++dip.steps;
    }
    i = j;
    if (dip.steps == 0) continue;
    dip.mean_tgs = sum / static_cast<double>(dip.steps);
    dip.depth_pct = (healthy - dip.mean_tgs) / healthy * 100.0;
    const double se_pct = out->noise_pct / std::sqrt(static_cast<double>(dip.steps));
    dip.t_stat = se_pct > 0 ? dip.depth_pct / se_pct : 1e9;
    if (!EndsInStartRamp(TgsPhase{dip.first_step, dip.last_step, dip.mean_tgs, 0}, steps, o) && MaterialShift(dip.depth_pct, se_pct, o) && dip.t_stat >= o.min_shift_t && dip.steps >= o.min_dip_steps &&
        dip.seconds >= o.min_dip_seconds)
      out->dips.push_back(dip);
  }
  if (!out->dips.empty() && !out->degradation_onset_step) out->degradation_onset_step = out->dips.front().first_step;
}

}  // namespace

TgsAnalysis AnalyzeTgs(const std::vector<StepRecord>& steps, std::optional<int64_t> checkpoint_period,
                       const TgsOptions& o) {
  TgsAnalysis out = SegmentTgs(steps, checkpoint_period, o);
  FindDips(steps, o, &out);
  return out;
}

}  // namespace diagnose
