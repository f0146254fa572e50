#include "engine/dag/range_split.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "engine/core/limits.h"
#include "engine/dag/promql_lexis.h"
#include "engine/dag/subquery_chain.h"
#include "engine/tsdb/http_query_client.h"
#include "engine/tsdb/job_scoped_client.h"

namespace diagnose::dag {

namespace {

// The step as Prometheus reads the API's step parameter (three decimals): float seconds to a
// time.Duration (nanoseconds, truncated), then to the evaluator's milliseconds (truncated).
int64_t StepMillis(double step_seconds) {
  char text[48];
  std::snprintf(text, sizeof text, "%.3f", step_seconds);
  const auto nanos = static_cast<int64_t>(std::strtod(text, nullptr) * 1e9);
  return nanos / 1000000;
}

double SecondsOf(int64_t ms) { return static_cast<double>(ms) / 1000; }

}  // namespace

std::optional<StepGrid> StepGridOf(const Query& range) {
  if (range.kind != Query::Kind::kRange || !std::isfinite(range.start) || !std::isfinite(range.end)) return std::nullopt;
  const double step = ClampRangeStep(range.start, range.end, range.step);
  if (!std::isfinite(step)) return std::nullopt;
  StepGrid grid;
  grid.start_ms = PrometheusMillis(range.start);
  grid.step_ms = StepMillis(step);
  const int64_t end_ms = PrometheusMillis(range.end);
  if (grid.step_ms <= 0 || end_ms < grid.start_ms) return std::nullopt;
  grid.steps = (end_ms - grid.start_ms) / grid.step_ms + 1;
  return grid;
}

bool EvaluatesStepByStep(std::string_view promql) {
  for (size_t i = 0; i < promql.size(); ++i) {
    const char c = promql[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = EndOfPromqlString(promql, i);
      continue;
    }
    if (c != '@') continue;
    size_t j = i + 1;
    while (j < promql.size() && std::isspace(static_cast<unsigned char>(promql[j]))) ++j;
    size_t k = j;
    while (k < promql.size() && IsPromqlNameChar(promql[k])) ++k;
    std::string word(promql.substr(j, k - j));
    std::transform(word.begin(), word.end(), word.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (word == "start" || word == "end") return false;
  }
  return true;
}

std::vector<Query> SplitOnStepGrid(const Query& range, int64_t pieces) {
  const std::optional<StepGrid> grid = StepGridOf(range);
  if (!grid || pieces <= 1 || grid->steps < 2) return {range};
  pieces = std::min(pieces, grid->steps);
  const double step = SecondsOf(grid->step_ms);
  std::vector<Query> out;
  int64_t first = 0;
  for (int64_t p = 0; p < pieces; ++p) {
    // Steps [first, next): the remainder spread over the first pieces.
    const int64_t next = first + grid->steps / pieces + (p < grid->steps % pieces ? 1 : 0);
    Query piece = range;
    piece.start = SecondsOf(grid->start_ms + first * grid->step_ms);
    piece.end = p + 1 == pieces ? range.end : SecondsOf(grid->start_ms + (next - 1) * grid->step_ms);
    piece.step = step;
    out.push_back(std::move(piece));
    first = next;
  }
  return out;
}

StatusOr<QueryResult> JoinRangePieces(std::vector<StatusOr<QueryResult>> pieces) {
  if (pieces.empty()) return InternalError("no pieces to join");
  for (auto& piece : pieces)
    if (!piece.ok()) return piece.status();
  if (pieces.size() == 1) return std::move(pieces.front());
  // Prometheus sorts a matrix by labels.Compare: name, then value, pair by pair, the shorter set first
  // on a tie, bytes compared unsigned; std::map's ordering of its (name, value) pairs is the same.
  std::map<Labels, std::vector<Sample>> by_labels;
  QueryResult joined;
  for (size_t p = 0; p < pieces.size(); ++p) {
    QueryResult& piece = *pieces[p];
    if (p == 0) {
      joined.result_type = piece.result_type;
      joined.effective_step = piece.effective_step;
    }
    for (auto& s : piece.series) {
      auto [it, fresh] = by_labels.try_emplace(std::move(s.labels));
      if (fresh) it->second = std::move(s.samples);
      else it->second.insert(it->second.end(), s.samples.begin(), s.samples.end());
    }
    MergeWarnings(piece.warnings, &joined.warnings);
    // The pieces are in flight together: the wall time is the longest one's.
    joined.elapsed_seconds = std::max(joined.elapsed_seconds, piece.elapsed_seconds);
    joined.attempts = std::max(joined.attempts, piece.attempts);
  }
  if (static_cast<int64_t>(by_labels.size()) > GetLimit(LimitId::kHttpSeriesPerQuery))
    return LimitExceeded(LimitId::kHttpSeriesPerQuery, "an answer of " + std::to_string(by_labels.size()) + " series");
  joined.series.clear();
  joined.series.reserve(by_labels.size());
  int64_t points = 0;
  for (auto it = by_labels.begin(); it != by_labels.end();) {
    auto node = by_labels.extract(it++);
    points += static_cast<int64_t>(node.mapped().size());
    joined.series.push_back(Series{std::move(node.key()), std::move(node.mapped())});
  }
  if (points > GetLimit(LimitId::kHttpPointsPerQuery))
    return LimitExceeded(LimitId::kHttpPointsPerQuery,
                         "an answer of more than " + std::to_string(GetLimit(LimitId::kHttpPointsPerQuery)) + " points");
  return joined;
}

int64_t PiecesFor(int64_t series_samples_per_step, int64_t steps, const RangeSplitPolicy& policy) {
  const int64_t min_steps = std::max<int64_t>(1, policy.min_steps_per_piece);
  const int64_t budget = std::max<int64_t>(1, policy.max_samples_per_request);
  if (series_samples_per_step <= 0 || steps < 2 * min_steps) return 1;
  // series x steps / budget, rounded up, without the product overflowing.
  const long double samples = static_cast<long double>(series_samples_per_step) * static_cast<long double>(steps);
  const auto wanted = static_cast<int64_t>(std::min<long double>(std::ceil(samples / budget), static_cast<long double>(steps)));
  return std::clamp<int64_t>(wanted, 1, steps / min_steps);
}

namespace {

// The plan of one batch: which questions go in how many pieces, and what each estimate cost.
class SplitPlanner {
 public:
  SplitPlanner(QueryClient& client, const RangeSplitPolicy& policy) : client_(client), policy_(policy) {}

  // How many series each distinct selector of the batch's questions long enough to be split matches
  // over its question's range, asked together: one after the other they held the whole wave back.
  void Estimate(const std::vector<Query>& queries) {
    std::vector<SeriesQuestion> questions;
    std::vector<Selection> asked;
    for (const Query& q : queries) {
      if (!Splittable(q)) continue;
      auto selectors = VectorSelectorsOf(q.promql);
      if (!selectors.ok()) continue;
      for (const std::string& selector : *selectors) {
        Selection key{selector, q.start, q.end};
        if (!matched_.try_emplace(key, std::nullopt).second) continue;
        questions.push_back({{selector}, q.start, q.end});
        asked.push_back(std::move(key));
      }
    }
    if (questions.empty()) return;
    lookups_ += static_cast<int>(questions.size());
    const std::vector<StatusOr<int64_t>> counts = client_.SeriesCountsForEstimate(questions);
    for (size_t i = 0; i < asked.size() && i < counts.size(); ++i)
      if (counts[i].ok()) matched_[asked[i]] = *counts[i];
  }

  // The question's pieces (itself when it is not split), each with its estimate.
  std::vector<Query> Plan(const Query& q) {
    if (!Splittable(q)) return {q};
    const std::optional<int64_t> series = SeriesRead(q);
    if (!series) return {q};
    const std::optional<StepGrid> grid = StepGridOf(q);
    const int64_t pieces = PiecesFor(*series, grid->steps, policy_);
    std::vector<Query> out = SplitOnStepGrid(q, pieces);
    for (Query& piece : out) {
      const std::optional<StepGrid> piece_grid = StepGridOf(piece);
      piece.estimated_samples = *series * (piece_grid ? piece_grid->steps : grid->steps);
    }
    return out;
  }

  int lookups() const { return lookups_; }

 private:
  using Selection = std::tuple<std::string, double, double>;   // selector, start, end

  bool Splittable(const Query& q) const {
    const std::optional<StepGrid> grid = StepGridOf(q);
    return grid && grid->steps >= 2 * policy_.min_steps_per_piece && EvaluatesStepByStep(q.promql);
  }

  // Series the question's selectors match over its range, a selector read twice counted twice;
  // nullopt when a look-up failed or the text has no selector.
  std::optional<int64_t> SeriesRead(const Query& q) const {
    auto selectors = VectorSelectorsOf(q.promql);
    if (!selectors.ok() || selectors->empty()) return std::nullopt;
    int64_t total = 0;
    for (const std::string& selector : *selectors) {
      auto it = matched_.find(Selection{selector, q.start, q.end});
      if (it == matched_.end() || !it->second) return std::nullopt;
      total += *it->second;
    }
    return total;
  }

  QueryClient& client_;
  const RangeSplitPolicy& policy_;
  std::map<Selection, std::optional<int64_t>> matched_;
  int lookups_ = 0;
};

}  // namespace

SplitBatchAnswers RunBatchSplittingRanges(QueryClient& client, const std::vector<Query>& queries,
                                          const RangeSplitPolicy& policy) {
  SplitPlanner planner(client, policy);
  planner.Estimate(queries);
  std::vector<Query> sent;
  std::vector<size_t> first_piece, piece_count;
  for (const Query& q : queries) {
    std::vector<Query> pieces = planner.Plan(q);
    first_piece.push_back(sent.size());
    piece_count.push_back(pieces.size());
    sent.insert(sent.end(), std::make_move_iterator(pieces.begin()), std::make_move_iterator(pieces.end()));
  }
  std::vector<StatusOr<QueryResult>> fetched = client.RunBatch(sent);
  SplitBatchAnswers out;
  out.requests = static_cast<int>(sent.size()) + planner.lookups();
  for (size_t i = 0; i < queries.size(); ++i) {
    std::vector<StatusOr<QueryResult>> pieces;
    for (size_t p = first_piece[i]; p < first_piece[i] + piece_count[i]; ++p)
      pieces.push_back(p < fetched.size() ? std::move(fetched[p]) : StatusOr<QueryResult>(InternalError("no result")));
    out.answers.push_back(JoinRangePieces(std::move(pieces)));
  }
  return out;
}

}  // namespace diagnose::dag
