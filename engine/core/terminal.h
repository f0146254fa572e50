// Whether a stream gets ANSI colour: one answer for the report on stdout and the progress lines on
// stderr, so `--color never` and NO_COLOR silence both.
#pragma once

#include <optional>
#include <string_view>

namespace diagnose {

enum class ColorMode { kAuto, kAlways, kNever };

// "auto" | "always" | "never"; nullopt otherwise.
std::optional<ColorMode> ParseColorMode(std::string_view text);

// kAuto: `fd` is a terminal, NO_COLOR is unset or empty (no-color.org) and TERM is not "dumb".
// An explicit kAlways wins over NO_COLOR: the user asked for it on this command line.
bool WantsColor(ColorMode mode, int fd);

}  // namespace diagnose
