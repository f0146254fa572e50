// The built-in functions of the condition language (playbooks/README.md §6) and their registry.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "engine/core/untrusted_json.h"
#include "engine/playbook/expr.h"
#include "engine/playbook/expr_internal.h"

namespace diagnose::playbook {
namespace {

// Numbers of a list or a map's values; non-numbers are skipped.
std::vector<double> Numbers(const Value& v) {
  std::vector<double> out;
  if (v.is_array()) {
    for (const auto& x : v)
      if (x.is_number()) out.push_back(x.get<double>());
  } else if (v.is_object()) {
    for (const auto& [k, x] : v.items())
      if (x.is_number()) out.push_back(x.get<double>());
  } else if (v.is_number()) {
    out.push_back(v.get<double>());
  }
  return out;
}

std::set<std::string> AsSet(const Value& v) {
  std::set<std::string> out;
  if (v.is_array()) {
    for (const auto& x : v) out.insert(x.is_string() ? x.get<std::string>() : x.dump());
  } else if (v.is_object()) {
    for (const auto& [k, x] : v.items()) out.insert(k);
  } else if (v.is_string()) {
    out.insert(v.get<std::string>());
  }
  return out;
}

Value SetToValue(const std::set<std::string>& s) {
  Value out = Value::array();
  for (const auto& x : s) out.push_back(x);
  return out;
}

// Calls visit(a, b) for each [a, b, ...] entry of a list whose first two items are numbers (a range
// query's [t, v] samples, discovery's [step, epoch] step times); other entries, and a non-list, are
// skipped: the list comes from untrusted answers.
template <class Visit>
void ForEachNumberPair(const Value& list, Visit&& visit) {
  if (!list.is_array()) return;
  for (const auto& p : list)
    if (p.is_array() && p.size() >= 2 && p[0].is_number() && p[1].is_number()) visit(p[0].get<double>(), p[1].get<double>());
}

double Interpolate(const Value& step_times, double step, bool* ok) {
  *ok = false;
  std::vector<std::pair<double, double>> pts;
  ForEachNumberPair(step_times, [&](double at, double value) { pts.emplace_back(at, value); });
  if (pts.empty()) return 0;
  std::sort(pts.begin(), pts.end());
  *ok = true;
  if (pts.size() == 1) return pts[0].second;
  size_t i = 1;
  while (i + 1 < pts.size() && pts[i].first < step) ++i;
  const auto& p0 = pts[i - 1];
  const auto& p1 = pts[i];
  if (p1.first == p0.first) return p0.second;
  return p0.second + (step - p0.first) * (p1.second - p0.second) / (p1.first - p0.first);
}

// len and count.
StatusOr<Value> Length(const Expr& e, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  if (a.is_null()) return Value(0);
  if (a.is_array() || a.is_object()) return Value(static_cast<double>(a.size()));
  if (a.is_string()) return Value(static_cast<double>(a.get<std::string>().size()));
  return EvalError(e, e.text + "() needs a list, map or string, got " + TypeName(a));
}

StatusOr<Value> Keys(const Expr& e, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  Value out = Value::array();
  if (a.is_object())
    for (const auto& [k, x] : a.items()) out.push_back(k);
  else if (!a.is_null())
    return EvalError(e, "keys() needs a map, got " + TypeName(a));
  return out;
}

StatusOr<Value> Values(const Expr&, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  Value out = Value::array();
  if (a.is_object())
    for (const auto& [k, x] : a.items()) out.push_back(x);
  else if (a.is_array())
    out = a;
  return out;
}

// pick(map, keys): the entries of `map` whose key is in the list `keys` (e.g. the details of the
// hosts a verdict names).
StatusOr<Value> Pick(const Expr& e, const Args& args, const NameResolver&) {
  if (!args[1].is_array() && !args[1].is_null()) return EvalError(e, "pick() needs (map, list of keys)");
  Value out = Value::object();
  if (!args[0].is_object() || !args[1].is_array()) return out;
  for (const auto& k : args[1])
    if (k.is_string() && args[0].contains(k.get<std::string>())) out[k.get<std::string>()] = args[0][k.get<std::string>()];
  return out;
}

StatusOr<Value> MaxOrMin(const Expr& e, const Args& args, const NameResolver&) {
  std::vector<double> xs;
  for (const auto& arg : args) {
    auto n = Numbers(arg);
    xs.insert(xs.end(), n.begin(), n.end());
  }
  if (xs.empty()) return Value();
  return Value(e.text == "max" ? *std::max_element(xs.begin(), xs.end()) : *std::min_element(xs.begin(), xs.end()));
}

StatusOr<Value> SumOrAvg(const Expr& e, const Args& args, const NameResolver&) {
  const bool sum = e.text == "sum";
  auto xs = Numbers(args[0]);
  if (xs.empty()) return sum ? Value(0.0) : Value();
  double s = 0;
  for (double x : xs) s += x;
  return Value(sum ? s : s / xs.size());
}

StatusOr<Value> Abs(const Expr& e, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  if (a.is_null()) return Value();
  if (!a.is_number()) return EvalError(e, "abs() needs a number, got " + TypeName(a));
  return Value(std::fabs(a.get<double>()));
}

StatusOr<Value> Round(const Expr& e, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  if (a.is_null()) return Value();
  if (!a.is_number()) return EvalError(e, "round() needs a number, got " + TypeName(a));
  const int digits = args.size() > 1 ? static_cast<int>(ClampedInteger(args[1], -308, 308).value_or(0)) : 0;
  double scale = std::pow(10.0, digits);
  return Value(std::round(a.get<double>() * scale) / scale);
}

StatusOr<Value> UnionOrIntersect(const Expr& e, const Args& args, const NameResolver&) {
  const bool is_union = e.text == "union";
  std::set<std::string> acc = AsSet(args[0]);
  for (size_t i = 1; i < args.size(); ++i) {
    auto s = AsSet(args[i]);
    if (is_union) {
      acc.insert(s.begin(), s.end());
    } else {
      std::set<std::string> both;
      for (const auto& x : acc)
        if (s.count(x)) both.insert(x);
      acc = std::move(both);
    }
  }
  return SetToValue(acc);
}

StatusOr<Value> Minus(const Expr&, const Args& args, const NameResolver&) {
  auto acc = AsSet(args[0]);
  for (const auto& x : AsSet(args[1])) acc.erase(x);
  return SetToValue(acc);
}

StatusOr<Value> Contains(const Expr&, const Args& args, const NameResolver&) {
  auto s = AsSet(args[0]);
  const Value& x = args[1];
  return Value(x.is_string() ? s.count(x.get<std::string>()) > 0 : s.count(x.dump()) > 0);
}

StatusOr<Value> Sort(const Expr&, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  if (!a.is_array()) return a;
  Value out = a;
  std::sort(out.begin(), out.end());
  return out;
}

StatusOr<Value> Join(const Expr&, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  std::string sep = args.size() > 1 && args[1].is_string() ? args[1].get<std::string>() : ", ";
  std::string out;
  bool firsts = true;
  auto add = [&](const Value& x) {
    if (!firsts) out += sep;
    firsts = false;
    out += ValueToText(x);
  };
  if (a.is_array())
    for (const auto& x : a) add(x);
  else if (a.is_object())
    for (const auto& [k, x] : a.items()) add(Value(k));
  else if (!a.is_null())
    add(a);
  return Value(out);
}

// phrases([["retry exhaustion on", hosts], ["CQE errors on", other]], "; "): each label with its
// items joined, the empty ones left out, so a sentence never names an empty list ("on []").
StatusOr<Value> Phrases(const Expr& e, const Args& args, const NameResolver& resolve) {
  const Value& pairs = args[0];
  if (!pairs.is_array()) return EvalError(e, "phrases() needs a list of [label, items] pairs, got " + TypeName(pairs));
  const std::string sep = args.size() > 1 && args[1].is_string() ? args[1].get<std::string>() : "; ";
  std::string out;
  for (const auto& pair : pairs) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string())
      return EvalError(e, "phrases() needs [label, items] pairs, got " + pair.dump());
    const Value& items = pair[1];
    if (items.is_null() || ((items.is_array() || items.is_object()) && items.empty())) continue;
    ASSIGN_OR_RETURN(Value joined, Join(e, Args({&items}), resolve));
    if (joined.get<std::string>().empty()) continue;
    out += (out.empty() ? "" : sep) + pair[0].get<std::string>() + " " + joined.get<std::string>();
  }
  return Value(out);
}

