// The contract's `findings[].status` vocabulary (docs/contract.md, plus the `suppressed`
// extension). The DAG and triage set it; the word is written only where a report leaves.
#pragma once

#include <iosfwd>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace diagnose {

enum class FindingStatus { kFired, kClear, kSkipped, kError, kSuppressed };

std::string_view ToString(FindingStatus status);
std::optional<FindingStatus> ParseFindingStatus(std::string_view word);

// For test failure messages and logs: the contract word.
std::ostream& operator<<(std::ostream& out, FindingStatus status);

// JSON carries the contract word; an unknown word throws like any other malformed field.
void to_json(nlohmann::json& j, FindingStatus status);
void from_json(const nlohmann::json& j, FindingStatus& status);

}  // namespace diagnose
