// `diagnose sweep` and `diagnose sweep compare` as text, markdown (the xla-tuning runbook's
// <MODEL_TAG>-tuning.md skeleton; batch-sweep's aggregate tables) and JSON (docs/sweep.md).
#pragma once

#include <string>

#include "engine/core/json.h"
#include "engine/sweep/sweep_compare.h"
#include "engine/sweep/tuning_sweep.h"

namespace diagnose::sweep {

// Leaderboard rows shown in markdown: the top ones and the bottom ones (xla-tuning Step 8).
inline constexpr size_t kLeaderboardTop = 8;
inline constexpr size_t kLeaderboardBottom = 5;

std::string FormatSweepText(const SweepResult& result);
std::string FormatSweepMarkdown(const SweepResult& result);
nlohmann::json SweepJson(const SweepResult& result);

std::string FormatComparisonText(const SweepComparison& comparison);
std::string FormatComparisonMarkdown(const SweepComparison& comparison);
nlohmann::json ComparisonJson(const SweepComparison& comparison);

}  // namespace diagnose::sweep
