#include "engine/tsdb/source_failures.h"

namespace diagnose {

bool IsSourceFailure(const Status& status) {
  switch (status.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kParse:
    case StatusCode::kPermissionDenied:
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kDataLoss:
    case StatusCode::kInternal:
    // One of diagnose's own bounds (an answer past http.response_bytes, more series or points than
    // allowed): the answer was not read, so nothing it would have said is known about the job.
    case StatusCode::kResourceExhausted:
      return true;
    default:
      return false;
  }
}

void SourceFailureRecorder::Record(const Status& status) {
  ++requests_;
  if (status.ok() || !IsSourceFailure(status)) return;
  if (status.code() == StatusCode::kResourceExhausted) limit_hit_ = true;
  if (failures_++ == 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    first_failure_ = status.message();
  }
}

Status SourceFailureRecorder::TrippedError() const {
  return UnavailableError("not asked: " + Describe() + " failed earlier (" + first_failure() + ")");
}

StatusOr<QueryResult> SourceFailureRecorder::Run(const Query& query) {
  if (Tripped()) return TrippedError();
  auto result = inner_.Run(query);
  Record(result.status());
  return result;
}

std::vector<StatusOr<QueryResult>> SourceFailureRecorder::RunBatch(const std::vector<Query>& queries) {
  if (Tripped()) return std::vector<StatusOr<QueryResult>>(queries.size(), TrippedError());
  auto results = inner_.RunBatch(queries);
  for (const auto& r : results) Record(r.status());
  return results;
}

StatusOr<std::vector<std::string>> SourceFailureRecorder::LabelValues(const std::string& label,
                                                                      const std::vector<std::string>& matchers,
                                                                      double start, double end) {
  if (Tripped()) return TrippedError();
  auto result = inner_.LabelValues(label, matchers, start, end);
  Record(result.status());
  return result;
}

std::vector<StatusOr<std::vector<std::string>>> SourceFailureRecorder::LabelValuesBatch(
    const std::vector<LabelValuesQuestion>& questions) {
  if (Tripped()) return std::vector<StatusOr<std::vector<std::string>>>(questions.size(), TrippedError());
  auto results = inner_.LabelValuesBatch(questions);
  for (auto& r : results) {
    if (Tripped()) {
      r = TrippedError();
      continue;
    }
    Record(r.status());
  }
  return results;
}

StatusOr<std::vector<Labels>> SourceFailureRecorder::SeriesMatching(const std::vector<std::string>& matchers,
                                                                   double start, double end) {
  if (Tripped()) return TrippedError();
  auto result = inner_.SeriesMatching(matchers, start, end);
  Record(result.status());
  return result;
}

std::vector<StatusOr<int64_t>> SourceFailureRecorder::SeriesCountsForEstimate(
    const std::vector<SeriesQuestion>& questions) {
  if (Tripped()) return std::vector<StatusOr<int64_t>>(questions.size(), TrippedError());
  return inner_.SeriesCountsForEstimate(questions);
}

std::string SourceFailureRecorder::first_failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_failure_;
}

std::string SourceFailureRecorder::Summary() const {
  return std::to_string(failures()) + " of " + std::to_string(requests()) + " requests to " + Describe() +
         " failed; first: " + first_failure();
}

}  // namespace diagnose
