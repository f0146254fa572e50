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

// What an analysis reads, where its owner keeps it: the evaluator passes rules' values and
// discovery's step map in place (a copy of each per analysis cost more than some analyses).
struct AnalysisView {
  const Json& input;            // the `input` expression's value
  const Json& baseline_input;   // `baseline_input` (null when not given)
  const Json& phases;           // `phases` (null when not given)
  const Json& windows;          // `windows` (null when not given)
  const Json& args;             // every declared arg, defaults filled in
  const Json& step_times;       // discovery.step_times ([[step, epoch], ...]) for step->time mapping
};

// The same inputs held by value, for a caller that builds them (tests, tools).
struct AnalysisInput {
  Json input;
  Json baseline_input;
  Json phases;
  Json windows;
  Json args;
  Json step_times;

  operator AnalysisView() const { return {input, baseline_input, phases, windows, args, step_times}; }
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
  std::function<StatusOr<Json>(const AnalysisView&)> run;
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
StatusOr<Json> ChangePoints(const AnalysisView& in);
StatusOr<Json> PeerOutliers(const AnalysisView& in);
StatusOr<Json> EarliestAnomaly(const AnalysisView& in);
StatusOr<Json> AlignByStep(const AnalysisView& in);
StatusOr<Json> Flatline(const AnalysisView& in);
StatusOr<Json> BurstPhaseCorrelation(const AnalysisView& in);
StatusOr<Json> UniformDelta(const AnalysisView& in);
StatusOr<Json> WindowRatio(const AnalysisView& in);
StatusOr<Json> SteadyLevel(const AnalysisView& in);

}  // namespace diagnose::analysis
