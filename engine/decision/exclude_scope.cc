#include "engine/decision/exclude_scope.h"

#include <string>

#include "engine/core/vocabulary.h"

namespace diagnose {

namespace {

constexpr Vocabulary<ExcludeScope, 2> kExcludeScopeWords{{{
    {ExcludeScope::kJob, "job"},
    {ExcludeScope::kSweep, "sweep"},
}}};

}  // namespace

std::string_view ToString(ExcludeScope scope) { return kExcludeScopeWords.Word(scope); }

std::optional<ExcludeScope> ParseExcludeScope(std::string_view word) { return kExcludeScopeWords.Parse(word); }

void to_json(nlohmann::json& j, ExcludeScope scope) { j = std::string(ToString(scope)); }

void from_json(const nlohmann::json& j, ExcludeScope& scope) { scope = kExcludeScopeWords.FromJson(j, "exclude_scope"); }

}  // namespace diagnose
