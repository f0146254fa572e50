// Answers built by hand for the engine-side PromQL readers' tests, and their samples as comparable pairs.
#pragma once

#include <utility>
#include <vector>

#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

inline QueryResult AnswerOfType(const char* result_type, std::vector<Series> series) {
  QueryResult r;
  r.result_type = result_type;
  r.series = std::move(series);
  return r;
}
inline QueryResult Vector(std::vector<Series> series) { return AnswerOfType("vector", std::move(series)); }
inline QueryResult Matrix(std::vector<Series> series) { return AnswerOfType("matrix", std::move(series)); }

// A series' samples as (time, value) pairs.
using PointList = std::vector<std::pair<double, double>>;
inline PointList Points(const std::vector<Sample>& samples) {
  PointList out;
  for (const auto& s : samples) out.emplace_back(s.t, s.v);
  return out;
}

}  // namespace diagnose::dag
