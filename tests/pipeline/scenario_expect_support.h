// What a scenario's `expect:` block says about the contract report of its job: shared by the
// fixture contract test and the variant test (the same scenarios under other hosts and intervals).
#pragma once

#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "tests/support/fixture_reports.h"

namespace diagnose::e2e {

// fixtures/scenarios: one YAML file per fixture job.
inline const char* kScenarioDir = DIAGNOSE_SOURCE_DIR "/fixtures/scenarios";

// Host names of a list given as plain names or {host: ...} maps.
std::set<std::string> StringSet(const YAML::Node& node);

std::string ScenarioJobId(const YAML::Node& root);

// `ID --outputs OUTPUTS --format json [--now T] [--baseline B]` for a scenario.
std::vector<std::string> ScenarioCliArgs(const YAML::Node& root, const std::string& outputs);

// Records a failure for every sentence of the report with a hole in it (a verdict summary, note,
// exclusion reason or fired finding's summary that ends in a connective, or has punctuation right
// after one: an empty list rendered into it) and for every per-host evidence table of a fired
// finding that shows only zeros for the hosts the finding blames. Part of ExpectScenarioReport.
void ExpectReadableReport(const nlohmann::json& report, const std::string& file);

// Records a test failure for every point of the scenario's `expect:` block (status, failure class,
// root cause, action, exclusions with priorities, findings, refuted symptoms, report texts) and
// every contract invariant the report breaks. `file` names the scenario in messages.
void ExpectScenarioReport(const CliRun& run, const YAML::Node& root, const std::string& file);

}  // namespace diagnose::e2e
