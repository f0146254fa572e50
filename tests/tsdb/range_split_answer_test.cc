// Range questions asked in pieces on their step grid (engine/dag/range_split.h) against Prometheus'
// answer to the whole question, on the shared 24-host job: the same series in the same order, the
// same times, the same values bit for bit (NaN, a host's gap, a series that ends mid-range, a
// subquery, timestamp(), `@`, absent()).
#include "engine/dag/range_split.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/tsdb/same_answer.h"

namespace diagnose {
namespace {

using dag::JoinRangePieces;
using dag::RunBatchSplittingRanges;
using dag::SplitOnStepGrid;
using nlohmann::json;

using RangeSplitAnswerTest = testing::SharedJobPrometheusTest;

void ExpectSameMatrix(const QueryResult& joined, const QueryResult& whole, const std::string& what) {
  EXPECT_EQ(joined.result_type, whole.result_type) << what;
  EXPECT_EQ(joined.warnings, whole.warnings) << what;
  ASSERT_EQ(joined.series.size(), whole.series.size()) << what;
  for (size_t i = 0; i < whole.series.size(); ++i) {
    const auto& j = joined.series[i];
    const auto& w = whole.series[i];
    ASSERT_EQ(json(j.labels).dump(), json(w.labels).dump()) << what << ": series " << i;
    ASSERT_EQ(j.samples.size(), w.samples.size()) << what << ": " << json(w.labels).dump();
    for (size_t k = 0; k < w.samples.size(); ++k) {
      EXPECT_EQ(j.samples[k].t, w.samples[k].t) << what;
      EXPECT_TRUE(testing::SameValue(j.samples[k].v, w.samples[k].v))
          << what << " " << json(w.labels).dump() << " at " << w.samples[k].t << ": pieces " << j.samples[k].v
          << ", whole " << w.samples[k].v;
    }
  }
}

TEST_F(RangeSplitAnswerTest, PiecesPutEndToEndArePrometheusAnswerToTheWhole) {
  QueryClient& client = server_->client();
  const double start = end_ - 2 * 3600 + 0.25;   // milliseconds off the scrape times
  const std::vector<std::string> questions = {
      "sum by (host) (rate(hw_rdma_tx_retx_pkts_total[2m]))",
      "hw_gpu_temperature_celsius",   // chi2805's gap: series with holes
      "(hw_gpu_temperature_celsius - 60) / (hw_gpu_temperature_celsius - 60)",   // NaN where it is 60
      "tb_step",   // ends when training stops: points in the first pieces only
      "max_over_time(rate(hw_rdma_tx_retx_pkts_total[1m])[10m:45s])",
      "timestamp(hw_gpu_power_watts)",
      "hw_gpu_power_watts @ " + std::to_string(static_cast<int64_t>(end_) - 3600),
      "absent(no_such_metric)",
      "count_over_time(ray_node_gpus_utilization[5m]) > 9",
  };
  int compared = 0;
  for (const std::string& promql : questions) {
    for (double step : {30.0, 7.0}) {
      const Query whole = Query::Range(promql, start, end_, step);
      auto asked = client.Run(whole);
      ASSERT_TRUE(asked.ok()) << promql << ": " << asked.status().ToString();
      for (int64_t pieces : {2, 3, 7}) {
        const std::vector<Query> split = SplitOnStepGrid(whole, pieces);
        ASSERT_EQ(static_cast<int64_t>(split.size()), pieces);
        auto joined = JoinRangePieces(client.RunBatch(split));
        ASSERT_TRUE(joined.ok()) << promql << ": " << joined.status().ToString();
        ExpectSameMatrix(*joined, *asked, promql + " step " + std::to_string(step) + " in " + std::to_string(pieces));
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 54);
}

TEST_F(RangeSplitAnswerTest, TheBatchSplitsWhatItsEstimateExceedsAndAnswersTheSame) {
  QueryClient& client = server_->client();
  const std::vector<Query> questions = {
      Query::Range("sum by (host) (rate(hw_gpu_power_watts[2m]))", end_ - 7200, end_, 12),
      Query::Range("hw_gpu_temperature_celsius", end_ - 7200, end_, 15),
  };
  // 24 hosts' GPUs over 600 and 480 steps: both past a budget of 10,000 samples, pieces of 100 steps.
  const dag::SplitBatchAnswers split = RunBatchSplittingRanges(client, questions, {10'000, 100});
  EXPECT_EQ(split.requests, 6 + 4 + 2);   // pieces, and one series look-up per selector
  ASSERT_EQ(split.answers.size(), questions.size());
  for (size_t i = 0; i < questions.size(); ++i) {
    auto whole = client.Run(questions[i]);
    ASSERT_TRUE(whole.ok() && split.answers[i].ok());
    ExpectSameMatrix(*split.answers[i], *whole, questions[i].promql);
  }
}

}  // namespace
}  // namespace diagnose
