#include "engine/report/finding_status.h"

#include <ostream>
#include <string>

#include "engine/core/vocabulary.h"

namespace diagnose {

namespace {

constexpr Vocabulary<FindingStatus, 5> kFindingStatusWords{{{
    {FindingStatus::kClear, "clear"},
    {FindingStatus::kFired, "fired"},
    {FindingStatus::kSkipped, "skipped"},
    {FindingStatus::kError, "error"},
    {FindingStatus::kSuppressed, "suppressed"},
}}};

}  // namespace

std::string_view ToString(FindingStatus status) { return kFindingStatusWords.Word(status); }

std::optional<FindingStatus> ParseFindingStatus(std::string_view word) { return kFindingStatusWords.Parse(word); }

std::ostream& operator<<(std::ostream& out, FindingStatus status) { return out << ToString(status); }

void to_json(nlohmann::json& j, FindingStatus status) { j = std::string(ToString(status)); }

void from_json(const nlohmann::json& j, FindingStatus& status) { status = kFindingStatusWords.FromJson(j, "finding status"); }

}  // namespace diagnose
