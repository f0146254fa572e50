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
  std::vector<Query> queries;
  for (const auto& a : rules_.alerts) queries.push_back(Query::Instant(a.expr, now, a.alert));
  auto answers = client_.RunBatch(queries);
  std::map<std::string, Active> still_active;
  std::vector<AlertFiring> started;
  for (size_t i = 0; i < rules_.alerts.size(); ++i) {
    const auto& a = rules_.alerts[i];
    if (!answers[i].ok()) return answers[i].status().WithContext("alert " + a.alert);
    double hold = 0;
    if (!analysis::ParseDurationSeconds(a.hold, &hold)) return InvalidArgumentError("alert " + a.alert + ": for: " + a.hold);
    for (const auto& s : answers[i]->series) {
      Labels labels = s.labels;
      labels.erase("__name__");
      std::string key = a.alert;
      for (const auto& [k, v] : labels) key += "\x1f" + k + "=" + v;
      auto it = active_.find(key);
      Active state = it == active_.end() ? Active{now, false} : it->second;
      if (!state.fired && now - state.since >= hold) {
        state.fired = true;
        started.push_back({a.alert, a.spec ? a.spec->root_cause : "", labels, state.since, now, now});
      }
      still_active[key] = state;
    }
  }
  active_ = std::move(still_active);   // a series absent at this poll is inactive again
  return started;
}

}  // namespace diagnose::alerting
