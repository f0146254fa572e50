// Where a claim comes from in the job's logs: every log-derived fact carries one, so reports can
// quote "file:line" and a person can re-read it.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/json.h"

namespace diagnose {

struct LogRef {
  std::string file;   // path as the user can open it (relative to the outputs dir when possible)
  int64_t line = 0;   // 1-based; 0 = unknown
  std::string text;   // the line, prefixes stripped, truncated to a sane length
  bool empty() const { return file.empty(); }
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LogRef, file, line, text)

}  // namespace diagnose
