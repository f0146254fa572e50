// What the exported alerts would have said on a recorded job: each alert's expression asked as a
// range query over the job's data at the rule groups' evaluation interval, and Prometheus's `for:`
// applied to the answer (a series goes pending at its first evaluation, fires once it has been
// present at every evaluation for `for`, and starts over after a gap). Uses the self-contained
// expressions (RuleTarget::kVmalert), as no recording rule ran over the recorded data.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/alerting/rule_export.h"
#include "engine/core/status.h"
#include "engine/tsdb/query_client.h"

namespace diagnose::alerting {

struct AlertFiring {
  std::string alert;
  std::string root_cause;
  Labels labels;            // the expression's labels (host, instance, ...)
  double pending_since = 0;
  double fired_at = 0;      // first evaluation at which it was firing
  double resolved_at = 0;   // last evaluation it was seen at (firing or pending)
};

struct AlertReplay {
  double start = 0, end = 0, step = 0;
  std::vector<AlertFiring> firings;       // by fired_at
  std::vector<std::string> queries;       // evidence: each expression with its window
  std::vector<std::string> failures;      // alerts whose query failed, with why
};

// `rules` must be exported for RuleTarget::kVmalert (no recording rule names in the expressions).
StatusOr<AlertReplay> ReplayAlerts(const RuleExport& rules, QueryClient& client, double start, double end, double step);

// Firing intervals from one alert's range answer; exposed for unit tests.
std::vector<AlertFiring> ApplyFor(const std::string& alert, const std::vector<Series>& series, double step,
                                  double hold_seconds);

// The same alerts followed live. Each Poll asks every expression as a range query over the rule
// interval's evaluations since the previous poll (the first one reaches back `for` plus one
// interval, so an alert already firing is reported at once), and ApplyFor, the replay's own
// implementation of `for:`, decides on the samples: a series absent at an evaluation between two
// polls starts over, however often the polls come. A series is reported once, at the poll that
// sees it start firing, and again only after it went away and came back.
class AlertPoller {
 public:
  // `rules` exported for RuleTarget::kVmalert; `client` must outlive the poller.
  AlertPoller(const RuleExport& rules, QueryClient& client) : rules_(rules), client_(client) {}
  StatusOr<std::vector<AlertFiring>> Poll(double now);

 private:
  struct Activity {
    std::vector<Sample> samples;   // the current continuous activity (ApplyFor's last interval)
    double reported_since = -1;    // pending_since of the activity already reported
  };
  const RuleExport& rules_;
  QueryClient& client_;
  std::optional<double> last_evaluation_;
  std::map<std::string, Activity> active_;   // alert name + labels
};
}  // namespace diagnose::alerting
