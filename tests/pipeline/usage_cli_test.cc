// Usage errors exit 2 with one message that says what was probably meant.
#include <string>

#include <gtest/gtest.h>

#include "tests/pipeline/diagnose_cli_support.h"

namespace diagnose::e2e {
namespace {

TEST(UsageCli, AMistypedSubcommandIsSuggestedNotSearchedForAsAJob) {
  CliRun run = RunDiagnoseCli({"lnit"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("'lnit' is not a subcommand; did you mean `diagnose lint`?"), std::string::npos) << run.err;
  EXPECT_EQ(run.out, "");
}

TEST(UsageCli, AMistypedOptionIsSuggested) {
  CliRun run = RunDiagnoseCli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--formt", "json"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("unknown option --formt; did you mean --format?"), std::string::npos) << run.err;
  CliRun sub = RunDiagnoseCli({"nodes", "8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--expected-tsg", "1000"});
  EXPECT_EQ(sub.exit_code, 2) << sub.err;
  EXPECT_NE(sub.err.find("did you mean --expected-tgs?"), std::string::npos) << sub.err;
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
