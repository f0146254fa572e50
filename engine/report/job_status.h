// The contract's job `status` vocabulary (docs/contract.md "status"). Triage decides it; rules,
// playbook triggers and sweep history name it in words parsed where they enter, and the word is
// written back only where a report, line or record leaves, so a misspelt status is a load error
// instead of a comparison that silently never matches.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

#define DIAGNOSE_JOB_STATUS_WORDS(WORD) \
  WORD(kCompleted, "completed")         \
  WORD(kFailed, "failed")               \
  WORD(kCancelled, "cancelled")         \
  WORD(kRunning, "running")             \
  WORD(kHanging, "hanging")             \
  WORD(kUnknownDeath, "unknown-death")
DIAGNOSE_VOCABULARY(JobStatus, "job status", DIAGNOSE_JOB_STATUS_WORDS);

inline std::optional<JobStatus> ParseJobStatus(std::string_view word) { return ParseWord<JobStatus>(word); }

}  // namespace diagnose
