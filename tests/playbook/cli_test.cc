// The playbook CLI as CI runs it: lint over rules/ and playbooks/, every shipped playbook test
// through a real Prometheus, and the error output of a broken file.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "engine/core/subprocess.h"
#include "engine/playbook/loader.h"

namespace diagnose {
namespace {

const std::string kSource = DIAGNOSE_SOURCE_DIR;

RunResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), DIAGNOSE_BINARY);
  auto r = RunCommand(args, std::chrono::milliseconds(240000));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : RunResult{};
}

TEST(PlaybookCliTest, ShippedRulesAndPlaybooksLintClean) {
  auto r = Cli({"lint", kSource + "/rules", kSource + "/playbooks"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("Invalid"), std::string::npos) << r.output;
}

TEST(PlaybookCliTest, LintReportsEveryErrorWithPositionAndFails) {
  std::string file = kSource + "/tests/playbook/testdata/five_errors.bad.yaml";
  auto r = Cli({"lint", file});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find(file + ": Invalid"), std::string::npos) << r.output;
  for (const char* pos : {":8:44:", ":13:5:", ":14:5:", ":20:41:", ":25:35:"})
    EXPECT_NE(r.output.find(file + pos), std::string::npos) << pos << "\n" << r.output;
  auto j = Cli({"lint", file, "--format", "json"});
  auto parsed = nlohmann::json::parse(j.output, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.output;
  EXPECT_EQ(parsed["errors"], 5);
}

// PromQL the YAML loader cannot judge goes through Prometheus's own parser (promtool), with each
// error mapped back to the query's file:line:col. The fourth query is fine and must not be named.
TEST(PlaybookCliTest, LintChecksPromqlWithPrometheusParser) {
  std::string file = kSource + "/tests/playbook/testdata/promql_errors.bad.yaml";
  auto r = Cli({"lint", file});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  for (const char* want : {":7:12: playbook \"promql-errors\", rule \"unclosed\"", "unclosed left parenthesis",
                           ":13:12: playbook \"promql-errors\", rule \"typo\"", "unknown function with name \"increse\"",
                           ":19:12: playbook \"promql-errors\", rule \"grouping\"", "in grouping opts"})
    EXPECT_NE(r.output.find(want), std::string::npos) << want << "\n" << r.output;
  EXPECT_EQ(r.output.find("rule \"fine\""), std::string::npos) << r.output;
  // The placeholders were bound to samples of their types (hosts as an alternation, a duration).
  EXPECT_NE(r.output.find("host=~\"host-a|host-b\""), std::string::npos) << r.output;
  auto j = Cli({"lint", file, "--format", "json"});
  auto parsed = nlohmann::json::parse(j.output, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.output;
  EXPECT_EQ(parsed["errors"], 3);
}

TEST(PlaybookCliTest, EveryShippedPlaybookTestPassesAgainstRealPrometheus) {
  std::vector<std::string> files = playbook::FindYamlFiles(kSource + "/playbooks", true);
  ASSERT_FALSE(files.empty());
  std::string junit = std::string(DIAGNOSE_BUILD_DIR) + "/playbook-tests.junit.xml";
  std::vector<std::string> args = {"test"};
  args.insert(args.end(), files.begin(), files.end());
  args.insert(args.end(), {"--junit", junit});
  auto r = Cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(junit);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("<testsuites>"), std::string::npos);
  EXPECT_EQ(ss.str().find("<failure"), std::string::npos) << ss.str();
}

TEST(PlaybookCliTest, TestFailuresAreReportedAndRunFilters) {
  auto dir = std::filesystem::temp_directory_path() / ("diagnose-cli-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "wrong.test.yaml") << "playbooks: [" << kSource << "/playbooks/examples/retry-exhaustion.yaml]\n"
      << "tests:\n"
      << "  - name: expects the wrong cause\n"
      << "    facts: {status: completed}\n"
      << "    expect: {root_cause: rccl-hang}\n"
      << "  - name: other\n"
      << "    facts: {status: completed}\n"
      << "    expect: {root_cause: none}\n";
  auto r = Cli({"test", (dir / "wrong.test.yaml").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("root_cause: expected \"rccl-hang\", got \"none\""), std::string::npos) << r.output;
  auto filtered = Cli({"test", (dir / "wrong.test.yaml").string(), "--run", "^other$"});
  EXPECT_EQ(filtered.exit_code, 0) << filtered.output;
  EXPECT_NE(filtered.output.find("1 passed, 0 failed, 1 skipped"), std::string::npos) << filtered.output;
  std::filesystem::remove_all(dir);
}

// A playbook of one's own, written into `dir` as `file`.
std::string WriteOverlay(const std::filesystem::path& dir, const std::string& file, const std::string& id) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / file) << "playbook: " << id << R"yaml(
description: hosts hotter than their peers (a user's own playbook, run on top of the shipped set)
triggers:
  - tsdb: true
params:
  margin_c: {type: number, default: 5}
rules:
  - id: hot
    description: "hosts {{ params.margin_c }} C above the peer median"
    query: 'max by (host) (hw_gpu_temperature_celsius)'
    window: job
    by: [host]
    finding:
      when: "count(hot.values > 1000) > 0"
      hosts: "keys(hot.values > 1000)"
      summary: "GPUs above 1000 C on {{ join(keys(hot.values > 1000), ', ') }}"
)yaml";
  return (dir / file).string();
}

// `lint --data-dir` reads the data dir `diagnose JOB --data-dir` reads; `--playbooks DIR` lints
// one's own playbooks on top of the shipped ones, as `diagnose JOB --playbooks DIR` loads them.
TEST(PlaybookCliTest, LintTakesADataDirAndAnOverlayOfOnesOwnPlaybooks) {
  const auto dir = std::filesystem::temp_directory_path() / ("diagnose-overlay-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto data_dir = Cli({"lint", "--data-dir", kSource});
  EXPECT_EQ(data_dir.exit_code, 0) << data_dir.output;
  EXPECT_NE(data_dir.output.find(kSource + "/playbooks/network-health.yaml: Ok"), std::string::npos) << data_dir.output;

  const std::string mine = WriteOverlay(dir / "good", "hot.yaml", "my-hot-hosts");
  auto overlay = Cli({"lint", "--playbooks", (dir / "good").string()});
  EXPECT_EQ(overlay.exit_code, 0) << overlay.output;
  EXPECT_NE(overlay.output.find(mine + ": Ok"), std::string::npos) << overlay.output;
  EXPECT_NE(overlay.output.find("/playbooks/network-health.yaml: Ok"), std::string::npos) << overlay.output;

  // An id the shipped set already has is an error, not a silent replacement.
  const std::string clash = WriteOverlay(dir / "clash", "hot.yaml", "network-health");
  auto clashing = Cli({"lint", "--playbooks", (dir / "clash").string()});
  EXPECT_EQ(clashing.exit_code, 1) << clashing.output;
  EXPECT_NE(clashing.output.find("duplicate id 'network-health'"), std::string::npos) << clashing.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace diagnose
