#include "engine/alerting/alert_replay.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "engine/analysis/analysis.h"

namespace diagnose::alerting {

std::vector<AlertFiring> ApplyFor(const std::string& alert, const std::vector<Series>& series, double step,
                                  double hold_seconds) {
  std::vector<AlertFiring> out;
  // Two evaluations more than a step and a half apart leave a gap in which the alert was inactive.
  const double gap = step * 1.5;
  for (const auto& s : series) {
    Labels labels = s.labels;
    labels.erase("__name__");
    std::optional<AlertFiring> current;
    double last = 0;
    auto close = [&] {
      if (current && current->fired_at > 0) out.push_back(*current);
      current.reset();
    };
    for (const auto& sample : s.samples) {
      if (current && sample.t - last > gap) close();
      if (!current) {
        current = AlertFiring{alert, "", labels, sample.t, 0, sample.t};
      }
      current->resolved_at = sample.t;
      if (current->fired_at == 0 && sample.t - current->pending_since >= hold_seconds) current->fired_at = sample.t;
      last = sample.t;
    }
    close();
  }
  return out;
}

StatusOr<AlertReplay> ReplayAlerts(const RuleExport& rules, QueryClient& client, double start, double end, double step) {
  if (!(end > start) || !(step > 0)) return InvalidArgumentError("alert replay needs a window with end > start and a step");
  AlertReplay replay;
  replay.start = start;
  replay.end = end;
  replay.step = step;
  std::vector<Query> queries;
  for (const auto& a : rules.alerts) {
    for (const auto& r : rules.records)
      if (InlineRecords(a.expr, {r}) != a.expr)
        return FailedPreconditionError("alert " + a.alert + " reads the recording rule " + r.record +
                                       ": replay needs the rules exported for vmalert (records inlined)");
    queries.push_back(Query::Range(a.expr, start, end, step, a.alert));
    replay.queries.push_back(fmt::format("{} over [{:.0f}, {:.0f}] step {:.0f}s: {}", a.alert, start, end, step, a.expr));
  }
  auto answers = client.RunBatch(queries);
  for (size_t i = 0; i < rules.alerts.size(); ++i) {
    const auto& a = rules.alerts[i];
    if (!answers[i].ok()) {
      replay.failures.push_back(a.alert + ": " + answers[i].status().message());
      continue;
    }
    double hold = 0;
    if (!analysis::ParseDurationSeconds(a.hold, &hold)) {
      replay.failures.push_back(a.alert + ": for: '" + a.hold + "' is not a duration");
      continue;
    }
    // A long window makes the client widen the step (at most 11,000 points): the gaps `for:` sees
    // are measured in the step actually used.
    const double used_step = answers[i]->effective_step > 0 ? answers[i]->effective_step : step;
    replay.step = std::max(replay.step, used_step);
    for (auto& f : ApplyFor(a.alert, answers[i]->series, used_step, hold)) {
      f.root_cause = a.spec ? a.spec->root_cause : "";
      replay.firings.push_back(std::move(f));
    }
  }
  std::stable_sort(replay.firings.begin(), replay.firings.end(),
                   [](const AlertFiring& x, const AlertFiring& y) { return x.fired_at < y.fired_at; });
  return replay;
}

StatusOr<std::vector<AlertFiring>> AlertPoller::Poll(double now) {
  double step = 0;
  if (!analysis::ParseDurationSeconds(rules_.interval, &step) || !(step > 0))
    return InvalidArgumentError("rule interval '" + rules_.interval + "' is not a duration");
  std::vector<double> holds;
  double longest_hold = 0;
  for (const auto& a : rules_.alerts) {
    double hold = 0;
    if (!analysis::ParseDurationSeconds(a.hold, &hold)) return InvalidArgumentError("alert " + a.alert + ": for: " + a.hold);
    holds.push_back(hold);
    longest_hold = std::max(longest_hold, hold);
  }
  // The evaluations not seen yet: one interval after the last one seen, up to now.
  const double start = last_evaluation_ ? *last_evaluation_ + step : now - longest_hold - step;
  if (now < start) return std::vector<AlertFiring>{};
  const double end = start + std::floor((now - start) / step) * step;

  std::vector<Query> queries;
  for (const auto& a : rules_.alerts) queries.push_back(Query::Range(a.expr, start, end, step, a.alert));
  auto answers = client_.RunBatch(queries);
  for (size_t i = 0; i < rules_.alerts.size(); ++i)
    if (!answers[i].ok()) return answers[i].status().WithContext("alert " + rules_.alerts[i].alert);

  std::map<std::string, Activity> still_active;
  std::vector<AlertFiring> started;
  for (size_t i = 0; i < rules_.alerts.size(); ++i) {
    const auto& a = rules_.alerts[i];
    const double used_step = answers[i]->effective_step > 0 ? answers[i]->effective_step : step;
    for (const auto& s : answers[i]->series) {
      Labels labels = s.labels;
      labels.erase("__name__");
      std::string key = a.alert;
      for (const auto& [k, v] : labels) key += "\x1f" + k + "=" + v;
      Activity activity = active_.count(key) ? active_[key] : Activity{};
      activity.samples.insert(activity.samples.end(), s.samples.begin(), s.samples.end());
      Series run{labels, activity.samples};
      std::vector<AlertFiring> firings = ApplyFor(a.alert, {run}, used_step, holds[i]);
      // ApplyFor splits at gaps; only the activity still going on at `end` is kept.
      const double gap = used_step * 1.5;
      size_t current = 0;
      for (size_t k = 1; k < activity.samples.size(); ++k)
        if (activity.samples[k].t - activity.samples[k - 1].t > gap) current = k;
      activity.samples.erase(activity.samples.begin(), activity.samples.begin() + static_cast<long>(current));
      if (activity.samples.empty() || end - activity.samples.back().t > gap) continue;   // went away
      for (auto& f : firings) {
        if (f.pending_since != activity.samples.front().t || f.pending_since == activity.reported_since) continue;
        activity.reported_since = f.pending_since;
        f.root_cause = a.spec ? a.spec->root_cause : "";
        started.push_back(std::move(f));
      }
      still_active[key] = std::move(activity);
    }
  }
  active_ = std::move(still_active);
  last_evaluation_ = end;
  return started;
}

}  // namespace diagnose::alerting
