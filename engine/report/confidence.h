// The contract's `verdict.confidence` vocabulary (docs/contract.md), ordered weakest first so that
// levels compare as they rank. Parsed where it enters (playbooks, the signature table), written
// back only where a report, explanation or record leaves.
#pragma once

#include <iosfwd>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace diagnose {

enum class Confidence { kInsufficientEvidence, kPossible, kLikely, kConfirmed };
inline constexpr Confidence kAllConfidences[] = {Confidence::kInsufficientEvidence, Confidence::kPossible,
                                                 Confidence::kLikely, Confidence::kConfirmed};

std::string_view ToString(Confidence confidence);
std::optional<Confidence> ParseConfidence(std::string_view word);

// For test failure messages and logs: the contract word.
std::ostream& operator<<(std::ostream& out, Confidence confidence);

// JSON carries the contract word; an unknown word throws like any other malformed field.
void to_json(nlohmann::json& j, Confidence confidence);
void from_json(const nlohmann::json& j, Confidence& confidence);

}  // namespace diagnose
