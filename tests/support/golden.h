// The one switch for golden files: DIAGNOSE_UPDATE_GOLDEN=1 rewrites them, unset or "0" compares
// against them. Any other value is a mistake the test reports rather than guessing what was meant
// (before, "0" rewrote the files, so the tests could not fail with it set).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/files.h"

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

enum class GoldenOutcome { kCompared, kUpdated };

// The golden file at `path` against `actual` (a mismatch, a missing file or a bad switch is a test
// failure naming `what`), or rewritten with `actual` under DIAGNOSE_UPDATE_GOLDEN=1: the outcome says
// which, so a caller may skip what only makes sense after a comparison.
inline GoldenOutcome CheckGoldenFile(const std::filesystem::path& path, const std::string& actual,
                                     const std::string& what) {
  std::string problem;
  const std::optional<GoldenMode> mode = GoldenModeFromEnvironment(&problem);
  if (!mode) {
    ADD_FAILURE() << problem;
    return GoldenOutcome::kCompared;
  }
  if (*mode == GoldenMode::kUpdate) {
    std::ofstream(path, std::ios::binary) << actual;
    return GoldenOutcome::kUpdated;
  }
  if (!std::filesystem::exists(path)) {
    ADD_FAILURE() << "missing golden file " << path << " for " << what << " (run with DIAGNOSE_UPDATE_GOLDEN=1)";
    return GoldenOutcome::kCompared;
  }
  EXPECT_EQ(actual, ReadFileOrEmpty(path))
      << what << " differs from " << path << "; if intended, regenerate with DIAGNOSE_UPDATE_GOLDEN=1 and review the diff";
  return GoldenOutcome::kCompared;
}

}  // namespace diagnose::testing
