// Usage errors exit 2 with one message that says what was probably meant.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/fixture_reports.h"

namespace diagnose::e2e {
namespace {

TEST(UsageCli, AMistypedSubcommandIsSuggestedNotSearchedForAsAJob) {
  CliRun run = RunDiagnoseCli({"lnit"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("'lnit' is not a subcommand; did you mean `diagnose lint`?"), std::string::npos) << run.err;
  EXPECT_EQ(run.out, "");
}

// Every subcommand, at every level, followed by its arguments or not: the typo is what is named,
// not CLI11's complaint about the words after it.
TEST(UsageCli, EveryMistypedSubcommandIsSuggested) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"sumary", DIAGNOSE_FIXTURE_OUTPUTS}, "diagnose summary"},
      {{"wacth", DIAGNOSE_FIXTURE_OUTPUTS, "--once"}, "diagnose watch"},
      {{"rules", "exprot"}, "diagnose rules export"},
      {{"fleet", "nodez"}, "diagnose fleet nodes"},
      {{"fleet", "nodez", "--prometheus", "http://127.0.0.1:9"}, "diagnose fleet nodes"},
  };
  for (const auto& [args, meant] : cases) {
    SCOPED_TRACE(args[0] + " " + args[1]);
    CliRun run = RunDiagnoseCli(args);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find("is not a subcommand; did you mean `" + meant + "`?"), std::string::npos) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_EQ(run.out, "");
  }
}

TEST(UsageCli, AMistypedOptionIsSuggested) {
  CliRun run = RunDiagnoseCli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--formt", "json"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("unknown option --formt; did you mean --format?"), std::string::npos) << run.err;
  CliRun sub = RunDiagnoseCli({"nodes", "8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--expected-tsg", "1000"});
  EXPECT_EQ(sub.exit_code, 2) << sub.err;
  EXPECT_NE(sub.err.find("did you mean --expected-tgs?"), std::string::npos) << sub.err;
}

TEST(UsageCli, EveryParseErrorIsOneLineAndExitTwo) {
  // A value outside a choice list, a missing required argument: CLI11 would print two lines.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "xml"}, {"nodes"}, {"8308", "--color", "rainbow"}}) {
    CliRun run = RunDiagnoseCli(args);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_EQ(run.err.rfind("diagnose: ", 0), 0u) << run.err;
    EXPECT_EQ(run.out, "");
  }
}

TEST(UsageCli, JobIdsAndFarWordsAreNotTakenForTypos) {
  // A job id, and a word no subcommand is close to, stay jobs: the answer is about the job.
  CliRun id = RunDiagnoseCli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json", "--logs-only"});
  EXPECT_EQ(id.exit_code, 0) << id.err;
  CliRun word = RunDiagnoseCli({"nightly", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"});
  EXPECT_NE(word.exit_code, 2) << word.err;
  EXPECT_EQ(word.err.find("did you mean"), std::string::npos) << word.err;
}

}  // namespace
}  // namespace diagnose::e2e
