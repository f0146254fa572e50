// The contract's `decision.action` vocabulary (docs/contract.md "Actions"). Words are parsed where
// they enter (rules, playbooks, sweep history) and written back only where a report or line leaves,
// so a misspelt action is a load error instead of a comparison that silently never matches.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

enum class DecisionAction { kNone, kRetrySameNodes, kRetryExcludingNodes, kRetryWithChanges, kNoRetry, kStopSweep };

// Retries of the same config (any node set or changes): what max_retries_per_job counts.
bool IsRetry(DecisionAction action);

template <>
struct VocabularyOf<DecisionAction> {
  static constexpr Vocabulary<DecisionAction, 6> kWords{{{
      {DecisionAction::kNone, "none"},
      {DecisionAction::kRetrySameNodes, "retry-same-nodes"},
      {DecisionAction::kRetryExcludingNodes, "retry-excluding-nodes"},
      {DecisionAction::kRetryWithChanges, "retry-with-changes"},
      {DecisionAction::kNoRetry, "no-retry"},
      {DecisionAction::kStopSweep, "stop-sweep"},
  }}};
  static constexpr std::string_view kWhat = "decision action";
};

inline std::optional<DecisionAction> ParseDecisionAction(std::string_view word) { return ParseWord<DecisionAction>(word); }

}  // namespace diagnose
