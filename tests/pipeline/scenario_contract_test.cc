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

INSTANTIATE_TEST_SUITE_P(Fixtures, ScenarioContractTest, ::testing::ValuesIn(LoadScenarios()),
                         [](const ::testing::TestParamInfo<Scenario>& info) {
                           std::string name = info.param.file.substr(0, info.param.file.size() - 5);
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace diagnose
