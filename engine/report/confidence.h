// The contract's `verdict.confidence` vocabulary (docs/contract.md), ordered weakest first so that
// levels compare as they rank. Parsed where it enters (playbooks, the signature table), written
// back only where a report, explanation or record leaves.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

enum class Confidence { kInsufficientEvidence, kPossible, kLikely, kConfirmed };
inline constexpr Confidence kAllConfidences[] = {Confidence::kInsufficientEvidence, Confidence::kPossible,
                                                 Confidence::kLikely, Confidence::kConfirmed};

template <>
struct VocabularyOf<Confidence> {
  static constexpr Vocabulary<Confidence, 4> kWords{{{
      {Confidence::kInsufficientEvidence, "insufficient-evidence"},
      {Confidence::kPossible, "possible"},
      {Confidence::kLikely, "likely"},
      {Confidence::kConfirmed, "confirmed"},
  }}};
  static constexpr std::string_view kWhat = "confidence";
};

inline std::optional<Confidence> ParseConfidence(std::string_view word) { return ParseWord<Confidence>(word); }

}  // namespace diagnose
