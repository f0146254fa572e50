// Questions about sample counts answered from per-series counts (issue 36: each range decoded once).
// Coverage and presence questions read one range several times: `min by (host) (count_over_time(X[w]))
// / scalar(max(count_over_time(X[w])))` decodes X's window twice, and the family-presence question
// `count by (host) (count_over_time(S[w])) unless on (host) count by (host) (count_over_time(F[w]))
// and on () (count(count_over_time(F[w])) > 0)` decodes F's twice, and S's again for every family.
// Prometheus has no common-subexpression elimination, so the engine asks it for each distinct
// `count_over_time(...)` once, per series, and computes the rest.
//
// Exact by construction: every leaf value is a sample count, a non-negative integer, so sums of them
// are exact in any order (refused past 2^53), max/min/count/group choose or count, a division is the
// one IEEE operation Prometheus performs, a comparison with a number filters, and `and`/`unless`
// keep left-hand series by their label signature. Anything else (or, +, -, *, bool, ignoring,
// group_left, without, parameters) is not recognised and stays with the TSDB.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

struct CountNode;

struct CountExpression {
  std::shared_ptr<const CountNode> root;
  std::vector<std::string> leaves;   // the distinct `count_over_time(...)` calls, as written
  std::vector<int> leaf_reads;       // how often the expression reads each leaf
};

// The count expression `promql` is, when every leaf is a count_over_time call and every operation
// on the leaves is one the engine computes exactly; nullopt otherwise, and for a bare leaf.
std::optional<CountExpression> CountExpressionOf(std::string_view promql);

// The expression's answer to a query of `kind`, computed as Prometheus 2.x evaluates it from
// `leaf_answers[i]`, Prometheus' answer to `expression.leaves[i]` asked with the same kind and
// times. nullopt when an answer is not of the kind's type, a leaf value is not a count, or the
// result would depend on evaluation order.
std::optional<QueryResult> AnswerFromCounts(const CountExpression& expression,
                                            const std::vector<const QueryResult*>& leaf_answers, Query::Kind kind);

}  // namespace diagnose::dag
