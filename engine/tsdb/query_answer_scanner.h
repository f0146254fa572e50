// The reader of the answer Prometheus sends to nearly every query: a "success" envelope whose data
// is a vector or matrix of {metric, value|values} objects. One pass over the bytes builds the
// series (no JSON tree, no parser events; label names and values without escapes are read in
// place), at a fraction of a general JSON reader's cost per byte, which at 1,024 nodes is most of
// what diagnose spends on an answer.
//
// It answers only what it is sure of. Whatever lies outside that shape, or that it would have to
// interpret (invalid JSON, errors, a key read twice, a number beyond int64's range, a BOM, nesting
// beyond kMaxScannedDepth), and whatever ends a read (a series or point limit, the deadline), gives
// nullopt, and ParseQueryAnswer's general reader decides what it means and what error to name: the
// scanner never changes an answer, it only reaches the common ones sooner.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/tsdb/prometheus_api.h"

namespace diagnose {

inline constexpr int kMaxScannedDepth = 64;

// An answer exactly as ParseQueryAnswerByEvents would give it (never `fallback`), or nullopt.
std::optional<StreamedQueryAnswer> ScanQueryAnswer(std::string_view body, int64_t max_series, int64_t max_points,
                                                   std::optional<std::chrono::steady_clock::time_point> deadline);

}  // namespace diagnose
