#include "engine/report/job_status.h"

#include <ostream>
#include <string>

#include "engine/core/vocabulary.h"

namespace diagnose {

namespace {

constexpr Vocabulary<JobStatus, 6> kJobStatusWords{{{
    {JobStatus::kUnknownDeath, "unknown-death"},
    {JobStatus::kCompleted, "completed"},
    {JobStatus::kFailed, "failed"},
    {JobStatus::kCancelled, "cancelled"},
    {JobStatus::kRunning, "running"},
    {JobStatus::kHanging, "hanging"},
}}};

}  // namespace

std::string_view ToString(JobStatus status) { return kJobStatusWords.Word(status); }

std::optional<JobStatus> ParseJobStatus(std::string_view word) { return kJobStatusWords.Parse(word); }

std::ostream& operator<<(std::ostream& out, JobStatus status) { return out << ToString(status); }

void to_json(nlohmann::json& j, JobStatus status) { j = std::string(ToString(status)); }

void from_json(const nlohmann::json& j, JobStatus& status) { status = kJobStatusWords.FromJson(j, "job status"); }

}  // namespace diagnose
