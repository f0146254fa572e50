// The one grammar of the PromQL the engine evaluates itself (issue 36: read each sample once), and
// the evaluation primitives whose semantics its planners share. composite_answer.h and
// count_answer.h each accept a part of this subset (their own rules, checked over the tree this
// parser builds) and evaluate it their own way where they differ on purpose.
//
// The subset: binary operators + - * / % == != > < >= <= and or unless, with `bool` (comparisons)
// and `on (labels)` (set operators); sum, max, min, count, group [by (labels)] (before or after the
// argument); quantile(<number>, ...) [by (labels)] (Prometheus 2.42's promql/quantile.go: sorted, the two
// neighbours of rank q*(n-1) weighted); scalar(...); label_replace with plain string arguments; number
// literals (one sign allowed); and parts, asked of the TSDB as written: selectors and function calls
// with their range, offset and @, and the other aggregations with their grouping. Declined (the question is then asked as
// written): ^ and atan2 (Go's Pow and Atan2 are not the C library's, bit for bit), ignoring,
// group_left/right, without on an evaluated aggregation, subqueries or modifiers on a group,
// comments, unterminated strings, nesting deeper than 64, text longer than 8 KiB (playbook text is
// untrusted: the tree's evaluation and destruction recurse).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

struct PromqlNode {
  enum class Kind { kPart, kNumber, kBinary, kAggregate, kScalar, kLabelReplace };
  Kind kind = Kind::kPart;
  // kPart: as written (trailing spaces trimmed); kScalar and kAggregate: the whole call as written,
  // which a planner not evaluating it asks as a part.
  std::string text;
  // kPart: the function a part calls when the call is all there is to it (no range, offset or @
  // after it), e.g. `count_over_time`; empty otherwise.
  std::string function;
  double number = 0;               // kNumber; kAggregate quantile: its q
  // kBinary: + - * / % == != > < >= <= and or unless; kAggregate: sum max min count group quantile.
  std::string op;
  bool return_bool = false;        // kBinary comparison with `bool`
  bool on = false;                 // kBinary set operation: `on (labels)` given
  std::vector<std::string> labels;   // kBinary: the `on` labels; kAggregate: the `by` labels
  std::string dst, replacement, src, regex;   // kLabelReplace
  std::vector<std::shared_ptr<const PromqlNode>> children;   // in textual order

  bool IsComparison() const;
  bool IsSetOperation() const;
};

using PromqlNodePtr = std::shared_ptr<const PromqlNode>;

// The tree of `promql` when all of it lies in the subset; nullptr otherwise.
PromqlNodePtr ParsePromqlSubset(std::string_view promql);

// How a planner evaluates the subset where the planners differ on purpose.
struct SubsetRules {
  // scalar(...) is a part, its answer asked of the TSDB (composite), or evaluated (count).
  bool scalar_is_part = false;
  // Aggregations only where the result has one possible value whatever the order the series come
  // in: a sum of integers up to 2^53, a max or min not choosing between +0 and -0 (count's answers
  // are assembled per time from maps, not in Prometheus' series order). Otherwise folded in series
  // order as Prometheus does (composite's answers keep that order, value for value).
  bool any_order = false;
  // An aggregation of a part (`min by (host) (sel)`) is a part itself, asked as written: a range
  // question's parts are ones the plan asks anyway, and Prometheus aggregates a range of samples
  // cheaper than it returns them.
  bool aggregations_of_parts_are_parts = false;
};

// The distinct parts below `node` under `rules`, in order of first appearance, and how often each
// is read.
struct PromqlParts {
  std::vector<std::string> texts;
  std::vector<int> reads;
};
PromqlParts PartsOf(const PromqlNode& node, SubsetRules rules);
// Whether `node` or a node below it, parts under `rules` not entered, satisfies `pred` (a planner's
// acceptance rules, inverted).
bool AnyNode(const PromqlNode& node, SubsetRules rules, const std::function<bool(const PromqlNode&)>& pred);

// Prometheus 2.42's quantile of `values` (promql/quantile.go, as the quantile aggregation calls it):
// NaN for none, -Inf/+Inf for q < 0 / q > 1, else the two neighbours of rank q*(n-1) in sorted order,
// weighted. nullopt where the sorted order is not one order (Go sorts NaN below everything but two NaNs
// both below each other; +0 and -0 are equal): two NaNs, or both zeros.
std::optional<double> PrometheusQuantile(double q, std::vector<double> values);

// One element of an instant vector. Labels are shared between the steps that do not change them.
struct VectorElement {
  std::shared_ptr<const Labels> labels;
  double t = 0;
  double v = 0;
};
using InstantVector = std::vector<VectorElement>;

// `root` evaluated at one instant as Prometheus 2.x evaluates it, series in its order, from
// `part_values[i]`, the answer to the part written `part_texts[i]`; nullopt where the root is not a
// vector, or where Prometheus fails (a signature twice on one side of a one-to-one match, one label
// set twice in a result) or the rules refuse.
std::optional<InstantVector> EvaluateInstant(const PromqlNode& root, const std::vector<std::string>& part_texts,
                                             const std::vector<InstantVector>& part_values, SubsetRules rules);

// The same at each time the parts' answers (instant vectors or matrices, labels read in place) hold
// a sample, as Prometheus evaluates a range query step by step: series sorted by labels, samples by
// time, as it returns a matrix. nullopt where an instant refuses.
std::optional<std::vector<Series>> EvaluateAtEachTime(const PromqlNode& root, const std::vector<std::string>& part_texts,
                                                      const std::vector<const QueryResult*>& part_answers,
                                                      SubsetRules rules);

}  // namespace diagnose::dag
