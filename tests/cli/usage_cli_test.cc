// Usage errors exit 2 with one message that says what was probably meant.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/cli.h"
#include "tests/support/files.h"
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

// Seconds that are no number of seconds (NaN, an infinity, a negative; a zero timeout) are usage
// errors, never read as "no deadline" nor overflowed into one already passed.
TEST(UsageCli, NonsenseSecondsAreAUsageError) {
  const std::string outputs = DIAGNOSE_FIXTURE_OUTPUTS;
  for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{
           {"--deadline", "inf"}, {"--deadline", "nan"}, {"--deadline", "-1"}, {"--deadline", "soon"},
           {"--query-timeout", "0"}, {"--query-timeout", "nan"}, {"--query-timeout", "-inf"}}) {
    SCOPED_TRACE(option + " " + value);
    CliRun run = RunDiagnoseCli({"8308", "--outputs", outputs, "--logs-only", option, value});
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find(option), std::string::npos) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_EQ(run.out, "");
  }
  for (const auto& args : std::vector<std::vector<std::string>>{{"summary", outputs, "--deadline", "nan"},
                                                                {"fleet", "nodes", "--prometheus", "http://127.0.0.1:9",
                                                                 "--query-timeout", "0"}}) {
    CliRun run = RunDiagnoseCli(args);
    EXPECT_EQ(run.exit_code, 2) << args[0] << ": " << run.err;
  }
}

// A deadline far beyond any run is no deadline: the diagnosis completes (8308's own report), not
// "incomplete" at once from a clock that overflowed into the past.
TEST(UsageCli, AHugeDeadlineSaturatesIntoNone) {
  for (const char* deadline : {"1e300", "9223372036"}) {
    SCOPED_TRACE(deadline);
    CliRun run = RunDiagnoseCli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json", "--deadline", deadline});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.out.find("\"incomplete\""), std::string::npos) << run.out.substr(0, 300);
  }
}

// `sweep --jobs` naming no job is said, never an empty sweep: digits that are no id (past 18
// digits) are a usage error like a backwards range, an id no job in OUTPUTS has is not found.
TEST(UsageCli, SweepJobsThatNameNoJobAreSaid) {
  const std::string outputs = DIAGNOSE_FIXTURE_OUTPUTS;
  for (const char* jobs : {"9-1", "1-99999999999999999999", "99999999999999999999"}) {
    CliRun run = RunDiagnoseCli({"sweep", outputs, "--jobs", jobs});
    EXPECT_EQ(run.exit_code, 2) << jobs << ": " << run.err;
    EXPECT_NE(run.err.find(jobs), std::string::npos) << run.err;
  }
  CliRun none = RunDiagnoseCli({"sweep", outputs, "--jobs", "abc,1-2"});
  EXPECT_EQ(none.exit_code, 1) << none.err;
  EXPECT_NE(none.err.find("no job in"), std::string::npos) << none.err;
  EXPECT_EQ(none.out, "");
  CliRun some = RunDiagnoseCli({"sweep", outputs, "--jobs", "abc,8308", "--format", "json"});
  EXPECT_EQ(some.exit_code, 0) << some.err;
}

// A FIFO with no writer given as a file to read blocked these forever (the job log, --history and
// traces were already refused by type): each is refused at once, naming the path.
TEST(UsageCli, AFifoGivenAsAFileToReadIsRefusedNotWaitedOn) {
  testing::TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--prometheus", "https://127.0.0.1:1", "--cacert", fifo},
           {"explain", "host-oom", "--facts", fifo},
           {"sweep", "compare", fifo, fifo}}) {
    SCOPED_TRACE(args[0]);
    CliRun run = RunDiagnoseCli(args, std::chrono::seconds(30));
    EXPECT_FALSE(run.timed_out) << run.err;
    EXPECT_NE(run.exit_code, 0) << run.err;
    EXPECT_NE(run.err.find(fifo + " is a FIFO"), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace diagnose::e2e
