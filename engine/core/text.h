// Small text helpers every report and message needs, in one place so each renderer formats a
// number or a list the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace diagnose {

// printf("%.*f"): "12.5" for (12.49, 1).
std::string FixedDecimal(double value, int precision);

// 2520.4 -> "2,520", -1234 -> "-1,234": TGS as the sweep runbooks print it.
std::string WithThousands(double value);

// "a, b, c" (or any separator).
std::string JoinStrings(const std::vector<std::string>& items, std::string_view separator = ", ");

// The number, or "?" when unknown.
std::string OptionalInt(const std::optional<int64_t>& value);

// The name among `names` closest to `typo` by edit distance, "" when none is within 2 edits (or a
// third of the typo's length, for short words): what a "did you mean" suggests.
std::string ClosestName(const std::string& typo, const std::vector<std::string>& names);

}  // namespace diagnose
