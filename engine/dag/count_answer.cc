#include "engine/dag/count_answer.h"
#include "engine/dag/promql_lexis.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "engine/analysis/analysis.h"
#include "engine/tsdb/promql_escape.h"

namespace diagnose::dag {
namespace {

using Kind = PromqlNode::Kind;

// Computed at each time the answers hold, from maps: aggregations only where the series order cannot
// change the result; scalar() evaluated, so a division by a maximum reads the range once.
constexpr SubsetRules kCountRules{/*scalar_is_part=*/false, /*any_order=*/true};

constexpr double kExactIntegerLimit = 9007199254740992.0;   // 2^53

bool IsVectorValued(const PromqlNode& node) { return node.kind != Kind::kNumber && node.kind != Kind::kScalar; }

bool NamesTheMetric(const std::vector<std::string>& labels) {
  return std::find(labels.begin(), labels.end(), "__name__") != labels.end();   // the leaves never carry it
}

// What this reader computes exactly (count_answer.h) of promql_subset.h's tree: leaves that are
// range functions' answers, and on them only operations with one possible result.
bool Computable(const PromqlNode& node) {
  auto vector = [](const PromqlNode& n) { return IsVectorValued(n) && Computable(n); };
  switch (node.kind) {
    case Kind::kPart: {
      constexpr std::string_view kSuffix = "_over_time";
      const std::string& f = node.function;
      return f.size() > kSuffix.size() && f.compare(f.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
    }
    case Kind::kNumber:   // only right of a comparison or a division, checked there
    case Kind::kLabelReplace:
      return false;
    case Kind::kScalar:
      return vector(*node.children[0]);
    case Kind::kAggregate:
      // A quantile is composite_answer.h's: this reader's comparison with Prometheus covers the others.
      return node.op != "quantile" && !NamesTheMetric(node.labels) && vector(*node.children[0]);
    case Kind::kBinary: {
      const PromqlNode& lhs = *node.children[0];
      const PromqlNode& rhs = *node.children[1];
      if (node.return_bool || !vector(lhs)) return false;   // `bool` makes values 0/1: not a filter
      if (node.op == "and" || node.op == "unless") return !NamesTheMetric(node.labels) && vector(rhs);
      if (node.IsComparison()) return rhs.kind == Kind::kNumber;
      if (node.op == "+" || node.op == "-") return vector(rhs);
      // vector / scalar only: a vector on the right needs vector matching.
      if (node.op == "/") return rhs.kind == Kind::kNumber || (rhs.kind == Kind::kScalar && Computable(rhs));
      return false;
    }
  }
  return false;
}

// A leaf answer as Prometheus gives a range function's: no metric name (a range function drops it),
// one series per label set, and for count_over_time counts (non-negative integers).
bool IsLeafAnswer(const QueryResult& answer, const std::string& result_type, bool counts) {
  if (answer.result_type != result_type) return false;
  std::set<Labels> seen;
  for (const auto& series : answer.series) {
    if (series.labels.count("__name__") || !seen.insert(series.labels).second) return false;
    for (const auto& sample : series.samples)
      if (counts && (!(sample.v >= 0) || sample.v != std::floor(sample.v) || sample.v > kExactIntegerLimit)) return false;
  }
  return true;
}

// Where only a leaf's presence reaches the answer, and on which labels: `on` is nullopt where the
// values of `node` are needed, else the labels the answer matches `node`'s elements on.
using Presence = std::optional<std::vector<std::string>>;

void MarkUses(const PromqlNode& node, const Presence& on, const std::vector<std::string>& leaves,
              std::vector<std::vector<Presence>>* uses) {
  auto below = [&](const PromqlNode& child, const Presence& child_on) { MarkUses(child, child_on, leaves, uses); };
  switch (node.kind) {
    case Kind::kPart:
      (*uses)[std::find(leaves.begin(), leaves.end(), node.text) - leaves.begin()].push_back(on);
      return;
    case Kind::kNumber:
    case Kind::kLabelReplace:
      return;
    case Kind::kScalar:
      return below(*node.children[0], std::nullopt);
    case Kind::kAggregate: {
      // A group is present where one of its series is: matched on the `on` labels it keeps.
      if (!on) return below(*node.children[0], std::nullopt);
      std::vector<std::string> kept;
      for (const auto& name : *on)
        if (std::find(node.labels.begin(), node.labels.end(), name) != node.labels.end()) kept.push_back(name);
      return below(*node.children[0], kept);
    }
    case Kind::kBinary:
      break;
  }
  const PromqlNode& lhs = *node.children[0];
  const PromqlNode& rhs = *node.children[1];
  if (node.IsComparison()) {
    // A filter every count passes (`count(...) > 0`) keeps presence; any other reads values.
    const double t = rhs.number;
    const bool passes_counts = lhs.kind == Kind::kAggregate && (lhs.op == "count" || lhs.op == "group") &&
                               ((node.op == ">" && t < 1) || (node.op == ">=" && t <= 1) || (node.op == "!=" && t < 1));
    return below(lhs, passes_counts ? on : std::nullopt);
  }
  if (node.op == "/") {
    below(lhs, on);
    return below(rhs, std::nullopt);
  }
  if (node.IsSetOperation()) {
    below(lhs, on);
    // Without `on` every label is matched: the counts' label sets are needed whole.
    return below(rhs, node.on ? Presence(node.labels) : std::nullopt);
  }
  below(lhs, std::nullopt);
  below(rhs, std::nullopt);
}

std::vector<Presence> PresenceOn(const CountExpression& expression) {
  std::vector<std::vector<Presence>> uses(expression.leaves.size());
  MarkUses(*expression.root, std::nullopt, expression.leaves, &uses);
  std::vector<Presence> out;
  for (const auto& leaf_uses : uses) {
    std::set<std::string> labels;
    bool presence_only = true;
    for (const auto& use : leaf_uses) {
      if (!use) presence_only = false;
      else labels.insert(use->begin(), use->end());
    }
    if (presence_only && labels.size() <= 1) out.emplace_back(std::vector<std::string>(labels.begin(), labels.end()));
    else out.emplace_back(std::nullopt);
  }
  return out;
}

// `count_over_time(<metric>[{...}][<range>])` split into its selector and range.
struct RangeSelector {
  std::string selector;
  std::string range;
};

std::optional<RangeSelector> RangeSelectorOf(std::string_view leaf) {
  constexpr std::string_view kCall = "count_over_time(";
  if (leaf.substr(0, kCall.size()) != kCall || leaf.back() != ')') return std::nullopt;
  std::string_view inner = leaf.substr(kCall.size(), leaf.size() - kCall.size() - 1);
  while (!inner.empty() && std::isspace(static_cast<unsigned char>(inner.back()))) inner.remove_suffix(1);
  while (!inner.empty() && std::isspace(static_cast<unsigned char>(inner.front()))) inner.remove_prefix(1);
  size_t i = 0;
  while (i < inner.size() && IsPromqlNameChar(inner[i])) ++i;
  if (i == 0 || !IsPromqlNameStart(inner[0])) return std::nullopt;
  if (i < inner.size() && inner[i] == '{') {
    const size_t close = ClosingPromqlBracket(inner, i);
    if (close == std::string_view::npos) return std::nullopt;
    i = close + 1;
  }
  if (i >= inner.size() || inner[i] != '[' || inner.back() != ']') return std::nullopt;
  const std::string_view range = inner.substr(i + 1, inner.size() - i - 2);
  for (char c : range)
    if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;   // no subquery, offset or @
  return RangeSelector{std::string(inner.substr(0, i)), std::string(range)};
}

// Prometheus' default lookback: an instant selector sees a series' sample at most this old.
constexpr double kLookbackSeconds = 300;

std::string CountBy(const std::vector<std::string>& on, const std::string& inner) {
  return on.empty() ? "count(" + inner + ")" : "count by (" + on[0] + ") (" + inner + ")";
}

}  // namespace

std::optional<std::string> PresenceNowQuery(const std::string& leaf, const std::vector<std::string>& on) {
  auto parts = RangeSelectorOf(leaf);
  double range_seconds = 0;
  if (!parts || on.size() > 1 || !analysis::ParseDurationSeconds(parts->range, &range_seconds) ||
      range_seconds < kLookbackSeconds)
    return std::nullopt;
  return CountBy(on, parts->selector);
}

std::optional<std::string> PresenceElsewhereQuery(const std::string& leaf, const std::vector<std::string>& on,
                                                  const QueryResult& now) {
  auto parts = RangeSelectorOf(leaf);
  if (!parts || on.size() > 1) return std::nullopt;
  if (on.empty() && !now.series.empty()) return std::nullopt;
  std::string selector = parts->selector;
  if (!on.empty() && !now.series.empty()) {
    std::set<std::string> present;
    for (const auto& series : now.series) {
      auto it = series.labels.find(on[0]);
      present.insert(it == series.labels.end() ? "" : it->second);
    }
    const std::string matcher = on[0] + "!~\"" + PromqlAlternation({present.begin(), present.end()}) + "\"";
    if (selector.back() != '}') selector += "{" + matcher + "}";
    else selector.insert(selector.size() - 1, selector[selector.size() - 2] == '{' ? matcher : ", " + matcher);
  }
  return CountBy(on, "count_over_time(" + selector + "[" + parts->range + "])");
}

QueryResult PresenceAnswer(const std::vector<std::string>& on, const QueryResult& now, const QueryResult* elsewhere) {
  std::map<Labels, double> present;   // label set -> evaluation time
  for (const QueryResult* answer : {&now, elsewhere}) {
    if (answer == nullptr) continue;
    for (const auto& series : answer->series) {
      Labels labels;
      for (const auto& name : on)
        if (auto it = series.labels.find(name); it != series.labels.end() && !it->second.empty()) labels.emplace(name, it->second);
      if (!series.samples.empty()) present.emplace(std::move(labels), series.samples.front().t);
    }
  }
  QueryResult out;
  out.result_type = now.result_type;
  out.warnings = now.warnings;
  for (const auto& [labels, t] : present) out.series.push_back({labels, {{t, 1}}});
  return out;
}

std::optional<CountExpression> CountExpressionOf(std::string_view promql) {
  PromqlNodePtr root = ParsePromqlSubset(promql);
  // A bare count is a leaf itself: asked as it is, and other questions may share it.
  if (!root || root->kind == Kind::kPart || !IsVectorValued(*root) || !Computable(*root)) return std::nullopt;
  PromqlParts leaves = PartsOf(*root, kCountRules);
  CountExpression expression;
  expression.root = std::move(root);
  expression.leaves = std::move(leaves.texts);
  expression.leaf_reads = std::move(leaves.reads);
  expression.presence_on = PresenceOn(expression);
  return expression;
}

std::optional<QueryResult> AnswerFromCounts(const CountExpression& expression,
                                            const std::vector<const QueryResult*>& leaf_answers, Query::Kind kind) {
  if (!expression.root || leaf_answers.size() != expression.leaves.size()) return std::nullopt;
  const std::string result_type = kind == Query::Kind::kInstant ? "vector" : "matrix";
  QueryResult out;
  out.result_type = result_type;
  for (size_t l = 0; l < leaf_answers.size(); ++l) {
    const QueryResult* answer = leaf_answers[l];
    if (answer == nullptr || !IsLeafAnswer(*answer, result_type, expression.leaves[l].rfind("count_over_time(", 0) == 0))
      return std::nullopt;
    MergeWarnings(answer->warnings, &out.warnings);
    out.effective_step = std::max(out.effective_step, answer->effective_step);
  }
  auto series = EvaluateAtEachTime(*expression.root, expression.leaves, leaf_answers, kCountRules);
  if (!series) return std::nullopt;
  out.series = std::move(*series);
  return out;
}

}  // namespace diagnose::dag
