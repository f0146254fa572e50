// Range questions asked in pieces on their step grid (engine/dag/range_split.h): the grid the pieces
// cover, the join of their answers, the estimate that decides it and what is sent, with a fake client.
#include "engine/dag/range_split.h"

#include <cmath>
#include <limits>
#include <map>

#include <gtest/gtest.h>

#include "engine/core/limits.h"
#include "tests/dag/query_results.h"
#include "tests/support/table_query_client.h"

namespace diagnose::dag {
namespace {

Series SeriesOf(Labels labels, std::vector<Sample> samples) { return Series{std::move(labels), std::move(samples)}; }

// The steps a set of pieces covers, as the server reads them, in order.
std::vector<int64_t> StepsOf(const std::vector<Query>& pieces) {
  std::vector<int64_t> out;
  for (const Query& p : pieces) {
    const auto grid = StepGridOf(p);
    EXPECT_TRUE(grid);
    if (!grid) continue;
    for (int64_t i = 0; i < grid->steps; ++i) out.push_back(grid->start_ms + i * grid->step_ms);
  }
  return out;
}

TEST(RangeSplitTest, PiecesCoverTheWholeGridInOrderEachStepOnce) {
  // A start and an end off the step grid, with milliseconds: the last step lies before the end.
  const Query whole = Query::Range("sum(rate(x[2m]))", 1771480892.123, 1771566624.553, 30, "r");
  const std::vector<int64_t> expected = StepsOf({whole});
  ASSERT_EQ(expected.size(), 2858u);
  for (int64_t pieces : {2, 3, 7, 2858}) {
    const std::vector<Query> split = SplitOnStepGrid(whole, pieces);
    ASSERT_EQ(static_cast<int64_t>(split.size()), pieces);
    EXPECT_EQ(StepsOf(split), expected) << pieces << " pieces";
    EXPECT_EQ(split.back().end, whole.end);
    for (const Query& p : split) {
      EXPECT_EQ(p.promql, whole.promql);
      EXPECT_EQ(p.id, whole.id);
      EXPECT_EQ(p.step, 30);
    }
  }
  // Never more pieces than steps; one piece is the question itself.
  EXPECT_EQ(SplitOnStepGrid(Query::Range("x", 0, 60, 30), 10).size(), 3u);
  const std::vector<Query> one = SplitOnStepGrid(whole, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].start, whole.start);
  EXPECT_EQ(SplitOnStepGrid(Query::Instant("x", 100), 4).size(), 1u);
}

TEST(RangeSplitTest, PiecesKeepTheStepTheClientWouldHaveClamped) {
  // 200,000 s at a 1 s step is past 11,000 steps: the client raises the step to 19 s for the whole,
  // so every piece is asked at 19 s from the same start, not at the 1 s each piece alone would keep.
  const Query whole = Query::Range("x", 1000, 201000, 1);
  const auto grid = StepGridOf(whole);
  ASSERT_TRUE(grid);
  EXPECT_EQ(grid->step_ms, 19000);
  const std::vector<Query> split = SplitOnStepGrid(whole, 4);
  for (const Query& p : split) EXPECT_EQ(p.step, 19);
  EXPECT_EQ(StepsOf(split), StepsOf({whole}));
}

TEST(RangeSplitTest, OnlyTheQuerysOwnRangeKeepsItWhole) {
  EXPECT_TRUE(EvaluatesStepByStep("sum by (host) (rate(x[2m]))"));
  EXPECT_TRUE(EvaluatesStepByStep("x @ 1771480892"));
  EXPECT_TRUE(EvaluatesStepByStep("max_over_time(rate(x[1m])[10m:30s])"));
  EXPECT_TRUE(EvaluatesStepByStep("timestamp(x)"));
  EXPECT_TRUE(EvaluatesStepByStep("x{note=\"@ start()\"}"));   // inside a string
  EXPECT_FALSE(EvaluatesStepByStep("x @ start()"));
  EXPECT_FALSE(EvaluatesStepByStep("rate(x[5m] @ end())"));
  EXPECT_FALSE(EvaluatesStepByStep("x @START()"));
}

TEST(RangeSplitTest, JoinPutsPiecesEndToEndInPrometheusOrder) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Labels a{{"host", "a"}}, b{{"host", "b"}}, c{{"host", "c"}}, a_gpu{{"gpu", "0"}, {"host", "a"}};
  std::vector<StatusOr<QueryResult>> pieces;
  // b only in the first piece, c only in the last, `a` in both with a NaN; {gpu=0, host=a} before
  // {host=a}, as Prometheus compares label names first ("gpu" < "host").
  pieces.push_back(Matrix({SeriesOf(a, {{0, 1}, {30, nan}}), SeriesOf(b, {{0, 5}})}));
  pieces.push_back(Matrix({}));   // an empty middle piece
  pieces.push_back(Matrix({SeriesOf(a_gpu, {{90, 7}}), SeriesOf(a, {{60, 2}}), SeriesOf(c, {{90, 3}})}));
  pieces[0]->warnings = {"partial", "slow"};
  pieces[2]->warnings = {"slow", "late"};
  pieces[0]->effective_step = pieces[2]->effective_step = 30;
  const StatusOr<QueryResult> joined = JoinRangePieces(std::move(pieces));
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->result_type, "matrix");
  EXPECT_EQ(joined->effective_step, 30);
  EXPECT_EQ(joined->warnings, (std::vector<std::string>{"partial", "slow", "late"}));
  ASSERT_EQ(joined->series.size(), 4u);
  EXPECT_EQ(joined->series[0].labels, a_gpu);
  EXPECT_EQ(joined->series[1].labels, a);
  EXPECT_EQ(joined->series[2].labels, b);
  EXPECT_EQ(joined->series[3].labels, c);
  const PointList a_points = Points(joined->series[1].samples);
  ASSERT_EQ(a_points.size(), 3u);
  EXPECT_EQ(a_points[0], std::make_pair(0.0, 1.0));
  EXPECT_EQ(a_points[1].first, 30);
  EXPECT_TRUE(std::isnan(a_points[1].second));
  EXPECT_EQ(a_points[2], std::make_pair(60.0, 2.0));
  EXPECT_EQ(Points(joined->series[2].samples), (PointList{{0, 5}}));
  EXPECT_EQ(Points(joined->series[3].samples), (PointList{{90, 3}}));
}

