// `--job-label NAME`: a store holding many jobs (VictoriaMetrics, Thanos, Mimir after a fleet
// import) tells them apart by one label. Every selector of every request is narrowed to the job
// before it leaves, so no playbook needs to know which store it runs against.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/tsdb/query_client.h"

namespace diagnose {

// Adds `matcher` (a complete, escaped `name="value"`) to every vector selector of `promql`:
// `up` -> `up{m}`, `up{job="ray"}` -> `up{job="ray",m}`, `{__name__=~"x"}` -> `{__name__=~"x",m}`.
// Function and aggregation names, label lists (by, without, on, ignoring, group_left/right),
// keywords, strings, numbers, durations and range/subquery brackets are left alone.
// kInvalidArgument when the text ends inside a string, brace, bracket or parenthesis.
StatusOr<std::string> AddMatcherToSelectors(std::string_view promql, std::string_view matcher);

// The vector selectors of `promql` as written, in order, each as often as it appears (`up`,
// `up{job="ray"}`, `{__name__=~"x"}`): what AddMatcherToSelectors narrows, read by the same scanner.
StatusOr<std::vector<std::string>> VectorSelectorsOf(std::string_view promql);

// `name="value"` with the value escaped; kInvalidArgument unless `name` is a label name.
StatusOr<std::string> JobMatcher(std::string_view name, std::string_view value);

class JobScopedClient : public QueryClient {
 public:
  // `matcher` from JobMatcher.
  JobScopedClient(QueryClient& inner, std::string matcher) : inner_(inner), matcher_(std::move(matcher)) {}

  StatusOr<QueryResult> Run(const Query& query) override;
  std::vector<StatusOr<QueryResult>> RunBatch(const std::vector<Query>& queries) override;
  StatusOr<std::vector<std::string>> LabelValues(const std::string& label, const std::vector<std::string>& matchers,
                                                 double start, double end) override;
  std::vector<StatusOr<std::vector<std::string>>> LabelValuesBatch(
      const std::vector<LabelValuesQuestion>& questions) override;
  // Each question scoped; one that cannot be scoped is refused, the others sent together.
  std::vector<StatusOr<int64_t>> SeriesCountsForEstimate(const std::vector<SeriesQuestion>& questions) override;
  StatusOr<std::vector<Labels>> SeriesMatching(const std::vector<std::string>& matchers, double start,
                                               double end) override;
  std::string Describe() const override { return inner_.Describe() + " where " + matcher_; }
  // `X > 3` scoped is `X scoped > 3`: answers derived from one another stay consistent.
  bool EvaluatesPromql() const override { return inner_.EvaluatesPromql(); }

 private:
  StatusOr<std::vector<std::string>> Scoped(const std::vector<std::string>& matchers) const;
  // A label-values or series question with its matchers scoped.
  template <typename Question>
  StatusOr<Question> WithScopedMatchers(const Question& question) const;
  QueryClient& inner_;
  std::string matcher_;
};

}  // namespace diagnose
