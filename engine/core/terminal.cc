#include "engine/core/terminal.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace diagnose {

std::optional<ColorMode> ParseColorMode(std::string_view text) {
  if (text == "auto") return ColorMode::kAuto;
  if (text == "always") return ColorMode::kAlways;
  if (text == "never") return ColorMode::kNever;
  return std::nullopt;
}

bool WantsColor(ColorMode mode, int fd) {
  if (mode != ColorMode::kAuto) return mode == ColorMode::kAlways;
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return ::isatty(fd) == 1 && (no_color == nullptr || *no_color == '\0') &&
         !(term != nullptr && std::strcmp(term, "dumb") == 0);
}

}  // namespace diagnose