TEST(RangeSplitTest, JoinOfOnePointPerPieceAndOfEmptyPieces) {
  std::vector<StatusOr<QueryResult>> pieces;
  for (double t : {0.0, 30.0, 60.0}) pieces.push_back(Matrix({SeriesOf({{"host", "a"}}, {{t, t}})}));
  auto joined = JoinRangePieces(std::move(pieces));
  ASSERT_TRUE(joined.ok());
  ASSERT_EQ(joined->series.size(), 1u);
  EXPECT_EQ(Points(joined->series[0].samples), (PointList{{0, 0}, {30, 30}, {60, 60}}));

  std::vector<StatusOr<QueryResult>> empty;
  empty.push_back(Matrix({}));
  empty.push_back(Matrix({}));
  auto none = JoinRangePieces(std::move(empty));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->result_type, "matrix");
  EXPECT_TRUE(none->series.empty());
}

TEST(RangeSplitTest, JoinFailsAsTheFirstFailedPieceAndKeepsTheAnswerLimits) {
  std::vector<StatusOr<QueryResult>> pieces;
  pieces.push_back(Matrix({SeriesOf({{"host", "a"}}, {{0, 1}})}));
  pieces.push_back(StatusOr<QueryResult>(InvalidArgumentError("many-to-many matching not allowed")));
  pieces.push_back(StatusOr<QueryResult>(UnavailableError("refused")));
  auto failed = JoinRangePieces(std::move(pieces));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);

  ScopedLimit points(LimitId::kHttpPointsPerQuery, 2);
  std::vector<StatusOr<QueryResult>> large;
  large.push_back(Matrix({SeriesOf({{"host", "a"}}, {{0, 1}, {30, 1}})}));
  large.push_back(Matrix({SeriesOf({{"host", "a"}}, {{60, 1}})}));
  auto over = JoinRangePieces(std::move(large));
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("points"), std::string::npos);
}

