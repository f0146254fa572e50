// What the engine-side PromQL readers (derived_answer, promql_subset) share of the language: where
// a name, a string literal or a bracket ends, and how a comparison operator compares. One
// definition, so the readers agree on the text they accept and on the answers they compute.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string_view>

namespace diagnose::dag {

inline bool IsPromqlNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
inline bool IsPromqlNameChar(char c) { return IsPromqlNameStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

// The index of the quote closing the string literal opened at `open` (s.size() when unterminated);
// backquoted strings have no escapes.
inline size_t EndOfPromqlString(std::string_view s, size_t open) {
  const char quote = s[open];
  size_t i = open + 1;
  while (i < s.size() && s[i] != quote) i += (s[i] == '\\' && quote != '`') ? 2 : 1;
  return std::min(i, s.size());
}

// The index of the bracket closing the one at `open` (any of ( [ {), string literals skipped;
// s.npos when there is none, or when a comment or an unterminated string comes first (nothing here
// reads past either).
inline size_t ClosingPromqlBracket(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t j = open; j < s.size(); ++j) {
    const char c = s[j];
    if (c == '"' || c == '\'' || c == '`') {
      j = EndOfPromqlString(s, j);
      if (j >= s.size()) return std::string_view::npos;
    } else if (c == '#') {
      return std::string_view::npos;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}') && --depth == 0) {
      return j;
    }
  }
  return std::string_view::npos;
}

// `lhs op rhs` for a comparison operator (== != > < >= <=) as Go compares floats: NaN compares false
// with everything, and so holds only for `!=`.
inline bool ComparisonHolds(std::string_view op, double lhs, double rhs) {
  if (op == "==") return lhs == rhs;
  if (op == "!=") return lhs != rhs;
  if (op == ">") return lhs > rhs;
  if (op == "<") return lhs < rhs;
  if (op == ">=") return lhs >= rhs;
  return lhs <= rhs;
}

}  // namespace diagnose::dag
