#include "engine/report/decision_action.h"

#include <ostream>
#include <string>

#include "engine/core/vocabulary.h"

namespace diagnose {

namespace {

constexpr Vocabulary<DecisionAction, 6> kActionWords{{{
    {DecisionAction::kNone, "none"},
    {DecisionAction::kRetrySameNodes, "retry-same-nodes"},
    {DecisionAction::kRetryExcludingNodes, "retry-excluding-nodes"},
    {DecisionAction::kRetryWithChanges, "retry-with-changes"},
    {DecisionAction::kNoRetry, "no-retry"},
    {DecisionAction::kStopSweep, "stop-sweep"},
}}};

}  // namespace

std::string_view ToString(DecisionAction action) { return kActionWords.Word(action); }

std::optional<DecisionAction> ParseDecisionAction(std::string_view word) { return kActionWords.Parse(word); }

bool IsRetry(DecisionAction action) {
  return action == DecisionAction::kRetrySameNodes || action == DecisionAction::kRetryExcludingNodes ||
         action == DecisionAction::kRetryWithChanges;
}

std::ostream& operator<<(std::ostream& out, DecisionAction action) { return out << ToString(action); }

void to_json(nlohmann::json& j, DecisionAction action) { j = std::string(ToString(action)); }

void from_json(const nlohmann::json& j, DecisionAction& action) { action = kActionWords.FromJson(j, "decision action"); }

}  // namespace diagnose
