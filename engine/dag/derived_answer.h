// Questions the engine answers from another question's answer instead of asking the TSDB again
// (issue 36: each selector decoded once): `X > 3` from X, `max by (host) (X)` from X. Only forms whose
// answer is computed exactly as Prometheus computes it, value for value: comparisons with a number
// (a filter, the value kept) and the max/min/count/group aggregations (no rounding, no order
// dependence). Sums and averages are not derived: their last bit depends on the order of addition.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

struct Derivation {
  enum class Kind { kFilter, kAggregate };
  Kind kind = Kind::kFilter;
  std::string source;              // the PromQL whose answer this one is computed from
  // kFilter: `source <op> threshold`, op one of == != > < >= <=.
  std::string comparison;
  double threshold = 0;
  // kAggregate: `<aggregation> by (<by>) (source)`, aggregation one of max min count group.
  std::string aggregation;
  std::vector<std::string> by;
};

// The derivation `promql` has, when its outermost form is one of the exact ones; nullopt otherwise
// (anything the recogniser is unsure of is left to the TSDB).
std::optional<Derivation> DerivationOf(std::string_view promql);

// `derivation` applied to the source's answer to a query of `kind`, as Prometheus 2.x evaluates it;
// nullopt when the source is not an instant vector (instant query) or a matrix (range query), or
// when the answer would depend on the order of the series (a max or min choosing between +0 and -0).
std::optional<QueryResult> DeriveAnswer(const Derivation& derivation, const QueryResult& source, Query::Kind kind);

}  // namespace diagnose::dag
