// Every fixture scenario's `expect:` block, checked against the contract JSON of
// `diagnose <id> --outputs fixtures/outputs --format json` — the way a sweep driver reads it.
// The scenario file is the single source of truth for what its fixture must yield.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "tests/pipeline/scenario_expect_support.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;


struct Scenario {
  std::string file;
  YAML::Node root;
};

// Paths are sorted before loading: YAML::Node's assignment writes through to the node it refers
// to, so sorting loaded Scenario values would scramble them.
std::vector<Scenario> LoadScenarios() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(fs::path(e2e::kScenarioDir)))
    if (entry.path().extension() == ".yaml") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  std::vector<Scenario> out;
  for (const auto& path : paths) out.push_back({path.filename().string(), YAML::LoadFile(path.string())});
  return out;
}

void PrintTo(const Scenario& scenario, std::ostream* os) { *os << scenario.file; }

class ScenarioContractTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(ScenarioContractTest, ReportMatchesExpectations) {
  const Scenario& scenario = GetParam();
  e2e::CliRun run = e2e::RunDiagnoseCli(e2e::ScenarioCliArgs(scenario.root, DIAGNOSE_FIXTURE_OUTPUTS));
  e2e::ExpectScenarioReport(run, scenario.root, scenario.file);
}

// The readability invariant can fail: the sentences issue 35 found in reports, and a finding whose
// only per-host table shows zeros for the hosts it blames.
TEST(ReadableReport, FlagsSentencesWithHolesAndZeroOnlyEvidence) {
  const json holes = json::parse(R"js({
    "verdict": {"summary": "RDMA retransmits on a, b slow every collective, and the bursts line up with the TGS phases on "},
    "decision": {"notes": [], "exclude": []}, "findings": []})js");
  EXPECT_NONFATAL_FAILURE(e2e::ExpectReadableReport(holes, "holes"), "ends in 'on'");
  const json clause = json::parse(R"js({"verdict": {"summary": "Cause found."},
    "decision": {"notes": ["retransmits continued on ; recovery not observable"], "exclude": []}, "findings": []})js");
  EXPECT_NONFATAL_FAILURE(e2e::ExpectReadableReport(clause, "clause"), "'on' followed by ';'");
  const json zeros = json::parse(R"js({
    "verdict": {"summary": "Thermal throttling on gx1."}, "decision": {"notes": [], "exclude": []},
    "findings": [{"id": "p/r", "status": "fired", "hosts": ["gx1"], "summary": "hot GPUs on gx1",
                  "evidence": [{"query": "max by (host) (x)", "value": {"gx1": 0, "gx2": 3}}]}]})js");
  EXPECT_NONFATAL_FAILURE(e2e::ExpectReadableReport(zeros, "zeros"), "only as 0");
  const json whole = json::parse(R"js({
    "verdict": {"summary": "Memory on node01: 1376 GB five steps in, peak 2986 GB."}, "decision": {"notes": [], "exclude": []},
    "findings": [{"id": "p/r", "status": "fired", "hosts": ["gx1"], "summary": "ports down on gx1",
                  "evidence": [{"query": "min by (host) (x) == 0", "value": {"gx1": 0}}]},
                 {"id": "p/s", "status": "fired", "hosts": ["gx1"], "summary": "errors on gx1",
                  "evidence": [{"query": "a", "value": {"gx1": 0}}, {"query": "b", "value": {"gx1/0": 4}}]}]})js");
  e2e::ExpectReadableReport(whole, "whole");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ScenarioContractTest, ::testing::ValuesIn(LoadScenarios()),
                         [](const ::testing::TestParamInfo<Scenario>& info) {
                           std::string name = info.param.file.substr(0, info.param.file.size() - 5);
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace diagnose
