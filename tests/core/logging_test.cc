// Which log level a run gets from its flags and its stderr: silence is the default off a terminal.
#include <gtest/gtest.h>

#include "engine/core/logging.h"

namespace diagnose {
namespace {

spdlog::level::level_enum Level(const std::string& level, int verbose, bool terminal) {
  LogSettings settings;
  settings.level = level;
  settings.verbose = verbose;
  settings.stderr_is_terminal = terminal;
  StatusOr<spdlog::level::level_enum> resolved = ResolveLogLevel(settings);
  EXPECT_TRUE(resolved.ok()) << resolved.status().ToString();
  return resolved.ok() ? *resolved : spdlog::level::n_levels;
}

TEST(LoggingTest, StagesOnATerminalSilenceElsewhere) {
  EXPECT_EQ(Level("", 0, true), spdlog::level::info);
  EXPECT_EQ(Level("", 0, false), spdlog::level::off);
}

TEST(LoggingTest, VerboseCountsUpFromStageLines) {
  EXPECT_EQ(Level("", 1, false), spdlog::level::info);
  EXPECT_EQ(Level("", 2, false), spdlog::level::debug);
  EXPECT_EQ(Level("", 3, true), spdlog::level::trace);
  EXPECT_EQ(Level("", 5, false), spdlog::level::trace);
}

TEST(LoggingTest, LogLevelWinsOverVerboseAndTerminal) {
  EXPECT_EQ(Level("off", 2, true), spdlog::level::off);
  EXPECT_EQ(Level("warn", 1, true), spdlog::level::warn);
  EXPECT_EQ(Level("error", 0, false), spdlog::level::err);
  EXPECT_EQ(Level("debug", 0, false), spdlog::level::debug);
  EXPECT_EQ(Level("trace", 0, false), spdlog::level::trace);
}

TEST(LoggingTest, UnknownLevelIsAnError) {
  LogSettings settings;
  settings.level = "verbose";
  StatusOr<spdlog::level::level_enum> resolved = ResolveLogLevel(settings);
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.status().message().find("--log-level 'verbose'"), std::string::npos);
}

// The engine as a library (tests, fixturegen) must print nothing before a CLI configured it.
TEST(LoggingTest, SilentUntilConfigured) { EXPECT_EQ(Log().level(), spdlog::level::off); }

}  // namespace
}  // namespace diagnose
