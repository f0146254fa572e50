#include "engine/dag/derived_answer.h"
#include "engine/dag/promql_lexis.h"
#include "engine/dag/promql_subset.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <memory>

namespace diagnose::dag {
namespace {


std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}


// What lies outside every bracket and string literal of an expression: its comparison operators
// and identifiers (keywords, metric names), with positions. Malformed text (unbalanced brackets,
// an unterminated string, a comment) is reported as such: nothing is derived from it.
struct TopLevel {
  bool well_formed = true;
  std::vector<std::pair<size_t, std::string_view>> comparisons;
  std::vector<std::string_view> identifiers;
};

TopLevel ScanTopLevel(std::string_view s) {
  TopLevel out;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = EndOfPromqlString(s, i);
      if (i >= s.size()) return {false, {}, {}};
    } else if (c == '#') {
      return {false, {}, {}};
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (--depth < 0) return {false, {}, {}};
    } else if (depth > 0) {
      continue;
    } else if (c == '=' || c == '!' || c == '<' || c == '>') {
      const bool two = i + 1 < s.size() && s[i + 1] == '=';
      if (!two && (c == '=' || c == '!')) return {false, {}, {}};   // `=~`, `!~`, `=`: not at the top
      out.comparisons.emplace_back(i, s.substr(i, two ? 2 : 1));
      if (two) ++i;
    } else if (IsPromqlNameStart(c) && (i == 0 || !IsPromqlNameChar(s[i - 1]))) {
      size_t j = i;
      while (j < s.size() && IsPromqlNameChar(s[j])) ++j;
      out.identifiers.push_back(s.substr(i, j - i));
      i = j - 1;
    }
  }
  if (depth != 0) out.well_formed = false;
  return out;
}

// A plain decimal literal (what playbooks write as thresholds); Inf, NaN and hex are left alone.
std::optional<double> NumberLiteral(std::string_view s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-')
      return std::nullopt;
  const std::string text(s);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// `X <op> number`, X holding no other comparison and no set operator (which bind looser than a
// comparison, so `a and b > 1` is `a and (b > 1)`) and no `bool` (which changes the values).
std::optional<Derivation> FilterOf(std::string_view promql, const TopLevel& top) {
  if (top.comparisons.size() != 1) return std::nullopt;
  for (std::string_view word : top.identifiers)
    if (word == "and" || word == "or" || word == "unless" || word == "bool" || word == "on" || word == "ignoring" ||
        word == "group_left" || word == "group_right")
      return std::nullopt;
  const auto [at, op] = top.comparisons.front();
  const std::string_view lhs = Trimmed(promql.substr(0, at));
  const auto threshold = NumberLiteral(Trimmed(promql.substr(at + op.size())));
  if (lhs.empty() || !threshold) return std::nullopt;
  Derivation d;
  d.kind = Derivation::Kind::kFilter;
  d.source = std::string(lhs);
  d.comparison = std::string(op);
  d.threshold = *threshold;
  return d;
}

size_t SkipSpaces(std::string_view s, size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// `max|min|count|group [by (l1, l2)] (X)`, the whole expression.
std::optional<Derivation> AggregateOf(std::string_view promql) {
  size_t i = 0;
  while (i < promql.size() && IsPromqlNameChar(promql[i])) ++i;
  const std::string_view op = promql.substr(0, i);
  if (op != "max" && op != "min" && op != "count" && op != "group") return std::nullopt;
  Derivation d;
  d.kind = Derivation::Kind::kAggregate;
  d.aggregation = std::string(op);
  i = SkipSpaces(promql, i);
  if (promql.substr(i, 2) == "by" && i + 2 < promql.size() && !IsPromqlNameChar(promql[i + 2])) {
    i = SkipSpaces(promql, i + 2);
    if (i >= promql.size() || promql[i] != '(') return std::nullopt;
    const size_t close = ClosingPromqlBracket(promql, i);
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view list = promql.substr(i + 1, close - i - 1);
    while (!(list = Trimmed(list)).empty()) {
      size_t n = 0;
      while (n < list.size() && IsPromqlNameChar(list[n])) ++n;
      if (n == 0 || std::isdigit(static_cast<unsigned char>(list[0])) || list.substr(0, n).find(':') != std::string_view::npos)
        return std::nullopt;
      d.by.emplace_back(list.substr(0, n));
      list = Trimmed(list.substr(n));
      if (!list.empty() && list.front() != ',') return std::nullopt;
      if (!list.empty()) list.remove_prefix(1);
    }
    i = SkipSpaces(promql, close + 1);
  }
  if (i >= promql.size() || promql[i] != '(') return std::nullopt;
  const size_t close = ClosingPromqlBracket(promql, i);
  if (close != promql.size() - 1) return std::nullopt;   // `max (X) by (l)` or more after it
  const std::string_view inner = Trimmed(promql.substr(i + 1, close - i - 1));
  if (inner.empty() || !ScanTopLevel(inner).well_formed) return std::nullopt;
  d.source = std::string(inner);
  return d;
}

QueryResult Filtered(const Derivation& d, const QueryResult& source) {
  QueryResult out;
  out.result_type = source.result_type;
  out.warnings = source.warnings;
  out.effective_step = source.effective_step;
  for (const auto& series : source.series) {
    Series kept{series.labels, {}};
    for (const auto& sample : series.samples)
      if (ComparisonHolds(d.comparison, sample.v, d.threshold)) kept.samples.push_back(sample);
    if (!kept.samples.empty()) out.series.push_back(std::move(kept));
  }
  return out;
}

// Prometheus' aggregation() at each time, as promql_subset.h evaluates it: only where the order of the
// series cannot decide the result (a max or min choosing between +0 and -0 is refused).
std::optional<QueryResult> Aggregated(const Derivation& d, const QueryResult& source) {
  auto part = std::make_shared<PromqlNode>();
  part->text = d.source;
  PromqlNode aggregation;
  aggregation.kind = PromqlNode::Kind::kAggregate;
  aggregation.op = d.aggregation;
  aggregation.labels = d.by;
  aggregation.children = {std::move(part)};
  auto series = EvaluateAtEachTime(aggregation, {d.source}, {&source}, {/*scalar_is_part=*/false, /*any_order=*/true});
  if (!series) return std::nullopt;
  QueryResult out;
  out.result_type = source.result_type;
  out.warnings = source.warnings;
  out.effective_step = source.effective_step;
  out.series = std::move(*series);
  return out;
}

}  // namespace

std::optional<Derivation> DerivationOf(std::string_view promql) {
  promql = Trimmed(promql);
  const TopLevel top = ScanTopLevel(promql);
  if (!top.well_formed) return std::nullopt;
  if (!top.comparisons.empty()) return FilterOf(promql, top);
  return AggregateOf(promql);
}

std::optional<QueryResult> DeriveAnswer(const Derivation& derivation, const QueryResult& source, Query::Kind kind) {
  // An instant query answered with a matrix asked for a range vector (`x[5m]`): no comparison or
  // aggregation applies to it.
  if (source.result_type != (kind == Query::Kind::kInstant ? "vector" : "matrix")) return std::nullopt;
  if (derivation.kind == Derivation::Kind::kFilter) return Filtered(derivation, source);
  return Aggregated(derivation, source);
}

}  // namespace diagnose::dag