Value FormattedNumber(const Value& a, int digits) {
  if (a.is_null()) return Value("n/a");
  if (!a.is_number()) return Value(ValueToText(a));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::clamp(digits, 0, 12), a.get<double>());
  return Value(std::string(buf));
}

// A list or a per-host map is formatted element by element (keys kept), so that a sentence joining
// many hosts' values reads "916 / 914 W" rather than the 6 significant digits a bare join prints.
StatusOr<Value> Fmt(const Expr&, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  const int digits = args.size() > 1 ? static_cast<int>(ClampedInteger(args[1], 0, 12).value_or(2)) : 2;
  if (!a.is_array() && !a.is_object()) return FormattedNumber(a, digits);
  Value out = a;
  for (auto& x : out) x = FormattedNumber(x, digits);
  return out;
}

StatusOr<Value> Exists(const Expr&, const Args& args, const NameResolver&) {
  return Value(!args[0].is_null());
}

StatusOr<Value> FirstOrLast(const Expr& e, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  if (!a.is_array() || a.empty()) return Value();
  return e.text == "first" ? a.front() : a.back();
}

StatusOr<Value> Pluck(const Expr& e, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  Value out = Value::array();
  if (!args[1].is_string()) return EvalError(e, "pluck() needs a field name string");
  std::string field = args[1].get<std::string>();
  if (a.is_array())
    for (const auto& x : a)
      out.push_back(x.is_object() && x.contains(field) ? x[field] : Value());
  return out;
}

