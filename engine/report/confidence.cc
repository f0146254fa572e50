#include "engine/report/confidence.h"

#include <ostream>
#include <string>

#include "engine/core/vocabulary.h"

namespace diagnose {

namespace {

constexpr Vocabulary<Confidence, 4> kConfidenceWords{{{
    {Confidence::kInsufficientEvidence, "insufficient-evidence"},
    {Confidence::kPossible, "possible"},
    {Confidence::kLikely, "likely"},
    {Confidence::kConfirmed, "confirmed"},
}}};

}  // namespace

std::string_view ToString(Confidence confidence) { return kConfidenceWords.Word(confidence); }

std::optional<Confidence> ParseConfidence(std::string_view word) { return kConfidenceWords.Parse(word); }

std::ostream& operator<<(std::ostream& out, Confidence confidence) { return out << ToString(confidence); }

void to_json(nlohmann::json& j, Confidence confidence) { j = std::string(ToString(confidence)); }

void from_json(const nlohmann::json& j, Confidence& confidence) { confidence = kConfidenceWords.FromJson(j, "confidence"); }

}  // namespace diagnose
