// The playbook CLI as CI runs it: lint over rules/ and playbooks/, every shipped playbook test
// through a real Prometheus, and the error output of a broken file.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <utility>

#include "engine/playbook/loader.h"
#include "tests/support/cli.h"
#include "tests/support/files.h"
#include "tests/support/overlay_playbook.h"

namespace diagnose {
namespace {

const std::string kSource = DIAGNOSE_SOURCE_DIR;

testing::CliRun Cli(const std::vector<std::string>& args) {
  return testing::RunDiagnoseCli(args, std::chrono::milliseconds(240000));
}

TEST(PlaybookCliTest, ShippedRulesAndPlaybooksLintClean) {
  auto r = Cli({"lint", kSource + "/rules", kSource + "/playbooks"});
  EXPECT_EQ(r.exit_code, 0) << r.Printed();
  EXPECT_EQ(r.Printed().find("Invalid"), std::string::npos) << r.Printed();
}

TEST(PlaybookCliTest, LintReportsEveryErrorWithPositionAndFails) {
  std::string file = kSource + "/tests/playbook/testdata/five_errors.bad.yaml";
  auto r = Cli({"lint", file});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.Printed().find(file + ": Invalid"), std::string::npos) << r.Printed();
  for (const char* pos : {":8:44:", ":13:5:", ":14:5:", ":20:41:", ":25:35:"})
    EXPECT_NE(r.Printed().find(file + pos), std::string::npos) << pos << "\n" << r.Printed();
  auto j = Cli({"lint", file, "--format", "json"});
  auto parsed = nlohmann::json::parse(j.Printed(), nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.Printed();
  EXPECT_EQ(parsed["errors"], 5);
}

// PromQL the YAML loader cannot judge goes through Prometheus's own parser (promtool), with each
// error mapped back to the query's file:line:col. The fourth query is fine and must not be named.
TEST(PlaybookCliTest, LintChecksPromqlWithPrometheusParser) {
  std::string file = kSource + "/tests/playbook/testdata/promql_errors.bad.yaml";
  auto r = Cli({"lint", file});
  EXPECT_EQ(r.exit_code, 1) << r.Printed();
  for (const char* want : {":7:12: playbook \"promql-errors\", rule \"unclosed\"", "unclosed left parenthesis",
                           ":13:12: playbook \"promql-errors\", rule \"typo\"", "unknown function with name \"increse\"",
                           ":19:12: playbook \"promql-errors\", rule \"grouping\"", "in grouping opts"})
    EXPECT_NE(r.Printed().find(want), std::string::npos) << want << "\n" << r.Printed();
  EXPECT_EQ(r.Printed().find("rule \"fine\""), std::string::npos) << r.Printed();
  // The placeholders were bound to samples of their types (hosts as an alternation, a duration).
  EXPECT_NE(r.Printed().find("host=~\"host-a|host-b\""), std::string::npos) << r.Printed();
  auto j = Cli({"lint", file, "--format", "json"});
  auto parsed = nlohmann::json::parse(j.Printed(), nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.Printed();
  EXPECT_EQ(parsed["errors"], 3);
}

// 5,000 parentheses in a `when:` overflowed the expression parser's stack (exit 139); 100,000 in a
// query kept promtool, and so lint, busy past a minute. Both are errors at their file:line:col.
TEST(PlaybookCliTest, DeepNestingIsALintErrorNotACrashOrAHang) {
  testing::TempDir dir("diagnose-deep-nesting");
  const std::string head = "description: x\ntriggers:\n  - tsdb: true\nrules:\n  - id: r\n    query: '";
  const std::string when = dir / "when.yaml", query = dir / "query.yaml";
  std::ofstream(when) << "playbook: deep-when\n" << head << "up'\n    finding:\n      when: \"" << std::string(5000, '(')
                      << "1" << std::string(5000, ')') << " > 0\"\n      summary: x\n";
  std::ofstream(query) << "playbook: deep-query\n" << head << std::string(100000, '(') << "up"
                       << std::string(100000, ')') << "'\n    finding:\n      when: \"true\"\n      summary: x\n";
  for (const auto& [file, want] :
       {std::pair{when, ":9:270: playbook \"deep-when\", rule \"r\": field 'finding.when': could not parse "
                        "expression: expression nested deeper than 256 levels"},
        std::pair{query, ":7:12: playbook \"deep-query\", rule \"r\": the query nests brackets deeper than 256 levels"}}) {
    const auto started = std::chrono::steady_clock::now();
    auto r = Cli({"lint", file});
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30)) << file;
    EXPECT_EQ(r.exit_code, 1) << r.Printed();
    EXPECT_NE(r.Printed().find(file + want), std::string::npos) << want << "\n" << r.Printed().substr(0, 2000);
  }
}

TEST(PlaybookCliTest, EveryShippedPlaybookTestPassesAgainstRealPrometheus) {
  std::vector<std::string> files = playbook::FindYamlFiles(kSource + "/playbooks", true);
  ASSERT_FALSE(files.empty());
  std::string junit = std::string(DIAGNOSE_BUILD_DIR) + "/playbook-tests.junit.xml";
  std::vector<std::string> args = {"test"};
  args.insert(args.end(), files.begin(), files.end());
  args.insert(args.end(), {"--junit", junit});
  auto r = Cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.Printed();
  const std::string report = testing::ReadFileOrEmpty(junit);
  EXPECT_NE(report.find("<testsuites>"), std::string::npos);
  EXPECT_EQ(report.find("<failure"), std::string::npos) << report;
}

TEST(PlaybookCliTest, TestFailuresAreReportedAndRunFilters) {
  const testing::TempDir scratch("diagnose-cli-test");
  const std::filesystem::path& dir = scratch.path();
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
  EXPECT_NE(r.Printed().find("root_cause: expected \"rccl-hang\", got \"none\""), std::string::npos) << r.Printed();
  auto filtered = Cli({"test", (dir / "wrong.test.yaml").string(), "--run", "^other$"});
  EXPECT_EQ(filtered.exit_code, 0) << filtered.Printed();
  EXPECT_NE(filtered.Printed().find("1 passed, 0 failed, 1 skipped"), std::string::npos) << filtered.Printed();
}

// `lint --data-dir` reads the data dir `diagnose JOB --data-dir` reads; `--playbooks DIR` lints
// one's own playbooks on top of the shipped ones, as `diagnose JOB --playbooks DIR` loads them.
TEST(PlaybookCliTest, LintTakesADataDirAndAnOverlayOfOnesOwnPlaybooks) {
  const testing::TempDir scratch("diagnose-overlay");
  const std::filesystem::path& dir = scratch.path();
  auto data_dir = Cli({"lint", "--data-dir", kSource});
  EXPECT_EQ(data_dir.exit_code, 0) << data_dir.Printed();
  EXPECT_NE(data_dir.Printed().find(kSource + "/playbooks/network-health.yaml: Ok"), std::string::npos) << data_dir.Printed();

  const std::string mine = testing::WriteHotHostsPlaybook(dir / "good");
  auto overlay = Cli({"lint", "--playbooks", (dir / "good").string()});
  EXPECT_EQ(overlay.exit_code, 0) << overlay.Printed();
  EXPECT_NE(overlay.Printed().find(mine + ": Ok"), std::string::npos) << overlay.Printed();
  EXPECT_NE(overlay.Printed().find("/playbooks/network-health.yaml: Ok"), std::string::npos) << overlay.Printed();

  // An id the shipped set already has is an error, not a silent replacement.
  const std::string clash = testing::WriteHotHostsPlaybook(dir / "clash", "network-health");
  auto clashing = Cli({"lint", "--playbooks", (dir / "clash").string()});
  EXPECT_EQ(clashing.exit_code, 1) << clashing.Printed();
  EXPECT_NE(clashing.Printed().find("duplicate id 'network-health'"), std::string::npos) << clashing.Printed();
}

// What `diagnose JOB --playbooks DIR` refuses, `lint --playbooks DIR` names: an empty file, one of
// binary bytes and a symlink to a system file each fail lint (exit 1) with the file listed Invalid.
TEST(PlaybookCliTest, LintChecksEveryOverlayFileDiagnoseWouldLoad) {
  const testing::TempDir scratch("diagnose-overlay-odd");
  const std::filesystem::path& dir = scratch.path();
  const std::string empty = testing::WriteFile(dir / "empty" / "empty.yaml", "");
  const std::string binary = testing::WriteFile(dir / "binary" / "binary.yaml", std::string("\x7f" "ELF\x02\x01\x01\0\0", 9));
  std::filesystem::create_directories(dir / "link");
  const std::string link = (dir / "link" / "passwd.yaml").string();
  std::filesystem::create_symlink("/etc/passwd", link);
  for (const std::string& file : {empty, binary, link}) {
    SCOPED_TRACE(file);
    const std::string overlay = std::filesystem::path(file).parent_path().string();
    auto diagnosed = Cli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--logs-only", "--playbooks", overlay});
    EXPECT_EQ(diagnosed.exit_code, 1) << diagnosed.Printed();
    auto linted = Cli({"lint", "--playbooks", overlay});
    EXPECT_EQ(linted.exit_code, 1) << linted.Printed();
    EXPECT_NE(linted.Printed().find(file + ": Invalid"), std::string::npos) << linted.Printed();
  }
}

}  // namespace
}  // namespace diagnose
