// JSON that others wrote: a sweep history, a block's meta.json, an endpoint's answer.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/limits.h"
#include "engine/core/status.h"

namespace diagnose {

// How deeply a document written by others may nest: far past any answer, meta.json, facts or trace
// we read (under 20 levels), and far below what nlohmann's recursive dump() and copy survive.
inline constexpr size_t kMaxJsonDepth = 512;

// Parses JSON written by others (sweep history, meta.json, HTTP answers); is_discarded() on a
// syntax error and on nesting deeper than kMaxJsonDepth. A float beyond int64's range becomes null:
// nlohmann's get<int64_t> of one is undefined behaviour (found by fuzz/sweep_history and
// fuzz/tsdb_meta), and no field we read means such a number, so the reader then refuses it as a
// wrong type instead.
nlohmann::json ParseUntrustedJson(std::string_view text);

// A number read as an integer in [lo, hi]: a float is truncated and clamped there first, since
// casting a float outside the integer's range is undefined behaviour (fuzz/expr_template found
// round(x, 1e300)). nullopt for anything but a number, and for NaN.
inline std::optional<int64_t> ClampedInteger(const nlohmann::json& v, int64_t lo, int64_t hi) {
  if (v.is_number_integer()) return std::clamp<int64_t>(v.get<int64_t>(), lo, hi);
  if (v.is_number_unsigned()) return v.get<uint64_t>() > static_cast<uint64_t>(hi) ? hi : std::max<int64_t>(lo, v.get<int64_t>());
  if (!v.is_number_float() || std::isnan(v.get<double>())) return std::nullopt;
  const double d = std::trunc(v.get<double>());
  if (d <= static_cast<double>(lo)) return lo;
  if (d >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(d);
}

// What a parse of a large answer may spend: an answer parsed after the run's deadline would hold an
// epilog for as long as the parse takes (minutes for 10^6 values), and an array longer than a limit
// is refused as it is read, not once it is all in memory.
struct JsonParseBounds {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::optional<LimitId> array_limit;   // no array may hold more elements than this limit allows
  std::string what = "the answer";      // names the document in the errors
};

// ParseUntrustedJson within `bounds`: the document (discarded on a syntax error, as there), or
// kDeadlineExceeded once the deadline passes mid-parse, kResourceExhausted (LimitExceeded) for an
// array past `array_limit`, kParse for nesting deeper than kMaxJsonDepth.
StatusOr<nlohmann::json> ParseUntrustedJsonBounded(std::string_view text, const JsonParseBounds& bounds);

}  // namespace diagnose
