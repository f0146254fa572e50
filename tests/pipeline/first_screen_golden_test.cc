// Golden first screens: `diagnose JOB --format text|md` on every published incident must print
// exactly the checked-in screen (tests/pipeline/golden/). A change to wording, ordering or the line
// budget shows up as a diff a reviewer reads. Regenerate deliberately with
// DIAGNOSE_UPDATE_GOLDEN=1 (tests/support/golden.h) build/tests/pipeline_tests --gtest_filter='*FirstScreenGolden*'.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/fixture_reports.h"
#include "tests/support/golden.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

struct Incident {
  std::string name;
  std::vector<std::string> args;
};

const std::vector<Incident>& Incidents() {
  static const std::vector<Incident> kIncidents = {
      {"8308", {"8308"}},
      {"8309", {"8309"}},
      {"8043", {"8043"}},
      {"7882-vs-7879", {"7882", "--baseline", "7879"}},
      {"7938", {"7938"}},
      // Case study 0: TGS, MFU, the step-time decomposition and the kernel table. A RAY=0 job has no
      // TSDB, and the note saying so names the checkout's path: --logs-only keeps the screen portable.
      {"8104", {"8104", "--logs-only"}},
  };
  return kIncidents;
}

class FirstScreenGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(FirstScreenGolden, MatchesTheCheckedInScreenAndFitsFortyLines) {
  const std::string format = GetParam();
  const fs::path dir = fs::path(DIAGNOSE_SOURCE_DIR) / "tests" / "pipeline" / "golden";
  for (const auto& incident : Incidents()) {
    REQUIRE_FIXTURE(incident.args.front());
    std::vector<std::string> args = incident.args;
    for (const char* a : {"--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format"}) args.emplace_back(a);
    args.push_back(format);
    auto run = e2e::RunDiagnoseCli(args);
    ASSERT_EQ(run.exit_code, 0) << incident.name << ": " << run.err;
    const fs::path golden = dir / (incident.name + (format == "md" ? ".md" : ".txt"));
    if (format == "text") {
      EXPECT_LE(std::count(run.out.begin(), run.out.end(), '\n'), 40) << incident.name << "\n" << run.out;
      EXPECT_NE(run.out.find("WHAT TO DO"), std::string::npos) << run.out;
    }
    testing::CheckGoldenFile(golden, run.out, incident.name + " (" + format + ")");
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, FirstScreenGolden, ::testing::Values("text", "md"));

// The first screen names the action, each exclusion and its evidence.
TEST(FirstScreen, RdmaIncidentNamesActionExclusionsAndEvidence) {
  REQUIRE_FIXTURE("8308");
  auto json = e2e::DiagnoseFixtureJson({"8308"});
  auto run = e2e::RunDiagnoseCli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "text"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("WHAT TO DO  " + json["decision"]["action"].get<std::string>()), std::string::npos) << run.out;
  for (const auto& x : json["decision"]["exclude"])
    EXPECT_NE(run.out.find("exclude " + x["host"].get<std::string>() + " (priority"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("evidence: promql "), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("\x1b["), std::string::npos);   // not a terminal: no colour
  // --verbose is today's full listing after the first screen.
  auto verbose = e2e::RunDiagnoseCli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "text", "--verbose"});
  EXPECT_EQ(verbose.out.rfind(run.out.substr(0, run.out.find("Every check")), 0), 0u);
  EXPECT_GT(std::count(verbose.out.begin(), verbose.out.end(), '\n'), 200);
  auto forced = e2e::RunDiagnoseCli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "text", "--color", "always"});
  EXPECT_NE(forced.out.find("\x1b[1m"), std::string::npos);
}

}  // namespace
}  // namespace diagnose
