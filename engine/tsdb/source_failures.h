// A failed request says something about the metrics source (unreachable, dead, answering garbage)
// or about the query (bad PromQL). Only the latter is the playbook's business; the former is the
// tool's own failure and must never be read as a fact about the job (a dead private server is not
// "no GPU power"). SourceFailureRecorder sits between the engine and its QueryClient and keeps count.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/tsdb/query_client.h"

namespace diagnose {

// Unreachable, timed out, refused credentials, a wrong path, a body that is not the API's JSON,
// an answer past one of diagnose's own limits (engine/core/limits.h): the source failed. kInvalidArgument (bad_data, execution errors) is the query's own fault.
bool IsSourceFailure(const Status& status);

// After the first source failure it stops asking (a circuit breaker): the diagnosis is incomplete
// from then on whatever else is answered, and a dead or hanging endpoint would otherwise cost
// every remaining request its timeout and retries.
class SourceFailureRecorder : public QueryClient {
 public:
  explicit SourceFailureRecorder(QueryClient& inner) : inner_(inner) {}

  StatusOr<QueryResult> Run(const Query& query) override;
  std::vector<StatusOr<QueryResult>> RunBatch(const std::vector<Query>& queries) override;
  StatusOr<std::vector<std::string>> LabelValues(const std::string& label, const std::vector<std::string>& matchers,
                                                 double start, double end) override;
  // Sent together, but recorded as if asked in order: after the first source failure the later
  // questions read "not asked", as one at a time they would have been.
  std::vector<StatusOr<std::vector<std::string>>> LabelValuesBatch(
      const std::vector<LabelValuesQuestion>& questions) override;
  // Not recorded: a failed estimate leaves a question whole (range_split.h), the diagnosis complete.
  std::vector<StatusOr<int64_t>> SeriesCountsForEstimate(const std::vector<SeriesQuestion>& questions) override;
  StatusOr<std::vector<Labels>> SeriesMatching(const std::vector<std::string>& matchers, double start,
                                               double end) override;
  std::string Describe() const override { return inner_.Describe(); }
  bool EvaluatesPromql() const override { return inner_.EvaluatesPromql(); }

  int requests() const { return requests_.load(); }
  int failures() const { return failures_.load(); }
  std::string first_failure() const;   // empty when none
  // A failure was one of diagnose's own limits: asking again (a restarted server) would hit it again.
  bool limit_hit() const { return limit_hit_.load(); }
  // "3 of 41 requests to <source> failed; first: <message>"
  std::string Summary() const;

 private:
  void Record(const Status& status);
  bool Tripped() const { return failures_.load() > 0; }
  Status TrippedError() const;
  QueryClient& inner_;
  std::atomic<int> requests_{0};
  std::atomic<int> failures_{0};
  std::atomic<bool> limit_hit_{false};
  mutable std::mutex mutex_;
  std::string first_failure_;
};

}  // namespace diagnose
