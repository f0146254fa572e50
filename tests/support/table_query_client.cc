#include "tests/support/table_query_client.h"

namespace diagnose::testing {

StatusOr<QueryResult> TableQueryClient::Run(const Query& q) {
  for (const auto& [needle, msg] : errors)
    if (q.promql.find(needle) != std::string::npos) return InvalidArgumentError(msg);
  QueryResult r;
  for (const auto& [needle, series] : answers)
    if (q.promql.find(needle) != std::string::npos) r.series = series;
  return r;
}

std::vector<StatusOr<QueryResult>> TableQueryClient::RunBatch(const std::vector<Query>& qs) {
  batches.push_back(qs);
  return QueryClient::RunBatch(qs);
}

StatusOr<std::vector<std::string>> TableQueryClient::LabelValues(const std::string&, const std::vector<std::string>&,
                                                                 double, double) {
  return std::vector<std::string>{};
}

StatusOr<std::vector<Labels>> TableQueryClient::SeriesMatching(const std::vector<std::string>&, double, double) {
  return std::vector<Labels>{};
}

}  // namespace diagnose::testing
