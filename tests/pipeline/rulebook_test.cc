// One parsed rulebook serves many diagnoses (summary, watch) and changes nothing in their reports.
#include "engine/pipeline/rulebook.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/pipeline/pipeline.h"
#include "engine/report/report.h"
#include "tests/support/fixture_reports.h"
#include "tests/support/files.h"
#include "tests/support/overlay_playbook.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

TEST(RulebookTest, LoadsEveryShippedFile) {
  auto book = LoadRulebook(DIAGNOSE_SOURCE_DIR);
  ASSERT_TRUE(book.ok()) << book.status().ToString();
  EXPECT_FALSE((*book)->library.playbooks.empty());
  EXPECT_FALSE((*book)->signatures.classes.empty());
  EXPECT_FALSE((*book)->decisions.rules.empty());
  EXPECT_FALSE((*book)->discovery.families.empty());
}

// A data dir of the shipped rules and playbooks, for a test to break one of them.
fs::path CopyOfShippedDataDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(fs::path(DIAGNOSE_SOURCE_DIR) / "rules", dir / "rules", fs::copy_options::recursive);
  fs::copy(fs::path(DIAGNOSE_SOURCE_DIR) / "playbooks", dir / "playbooks", fs::copy_options::recursive);
  return dir;
}

TEST(RulebookTest, ABrokenFileIsNamed) {
  const fs::path dir = CopyOfShippedDataDir("rulebook-test");
  std::ofstream(dir / "rules" / "discovery.yaml") << "families: [unclosed\n";
  auto book = LoadRulebook(dir.string());
  ASSERT_FALSE(book.ok());
  EXPECT_NE(book.status().message().find("discovery.yaml"), std::string::npos) << book.status().message();
  fs::remove_all(dir);
}

// Same report, shared rulebook or not, for jobs of different kinds one after the other.
// The rules triage reads are parsed before the sweep decisions, yet of two broken files the one
// reported is still the first in the order decisions, signatures, discovery.
TEST(RulebookTest, OfTwoBrokenFilesTheDecisionsAreNamed) {
  const fs::path dir = CopyOfShippedDataDir("rulebook-order-test");
  std::ofstream(dir / "rules" / "sweep" / "decisions.yaml") << "rules: [unclosed\n";
  std::ofstream(dir / "rules" / "triage" / "failure-signatures.yaml") << "classes: [unclosed\n";
  bool handed_over = false;
  auto book = LoadRulebook(dir.string(), {}, [&](const RulesBeforePlaybooks&) { handed_over = true; });
  ASSERT_FALSE(book.ok());
  EXPECT_NE(book.status().message().find("decisions.yaml"), std::string::npos) << book.status().message();
  EXPECT_FALSE(handed_over) << "signatures that did not load were handed to triage";
  std::ofstream(dir / "rules" / "triage" / "failure-signatures.yaml")
      << std::ifstream(fs::path(DIAGNOSE_SOURCE_DIR) / "rules" / "triage" / "failure-signatures.yaml").rdbuf();
  book = LoadRulebook(dir.string(), {}, [&](const RulesBeforePlaybooks& rules) { handed_over = rules.signatures != nullptr; });
  ASSERT_FALSE(book.ok());
  EXPECT_NE(book.status().message().find("decisions.yaml"), std::string::npos) << book.status().message();
  EXPECT_TRUE(handed_over) << "triage's rules loaded but were not handed over before the decisions";
  fs::remove_all(dir);
}

TEST(RulebookTest, ASharedRulebookGivesTheReportsOfFreshOnes) {
  auto book = LoadRulebook(DIAGNOSE_SOURCE_DIR);
  ASSERT_TRUE(book.ok()) << book.status().ToString();
  for (const char* id : {"8308", "8043", "7938"}) {
    REQUIRE_FIXTURE(id);
    DiagnoseOptions options;
    options.job_ref = id;
    options.outputs_dir = DIAGNOSE_FIXTURE_OUTPUTS;
    options.logs_only = true;
    options.now = 1'900'000'000;
    auto fresh = RunDiagnosis(options);
    options.rulebook = *book;
    auto shared = RunDiagnosis(options);
    ASSERT_TRUE(fresh.ok() && shared.ok()) << id;
    nlohmann::json a = ToJson(*fresh), b = ToJson(*shared);
    a.erase("timings");
    b.erase("timings");
    EXPECT_EQ(a, b) << id;
  }
}

}  // namespace
}  // namespace diagnose

namespace diagnose {
namespace {

// A playbook of one's own runs on top of the shipped set, without copying rules/ and playbooks/:
// `diagnose JOB --playbooks DIR`. Its finding does not fire on this job, and says what it checked
// with its description's placeholders rendered, never as they were written.
TEST(RulebookTest, AnOverlayPlaybookRunsOnTopOfTheShippedSetAndItsDescriptionRenders) {
  REQUIRE_FIXTURE("8308");
  const testing::TempDir dir("rulebook-overlay");
  testing::WriteHotHostsPlaybook(dir.path());
  const nlohmann::json report = e2e::DiagnoseFixtureJson({"8308", "--playbooks", dir.path().string()});
  const nlohmann::json* mine = e2e::FindingById(report, "my-hot-hosts/hot");
  ASSERT_NE(mine, nullptr) << e2e::Dump(report["findings"]);
  EXPECT_EQ((*mine)["status"], "clear");
  EXPECT_EQ((*mine)["summary"], "GPUs 5 C above the peer median");
  // The shipped set still ran: 8308's answer is unchanged.
  EXPECT_EQ(report["decision"]["action"], "retry-excluding-nodes");
}

}  // namespace
}  // namespace diagnose
