#include "engine/analysis/incident_analyses.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "engine/analysis/robust_statistics.h"
#include "engine/core/untrusted_json.h"
#include "engine/analysis/tgs_attribution.h"

namespace diagnose::analysis {
namespace {

double NumArg(const AnalysisView& in, const std::string& name) {
  return in.args.contains(name) && in.args[name].is_number() ? in.args[name].get<double>() : 0;
}
std::string StrArg(const AnalysisView& in, const std::string& name) {
  return in.args.contains(name) && in.args[name].is_string() ? in.args[name].get<std::string>() : "";
}

struct TimedStep {
  double step = 0;
  double time = 0;
  double tgs = 0;
};

// The job's healthy TGS: the 80th percentile of the medians of `window` consecutive steps
// (checkpoint spikes and slow stretches only pull a window down). Not their maximum: over hundreds
// of windows the highest median of a noisy job sits a step-noise above its level, which would
// call ordinary steps degraded. A job slow for more than 80 % of its steps has its percentile in
// the slow level, though: when windows stand more than `tolerance` above it for a stretch the job
// held (as many windows as one window has steps, and 5 % of them: a few lucky windows of a noisy
// job are not a level), the healthy level is the median of those windows.
double HealthyLevel(const std::vector<TimedStep>& steps, size_t window, double tolerance) {
  std::vector<double> medians;
  for (size_t i = 0; i + window <= steps.size(); ++i) {
    std::vector<double> w;
    for (size_t j = i; j < i + window; ++j) w.push_back(steps[j].tgs);
    medians.push_back(Median(w));
  }
  if (medians.empty()) return 0;
  std::sort(medians.begin(), medians.end());
  const double percentile = medians[static_cast<size_t>(0.8 * static_cast<double>(medians.size() - 1))];
  std::vector<double> above;
  for (double m : medians)
    if (m > percentile * (1 + tolerance)) above.push_back(m);
  const size_t held = std::max(window, (medians.size() + 19) / 20);
  return above.size() < held ? percentile : Median(above);
}

// A burst that degraded TGS and ended before the data did: recovered when TGS holds at
// `recovered_level` for `hold` steps from a step within max_steps of the retransmits stopping
// (somewhere in [be - smear, be]), failed when it never does or did long before (not the cause).
std::string RecoveryOutcome(const std::vector<TimedStep>& steps, double bs, double be, double recovered_level,
                            size_t hold, double step_seconds, double smear, double max_steps, Json* d) {
  std::optional<size_t> first;
  for (size_t i = 0; i + hold <= steps.size(); ++i) {
    if (steps[i].time <= bs + step_seconds) continue;
    bool ok = true;
    for (size_t j = i; j < i + hold; ++j) ok = ok && steps[j].tgs >= recovered_level;
    if (ok) {
      first = i;
      break;
    }
  }
  if (!first) return "failed";
  const auto& s = steps[*first];
  (*d)["recovery_step"] = s.step;
  (*d)["recovery_time"] = s.time;
  (*d)["tgs_after"] = s.tgs;
  (*d)["lag_steps"] = std::max(0.0, std::ceil((s.time - (be - smear)) / step_seconds - 1e-9));
  const double earliest = be - smear - step_seconds, latest = be + max_steps * step_seconds;
  return s.time >= earliest && s.time <= latest ? "recovered" : "failed";
}

}  // namespace

StatusOr<Json> RecoveryAfterBursts(const AnalysisView& in) {
  if (!in.input.is_object()) return InvalidArgumentError("recovery_after_bursts: input must be a map key -> bursts");
  if (!in.baseline_input.is_array())
    return InvalidArgumentError("recovery_after_bursts: baseline_input must be the job's steps (a list)");
  const std::string y = StrArg(in, "y").empty() ? "tokens_per_sec_per_device" : StrArg(in, "y");
  std::vector<TimedStep> steps;
  const StepClock clock(in.step_times);
  for (const auto& s : in.baseline_input) {
    if (!s.is_object() || !s.contains("step") || !s.contains(y) || !s["step"].is_number() || !s[y].is_number())
      continue;
    TimedStep t;
    t.step = s["step"].get<double>();
    t.tgs = s[y].get<double>();
    if (!clock.TimeOf(t.step, &t.time))
      return FailedPreconditionError("recovery_after_bursts: discovery has no step->time map");
    steps.push_back(t);
  }
  std::sort(steps.begin(), steps.end(), [](const TimedStep& a, const TimedStep& b) { return a.step < b.step; });
  Json out = {{"recovered", Json::array()}, {"failed", Json::array()}, {"ongoing", Json::array()},
              {"no_effect", Json::array()}, {"untested", Json::array()}, {"masked", Json::array()}, {"details", Json::object()},
              {"step_seconds", nullptr}};
  if (steps.size() < 3) return out;
  std::vector<double> gaps;
  for (size_t i = 1; i < steps.size(); ++i) gaps.push_back(steps[i].time - steps[i - 1].time);
  const double step_seconds = std::max(1.0, Median(gaps));
  out["step_seconds"] = step_seconds;
  const double max_steps = NumArg(in, "max_steps");
  const double tol = NumArg(in, "tolerance_pct") / 100.0;
  const double smear = NumArg(in, "smear");
  const size_t hold = static_cast<size_t>(std::max(1.0, NumArg(in, "hold_steps")));
  const size_t ref_n = static_cast<size_t>(std::max(1.0, NumArg(in, "reference_steps")));
  const double end_margin = NumArg(in, "end_margin");
  const double data_end = steps.back().time;
  const double healthy = HealthyLevel(steps, ref_n, tol);

  std::set<std::string> recovered, failed, ongoing, no_effect, untested, masked;
  for (const auto& [key, bursts] : in.input.items()) {
    if (!bursts.is_array()) continue;
    Json details = Json::array();
    // Per key: failed > recovered > ongoing > untested > no_effect. "No effect" is claimed for a key
    // only when every one of its bursts was tested and none moved TGS: a burst that could not be
    // tested (it began before the first steps) may be the one that did.
    std::string verdict;
    auto rank = [](const std::string& v) {
      return v == "failed" ? 5 : v == "recovered" ? 4 : v == "ongoing" ? 3 : v == "untested" ? 2 : v.empty() ? 0 : 1;
    };
    for (const auto& b : bursts) {
      if (!b.is_object() || !b.contains("start") || !b.contains("end") || !b["start"].is_number() || !b["end"].is_number())
        continue;
      const double bs = b["start"].get<double>(), be = b["end"].get<double>();
      Json d = {{"start", bs}, {"end", be}};
      std::string outcome;
      // Reference: the TGS of the steps just before the burst began.
      std::vector<double> ref;
      for (const auto& s : steps)
        if (s.time < bs - smear) ref.push_back(s.tgs);
      if (ref.size() > ref_n) ref.erase(ref.begin(), ref.end() - static_cast<long>(ref_n));
      std::vector<double> during;
      for (const auto& s : steps)
        if (s.time > bs + step_seconds && s.time < be - smear) during.push_back(s.tgs);
      if (ref.empty() || during.empty()) {
        outcome = "untested";
      } else {
        // Mean, not median: a burst that slowed only part of its span still shows.
        double degraded = 0;
        for (double v : during) degraded += v;
        degraded /= static_cast<double>(during.size());
        double reference = Median(ref);
        d["reference_tgs"] = reference;
        d["tgs_during"] = degraded;
        if (degraded >= reference * (1 - tol)) {
          // TGS was already down when the burst began (another host's fault): that it did not
          // move says nothing about this burst's own cost.
          const bool masked = reference < healthy * (1 - tol);
          outcome = masked ? "untested" : "no_effect";
          if (masked) d["masked_by_earlier_slowdown"] = true;
        } else if (be >= data_end - end_margin) {
          outcome = "ongoing";
        } else {
          outcome = RecoveryOutcome(steps, bs, be, reference * (1 - tol), hold, step_seconds, smear, max_steps, &d);
        }
      }
      d["outcome"] = outcome;
      details.push_back(d);
      if (rank(outcome) > rank(verdict)) verdict = outcome;
    }
    if (details.empty()) continue;
    out["details"][key] = details;
    if (verdict == "failed") failed.insert(key);
    else if (verdict == "recovered") recovered.insert(key);
    else if (verdict == "ongoing") ongoing.insert(key);
    else if (verdict == "no_effect") no_effect.insert(key);
    else untested.insert(key);
    if (verdict == "untested" && std::any_of(details.begin(), details.end(), [](const Json& d) {
          return d.contains("masked_by_earlier_slowdown");
        }))
      masked.insert(key);
  }
  for (const auto& [name, set] : {std::pair{"recovered", &recovered}, std::pair{"failed", &failed},
                                  std::pair{"ongoing", &ongoing}, std::pair{"no_effect", &no_effect},
                                  std::pair{"untested", &untested}, std::pair{"masked", &masked}})
    for (const auto& k : *set) out[name].push_back(k);
  return out;
}

StatusOr<Json> TaskNeighbours(const AnalysisView& in) {
  if (!in.input.is_array() || in.input.size() != 2 || !in.input[0].is_array() || !in.input[1].is_array())
    return InvalidArgumentError("task_neighbours: input must be [accused_tasks, task_ordered_hosts]");
  std::set<long> accused;
  for (const auto& t : in.input[0])
    if (auto task = ClampedInteger(t, -1, 1L << 40)) accused.insert(*task);
  const Json& hosts = in.input[1];
  const long n = static_cast<long>(hosts.size());
  Json out = {{"task", nullptr}, {"host", nullptr}, {"candidates", Json::array()}};
  std::set<long> seen;
  for (long t : accused) {
    for (long c : {t + 1, t - 1}) {
      if (c < 0 || c >= n || accused.count(c) || seen.count(c) || !hosts[c].is_string()) continue;
      seen.insert(c);
      out["candidates"].push_back({{"task", c}, {"host", hosts[c]}});
    }
  }
  if (!out["candidates"].empty()) {
    out["task"] = out["candidates"][0]["task"];
    out["host"] = out["candidates"][0]["host"];
  }
  return out;
}

StatusOr<Json> ConfigDiff(const AnalysisView& in) {
  if (!in.input.is_object() || !in.baseline_input.is_object())
    return InvalidArgumentError("config_diff: input and baseline_input must be maps");
  Json out = {{"changed", Json::object()}, {"only_subject", Json::object()}, {"only_baseline", Json::object()},
              {"keys", Json::array()}, {"same", 0}};
  std::set<std::string> keys;
  int same = 0;
  for (const auto& [k, v] : in.input.items()) {
    auto it = in.baseline_input.find(k);
    if (it == in.baseline_input.end()) {
      out["only_subject"][k] = v;
      keys.insert(k);
    } else if (*it != v) {
      out["changed"][k] = Json::array({v, *it});
      keys.insert(k);
    } else {
      ++same;
    }
  }
  for (const auto& [k, v] : in.baseline_input.items()) {
    if (in.input.contains(k)) continue;
    out["only_baseline"][k] = v;
    keys.insert(k);
  }
  for (const auto& k : keys) out["keys"].push_back(k);
  out["same"] = same;
  return out;
}

void AddIncidentAnalyses(std::map<std::string, AnalysisDef>* r) {
  (*r)["config_diff"] = {
      "config_diff", "the configuration keys that differ between two jobs",
      {},
      {{"changed", "map"}, {"only_subject", "map"}, {"only_baseline", "map"}, {"keys", "list"}, {"same", "number"}},
      {"input", "baseline_input"}, ConfigDiff};
  (*r)["recovery_after_bursts"] = {
      "recovery_after_bursts", "TGS returns to its pre-burst level within a few steps after a host's bursts stop",
      {{"max_steps", {"number", 2, {}}}, {"tolerance_pct", {"number", 3, {}}}, {"smear", {"duration", 120, {}}},
       {"hold_steps", {"number", 3, {}}}, {"reference_steps", {"number", 10, {}}}, {"end_margin", {"duration", 300, {}}},
       {"y", {"string", "tokens_per_sec_per_device", {}}}},
      {{"recovered", "list"}, {"failed", "list"}, {"ongoing", "list"}, {"no_effect", "list"}, {"untested", "list"}, {"masked", "list"},
       {"details", "map"}, {"step_seconds", "number"}},
      {"input", "baseline_input"}, RecoveryAfterBursts};
  (*r)["tgs_attribution"] = {
      "tgs_attribution", "the set of hosts whose error intervals jointly explain the TGS series (overlapping faults)",
      {{"smear", {"duration", 150, {}}}, {"min_effect_pct", {"number", 3, {}}}, {"min_t", {"number", 8, {}}},
       {"min_points", {"number", 3, {}}}},
      {{"explains", "list"}, {"no_effect", "list"}, {"untested", "list"}, {"details", "map"}, {"explained_text", "list"},
       {"others_explain", "list"}},
      {"input", "baseline_input"}, TgsAttribution};
  (*r)["task_neighbours"] = {
      "task_neighbours", "a non-accused task adjacent to an accused one, for liveness comparison",
      {},
      {{"task", "number"}, {"host", "string"}, {"candidates", "list"}},
      {"input"}, TaskNeighbours};
}

}  // namespace diagnose::analysis
