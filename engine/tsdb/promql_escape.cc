#include "engine/tsdb/promql_escape.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace diagnose {

std::string EscapePromqlString(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 8);
  for (unsigned char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

namespace {
std::string RegexQuote(std::string_view value) {
  static constexpr std::string_view kMeta = R"(\.+*?()|[]{}^$)";
  std::string out;
  out.reserve(value.size() * 2);
  for (char c : value) {
    if (kMeta.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string EscapePromqlRegexLiteral(std::string_view value) {
  return EscapePromqlString(RegexQuote(value));
}

std::string PromqlAlternation(const std::vector<std::string>& values) {
  std::string joined;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) joined += '|';
    joined += RegexQuote(values[i]);
  }
  return EscapePromqlString(joined);
}

std::string PromqlSeconds(double seconds) {
  // Also for NaN; and a range beyond ~300 years is no job's.
  const double whole = seconds > 1 ? std::min(std::ceil(seconds), 1e10) : 1;
  return std::to_string(static_cast<int64_t>(whole)) + "s";
}

}  // namespace diagnose
