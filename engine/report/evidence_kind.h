// The contract's `findings[].evidence[].kind` vocabulary: what produced a piece of evidence. Set
// where the evidence is made; the word is written only where a report leaves.
#pragma once

#include "engine/core/vocabulary.h"

namespace diagnose {

#define DIAGNOSE_EVIDENCE_KIND_WORDS(WORD) \
  WORD(kPromql, "promql")                  \
  WORD(kLog, "log")                        \
  WORD(kDerived, "derived")                \
  WORD(kProfile, "profile")
DIAGNOSE_VOCABULARY(EvidenceKind, "evidence kind", DIAGNOSE_EVIDENCE_KIND_WORDS);

}  // namespace diagnose
