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

#include "tests/pipeline/diagnose_cli_support.h"
#include "engine/report/report.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kScenarios = fs::path(DIAGNOSE_SOURCE_DIR) / "fixtures" / "scenarios";

struct Scenario {
  std::string file;
  YAML::Node root;
};

// Paths are sorted before loading: YAML::Node's assignment writes through to the node it refers
// to, so sorting loaded Scenario values would scramble them.
std::vector<Scenario> LoadScenarios() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(kScenarios))
    if (entry.path().extension() == ".yaml") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  std::vector<Scenario> out;
  for (const auto& path : paths) out.push_back({path.filename().string(), YAML::LoadFile(path.string())});
  return out;
}

void PrintTo(const Scenario& scenario, std::ostream* os) { *os << scenario.file; }

std::set<std::string> StringSet(const YAML::Node& node) {
  std::set<std::string> out;
  for (const auto& item : node) out.insert(item.IsMap() ? item["host"].as<std::string>() : item.as<std::string>());
  return out;
}

class ScenarioContractTest : public testing::TestWithParam<Scenario> {};

TEST_P(ScenarioContractTest, ReportMatchesExpectations) {
  const Scenario& scenario = GetParam();
  const YAML::Node expect = scenario.root["expect"];
  ASSERT_TRUE(expect) << scenario.file << " has no expect: block";
  const std::string id = scenario.root["job"]["id"] ? scenario.root["job"]["id"].as<std::string>()
                                                     : scenario.root["id"].as<std::string>();
  std::vector<std::string> args{id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"};
  // Running/hanging depend on "now": a scenario pins it (epoch seconds) so the verdict is stable.
  if (expect["now"]) {
    args.push_back("--now");
    args.push_back(expect["now"].as<std::string>());
  }
  if (expect["baseline"]) {
    args.push_back("--baseline");
    args.push_back(expect["baseline"].as<std::string>());
  }
  e2e::CliRun run = e2e::RunDiagnoseCli(args);
  if (expect["status"] && expect["status"].as<std::string>() == "no-report") {
    EXPECT_NE(run.exit_code, 0) << scenario.file;
    EXPECT_TRUE(run.out.empty()) << "no partial JSON on stdout";
    EXPECT_NE(run.err.find(id), std::string::npos) << "the error names the job: " << run.err;
    return;
  }
  ASSERT_EQ(run.exit_code, 0) << scenario.file << ": " << run.err;
  json report = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << run.out.substr(0, 400);

  // Contract invariants hold on every report.
  EXPECT_EQ(report["schema"], "diagnose/v1");
  EXPECT_TRUE(IsKnownRootCause(report["verdict"]["root_cause"])) << report["verdict"];
  EXPECT_TRUE(IsKnownDomain(report["verdict"]["domain"]));
  EXPECT_TRUE(IsKnownConfidence(report["verdict"]["confidence"]));
  EXPECT_TRUE(IsKnownAction(report["decision"]["action"])) << report["decision"];
  EXPECT_TRUE(IsKnownJobStatus(report["jobs"][0]["status"]));
  for (const auto& f : report["findings"])
    if (f["status"] == "fired") EXPECT_FALSE(f["evidence"].empty()) << "fired finding without evidence: " << f["id"];

  const json& job = report["jobs"][0];
  if (expect["status"]) EXPECT_EQ(job["status"], expect["status"].as<std::string>()) << scenario.file;
  if (expect["failure_class"]) {
    // `failure_class: null` in a scenario means "no failure class": the report carries "".
    std::string expected = expect["failure_class"].IsNull() ? "" : expect["failure_class"].as<std::string>();
    EXPECT_EQ(job["failure_class"], expected) << scenario.file;
  }
  if (expect["root_cause"])
    EXPECT_EQ(report["verdict"]["root_cause"], expect["root_cause"].as<std::string>())
        << scenario.file << ": " << report["verdict"].dump();
  if (expect["domain"]) EXPECT_EQ(report["verdict"]["domain"], expect["domain"].as<std::string>());
  if (expect["action"])
    EXPECT_EQ(report["decision"]["action"], expect["action"].as<std::string>())
        << scenario.file << ": " << report["decision"].dump();
  std::set<std::string> excluded;
  for (const auto& e : report["decision"]["exclude"]) excluded.insert(e["host"].get<std::string>());
  if (expect["exclude"]) EXPECT_EQ(excluded, StringSet(expect["exclude"])) << scenario.file;
  if (expect["not_excluded"])
    for (const auto& host : StringSet(expect["not_excluded"]))
      EXPECT_EQ(excluded.count(host), 0u) << host << " must never be excluded (" << scenario.file << ")";
  // An `exclude` entry given as {host, priority} also pins the priority.
  if (expect["exclude"])
    for (const auto& item : expect["exclude"]) {
      if (!item.IsMap() || !item["priority"]) continue;
      for (const auto& e : report["decision"]["exclude"])
        if (e["host"] == item["host"].as<std::string>())
          EXPECT_EQ(e["priority"], item["priority"].as<int>()) << e.dump() << " (" << scenario.file << ")";
    }
  if (expect["changes"])
    for (const auto& kv : expect["changes"])
      EXPECT_EQ(report["decision"]["changes"].value(kv.first.as<std::string>(), ""), kv.second.as<std::string>());
  // `findings: [{id, status, hosts}]`: each finding is in the report with that status (fired,
  // clear, suppressed, ...) and, when `hosts` is given, exactly that host set.
  for (const auto& want : expect["findings"]) {
    const std::string id = want["id"].as<std::string>();
    const json* found = nullptr;
    for (const auto& f : report["findings"])
      if (f.value("id", "") == id) found = &f;
    if (!found) {
      ADD_FAILURE() << scenario.file << ": finding " << id << " is not in the report";
      continue;
    }
    EXPECT_EQ(found->value("status", ""), want["status"].as<std::string>()) << scenario.file << ": " << found->dump();
    if (want["hosts"]) {
      std::set<std::string> hosts;
      for (const auto& h : (*found)["hosts"]) hosts.insert(h.get<std::string>());
      EXPECT_EQ(hosts, StringSet(want["hosts"])) << scenario.file << ": finding " << id;
    }
  }
  // `refuted`: failure classes the metrics showed to be false alarms (verdict.refuted extension).
  if (expect["refuted"]) {
    std::set<std::string> refuted;
    for (const auto& r : report["verdict"].value("refuted", json::array())) refuted.insert(r.get<std::string>());
    EXPECT_EQ(refuted, StringSet(expect["refuted"])) << scenario.file;
  }
  // `report_contains: [text]`: what the reader must be told, somewhere in the verdict summary, the
  // decision notes or a finding's summary.
  std::string told = report["verdict"].value("summary", "");
  for (const auto& n : report["decision"]["notes"]) told += "\n" + n.get<std::string>();
  for (const auto& f : report["findings"])
    if (f.value("status", "") != "clear") told += "\n" + f.value("summary", "");
  for (const auto& text : expect["report_contains"])
    EXPECT_NE(told.find(text.as<std::string>()), std::string::npos)
        << scenario.file << ": the report never says '" << text.as<std::string>() << "':\n" << told;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ScenarioContractTest, testing::ValuesIn(LoadScenarios()),
                         [](const testing::TestParamInfo<Scenario>& info) {
                           std::string name = info.param.file.substr(0, info.param.file.size() - 5);
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace diagnose
