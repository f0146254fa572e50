// The contract's `decision.action` vocabulary (docs/contract.md "Actions"). Words are parsed where
// they enter (rules, playbooks, sweep history) and written back only where a report or line leaves,
// so a misspelt action is a load error instead of a comparison that silently never matches.
#pragma once

#include <iosfwd>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace diagnose {

enum class DecisionAction { kNone, kRetrySameNodes, kRetryExcludingNodes, kRetryWithChanges, kNoRetry, kStopSweep };

std::string_view ToString(DecisionAction action);
std::optional<DecisionAction> ParseDecisionAction(std::string_view word);

// Retries of the same config (any node set or changes): what max_retries_per_job counts.
bool IsRetry(DecisionAction action);

// For test failure messages and logs: the contract word.
std::ostream& operator<<(std::ostream& out, DecisionAction action);

// JSON carries the contract word; an unknown word throws like any other malformed field.
void to_json(nlohmann::json& j, DecisionAction action);
void from_json(const nlohmann::json& j, DecisionAction& action);

}  // namespace diagnose