// where(list, "field", "<", value): the items whose field compares true.
StatusOr<Value> Where(const Expr& e, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  if (!args[1].is_string() || !args[2].is_string() || !IsCmp(args[2].get<std::string>()))
    return EvalError(e, "where() needs (list, \"field\", \"== != < <= > >=\", value)");
  Value out = Value::array();
  if (!a.is_array()) return out;
  std::string field = args[1].get<std::string>();
  for (const auto& item : a)
    if (item.is_object() && item.contains(field) && !item[field].is_null() &&
        Compare(args[2].get<std::string>(), item[field], args[3]))
      out.push_back(item);
  return out;
}

// Per key of a range query's `series` map (key -> [[t, v], ...]), the sample times (epoch seconds,
// ascending) at which the value reaches the threshold, a number or a map key -> number (keys
// missing from it never count); keys that never reach it are left out.
// The threshold argument of times_above(), held_seconds() and the like: a number, a map key ->
// number, or null (no key has one).
Status CheckThresholdArgument(const Expr& e, const Value& threshold) {
  if (threshold.is_number() || threshold.is_object() || threshold.is_null()) return Status::Ok();
  return EvalError(e, e.text + "() needs (series, number or map), got " + TypeName(threshold));
}

// A per-key threshold argument: a number for every key, or a map key -> number (null for a key it
// does not name, or that maps to no number).
const Value* ThresholdOfKey(const Value& threshold, const std::string& key) {
  const Value* limit = &threshold;
  if (threshold.is_object()) limit = threshold.contains(key) ? &threshold[key] : nullptr;
  return limit != nullptr && limit->is_number() ? limit : nullptr;
}

StatusOr<std::map<std::string, std::set<double>>> TimesAtOrAbove(const Expr& e, const Args& args) {
  const Value& a = args[0];
  RETURN_IF_ERROR(CheckThresholdArgument(e, args[1]));
  std::map<std::string, std::set<double>> out;
  if (!a.is_object()) return out;
  for (const auto& [key, samples] : a.items()) {
    const Value* limit = ThresholdOfKey(args[1], key);
    if (!limit || !samples.is_array()) continue;
    std::set<double> times;
    ForEachNumberPair(samples, [&](double t, double v) {
      if (v >= limit->get<double>()) times.insert(t);
    });
    if (!times.empty()) out[key] = std::move(times);
  }
  return out;
}

// times_above(series, threshold): per key, every sample time at which the series reaches it.
StatusOr<Value> TimesAbove(const Expr& e, const Args& args, const NameResolver&) {
  ASSIGN_OR_RETURN(auto times, TimesAtOrAbove(e, args));
  Value out = Value::object();
  for (const auto& [key, at] : times) {
    Value list = Value::array();
    for (double t : at) list.push_back(t);
    out[key] = std::move(list);
  }
  return out;
}

// The {start, end} spans of a list of windows (others are skipped); none for null.
StatusOr<std::vector<std::pair<double, double>>> WindowSpans(const Expr& e, const char* function, const Value& list) {
  std::vector<std::pair<double, double>> windows;
  if (list.is_null()) return windows;
  if (!list.is_array())
    return EvalError(e, std::string(function) + "() needs a list of {start, end} windows, got " + TypeName(list));
  for (const auto& w : list)
    if (w.is_object() && w.contains("start") && w.contains("end") && w["start"].is_number() && w["end"].is_number())
      windows.emplace_back(w["start"].get<double>(), w["end"].get<double>());
  return windows;
}

