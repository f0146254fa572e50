#include "engine/core/text.h"

#include <cstdio>

namespace diagnose {

std::string FixedDecimal(double value, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, value);
  return buf;
}

std::string JoinStrings(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

std::string OptionalInt(const std::optional<int64_t>& value) { return value ? std::to_string(*value) : "?"; }

}  // namespace diagnose
