// Range questions too large for one request, asked as consecutive pieces on the same step grid
// (issue 36). Prometheus holds a range query's matrices whole while it evaluates it: `sum by (host)
// (rate(x[2m]))` over 24 h at a 30 s step keeps every series of x at every step, 3.3 M samples at 128
// nodes, and three such queries in flight took the private server's Go heap to its 1 GiB limit.
// Asked as pieces [start, start+k*step-step], [start+k*step, ...], ... the server evaluates exactly the
// same steps (Prometheus 2.42 evaluates a range query at start + i*step, each step reading only its
// own window; a subquery's inner grid is aligned to absolute time, not to the query's start), so the
// pieces' answers put end to end are the answer, sample for sample, in a fraction of the memory.
// Not split: `@ start()` and `@ end()`, which name the query's own range.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

struct RangeSplitPolicy {
  // Estimated samples (series the query's selectors match over its range x its steps, summed over its
  // selectors) above which a range question is split, into pieces of at most this many each.
  int64_t max_samples_per_request = 1'000'000;
  // No piece has fewer steps: a shorter piece costs the server more in per-request work (index look-ups,
  // chunks decoded twice at the seams) than it saves. A question of fewer than twice as many steps is
  // never estimated (no series look-up is sent for it).
  int64_t min_steps_per_piece = 240;
};

// The steps of a range query as Prometheus evaluates it: start, start + step, ... up to end, in the
// milliseconds it reads from the times the HTTP client sends (three decimals), with the step the client
// sends (ClampRangeStep: never more than 11,000 steps).
struct StepGrid {
  int64_t start_ms = 0;
  int64_t step_ms = 0;
  int64_t steps = 0;
};
std::optional<StepGrid> StepGridOf(const Query& range);

// Whether each step of a range query over `promql` depends on that step alone: false when the text
// names the query's range (`@ start()`, `@ end()`), outside string literals.
bool EvaluatesStepByStep(std::string_view promql);

// `range` as `pieces` consecutive range queries covering its grid's steps in order (as evenly as the
// steps allow), each on the same grid; the last ends where `range` ends. One piece (or a question that
// is not a range with a grid) is the question itself.
std::vector<Query> SplitOnStepGrid(const Query& range, int64_t pieces);

// The pieces' answers, in order, put end to end: each label set once, in Prometheus' order of a matrix
// (sorted by labels), its samples in piece order; warnings once each, in the order first given. The
// first failed piece's status when any failed; the answer limits (http.series_per_query,
// http.points_per_query) hold for the whole as for one answer.
StatusOr<QueryResult> JoinRangePieces(std::vector<StatusOr<QueryResult>> pieces);

// How many pieces a range question of `steps` steps whose selectors match `series_samples_per_step`
// series (summed over its selectors) is asked in under `policy`: 1 when it is within the budget.
int64_t PiecesFor(int64_t series_samples_per_step, int64_t steps, const RangeSplitPolicy& policy);

struct SplitBatchAnswers {
  std::vector<StatusOr<QueryResult>> answers;   // one per question, in order
  int requests = 0;                              // sent: pieces, and the series look-ups of the estimates
};
// client.RunBatch(queries) with every range question whose estimate exceeds the policy asked in pieces
// (Query::estimated_samples set on each, for the client's bound on samples in flight). The estimate
// asks the series API once per distinct selector of a question long enough to be split, every
// look-up of the batch together (QueryClient::SeriesCountsForEstimate); a look-up that fails leaves
// its questions whole.
SplitBatchAnswers RunBatchSplittingRanges(QueryClient& client, const std::vector<Query>& queries,
                                          const RangeSplitPolicy& policy = {});

}  // namespace diagnose::dag