bool InsideAny(const std::vector<std::pair<double, double>>& windows, double t) {
  return std::any_of(windows.begin(), windows.end(), [&](const auto& w) { return t >= w.first && t <= w.second; });
}

// first_time_above(series, threshold[, windows]): per key, the first sample time at which the
// series reaches it, samples inside the {start, end} windows left out: when each host's
// disturbance began, so a rule can ask whether several began together. The windows are what
// explains a reading by design (checkpoint saves): every writer's I/O pressure rises during a
// save, and a save before a slowdown would otherwise be every host's onset. Keys that reach it
// only inside the windows are left out.
StatusOr<Value> FirstTimeAbove(const Expr& e, const Args& args, const NameResolver&) {
  ASSIGN_OR_RETURN(auto times, TimesAtOrAbove(e, args));
  ASSIGN_OR_RETURN(auto windows, WindowSpans(e, "first_time_above", args.size() > 2 ? args[2] : Value()));
  Value out = Value::object();
  for (const auto& [key, at] : times) {
    auto first = std::find_if(at.begin(), at.end(), [&](double t) { return !InsideAny(windows, t); });
    if (first != at.end()) out[key] = *first;
  }
  return out;
}

// One key's samples of a range query's `series` ([[t, v], ...]), in time order, with their median
// spacing (the query's step; 0 with fewer than two samples).
struct SampledSeries {
  std::vector<double> times, values;
  double spacing = 0;
};

SampledSeries ReadSamples(const Value& samples) {
  SampledSeries s;
  ForEachNumberPair(samples, [&](double t, double v) {
    s.times.push_back(t);
    s.values.push_back(v);
  });
  std::vector<double> gaps;
  for (size_t i = 1; i < s.times.size(); ++i) gaps.push_back(s.times[i] - s.times[i - 1]);
  if (!gaps.empty()) {
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
    s.spacing = gaps[gaps.size() / 2];
  }
  return s;
}

// The steps of the series' spacing missing between samples i and i + 1 (0 without a hole).
double MissingSteps(const SampledSeries& s, size_t i) {
  if (s.spacing <= 0) return 0;
  return std::max(0.0, std::round((s.times[i + 1] - s.times[i]) / s.spacing) - 1);
}

// How far a hole in a series at or above `level` counts as held. Missed scrapes that leave a fault
// on at both sides of a hole do not end it: they cost the evidence samples, not the fault its
// duration. But a hole counts only as far as the evidence around it reaches: at most as many steps
// as the unbroken samples at the level on its two sides together (up to a low sample or another
// hole). So at least half of any span called held was seen, and two loud scrapes either side of an
// hour-long outage do not make an hour-long fault. held_seconds() and last_run_seconds() share it.
class HoleBridge {
 public:
  HoleBridge(const SampledSeries& s, double level) : s_(s), level_(level) {
    const size_t n = s.values.size();
    run_before_.assign(n, 0);
    run_after_.assign(n, 0);
    for (size_t i = 0; i < n; ++i)
      if (s.values[i] >= level) run_before_[i] = 1 + (i > 0 && MissingSteps(s, i - 1) == 0 ? run_before_[i - 1] : 0);
    for (size_t i = n; i-- > 0;)
      if (s.values[i] >= level) run_after_[i] = 1 + (i + 1 < n && MissingSteps(s, i) == 0 ? run_after_[i + 1] : 0);
  }
  // The missing steps between samples i and i + 1 that count as held (none unless both are at the level).
  double HeldSteps(size_t i) const {
    if (s_.values[i] < level_ || s_.values[i + 1] < level_) return 0;
    return std::min(MissingSteps(s_, i), run_before_[i] + run_after_[i + 1]);
  }

 private:
  const SampledSeries& s_;
  const double level_;
  // run_before_[i]: samples at the level ending at i with no hole among them; run_after_ likewise.
  std::vector<double> run_before_, run_after_;
};

// How many steps of the series' spacing it held at or above `level`: each sample there counts one,
// and so do the missing steps between two such samples the evidence around them bridges (HoleBridge).
double StepsHeldAtOrAbove(const SampledSeries& s, double level) {
  const size_t n = s.values.size();
  const HoleBridge bridge(s, level);
  double steps = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s.values[i] < level) continue;
    steps += 1;
    if (i + 1 < n) steps += bridge.HeldSteps(i);
  }
  return steps;
}

