// A query client for evaluation tests: answers from a table keyed by a substring of the PromQL,
// fails the queries matching `errors`, and records every batch it was sent.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/tsdb/query_client.h"

namespace diagnose::testing {

// A client whose tests ask only queries: the metadata calls find nothing.
class QueryOnlyClient : public QueryClient {
 public:
  StatusOr<std::vector<std::string>> LabelValues(const std::string&, const std::vector<std::string>&, double,
                                                 double) override {
    return std::vector<std::string>{};
  }
  StatusOr<std::vector<Labels>> SeriesMatching(const std::vector<std::string>&, double, double) override {
    return std::vector<Labels>{};
  }
  std::string Describe() const override { return "fake"; }
};

class TableQueryClient : public QueryClient {
 public:
  std::map<std::string, std::vector<Series>> answers;
  std::map<std::string, std::string> errors;
  std::vector<std::vector<Query>> batches;

  StatusOr<QueryResult> Run(const Query& q) override;
  std::vector<StatusOr<QueryResult>> RunBatch(const std::vector<Query>& qs) override;
  StatusOr<std::vector<std::string>> LabelValues(const std::string&, const std::vector<std::string>&, double,
                                                 double) override;
  StatusOr<std::vector<Labels>> SeriesMatching(const std::vector<std::string>&, double, double) override;
  std::string Describe() const override { return "table"; }
};

}  // namespace diagnose::testing
