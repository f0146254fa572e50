// The contract's `findings[].status` vocabulary (docs/contract.md, plus the `suppressed`
// extension). The DAG and triage set it; the word is written only where a report leaves.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

enum class FindingStatus { kFired, kClear, kSkipped, kError, kSuppressed };

template <>
struct VocabularyOf<FindingStatus> {
  static constexpr Vocabulary<FindingStatus, 5> kWords{{{
      {FindingStatus::kClear, "clear"},
      {FindingStatus::kFired, "fired"},
      {FindingStatus::kSkipped, "skipped"},
      {FindingStatus::kError, "error"},
      {FindingStatus::kSuppressed, "suppressed"},
  }}};
  static constexpr std::string_view kWhat = "finding status";
};

inline std::optional<FindingStatus> ParseFindingStatus(std::string_view word) { return ParseWord<FindingStatus>(word); }

}  // namespace diagnose
