// The contract's `verdict.confidence` vocabulary (docs/contract.md), ordered weakest first so that
// levels compare as they rank. Parsed where it enters (playbooks, the signature table), written
// back only where a report, explanation or record leaves.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

#define DIAGNOSE_CONFIDENCE_WORDS(WORD)                \
  WORD(kInsufficientEvidence, "insufficient-evidence") \
  WORD(kPossible, "possible")                          \
  WORD(kLikely, "likely")                              \
  WORD(kConfirmed, "confirmed")
DIAGNOSE_VOCABULARY(Confidence, "confidence", DIAGNOSE_CONFIDENCE_WORDS);
inline constexpr auto kAllConfidences = ValuesOf<Confidence>();

inline std::optional<Confidence> ParseConfidence(std::string_view word) { return ParseWord<Confidence>(word); }

}  // namespace diagnose
