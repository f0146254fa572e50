// How a range query's samples become one value per series (a playbook query's `reduce:`), and how
// series that share a key are then combined. Parsed where a playbook is read; the word is written
// only as the key of `reduced.<how>` and in the explained graph.
#pragma once

#include "engine/core/vocabulary.h"

namespace diagnose {

#define DIAGNOSE_REDUCTION_WORDS(WORD) \
  WORD(kMax, "max")                    \
  WORD(kMin, "min")                    \
  WORD(kAvg, "avg")                    \
  WORD(kSum, "sum")                    \
  WORD(kLast, "last")                  \
  WORD(kFirst, "first")                \
  WORD(kCount, "count")                \
  WORD(kStddev, "stddev")
DIAGNOSE_VOCABULARY(Reduction, "reduction", DIAGNOSE_REDUCTION_WORDS);

}  // namespace diagnose
