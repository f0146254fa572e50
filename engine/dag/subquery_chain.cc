#include "engine/dag/subquery_chain.h"
#include "engine/dag/promql_lexis.h"
#include "engine/dag/promql_subset.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace diagnose::dag {
namespace {

// Prometheus' range API answers at most 11,000 points a series: a longer grid is not asked.
constexpr int64_t kMaxGridPoints = 11000;

std::string_view SpaceTrimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A PromQL duration (model.ParseDuration: units y w d h m s ms, each at most once, in that order), in
// milliseconds; nullopt for anything else or zero.
std::optional<int64_t> DurationMillis(std::string_view text) {
  static constexpr std::pair<std::string_view, int64_t> kUnits[] = {
      {"y", 365LL * 24 * 3600 * 1000}, {"w", 7LL * 24 * 3600 * 1000}, {"d", 24LL * 3600 * 1000},
      {"h", 3600LL * 1000},            {"m", 60LL * 1000},             {"s", 1000},
      {"ms", 1}};
  int64_t total = 0;
  size_t next_unit = 0, i = 0;
  text = SpaceTrimmed(text);
  while (i < text.size()) {
    const size_t digits = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == digits || i - digits > 12) return std::nullopt;
    const int64_t n = std::strtoll(std::string(text.substr(digits, i - digits)).c_str(), nullptr, 10);
    size_t unit = next_unit;
    // "ms" before "m": the longest unit name that follows.
    while (unit < std::size(kUnits)) {
      const std::string_view name = kUnits[unit].first;
      const bool longer_follows = name == "m" && text.substr(i, 2) == "ms";
      if (text.substr(i, name.size()) == name && !longer_follows) break;
      ++unit;
    }
    if (unit == std::size(kUnits)) return std::nullopt;
    // Playbook text is untrusted: 12 digits of years overflow int64 (declined, as Prometheus does).
    int64_t part = 0;
    if (__builtin_mul_overflow(n, kUnits[unit].second, &part) || __builtin_add_overflow(total, part, &total))
      return std::nullopt;
    i += kUnits[unit].first.size();
    next_unit = unit + 1;
  }
  if (total <= 0) return std::nullopt;
  return total;
}

// The plain decimal number before the first top-level comma of `*arguments` (quantile_over_time's
// q), the rest left in `*arguments`; nullopt for anything else (an expression, Inf, NaN, hex).
std::optional<double> LeadingNumberArgument(std::string_view* arguments) {
  const size_t comma = arguments->find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  const std::string text(SpaceTrimmed(arguments->substr(0, comma)));
  if (text.empty() || text.size() > 32) return std::nullopt;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') return std::nullopt;
  char* end = nullptr;
  const double q = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(q)) return std::nullopt;
  *arguments = SpaceTrimmed(arguments->substr(comma + 1));
  return q;
}

// `f(X[range:step])` with X either another such call or `(E)`.
bool ParseLevel(std::string_view text, SubqueryChain* chain, int depth) {
  if (depth > 8) return false;
  text = SpaceTrimmed(text);
  std::string_view function;
  for (std::string_view f : {"min_over_time", "max_over_time", "quantile_over_time"})
    if (text.substr(0, f.size()) == f) function = f;
  if (function.empty()) return false;
  size_t open = function.size();
  while (open < text.size() && std::isspace(static_cast<unsigned char>(text[open]))) ++open;
  if (open >= text.size() || text[open] != '(' || ClosingPromqlBracket(text, open) != text.size() - 1) return false;
  std::string_view argument = SpaceTrimmed(text.substr(open + 1, text.size() - open - 2));
  double quantile = 0;
  if (function == "quantile_over_time") {
    const auto q = LeadingNumberArgument(&argument);
    if (!q) return false;
    quantile = *q;
  }
  // The subquery brackets close the argument: the last bracket opened at its top level.
  size_t bracket = std::string_view::npos;
  for (size_t i = 0; i < argument.size(); ++i) {
    const char c = argument[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = EndOfPromqlString(argument, i);
    } else if (c == '(' || c == '[' || c == '{') {
      const size_t close = ClosingPromqlBracket(argument, i);
      if (close == std::string_view::npos) return false;
      if (c == '[') bracket = close == argument.size() - 1 ? i : std::string_view::npos;
      i = close;
    }
  }
  if (bracket == std::string_view::npos) return false;
  const std::string_view window = argument.substr(bracket + 1, argument.size() - bracket - 2);
  const size_t colon = window.find(':');
  if (colon == std::string_view::npos) return false;
  auto range = DurationMillis(window.substr(0, colon));
  auto step = DurationMillis(window.substr(colon + 1));
  if (!range || !step) return false;
  chain->levels.push_back({std::string(function), *range, *step, quantile});
  const std::string_view expression = SpaceTrimmed(argument.substr(0, bracket));
  if (!expression.empty() && expression.front() == '(' && ClosingPromqlBracket(expression, 0) == expression.size() - 1) {
    chain->inner = std::string(SpaceTrimmed(expression.substr(1, expression.size() - 2)));
    return !chain->inner.empty();
  }
  return ParseLevel(expression, chain, depth + 1);
}

