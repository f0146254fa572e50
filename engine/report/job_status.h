// The contract's job `status` vocabulary (docs/contract.md "status"). Triage decides it; rules,
// playbook triggers and sweep history name it in words parsed where they enter, and the word is
// written back only where a report, line or record leaves, so a misspelt status is a load error
// instead of a comparison that silently never matches.
#pragma once

#include <iosfwd>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace diagnose {

enum class JobStatus { kCompleted, kFailed, kCancelled, kRunning, kHanging, kUnknownDeath };

std::string_view ToString(JobStatus status);
std::optional<JobStatus> ParseJobStatus(std::string_view word);

// For test failure messages and logs: the contract word.
std::ostream& operator<<(std::ostream& out, JobStatus status);

// JSON carries the contract word; an unknown word throws like any other malformed field.
void to_json(nlohmann::json& j, JobStatus status);
void from_json(const nlohmann::json& j, JobStatus& status);

}  // namespace diagnose
