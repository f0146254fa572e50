// Combines the verdict candidates of every playbook that ran into the report's verdict, decision
// and causal chain (playbooks/README.md §8). Knows nothing about YAML or PromQL.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/report/report.h"

namespace diagnose::verdict {

// One playbook's fired verdict (its first in precedence order).
struct Candidate {
  std::string playbook;
  std::string rule;                      // local verdict rule id
  int playbook_order = 0;                // position of the playbook in the run (tie-break)
  std::string root_cause;
  Confidence confidence = Confidence::kLikely;
  std::string summary;
  std::optional<double> onset;           // epoch seconds of the earliest anomaly it rests on
  std::vector<std::string> hosts;
  std::vector<std::string> explains;     // failure classes (symptoms) it accounts for
  DecisionAction action = DecisionAction::kNone;
  std::vector<Exclusion> exclude;
  std::map<std::string, std::string> changes;
  std::vector<std::string> notes;
  // What cannot be seen rather than what went wrong (e.g. broken telemetry): ranks below every
  // candidate that names a failure mechanism, and leaves a refutation standing.
  bool yields = false;
};

struct Combined {
  Verdict verdict;
  Decision decision;
  std::vector<std::string> causal_chain;   // root cause -> intermediate effects -> symptoms
  std::vector<std::string> ranking;        // "<playbook>/<rule>: <root_cause> (<confidence>)", best first
};

// `job_status` and `failure_classes` are the subject's (contract vocabulary; no status when the facts
// name none); a failed, hanging or unknown-death job without a cause-naming candidate gets
// `unknown`, never `none`.
Combined Combine(std::vector<Candidate> candidates, std::optional<JobStatus> job_status,
                 const std::vector<std::string>& failure_classes);

// A failed, hanging or unknown-death job: a status that needs a cause of its own, which a
// slowdown's explanation (e.g. the profile drill's) does not give.
bool IsUnexplainedStatus(std::optional<JobStatus> status);

// The note Combine adds to an unexplained failure or slowdown ("unexplained <what>: inspect ...");
// a later stage that names the cause (the profile drill) removes it with this.
std::string UnexplainedNote(const std::string& what);
bool IsUnexplainedNote(const std::string& note);

}  // namespace diagnose::verdict
