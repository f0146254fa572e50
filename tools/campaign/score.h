// `campaign score`: runs diagnose on every scored job of a generated campaign and compares its
// report with the truth the generator wrote.
#pragma once

#include <optional>
#include <string>

#include "engine/core/status.h"

namespace diagnose::campaign {

struct ScoreThresholds {
  std::optional<double> root_cause, action, precision, recall, healthy_none;   // fractions 0..1
};

struct ScoreOptions {
  std::string diagnose_bin;
  std::string dir;              // a `campaign generate` output dir
  std::string json_out;         // empty: no JSON file
  int parallel = 2;
  int timeout_seconds = 900;    // per diagnose run
  ScoreThresholds thresholds;
};

// Prints the table; returns whether every threshold held (false: the caller exits non-zero).
StatusOr<bool> ScoreCampaign(const ScoreOptions& options);

}  // namespace diagnose::campaign
