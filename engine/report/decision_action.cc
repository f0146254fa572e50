#include "engine/report/decision_action.h"

namespace diagnose {

bool IsRetry(DecisionAction action) {
  return action == DecisionAction::kRetrySameNodes || action == DecisionAction::kRetryExcludingNodes ||
         action == DecisionAction::kRetryWithChanges;
}

}  // namespace diagnose