// The subquery's first evaluation time (engine.go: aligned to the step from epoch 0, not before
// `from - range`).
int64_t AlignedStart(int64_t from_ms, const SubqueryChain::Level& level) {
  const int64_t earliest = from_ms - level.range_ms;
  int64_t start = level.step_ms * (earliest / level.step_ms);
  if (start < earliest) start += level.step_ms;
  return start;
}

// One window's value as 2.42 computes it: aggrOverTime's min/max fold in time order (a NaN so far is
// replaced by the next value), or quantile_over_time's quantile of the window's values (the
// quantile aggregation's function; nullopt where its sort has no one order).
std::optional<double> Fold(const SubqueryChain::Level& level, const std::vector<std::pair<int64_t, double>>& points,
                           size_t from, size_t to) {
  if (level.function == "quantile_over_time") {
    std::vector<double> values;
    values.reserve(to - from);
    for (size_t i = from; i < to; ++i) values.push_back(points[i].second);
    return PrometheusQuantile(level.quantile, std::move(values));
  }
  double out = points[from].second;
  const bool max = level.function == "max_over_time";
  for (size_t i = from; i < to; ++i) {
    const double v = points[i].second;
    if ((max ? v > out : v < out) || std::isnan(out)) out = v;
  }
  return out;
}

using Points = std::vector<std::pair<int64_t, double>>;

// One level over one series: evaluated at `first + k * step` up to `last`, each over [t - range, t].
std::optional<Points> ApplyLevel(const SubqueryChain::Level& level, const Points& in, int64_t first, int64_t step, int64_t last) {
  Points out;
  size_t from = 0, to = 0;
  for (int64_t t = first; t <= last; t += step) {
    while (from < in.size() && in[from].first < t - level.range_ms) ++from;
    if (to < from) to = from;
    while (to < in.size() && in[to].first <= t) ++to;
    if (to == from) continue;
    const std::optional<double> value = Fold(level, in, from, to);
    if (!value) return std::nullopt;
    out.emplace_back(t, *value);
  }
  return out;
}

}  // namespace

std::optional<SubqueryChain> SubqueryChainOf(std::string_view promql) {
  if (promql.size() > 8192) return std::nullopt;
  SubqueryChain chain;
  if (!ParseLevel(promql, &chain, 0)) return std::nullopt;
  int64_t span = 0;
  for (const auto& level : chain.levels) span += level.range_ms;
  if (span / chain.levels.back().step_ms + 1 > kMaxGridPoints) return std::nullopt;
  return chain;
}

int64_t PrometheusMillis(double seconds) {
  char text[48];
  std::snprintf(text, sizeof text, "%.3f", seconds);
  const double t = std::strtod(text, nullptr);
  double whole = 0;
  const double fraction = std::modf(t, &whole);
  const double rounded = std::round(fraction * 1000) / 1000;
  const int64_t nanos = static_cast<int64_t>(rounded * 1e9);
  return static_cast<int64_t>(whole) * 1000 + nanos / 1000000;
}

ChainGrid InnerGrid(const SubqueryChain& chain, int64_t time_ms) {
  int64_t from = time_ms;
  for (const auto& level : chain.levels) from = AlignedStart(from, level);
  const int64_t step = chain.levels.back().step_ms;
  return {from, from + (time_ms - from) / step * step, step};
}

std::optional<std::vector<Series>> EvaluateChain(const SubqueryChain& chain, const QueryResult& inner, int64_t time_ms) {
  if (inner.result_type != "matrix") return std::nullopt;
  const ChainGrid grid = InnerGrid(chain, time_ms);
  std::map<Labels, Points> series;
  for (const auto& s : inner.series) {
    Labels labels = s.labels;
    labels.erase("__name__");
    auto [it, fresh] = series.try_emplace(std::move(labels));
    if (!fresh) return std::nullopt;
    for (const auto& sample : s.samples) {
      const int64_t t = std::llround(sample.t * 1000);
      if ((t - grid.first_ms) % grid.step_ms != 0) return std::nullopt;
      // A range shared with another question's chain may reach beyond this one's grid.
      if (t >= grid.first_ms && t <= grid.last_ms) it->second.emplace_back(t, sample.v);
    }
  }
  // The times each level is evaluated at: the next outer level's subquery grid, the query time last.
  std::vector<int64_t> starts(chain.levels.size());
  int64_t from = time_ms;
  for (size_t i = 0; i < chain.levels.size(); ++i) starts[i] = from = AlignedStart(from, chain.levels[i]);
  std::vector<Series> out;
  for (auto& [labels, points] : series) {
    for (size_t i = chain.levels.size(); i-- > 0;) {
      const int64_t first = i == 0 ? time_ms : starts[i - 1];
      const int64_t step = i == 0 ? 1 : chain.levels[i - 1].step_ms;
      std::optional<Points> level = ApplyLevel(chain.levels[i], points, first, step, time_ms);
      if (!level) return std::nullopt;
      points = std::move(*level);
    }
    if (!points.empty()) out.push_back({labels, {{static_cast<double>(time_ms) / 1000, points.front().second}}});
  }
  return out;
}

}  // namespace diagnose::dag
