// When an instant query is evaluated (a playbook query's `at:`): at the window's start, at its end,
// or at the time an expression gives (the rule's `at_expr`). Parsed where a playbook is read.
#pragma once

#include "engine/core/vocabulary.h"

namespace diagnose {

#define DIAGNOSE_QUERY_AT_WORDS(WORD) \
  WORD(kStart, "start")               \
  WORD(kEnd, "end")                   \
  WORD(kExpression, "expression")
DIAGNOSE_VOCABULARY(QueryAt, "query at", DIAGNOSE_QUERY_AT_WORDS);

}  // namespace diagnose
