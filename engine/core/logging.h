// Progress and diagnostics for the person waiting on a run: one spdlog logger that writes to stderr
// only. Reports go to stdout and must be byte-identical whatever the log level, so nothing here
// may ever write there (spdlog's own default logger writes to stdout, which is why the engine never
// uses it). The logger is silent until ConfigureLogging: the engine used as a library (tests,
// fixturegen, benchmarks) prints nothing.
#pragma once

#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "engine/core/status.h"
#include "engine/core/terminal.h"

namespace diagnose {

struct LogSettings {
  std::string level;                // --log-level: trace|debug|info|warn|error|off ("" = derived)
  int verbose = 0;                  // -v count: 1 = info (stage lines), 2 = debug, 3+ = trace
  bool stderr_is_terminal = false;
  bool color = false;               // ANSI colour on stderr
};

// --log-level wins; else -v; else stage lines when stderr is a terminal and silence when it is not
// (a sweep driver's or an epilog's stderr must carry only the one-line errors the contract allows).
StatusOr<spdlog::level::level_enum> ResolveLogLevel(const LogSettings& settings);

// The settings for this process's stderr: terminal or not, and colour as `color` and the
// environment decide (WantsColor: NO_COLOR, TERM=dumb).
LogSettings LogSettingsForStderr(std::string level, int verbose, ColorMode color = ColorMode::kAuto);

Status ConfigureLogging(const LogSettings& settings);

spdlog::logger& Log();

// One line per pipeline stage ("triage 8308 (1 log, 5 worker logs)"), shown on a terminal and with -v.
template <typename... Args>
void Stage(fmt::format_string<Args...> format, Args&&... args) {
  Log().info(format, std::forward<Args>(args)...);
}

}  // namespace diagnose
