// Questions answered from per-series range-function answers (issue 36: each range decoded once).
// Coverage and presence questions read one range several times: `min by (host) (count_over_time(X[w]))
// / scalar(max(count_over_time(X[w])))` decodes X's window twice, and the family-presence question
// `count by (host) (count_over_time(S[w])) unless on (host) count by (host) (count_over_time(F[w]))
// and on () (count(count_over_time(F[w])) > 0)` decodes F's twice, and S's again for every family;
// `max by (host) (avg_over_time(P[w])) - min by (host) (avg_over_time(P[w]))` reads P twice more next
// to the per-GPU `avg_over_time(P[w])` asked anyway. Prometheus has no common-subexpression
// elimination, so the engine asks it for each distinct `<f>_over_time(...)` (a leaf) once, per
// series, and computes the rest.
//
// Exact by construction: Prometheus computes every leaf; on them the engine computes only what has
// one possible result: max/min (refused where +0 and -0 meet) and count/group by, a sum of integers
// (counts; refused past 2^53 or for any other value, whose sum depends on the order of addition),
// scalar(), division by a scalar and `a - b`/`a + b` matched one-to-one (one IEEE operation each,
// as Prometheus performs it), comparisons with a number (filters), and `and`/`unless` keeping
// left-hand series by their label signature. Anything else (or, *, avg, bool, ignoring, group_left,
// without, parameters) is not recognised and stays with the TSDB.
// The grammar and the evaluation are promql_subset.h's, shared with composite_answer.h; this
// reader's rules there (count_answer.cc: Computable) and its evaluation at each time of a range.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/dag/promql_subset.h"
#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

struct CountExpression {
  PromqlNodePtr root;                // promql_subset.h's tree, the leaves its parts
  std::vector<std::string> leaves;   // the distinct `<f>_over_time(...)` calls, as written
  std::vector<int> leaf_reads;       // how often the expression reads each leaf
  // Per leaf, when only its presence reaches the answer (right-hand sides of and/unless, through
  // by-aggregations and count filters every count passes): the one label, or none, its presence is
  // matched on. nullopt when its counts reach the answer.
  std::vector<std::optional<std::vector<std::string>>> presence_on;
};

// The expression `promql` is, when every leaf is a `<f>_over_time` call and every operation on the
// leaves is one the engine computes exactly; nullopt otherwise, and for a bare leaf.
std::optional<CountExpression> CountExpressionOf(std::string_view promql);

// The expression's answer to a query of `kind`, computed as Prometheus 2.x evaluates it from
// `leaf_answers[i]`, Prometheus' answer to `expression.leaves[i]` asked with the same kind and
// times. nullopt when an answer is not of the kind's type, a count_over_time value is not a count,
// or the result would depend on evaluation order.
std::optional<QueryResult> AnswerFromCounts(const CountExpression& expression,
                                            const std::vector<const QueryResult*>& leaf_answers, Query::Kind kind);

// A leaf whose presence alone matters is answered by two cheap questions instead of its counts
// (instant queries; exact, not from the index, whose chunk granularity and stale markers would
// make a superset): the label values of the series with a sample at the evaluation time, which lie
// in the range because the 5-minute lookback does, and then the counts of only the series whose
// value is not among them, which nearly always match nothing.
//
// The first: `count by (<on>) (<selector>)`; nullopt when the leaf is not `count_over_time(<selector>[<range>])`
// with a range of at least the lookback.
std::optional<std::string> PresenceNowQuery(const std::string& leaf, const std::vector<std::string>& on);
// The second, from the first's answer; nullopt when nothing is left to know (something is present
// and nothing is matched on).
std::optional<std::string> PresenceElsewhereQuery(const std::string& leaf, const std::vector<std::string>& on,
                                                  const QueryResult& now);
// The leaf's presence as an answer standing for its counts: one element per value of `on` present
// (value 1), which is all an expression whose counts of the leaf never reach its answer can see.
QueryResult PresenceAnswer(const std::vector<std::string>& on, const QueryResult& now, const QueryResult* elsewhere);

}  // namespace diagnose::dag
