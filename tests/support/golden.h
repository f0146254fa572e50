// The one switch for golden files: DIAGNOSE_UPDATE_GOLDEN=1 rewrites them, unset or "0" compares
// against them. Any other value is a mistake the test reports rather than guessing what was meant
// (before, "0" rewrote the files, so the tests could not fail with it set).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace diagnose::testing {

enum class GoldenMode { kCompare, kUpdate };

// nullopt (with *problem set) when the variable holds something other than "", "0" or "1".
inline std::optional<GoldenMode> GoldenModeFromEnvironment(std::string* problem) {
  const char* value = std::getenv("DIAGNOSE_UPDATE_GOLDEN");
  const std::string text = value == nullptr ? "" : value;
  if (text.empty() || text == "0") return GoldenMode::kCompare;
  if (text == "1") return GoldenMode::kUpdate;
  *problem = "DIAGNOSE_UPDATE_GOLDEN='" + text + "': set it to 1 to rewrite the golden files, or 0 (or unset) to compare";
  return std::nullopt;
}

}  // namespace diagnose::testing
