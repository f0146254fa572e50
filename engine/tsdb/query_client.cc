#include "engine/tsdb/query_client.h"

namespace diagnose {

Query Query::Instant(std::string promql, double time, std::string id) {
  Query q;
  q.kind = Kind::kInstant;
  q.promql = std::move(promql);
  q.time = time;
  q.id = std::move(id);
  return q;
}

Query Query::Range(std::string promql, double start, double end, double step, std::string id) {
  Query q;
  q.kind = Kind::kRange;
  q.promql = std::move(promql);
  q.start = start;
  q.end = end;
  q.step = step;
  q.id = std::move(id);
  return q;
}

std::vector<StatusOr<QueryResult>> QueryClient::RunBatch(const std::vector<Query>& queries) {
  std::vector<StatusOr<QueryResult>> results;
  results.reserve(queries.size());
  for (const auto& q : queries) results.push_back(Run(q));
  return results;
}

std::vector<StatusOr<std::vector<std::string>>> QueryClient::LabelValuesBatch(
    const std::vector<LabelValuesQuestion>& questions) {
  std::vector<StatusOr<std::vector<std::string>>> results;
  results.reserve(questions.size());
  for (const auto& q : questions) results.push_back(LabelValues(q.label, q.matchers, q.start, q.end));
  return results;
}

std::vector<StatusOr<int64_t>> QueryClient::SeriesCountsForEstimate(const std::vector<SeriesQuestion>& questions) {
  std::vector<StatusOr<int64_t>> counts;
  counts.reserve(questions.size());
  for (const auto& q : questions) {
    auto series = SeriesMatching(q.matchers, q.start, q.end);
    if (series.ok()) counts.emplace_back(static_cast<int64_t>(series->size()));
    else counts.emplace_back(series.status());
  }
  return counts;
}

}  // namespace diagnose
