// The contract's `findings[].status` vocabulary (docs/contract.md, plus the `suppressed`
// extension). The DAG and triage set it; the word is written only where a report leaves.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

#define DIAGNOSE_FINDING_STATUS_WORDS(WORD) \
  WORD(kFired, "fired")                     \
  WORD(kClear, "clear")                     \
  WORD(kSkipped, "skipped")                 \
  WORD(kError, "error")                     \
  WORD(kSuppressed, "suppressed")
DIAGNOSE_VOCABULARY(FindingStatus, "finding status", DIAGNOSE_FINDING_STATUS_WORDS);

inline std::optional<FindingStatus> ParseFindingStatus(std::string_view word) { return ParseWord<FindingStatus>(word); }

}  // namespace diagnose
