#include "engine/core/logging.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/ansicolor_sink.h>

namespace diagnose {

namespace {

// log_msg carries system_clock time; debug lines count from the moment logging was configured
// (argument parsing, i.e. about when the run started).
const std::chrono::system_clock::time_point& RunStart() {
  static const std::chrono::system_clock::time_point start = std::chrono::system_clock::now();
  return start;
}

// Stage lines read as plain sentences ("diagnose: triage 8308 ..."); other levels say what they
// are, and debug/trace lines carry the time since start, which is what one reads them for.
class LevelTag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    if (msg.level == spdlog::level::info) return;
    const spdlog::string_view_t name = spdlog::level::to_string_view(msg.level);
    std::string tag = msg.level == spdlog::level::warn ? "warning" : std::string(name.data(), name.size());
    if (msg.level <= spdlog::level::debug) {
      char elapsed[32];
      std::snprintf(elapsed, sizeof elapsed, " +%.3fs", std::chrono::duration<double>(msg.time - RunStart()).count());
      tag += elapsed;
    }
    tag += ": ";
    dest.append(tag.data(), tag.data() + tag.size());
  }
  std::unique_ptr<spdlog::custom_flag_formatter> clone() const override { return std::make_unique<LevelTag>(); }
};

struct LoggerState {
  std::shared_ptr<spdlog::sinks::ansicolor_stderr_sink_mt> sink;
  std::shared_ptr<spdlog::logger> logger;
};

LoggerState& State() {
  // Never destroyed: worker threads and cleanup handlers may log while the process exits.
  static LoggerState* state = [] {
    auto* s = new LoggerState;
    s->sink = std::make_shared<spdlog::sinks::ansicolor_stderr_sink_mt>(spdlog::color_mode::never);
    s->logger = std::make_shared<spdlog::logger>("diagnose", s->sink);
    s->logger->set_level(spdlog::level::off);
    return s;
  }();
  return *state;
}

constexpr std::array<std::pair<const char*, spdlog::level::level_enum>, 6> kLevels{{
    {"trace", spdlog::level::trace},
    {"debug", spdlog::level::debug},
    {"info", spdlog::level::info},
    {"warn", spdlog::level::warn},
    {"error", spdlog::level::err},
    {"off", spdlog::level::off},
}};

}  // namespace

StatusOr<spdlog::level::level_enum> ResolveLogLevel(const LogSettings& settings) {
  if (!settings.level.empty()) {
    for (const auto& [name, level] : kLevels)
      if (settings.level == name) return level;
    return InvalidArgumentError("--log-level '" + settings.level + "' is not one of trace, debug, info, warn, error, off");
  }
  if (settings.verbose >= 3) return spdlog::level::trace;
  if (settings.verbose == 2) return spdlog::level::debug;
  if (settings.verbose == 1 || settings.stderr_is_terminal) return spdlog::level::info;
  return spdlog::level::off;
}

LogSettings LogSettingsForStderr(std::string level, int verbose, ColorMode color) {
  LogSettings settings;
  settings.level = std::move(level);
  settings.verbose = verbose;
  settings.stderr_is_terminal = ::isatty(STDERR_FILENO) == 1;
  settings.color = WantsColor(color, STDERR_FILENO);
  return settings;
}

Status ConfigureLogging(const LogSettings& settings) {
  ASSIGN_OR_RETURN(spdlog::level::level_enum level, ResolveLogLevel(settings));
  RunStart();
  LoggerState& state = State();
  state.sink->set_color_mode(settings.color ? spdlog::color_mode::always : spdlog::color_mode::never);
  state.sink->set_color(spdlog::level::info, state.sink->dark);
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<LevelTag>('*').set_pattern("%^diagnose: %*%v%$");
  state.logger->set_formatter(std::move(formatter));
  state.logger->set_level(level);
  return Status::Ok();
}

spdlog::logger& Log() { return *State().logger; }

}  // namespace diagnose
