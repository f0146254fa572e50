// The ground truth of a fault-injection campaign: what the generator injected and what a careful
// SRE would conclude from it. The generator decides it; diagnose is only ever compared against it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace diagnose::campaign {

struct ExpectedExclusion {
  std::string host;
  std::optional<int> priority;   // unset: the engine's priority for this cause is not pinned down
};

struct JobTruth {
  std::string job_id;
  std::string kind;                        // e.g. rdma-degradation, restore-no-leak (near miss)
  bool scored = true;                      // false: a baseline job that exists only to be compared against
  std::string root_cause;                  // diagnose-contract.md vocabulary
  std::string action;
  std::vector<ExpectedExclusion> exclude;
  std::vector<std::string> must_not_exclude;
  std::optional<std::string> baseline;     // --baseline
  std::optional<double> now;               // --now (epoch seconds)
  std::string notes;
};

// Whether `answer` is the truth's root cause or one of its alternatives: a truth joins them with '|'
// when the job holds two faults neither of which came first (either is a right answer).
bool RootCauseMatches(const std::string& truth, const std::string& answer);

std::string TruthToJson(const std::vector<JobTruth>& truths);
StatusOr<std::vector<JobTruth>> TruthFromJson(const std::string& text, const std::string& path_for_messages);

}  // namespace diagnose::campaign
