// The contract's job `status` vocabulary (docs/contract.md "status"). Triage decides it; rules,
// playbook triggers and sweep history name it in words parsed where they enter, and the word is
// written back only where a report, line or record leaves, so a misspelt status is a load error
// instead of a comparison that silently never matches.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

enum class JobStatus { kCompleted, kFailed, kCancelled, kRunning, kHanging, kUnknownDeath };

template <>
struct VocabularyOf<JobStatus> {
  static constexpr Vocabulary<JobStatus, 6> kWords{{{
      {JobStatus::kUnknownDeath, "unknown-death"},
      {JobStatus::kCompleted, "completed"},
      {JobStatus::kFailed, "failed"},
      {JobStatus::kCancelled, "cancelled"},
      {JobStatus::kRunning, "running"},
      {JobStatus::kHanging, "hanging"},
  }}};
  static constexpr std::string_view kWhat = "job status";
};

inline std::optional<JobStatus> ParseJobStatus(std::string_view word) { return ParseWord<JobStatus>(word); }

}  // namespace diagnose
