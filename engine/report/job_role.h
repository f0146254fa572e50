// Which job of a diagnosis a record belongs to: the job diagnosed, or the healthy `--baseline` job
// it is compared with (the contract's `jobs[].role`, and a playbook query's `tsdb:`).
#pragma once

#include "engine/core/vocabulary.h"

namespace diagnose {

#define DIAGNOSE_JOB_ROLE_WORDS(WORD) \
  WORD(kSubject, "subject")           \
  WORD(kBaseline, "baseline")
DIAGNOSE_VOCABULARY(JobRole, "job role", DIAGNOSE_JOB_ROLE_WORDS);

}  // namespace diagnose
