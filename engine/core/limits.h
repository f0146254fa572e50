// Every bound diagnose puts on untrusted input, by name. Defaults sit far above what a real job
// produces (a 1,024-node job's answers, a year of logs) and far below what exhausts a login node.
// A run that hits one says which, with its value and how to raise it: `--limit NAME=VALUE` on any
// command, e.g. `--limit http.response_bytes=1GiB`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace diagnose {

enum class LimitId {
  kHttpResponseBytes,   // one HTTP answer's body
  kHttpSeriesPerQuery,  // series in one query answer (or values in a label-values answer)
  kHttpPointsPerQuery,  // samples over all series of one query answer
  kYamlFileBytes,       // one playbook, rules, test or signature file
  kYamlDepth,           // nesting of mappings and sequences
  kYamlNodes,           // nodes visited with aliases expanded (an alias bomb is small on disk)
  kLogLineBytes,        // one log line; the rest of a longer line is skipped, not kept
  kLogFiles,            // Ray worker logs read for one job
  kProfileTraceBytes,   // one profile trace file, decompressed
};

struct LimitInfo {
  LimitId id;
  const char* name;       // what --limit takes: "http.response_bytes"
  int64_t default_value;
  bool bytes;             // printed and parsed with KiB/MiB/GiB
  const char* what;       // one line for --help and messages
};

const std::vector<LimitInfo>& AllLimits();
const LimitInfo& InfoOf(LimitId id);

int64_t GetLimit(LimitId id);

// "NAME=VALUE", VALUE a positive integer, for byte limits optionally with KiB, MiB or GiB. Unknown
// names list the known ones.
Status SetLimitFromText(std::string_view assignment);

// kResourceExhausted: "<what> exceeds the limit NAME (VALUE); raise it with --limit NAME=N".
Status LimitExceeded(LimitId id, const std::string& what);

// "64 KiB" or "100000".
std::string FormatLimitValue(LimitId id, int64_t value);

// Sets a limit for one scope (tests), restoring the previous value after.
class ScopedLimit {
 public:
  ScopedLimit(LimitId id, int64_t value);
  ~ScopedLimit();
  ScopedLimit(const ScopedLimit&) = delete;
  ScopedLimit& operator=(const ScopedLimit&) = delete;

 private:
  LimitId id_;
  int64_t previous_;
};

}  // namespace diagnose
