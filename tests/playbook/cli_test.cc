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

}  // namespace
}  // namespace diagnose
