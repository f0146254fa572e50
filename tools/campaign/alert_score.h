// `campaign alerts`: the exported alerting rules replayed on every scored job of a campaign
// (`diagnose rules replay`), against the generator's truth. A faulty job whose root cause has an
// alert should be warned of before it ends (the lead time is measured from the alert's first
// firing to the end of the job's data); a job without a fault must raise no alert at all.
#pragma once

#include <string>

#include "engine/core/status.h"

namespace diagnose::campaign {

struct AlertScoreOptions {
  std::string diagnose_bin;
  std::string dir;          // a `campaign generate` output dir
  std::string json_out;     // empty: no JSON file
  int parallel = 2;
  int timeout_seconds = 300;
};

// Prints the per-kind table; false when a healthy job raised an alert.
StatusOr<bool> ScoreAlerts(const AlertScoreOptions& options);

}  // namespace diagnose::campaign