// sustained_level(series, seconds[, seconds_by_key]): per key of a range query's `series` map,
// the highest level the series was at or above for at least `seconds` in total, at the series' own
// (median) spacing, bridging holes with that level on both sides, as far as the samples around them
// reach (StepsHeldAtOrAbove). Without holes, its k-th largest sample, k the samples that span
// `seconds`. One loud scrape does not make a level; five minutes of it does. `seconds_by_key` holds shorter spans for some keys: a disturbance
// the end of the window cut short is judged on the time it had.
StatusOr<Value> SustainedLevel(const Expr& e, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  if (!args[1].is_number()) return EvalError(e, "sustained_level() needs (series, seconds), got " + TypeName(args[1]));
  const bool by_key = args.size() > 2 && !args[2].is_null();
  if (by_key && !args[2].is_object())
    return EvalError(e, "sustained_level()'s seconds_by_key needs a map, got " + TypeName(args[2]));
  Value out = Value::object();
  if (a.is_null()) return Value();
  if (!a.is_object()) return EvalError(e, "sustained_level() needs a series map, got " + TypeName(a));
  for (const auto& [key, samples] : a.items()) {
    double seconds = args[1].get<double>();
    if (by_key && args[2].contains(key) && args[2][key].is_number()) seconds = args[2][key].get<double>();
    const SampledSeries s = ReadSamples(samples);
    if (s.values.empty()) continue;
    const double k = s.spacing > 0 ? std::ceil(seconds / s.spacing) : static_cast<double>(s.values.size());
    // The steps held fall as the level rises: the highest sample value still held k steps.
    std::vector<double> levels = s.values;
    std::sort(levels.begin(), levels.end());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    double best = 0.0;   // never sustained that long: the series was not up for `seconds`
    size_t lo = 0, hi = levels.size();
    while (k > 0 && lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (StepsHeldAtOrAbove(s, levels[mid]) >= k) {
        best = levels[mid];
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    out[key] = best;
  }
  return out;
}

// held_seconds(series, threshold): per key of a range query's `series` map, the seconds it held at
// or above the threshold (a number, or a map key -> number: keys missing from it never count), at
// its own spacing, holes between two samples at that level counted as held as far as the samples
// around them reach (StepsHeldAtOrAbove).
// Keys that never reach it are left out.
StatusOr<Value> HeldSeconds(const Expr& e, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  RETURN_IF_ERROR(CheckThresholdArgument(e, args[1]));
  Value out = Value::object();
  if (!a.is_object()) return out;
  for (const auto& [key, samples] : a.items()) {
    const Value* limit = ThresholdOfKey(args[1], key);
    if (!limit) continue;
    const SampledSeries s = ReadSamples(samples);
    const double steps = StepsHeldAtOrAbove(s, limit->get<double>());
    if (steps > 0) out[key] = steps * s.spacing;
  }
  return out;
}

// step_windows(steps, step_times, pad_seconds): for each listed step (once) that has a time in
// step_times ([[step, epoch], ...]), the span from its end to the end of the next recorded step
// (the step it slowed), plus pad_seconds: {step, start, end}. Steps without a time are left out.
StatusOr<Value> StepWindows(const Expr& e, const Args& args, const NameResolver&) {
  if (!args[2].is_number()) return EvalError(e, "step_windows() needs (steps, step_times, seconds), got " + TypeName(args[2]));
  Value out = Value::array();
  if (!args[0].is_array() || !args[1].is_array()) return out;
  std::map<double, double> end_of_step;
  ForEachNumberPair(args[1], [&](double step, double epoch) { end_of_step[step] = epoch; });
  const double pad = args[2].get<double>();
  std::set<double> seen;
  for (const auto& s : args[0]) {
    if (!s.is_number() || !seen.insert(s.get<double>()).second) continue;
    auto at = end_of_step.find(s.get<double>());
    if (at == end_of_step.end()) continue;
    auto next = end_of_step.upper_bound(at->first);
    out.push_back({{"step", s}, {"start", at->second}, {"end", (next != end_of_step.end() ? next->second : at->second) + pad}});
  }
  return out;
}

// count_outside(times, windows): per key of a times map (times_above's result; a plain list
// counts as key ""), how many times lie outside every {start, end} window. Lets a rule measure
// how long a disturbance lasted beyond the windows that explain it (checkpoint saves).
StatusOr<Value> CountOutside(const Expr& e, const Args& args, const NameResolver&) {
  const Value& a = args[0];
  if (!args[1].is_array() && !args[1].is_null())
    return EvalError(e, "count_outside() needs (times, list of {start, end}), got " + TypeName(args[1]));
  ASSIGN_OR_RETURN(auto windows, WindowSpans(e, "count_outside", args[1]));
  auto count = [&](const Value& times) {
    double n = 0;
    if (!times.is_array()) return n;
    for (const auto& t : times)
      if (t.is_number() && !InsideAny(windows, t.get<double>())) ++n;
    return n;
  };
  Value out = Value::object();
  if (a.is_object()) {
    for (const auto& [key, times] : a.items()) out[key] = count(times);
  } else if (a.is_array()) {
    out[""] = count(a);
  } else if (!a.is_null()) {
    return EvalError(e, "count_outside() needs a times map or list, got " + TypeName(a));
  }
  return out;
}

StatusOr<Value> StepTime(const Expr& e, const Args& args, const NameResolver& resolve) {
  const Value& a = args[0];
  if (a.is_null()) return Value();
  if (!a.is_number()) return EvalError(e, "step_time() needs a step number, got " + TypeName(a));
  const Value* discovery = resolve("discovery");
  bool ok = false;
  double t = Interpolate(discovery && discovery->is_object() && discovery->contains("step_times")
                             ? (*discovery)["step_times"] : Value(),
                         a.get<double>(), &ok);
  return ok ? Value(t) : Value();
}

// last_run_seconds(series, threshold): per key of a range query's `series` map whose last sample is
// at or above the threshold (a number, or a map key -> number), the seconds from the start of the
// unbroken run of such samples that reaches that last sample to the last sample itself. Measured
// to the series' own end, so a disturbance is timed from its onset, not from a blip long before it
// (which first_time_above would report), and an exporter that stopped before the window's end does
// not lengthen it. A missing scrape inside the run does not break it (holes are not samples below),
// but counts only as far as held_seconds() counts it (HoleBridge): the rest of a long hole is time
// nobody saw, so one loud scrape before an hour-long outage does not date a fault an hour back.
StatusOr<Value> LastRunSeconds(const Expr& e, const Args& args, const NameResolver&) {
  RETURN_IF_ERROR(CheckThresholdArgument(e, args[1]));
  Value out = Value::object();
  if (!args[0].is_object()) return out;
  for (const auto& [key, samples] : args[0].items()) {
    const Value* limit = ThresholdOfKey(args[1], key);
    const SampledSeries s = limit ? ReadSamples(samples) : SampledSeries{};
    if (s.values.empty() || s.values.back() < limit->get<double>()) continue;
    const double level = limit->get<double>();
    size_t onset = s.values.size() - 1;
    while (onset > 0 && s.values[onset - 1] >= level) --onset;
    const HoleBridge bridge(s, level);
    double unseen_steps = 0;
    for (size_t i = onset; i + 1 < s.values.size(); ++i) unseen_steps += MissingSteps(s, i) - bridge.HeldSteps(i);
    out[key] = s.times.back() - s.times[onset] - unseen_steps * s.spacing;
  }
  return out;
}

// keys_with_holes(series[, level]): the keys of a range query's `series` map whose samples have a
// hole (a step of their own spacing missing between two of them: missed scrapes, where rate() has no
// point), with `level`, only holes next to a sample at or above it: a host quiet on both sides of
// every hole gives bridge_holes() nothing to read, and is not worth its counters' samples.
StatusOr<Value> KeysWithHoles(const Expr& e, const Args& args, const NameResolver&) {
  Value out = Value::array();
  if (args.size() > 1 && !args[1].is_number())
    return EvalError(e, "keys_with_holes() needs (series[, number]), got " + TypeName(args[1]));
  const double level = args.size() > 1 ? args[1].get<double>() : -INFINITY;
  if (args[0].is_null()) return out;
  if (!args[0].is_object()) return EvalError(e, "keys_with_holes() needs a series map, got " + TypeName(args[0]));
  for (const auto& [key, samples] : args[0].items()) {
    const SampledSeries s = ReadSamples(samples);
    for (size_t i = 0; i + 1 < s.times.size(); ++i)
      if (MissingSteps(s, i) > 0 && std::max(s.values[i], s.values[i + 1]) >= level) {
        out.push_back(key);
        break;
      }
  }
  return out;
}

// How much one counter series counted between the rate points `from` and `to` (the samples rate()
// read on either side of a hole: its last sample at or before each). A series that first appears
// after `from` counts only from its own first sample on (its first value is the device's lifetime
// total, not the hole's events), one with no sample after `from` counted nothing seen, and a fall
// between two samples is a reset counted from zero, as Prometheus' increase() counts it.
double CounterGrowth(const SampledSeries& counter, double from, double to) {
  const auto last_at_or_before = [&](double t) {
    return static_cast<size_t>(std::upper_bound(counter.times.begin(), counter.times.end(), t) - counter.times.begin());
  };
  const size_t through_to = last_at_or_before(to), through_from = last_at_or_before(from);
  if (through_to == 0 || through_to <= through_from) return 0;
  double grew = 0;
  for (size_t j = through_from == 0 ? 0 : through_from - 1; j + 1 < through_to; ++j) {
    const double step = counter.values[j + 1] - counter.values[j];
    grew += step >= 0 ? step : counter.values[j + 1];
  }
  return grew;
}

// One key of bridge_holes(). The growth its counter series show across a hole (CounterGrowth, summed
// over the key's series) says how many events the hole held but not how long they took: a burst and
// a steady fault count alike. The fewest seconds they can have taken is the growth at the highest
// rate the series showed anywhere, so the hole is filled with that rate for that long (at most the
// hole), next to the louder of its two sides: a fault is never stretched beyond what the counters
// prove. A series never seen above zero, or counters that grew nothing, fill nothing.
Value BridgeOneSeries(const Value& rate_samples, const std::vector<SampledSeries>& counters) {
  const SampledSeries rates = ReadSamples(rate_samples);
  const double peak = rates.values.empty() ? 0 : *std::max_element(rates.values.begin(), rates.values.end());
  if (rates.spacing <= 0 || counters.empty() || !(peak > 0)) return rate_samples;
  std::vector<std::pair<double, double>> points;
  for (size_t i = 0; i < rates.times.size(); ++i) {
    points.emplace_back(rates.times[i], rates.values[i]);
    const double missing = i + 1 < rates.times.size() ? MissingSteps(rates, i) : 0;
    if (missing <= 0) continue;
    double grew = 0;
    for (const SampledSeries& counter : counters) grew += CounterGrowth(counter, rates.times[i], rates.times[i + 1]);
    if (!(grew > 0)) continue;
    const double steps = std::min(missing, std::floor(grew / peak / rates.spacing + 1e-9));
    const bool from_start = rates.values[i] >= rates.values[i + 1];
    for (double k = 1; k <= steps; ++k)
      points.emplace_back(from_start ? rates.times[i] + k * rates.spacing : rates.times[i + 1] - k * rates.spacing, peak);
  }
  std::sort(points.begin(), points.end());
  Value out = Value::array();
  for (const auto& [t, v] : points) out.push_back({t, v});
  return out;
}

// The counter series of one key of the rates: the counters' entry named like it, and each named
// `<key>/...` (one series per device and port, `by: [host, device, port]`), as counters are read
// per series so that a device appearing mid-job adds its growth, never its lifetime total.
std::vector<SampledSeries> CountersOfKey(const Value::object_t& counters, const std::string& key) {
  std::vector<SampledSeries> out;
  if (const auto it = counters.find(key); it != counters.end()) out.push_back(ReadSamples(it->second));
  const std::string prefix = key + "/";
  for (auto it = counters.lower_bound(prefix); it != counters.end() && it->first.starts_with(prefix); ++it)
    out.push_back(ReadSamples(it->second));
  return out;
}

// bridge_holes(rates, counters): a range query's rate `series` map with its holes (missed scrapes:
// rate() has no point where its window held fewer than two samples) filled, per key, from the
// growth the key's counter series in `counters` (one point per scrape; keyed like the rates, or
// `<key>/<series>` per device) show across each hole (BridgeOneSeries): a fault that ran while
// nobody scraped is read from the counters rather than lost, for the fewest seconds their count can
// have taken. Keys without counters pass through.
StatusOr<Value> BridgeHoles(const Expr& e, const Args& args, const NameResolver&) {
  if (args[0].is_null()) return Value();
  if (!args[0].is_object()) return EvalError(e, "bridge_holes() needs a series map, got " + TypeName(args[0]));
  if (!args[1].is_null() && !args[1].is_object())
    return EvalError(e, "bridge_holes() needs (series, counter series map), got " + TypeName(args[1]));
  static const Value::object_t kNoCounters;
  const Value::object_t& counters = args[1].is_object() ? args[1].get_ref<const Value::object_t&>() : kNoCounters;
  Value out = Value::object();
  for (const auto& [key, samples] : args[0].items()) {
    const std::vector<SampledSeries> of_key = CountersOfKey(counters, key);
    out[key] = of_key.empty() ? samples : BridgeOneSeries(samples, of_key);
  }
  return out;
}

StatusOr<Value> HostsOfTasks(const Expr&, const Args& args, const NameResolver& resolve) {
  const Value& a = args[0];
  const Value* facts = resolve("facts");
  Value hosts = Value::array();
  const Value* host_list = nullptr;
  if (facts && facts->is_object() && facts->contains("header") && (*facts)["header"].contains("hosts"))
    host_list = &(*facts)["header"]["hosts"];
  if (a.is_array() && host_list && host_list->is_array()) {
    for (const auto& t : a) {
      const auto i = ClampedInteger(t, -1, static_cast<int64_t>(host_list->size()));
      if (i && *i >= 0 && *i < static_cast<int64_t>(host_list->size())) hosts.push_back((*host_list)[*i]);
    }
  }
  return hosts;
}

// A result type is left "" when the function can return null (avg, max) or passes an argument
// through (default, first, sort), so the loader does not reject what may type-check at run time.
constexpr FunctionSpec kFunctions[] = {
    {"len", 1, 1, "number", Length},
    {"count", 1, 1, "number", Length},
    {"keys", 1, 1, "list", Keys},
    {"values", 1, 1, "list", Values},
    {"pick", 2, 2, "map", Pick},
    {"max", 1, 2, "", MaxOrMin},
    {"min", 1, 2, "", MaxOrMin},
    {"sum", 1, 1, "number", SumOrAvg},
    {"avg", 1, 1, "", SumOrAvg},
    {"abs", 1, 1, "number", Abs},
    {"round", 1, 2, "number", Round},
    {"union", 2, -1, "list", UnionOrIntersect},
    {"intersect", 2, -1, "list", UnionOrIntersect},
    {"minus", 2, 2, "list", Minus},
    {"contains", 2, 2, "bool", Contains},
    {"sort", 1, 1, "", Sort},
    {"join", 1, 2, "string", Join},
    {"phrases", 1, 2, "string", Phrases},
    {"fmt", 1, 2, "", Fmt},   // a string, or a list/map of strings
    {"exists", 1, 1, "bool", Exists},
    // Its result is one of its arguments, which Eval passes on as it is (a rule's value unread).
    {"default", 2, 2, "", nullptr},
    {"first", 1, 1, "", FirstOrLast},
    {"last", 1, 1, "", FirstOrLast},
    {"pluck", 2, 2, "list", Pluck},
    {"where", 4, 4, "list", Where},
    {"times_above", 2, 2, "", TimesAbove},
    {"first_time_above", 2, 3, "", FirstTimeAbove},
    {"sustained_level", 2, 3, "", SustainedLevel},
    {"held_seconds", 2, 2, "", HeldSeconds},
    {"step_windows", 3, 3, "list", StepWindows},
    {"count_outside", 2, 2, "", CountOutside},
    {"step_time", 1, 1, "", StepTime},
    {"hosts_of_tasks", 1, 1, "list", HostsOfTasks},
    {"last_run_seconds", 2, 2, "", LastRunSeconds},
    {"keys_with_holes", 1, 2, "list", KeysWithHoles},
    {"bridge_holes", 2, 2, "", BridgeHoles},
    // Only the branch taken is evaluated, so Eval handles it before arguments exist.
    {"if", 3, 3, "", nullptr},
};

}  // namespace

const FunctionSpec* FindFunction(std::string_view name) {
  for (const FunctionSpec& spec : kFunctions)
    if (spec.name == name) return &spec;
  return nullptr;
}

bool LookupFunction(const std::string& name, int* min_args, int* max_args) {
  const FunctionSpec* spec = FindFunction(name);
  if (spec == nullptr) return false;
  *min_args = spec->min_args;
  *max_args = spec->max_args;
  return true;
}

StatusOr<Value> CallFunction(const Expr& call, const Args& args, const NameResolver& resolve) {
  const FunctionSpec* spec = FindFunction(call.text);
  if (spec == nullptr || spec->impl == nullptr) return EvalError(call, "unknown function '" + call.text + "'");
  return spec->impl(call, args, resolve);
}

}  // namespace diagnose::playbook