TEST(RangeSplitTest, PiecesFollowTheEstimateAndTheShortestPiece) {
  const RangeSplitPolicy policy{1'000'000, 240};
  EXPECT_EQ(PiecesFor(1150, 2858, policy), 4);    // 3.29 M samples
  EXPECT_EQ(PiecesFor(300, 2858, policy), 1);     // 0.86 M: within the budget
  EXPECT_EQ(PiecesFor(100000, 2858, policy), 11);   // never a piece under 240 steps
  EXPECT_EQ(PiecesFor(100000, 479, policy), 1);   // too short to split at all
  EXPECT_EQ(PiecesFor(0, 2858, policy), 1);
  EXPECT_EQ(PiecesFor(int64_t{1} << 62, int64_t{1} << 40, policy), (int64_t{1} << 40) / 240);   // no overflow
}

// Answers each question with one series per step of its range: value = the step's time, labels by
// the question's text; counts the series look-ups.
class GridClient : public testing::QueryOnlyClient {
 public:
  int64_t series_per_selector = 0;
  int lookups = 0;
  std::vector<std::vector<Query>> batches;
  std::vector<std::vector<std::string>> looked_up;

  StatusOr<QueryResult> Run(const Query& q) override {
    const auto grid = StepGridOf(q);
    if (!grid) return InvalidArgumentError("not a range");
    Series s{{{"q", q.promql}}, {}};
    for (int64_t i = 0; i < grid->steps; ++i) {
      const double t = static_cast<double>(grid->start_ms + i * grid->step_ms) / 1000;
      s.samples.push_back({t, t});
    }
    return Matrix({s});
  }
  std::vector<StatusOr<QueryResult>> RunBatch(const std::vector<Query>& qs) override {
    batches.push_back(qs);
    return QueryClient::RunBatch(qs);
  }
  StatusOr<std::vector<Labels>> SeriesMatching(const std::vector<std::string>& matchers, double, double) override {
    ++lookups;
    looked_up.push_back(matchers);
    if (series_per_selector < 0) return UnavailableError("no series API");
    return std::vector<Labels>(static_cast<size_t>(series_per_selector), Labels{});
  }
};

TEST(RangeSplitTest, BatchSplitsOnlyWhatTheEstimateExceedsAndAnswersAsOneRequest) {
  GridClient client;
  client.series_per_selector = 600;
  const double start = 1771480892, end = 1771566624.553;
  const std::vector<Query> asked = {
      Query::Range("sum by (host) (rate(a[2m])) and on (host) count_over_time(b{type=\"x\"}[2m])", start, end, 30),
      Query::Range("rate(a[2m])", start, end, 300),      // 286 steps: too short to split, not estimated
      Query::Range("rate(a[2m] @ end())", start, end, 30),   // names its range: whole, not estimated
      Query::Instant("rate(a[2m])", end),
  };
  const SplitBatchAnswers split = RunBatchSplittingRanges(client, asked, {1'000'000, 240});
  // Two selectors of 600 series over 2,858 steps: 3.43 M samples, 4 pieces.
  ASSERT_EQ(client.batches.size(), 1u);
  EXPECT_EQ(client.batches[0].size(), 4u + 3u);
  EXPECT_EQ(client.lookups, 2);
  EXPECT_EQ(client.looked_up[0], std::vector<std::string>{"a"});
  EXPECT_EQ(client.looked_up[1], std::vector<std::string>{"b{type=\"x\"}"});
  EXPECT_EQ(split.requests, 7 + 2);
  int64_t estimated = 0;
  for (size_t i = 0; i < 4; ++i) estimated += client.batches[0][i].estimated_samples;
  EXPECT_EQ(estimated, 1200 * 2858);
  EXPECT_EQ(client.batches[0][4].estimated_samples, 0);
  ASSERT_EQ(split.answers.size(), asked.size());
  for (size_t i = 0; i < 3; ++i) {
    auto whole = client.Run(asked[i]);
    ASSERT_TRUE(split.answers[i].ok() && whole.ok());
    ASSERT_EQ(split.answers[i]->series.size(), 1u);
    EXPECT_EQ(Points(split.answers[i]->series[0].samples), Points(whole->series[0].samples)) << asked[i].promql;
  }
  EXPECT_FALSE(split.answers[3].ok());   // the fake's own answer to an instant question, passed on
}

