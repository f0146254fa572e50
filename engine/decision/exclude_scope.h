// How long a sweep rule's exclusions hold (rules/sweep/decisions.yaml `exclude_scope`, the sweep
// history's `exclude_scope`): for the retry of this job only, or for the rest of the sweep. Parsed
// where rules and history lines are read, written back only into history lines.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

#define DIAGNOSE_EXCLUDE_SCOPE_WORDS(WORD) WORD(kJob, "job") WORD(kSweep, "sweep")
DIAGNOSE_VOCABULARY(ExcludeScope, "exclude_scope", DIAGNOSE_EXCLUDE_SCOPE_WORDS);

inline std::optional<ExcludeScope> ParseExcludeScope(std::string_view word) { return ParseWord<ExcludeScope>(word); }

}  // namespace diagnose
