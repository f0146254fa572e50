#include "engine/report/decision_action.h"

#include <array>
#include <ostream>
#include <string>
#include <utility>

namespace diagnose {

namespace {

constexpr std::array<std::pair<DecisionAction, std::string_view>, 6> kWords{{
    {DecisionAction::kNone, "none"},
    {DecisionAction::kRetrySameNodes, "retry-same-nodes"},
    {DecisionAction::kRetryExcludingNodes, "retry-excluding-nodes"},
    {DecisionAction::kRetryWithChanges, "retry-with-changes"},
    {DecisionAction::kNoRetry, "no-retry"},
    {DecisionAction::kStopSweep, "stop-sweep"},
}};

}  // namespace

std::string_view ToString(DecisionAction action) {
  for (const auto& [a, word] : kWords)
    if (a == action) return word;
  return "none";
}

std::optional<DecisionAction> ParseDecisionAction(std::string_view word) {
  for (const auto& [a, w] : kWords)
    if (w == word) return a;
  return std::nullopt;
}

bool IsRetry(DecisionAction action) {
  return action == DecisionAction::kRetrySameNodes || action == DecisionAction::kRetryExcludingNodes ||
         action == DecisionAction::kRetryWithChanges;
}

std::ostream& operator<<(std::ostream& out, DecisionAction action) { return out << ToString(action); }

void to_json(nlohmann::json& j, DecisionAction action) { j = std::string(ToString(action)); }

void from_json(const nlohmann::json& j, DecisionAction& action) {
  const std::string word = j.get<std::string>();
  const std::optional<DecisionAction> parsed = ParseDecisionAction(word);
  if (!parsed) throw nlohmann::json::other_error::create(501, "unknown decision action '" + word + "'", &j);
  action = *parsed;
}

}  // namespace diagnose