TEST(RangeSplitTest, AFailedLookUpLeavesTheQuestionWhole) {
  GridClient client;
  client.series_per_selector = -1;
  const SplitBatchAnswers split =
      RunBatchSplittingRanges(client, {Query::Range("rate(a[2m])", 0, 86400, 30)}, {1'000'000, 240});
  ASSERT_EQ(client.batches.size(), 1u);
  EXPECT_EQ(client.batches[0].size(), 1u);
  EXPECT_EQ(split.requests, 2);
  ASSERT_TRUE(split.answers[0].ok());
  EXPECT_EQ(split.answers[0]->series[0].samples.size(), 2881u);
}

// Counts series per selector from a table, and records each batch of look-ups it is sent.
class SeriesCountTableClient : public GridClient {
 public:
  std::map<std::string, StatusOr<int64_t>> series_of;   // selector -> count (or failure)
  std::vector<std::vector<SeriesQuestion>> lookup_batches;
  std::vector<StatusOr<int64_t>> SeriesCountsForEstimate(const std::vector<SeriesQuestion>& questions) override {
    lookup_batches.push_back(questions);
    std::vector<StatusOr<int64_t>> out;
    for (const auto& q : questions) {
      auto it = series_of.find(q.matchers.front());
      out.push_back(it == series_of.end() ? StatusOr<int64_t>(NotFoundError("unknown")) : it->second);
    }
    return out;
  }
};

// Every look-up of a batch is one call (the client sends them together), each distinct selector and
// range once; a failed look-up leaves the questions reading that selector whole and no other.
TEST(RangeSplitTest, TheBatchsLookUpsGoTogetherAndAFailureLeavesOnlyItsQuestionsWhole) {
  SeriesCountTableClient client;
  client.series_of.emplace("a", int64_t{600});
  client.series_of.emplace("b", int64_t{800});
  client.series_of.emplace("c", UnavailableError("series API down"));
  const double start = 1771480892, end = 1771566624.553;
  const std::vector<Query> asked = {
      Query::Range("rate(a[2m]) + rate(b[2m])", start, end, 30),   // 1,400 series x 2,858 steps: 5 pieces
      Query::Range("max(b)", start, end, 30),                      // 800 x 2,858: 3 pieces
      Query::Range("rate(c[2m]) and a", start, end, 30),            // c failed: whole
      Query::Range("a", start, end - 3600, 30),                    // another range, asked again: 2 pieces
  };
  const SplitBatchAnswers split = RunBatchSplittingRanges(client, asked, {1'000'000, 240});
  ASSERT_EQ(client.lookup_batches.size(), 1u);
  std::vector<std::string> selectors;
  for (const auto& q : client.lookup_batches[0]) selectors.push_back(q.matchers.front());
  EXPECT_EQ(selectors, (std::vector<std::string>{"a", "b", "c", "a"}));
  EXPECT_EQ(client.lookup_batches[0][3].end, end - 3600);
  EXPECT_EQ(client.lookups, 0) << "counted, not listed";
  ASSERT_EQ(client.batches.size(), 1u);
  EXPECT_EQ(client.batches[0].size(), 5u + 3u + 1u + 2u);
  EXPECT_EQ(split.requests, 11 + 4);
  for (size_t i = 0; i < asked.size(); ++i) {
    auto whole = client.Run(asked[i]);
    ASSERT_TRUE(split.answers[i].ok() && whole.ok());
    EXPECT_EQ(Points(split.answers[i]->series[0].samples), Points(whole->series[0].samples)) << asked[i].promql;
  }
}

}  // namespace
}  // namespace diagnose::dag
