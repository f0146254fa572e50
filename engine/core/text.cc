#include "engine/core/text.h"

#include <algorithm>
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

std::string ClosestName(const std::string& typo, const std::vector<std::string>& names) {
  // Edits, with two swapped neighbours counting as one ("lnit" is one typo from "lint").
  const auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  const size_t allowed = std::min<size_t>(2, std::max<size_t>(1, typo.size() / 3));
  std::string best;
  size_t best_distance = allowed + 1;
  for (const auto& name : names) {
    if (name == typo) continue;
    const size_t d = distance(typo, name);
    if (d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace diagnose
