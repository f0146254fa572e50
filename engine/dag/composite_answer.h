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
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/dag/promql_subset.h"
#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

struct CompositeQuestion {
  PromqlNodePtr root;   // promql_subset.h's tree, scalar(...) calls among the parts
  // The PromQL of each distinct part, in order of first appearance: each an instant-vector question
  // Prometheus answers as it would inside the whole expression.
  std::vector<std::string> parts;
  int part_occurrences = 0;   // > parts.size() when a part appears more than once

  bool RepeatsAPart() const { return part_occurrences > static_cast<int>(parts.size()); }
};

// The composite structure of `promql` when its outermost form is an operator the engine evaluates
// and every piece of it is understood; nullopt otherwise (a bare part, or anything unsure).
std::optional<CompositeQuestion> CompositeOf(std::string_view promql);

// The instant-query answer to the question from its parts' answers (same order as `parts`), as
// Prometheus 2.x computes it; nullopt when a part is not an instant vector of one sample per series,
// or where Prometheus would have answered with an error.
std::optional<QueryResult> AnswerComposite(const CompositeQuestion& question,
                                           const std::vector<const QueryResult*>& part_answers);

}  // namespace diagnose::dag
