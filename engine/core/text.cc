#include "engine/core/text.h"

#include <cmath>
#include <cstdio>

namespace diagnose {

std::string WithThousands(double value) {
  const auto n = static_cast<long long>(std::llround(value));
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return (n < 0 ? "-" : "") + out;
}

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
