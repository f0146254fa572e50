// Built-in analyses, named and parameterised from YAML (playbooks/README.md §3.3). Each takes JSON
// data (query results, facts) plus typed args and returns a JSON result whose fields conditions
// can read. Pure functions: no YAML, no HTTP, no clocks.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"

namespace diagnose::analysis {

using Json = nlohmann::json;

struct AnalysisInput {
  Json input;                 // the `input` expression's value
  Json baseline_input;        // `baseline_input` (null when not given)
  Json phases;                // `phases` (null when not given)
  Json windows;               // `windows` (null when not given)
  Json args;                  // every declared arg, defaults filled in
  Json step_times;            // discovery.step_times ([[step, epoch], ...]) for step->time mapping
};

struct ArgSpec {
  std::string type;           // number | string | bool | duration
  Json default_value;
  std::vector<std::string> allowed;   // for strings: the vocabulary (empty = any)
};

struct AnalysisDef {
  std::string name;
  std::string description;
  std::map<std::string, ArgSpec> args;
  std::map<std::string, std::string> fields;   // result field -> static type ("" = varies)
  std::vector<std::string> required_inputs;    // of: input, baseline_input, phases, windows
  std::function<StatusOr<Json>(const AnalysisInput&)> run;
};

// All analyses by name (sorted).
const std::map<std::string, AnalysisDef>& Registry();
const AnalysisDef* FindAnalysis(const std::string& name);

// Parses a PromQL-style duration ("30s", "1h30m", "500ms") into seconds; false when malformed.
bool ParseDurationSeconds(const std::string& text, double* seconds);

// Step -> epoch via a [[step, epoch], ...] map with linear interpolation/extrapolation.
bool StepToTime(const Json& step_times, double step, double* epoch);

// The same map read and sorted once, for an analysis placing each of a job's steps: reading it per
// step was quadratic in the steps.
class StepClock {
 public:
  explicit StepClock(const Json& step_times);
  // False when the map has no (step, epoch) pair.
  bool TimeOf(double step, double* epoch) const;

 private:
  std::vector<std::pair<double, double>> points_;   // (step, epoch), by step
};

// Individual analyses, exposed for unit tests.
StatusOr<Json> ChangePoints(const AnalysisInput& in);
StatusOr<Json> PeerOutliers(const AnalysisInput& in);
StatusOr<Json> EarliestAnomaly(const AnalysisInput& in);
StatusOr<Json> AlignByStep(const AnalysisInput& in);
StatusOr<Json> Flatline(const AnalysisInput& in);
StatusOr<Json> BurstPhaseCorrelation(const AnalysisInput& in);
StatusOr<Json> UniformDelta(const AnalysisInput& in);
StatusOr<Json> WindowRatio(const AnalysisInput& in);
StatusOr<Json> SteadyLevel(const AnalysisInput& in);

}  // namespace diagnose::analysis
