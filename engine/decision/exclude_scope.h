// How long a sweep rule's exclusions hold (rules/sweep/decisions.yaml `exclude_scope`, the sweep
// history's `exclude_scope`): for the retry of this job only, or for the rest of the sweep. Parsed
// where rules and history lines are read, written back only into history lines.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace diagnose {

enum class ExcludeScope { kJob, kSweep };

std::string_view ToString(ExcludeScope scope);
std::optional<ExcludeScope> ParseExcludeScope(std::string_view word);

// JSON carries the word; an unknown word throws like any other malformed field.
void to_json(nlohmann::json& j, ExcludeScope scope);
void from_json(const nlohmann::json& j, ExcludeScope& scope);

}  // namespace diagnose
