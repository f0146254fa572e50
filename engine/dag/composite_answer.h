// Questions whose outer structure the engine evaluates from the answers to their parts (issue 36:
// each selector decoded once). Prometheus has no common-subexpression elimination: in
// `(A - B) >= 0 or A < B` it reads A's and B's samples twice, and a union of five such families reads
// ten windows twice and matches ~50 k series at 1,024 nodes. Here the parts (A, B: every maximal
// subexpression the engine does not evaluate itself) are asked once each, shared with every other
// question of the run asking them, and the operators on top are applied in the engine exactly as
// Prometheus 2.x evaluates an instant query, value for value and series for series in its order:
//   - arithmetic + - * / % and comparisons (with or without `bool`) between two vectors (one-to-one,
//     matched on every label but __name__) or a vector and a number;
//   - `and`, `or`, `unless` without on/ignoring (left-hand series win, right-hand ones whose labels
//     bar __name__ match a left-hand one are dropped);
//   - sum, max, min, count, group [by (labels)] (groups in order of first appearance, a sum added in
//     series order);
//   - label_replace with a literal regular expression and a replacement without `$` references.
// Anything else (on/ignoring/group_left, ^, atan2, scalars, subqueries, other functions and
// aggregations) is either a part, asked of the TSDB as written, or makes the whole question one.
// Where Prometheus would fail (duplicate series for a match, two series with one label set) the
// engine declines and the question is asked as written, so the TSDB gives its own error.
// The grammar and the evaluation are promql_subset.h's, shared with count_answer.h; this reader's
// rules there: scalar(...) is a part, set operations match on every label, sums in series order.
//
// A range question is composed the same way from range answers to its parts (same start, end and
// step), evaluated at each step as Prometheus' range evaluation does and returned sorted by labels.
// Its parts are the aggregations of a selector or call as written (`min by (host) (sel)`, asked by
// other rules anyway) and scalar(...) is evaluated: gpu_clock_below_fleet's `(P / scalar(quantile(0.5,
// P))) < bool 0.9` reads P once, and a binary operation over two ranges, which Prometheus 2.42 matches
// step by step in a map (~8x the cost of either side at 24 nodes), is matched here. The order of the
// series within a step is not known, so only what has one possible result is computed (sums of
// integers, max/min not choosing between zeros, quantiles without two NaNs or both zeros), and a part
// must be a vector: time() and pi() are scalars Prometheus returns as a matrix too.
//
// An instant question over nested min/max subqueries of such an expression (subquery_chain.h) asks
// the expression's parts as ranges over the innermost subquery's steps, composes the expression there
// and folds the levels; what is around the chain is evaluated in any series order (2.42 returns a
// subquery's series in Go map order).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/dag/promql_subset.h"
#include "engine/dag/subquery_chain.h"
#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

struct CompositeQuestion {
  Query::Kind kind = Query::Kind::kInstant;
  PromqlNodePtr root;   // promql_subset.h's tree, scalar(...) calls among the parts of an instant question
  // The PromQL of each distinct part, in order of first appearance: each a question of the same kind
  // and times, which Prometheus answers as it would inside the whole expression.
  std::vector<std::string> parts;
  int part_occurrences = 0;   // > parts.size() when a part appears more than once

  // An instant question over a subquery chain: `root` reads the chain (its one part, `chain_text`);
  // `parts` are those of `inner`, the chain's innermost expression as a range question, or (no
  // `inner`) that expression itself, asked whole.
  std::shared_ptr<const SubqueryChain> chain;
  std::string chain_text;
  std::shared_ptr<const CompositeQuestion> inner;

  bool RepeatsAPart() const { return part_occurrences > static_cast<int>(parts.size()); }
  // The question part `i` is asked as when the whole is asked as `whole`.
  Query PartQuery(const Query& whole, size_t i) const;
};

// The composite structure of `promql` asked as a query of `kind` when its outermost form is an
// operator the engine evaluates and every piece of it is understood; nullopt otherwise (a bare part,
// or anything unsure).
std::optional<CompositeQuestion> CompositeOf(std::string_view promql, Query::Kind kind = Query::Kind::kInstant);

// The answer to the question from its parts' answers (same order as `parts`), as Prometheus 2.x
// computes it; nullopt when a part is not an instant vector of one sample per series (a matrix for a
// range question), where the result would depend on the order of series, or where Prometheus would
// have answered with an error.
// `time` is the instant an instant question is asked at (a subquery chain's windows depend on it).
std::optional<QueryResult> AnswerComposite(const CompositeQuestion& question,
                                           const std::vector<const QueryResult*>& part_answers, double time = 0);

}  // namespace diagnose::dag
