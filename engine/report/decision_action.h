// The contract's `decision.action` vocabulary (docs/contract.md "Actions"). Words are parsed where
// they enter (rules, playbooks, sweep history) and written back only where a report or line leaves,
// so a misspelt action is a load error instead of a comparison that silently never matches.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

#define DIAGNOSE_DECISION_ACTION_WORDS(WORD)          \
  WORD(kNone, "none")                                 \
  WORD(kRetrySameNodes, "retry-same-nodes")           \
  WORD(kRetryExcludingNodes, "retry-excluding-nodes") \
  WORD(kRetryWithChanges, "retry-with-changes")       \
  WORD(kNoRetry, "no-retry")                          \
  WORD(kStopSweep, "stop-sweep")
DIAGNOSE_VOCABULARY(DecisionAction, "decision action", DIAGNOSE_DECISION_ACTION_WORDS);

// Retries of the same config (any node set or changes): what max_retries_per_job counts.
bool IsRetry(DecisionAction action);

inline std::optional<DecisionAction> ParseDecisionAction(std::string_view word) { return ParseWord<DecisionAction>(word); }

}  // namespace diagnose
