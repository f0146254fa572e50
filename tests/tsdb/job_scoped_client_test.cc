#include "engine/tsdb/job_scoped_client.h"

#include <gtest/gtest.h>

#include "tests/support/table_query_client.h"

#include <string>
#include <utility>
#include <vector>

namespace diagnose {
namespace {

constexpr char kM[] = R"(slurm_job_id="8308")";

std::string Scoped(const std::string& promql) {
  auto out = AddMatcherToSelectors(promql, kM);
  EXPECT_TRUE(out.ok()) << promql << ": " << out.status().ToString();
  return out.ok() ? *out : "";
}

TEST(AddMatcherToSelectorsTest, EverySelectorAndNothingElse) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"up", R"(up{slurm_job_id="8308"})"},
      {R"(up{job="ray"})", R"(up{job="ray",slurm_job_id="8308"})"},
      {R"(count(up{job="ray",}))", R"(count(up{job="ray",slurm_job_id="8308"}))"},
      {R"({__name__=~"a|b"})", R"({__name__=~"a|b",slurm_job_id="8308"})"},
      {"up {}", R"(up {slurm_job_id="8308"})"},
      {R"(sum by (host) (rate(node_x_total{device!~"lo"}[5m])))",
       R"(sum by (host) (rate(node_x_total{device!~"lo",slurm_job_id="8308"}[5m])))"},
      {"sum(rate(x[5m])) by (host)", R"(sum(rate(x{slurm_job_id="8308"}[5m])) by (host))"},
      {"SUM BY (h) (x) AND y", R"(SUM BY (h) (x{slurm_job_id="8308"}) AND y{slurm_job_id="8308"})"},
      {"a / on(host) group_left(gpu) b",
       R"(a{slurm_job_id="8308"} / on(host) group_left(gpu) b{slurm_job_id="8308"})"},
      {"a * ignoring(x) group_right c", R"(a{slurm_job_id="8308"} * ignoring(x) group_right c{slurm_job_id="8308"})"},
      {"max_over_time(x[1h:5m]) > bool 0.5", R"(max_over_time(x{slurm_job_id="8308"}[1h:5m]) > bool 0.5)"},
      {"x offset 5m", R"(x{slurm_job_id="8308"} offset 5m)"},
      {"x @ 1771490000", R"(x{slurm_job_id="8308"} @ 1771490000)"},
      {"x @ start()", R"(x{slurm_job_id="8308"} @ start())"},
      {R"(label_replace(up, "host", "$1", "instance", "(.*):.*"))",
       R"(label_replace(up{slurm_job_id="8308"}, "host", "$1", "instance", "(.*):.*"))"},
      {"1e-3 * x + NaN - Inf", R"(1e-3 * x{slurm_job_id="8308"} + NaN - Inf)"},
      {"vector(1) or time()", "vector(1) or time()"},
      {"topk(3, x) unless on() y", R"(topk(3, x{slurm_job_id="8308"}) unless on() y{slurm_job_id="8308"})"},
      {R"(x{a="}{\"", b=`]`})", R"(x{a="}{\"", b=`]`,slurm_job_id="8308"})"},
      {"max(timestamp(hw_scrape_duration_seconds)) or max(timestamp(up{job=\"ray\"}))",
       R"(max(timestamp(hw_scrape_duration_seconds{slurm_job_id="8308"})) or max(timestamp(up{job="ray",slurm_job_id="8308"})))"},
      {"quantile(0.5, job:rate5m)", R"(quantile(0.5, job:rate5m{slurm_job_id="8308"}))"},
      {"count_values(\"v\", x) # a comment with up", R"(count_values("v", x{slurm_job_id="8308"}) # a comment with up)"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(Scoped(in), want) << in;
}

TEST(AddMatcherToSelectorsTest, UnterminatedTextIsRefused) {
  for (const std::string bad : {R"(up{job="ray")", R"(up{job="ray)", "rate(x[5m)", "`raw"}) {
    auto out = AddMatcherToSelectors(bad, kM);
    ASSERT_FALSE(out.ok()) << bad << " -> " << *out;
    EXPECT_NE(out.status().message().find("the query ends inside"), std::string::npos) << out.status().message();
  }
}

TEST(VectorSelectorsOfTest, EachSelectorAsWrittenAsOftenAsItIsRead) {
  using Selectors = std::vector<std::string>;
  const std::vector<std::pair<std::string, Selectors>> cases = {
      {"sum by (host, instance) (rate(hw_rdma_rx_cnp_pkts_total[2m]))", {"hw_rdma_rx_cnp_pkts_total"}},
      {R"(min by (host) (avg_over_time(hw_gpu_clock_mhz{type="sclk"}[2m])))", {R"(hw_gpu_clock_mhz{type="sclk"})"}},
      {"max by (h) (changes(p[15m])) and on (h) (min by (h) (count_over_time(p[15m])))", {"p", "p"}},
      {R"({__name__=~"a|b", job="ray" })", {R"({__name__=~"a|b", job="ray"})"}},
      {"a / on(host) group_left(gpu) b offset 5m", {"a", "b"}},
      {"max_over_time(rate(x[1m])[10m:30s]) @ 1771490000", {"x"}},
      {R"(x{a="}{\"", b=`]`})", {R"(x{a="}{\"", b=`]`})"}},
      {"vector(1) or time()", {}},
  };
  for (const auto& [in, want] : cases) {
    auto got = VectorSelectorsOf(in);
    ASSERT_TRUE(got.ok()) << in << ": " << got.status().ToString();
    EXPECT_EQ(*got, want) << in;
  }
  EXPECT_FALSE(VectorSelectorsOf(R"(up{job="ray")").ok());
}

TEST(JobMatcherTest, EscapesTheValueAndChecksTheName) {
  auto m = JobMatcher("slurm_job_id", "a\"b\\c\n");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, R"(slurm_job_id="a\"b\\c\n")");
  for (const std::string bad : {"", "1x", "a-b", "job:id", "a b"}) EXPECT_FALSE(JobMatcher(bad, "1").ok()) << bad;
}

// Records the label-value questions it is sent, as one batch.
class LabelBatchRecorder : public testing::QueryOnlyClient {
 public:
  std::vector<std::vector<LabelValuesQuestion>> batches;
  StatusOr<QueryResult> Run(const Query&) override { return QueryResult{}; }
  std::vector<StatusOr<std::vector<std::string>>> LabelValuesBatch(
      const std::vector<LabelValuesQuestion>& questions) override {
    batches.push_back(questions);
    return std::vector<StatusOr<std::vector<std::string>>>(questions.size(), std::vector<std::string>{"v"});
  }
};

TEST(JobScopedClientTest, ABatchOfLabelValuesIsScopedAndSentTogether) {
  LabelBatchRecorder inner;
  JobScopedClient scoped(inner, R"(slurm_job_id="8308")");
  auto answers = scoped.LabelValuesBatch({{"host", {}, 1, 2}, {"instance", {"up{job=\"ray\"}"}, 1, 2},
                                          {"ip", {"up{"}, 1, 2}});   // unterminated: refused, not sent
  ASSERT_EQ(inner.batches.size(), 1u);
  ASSERT_EQ(inner.batches[0].size(), 2u);
  EXPECT_EQ(inner.batches[0][0].matchers, std::vector<std::string>{R"({slurm_job_id="8308"})"});
  EXPECT_EQ(inner.batches[0][1].matchers, std::vector<std::string>{R"(up{job="ray",slurm_job_id="8308"})"});
  EXPECT_EQ(inner.batches[0][1].label, "instance");
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_TRUE(answers[0].ok());
  EXPECT_TRUE(answers[1].ok());
  EXPECT_EQ(answers[2].status().code(), StatusCode::kInvalidArgument);
}

// Records the series look-ups it is sent, as one batch, and counts each question's matchers.
class SeriesCountRecorder : public testing::QueryOnlyClient {
 public:
  std::vector<std::vector<SeriesQuestion>> batches;
  StatusOr<QueryResult> Run(const Query&) override { return QueryResult{}; }
  std::vector<StatusOr<int64_t>> SeriesCountsForEstimate(const std::vector<SeriesQuestion>& questions) override {
    batches.push_back(questions);
    std::vector<StatusOr<int64_t>> out;
    for (const auto& q : questions) out.emplace_back(static_cast<int64_t>(q.matchers.size()));
    return out;
  }
};

TEST(JobScopedClientTest, EstimatesAreScopedAndSentTogether) {
  SeriesCountRecorder inner;
  JobScopedClient scoped(inner, R"(slurm_job_id="8308")");
  auto counts = scoped.SeriesCountsForEstimate({{{"rate(a[2m])"}, 1, 2}, {{"up{"}, 1, 2}, {{"b", "c"}, 3, 4}});
  ASSERT_EQ(inner.batches.size(), 1u);
  ASSERT_EQ(inner.batches[0].size(), 2u);
  EXPECT_EQ(inner.batches[0][0].matchers, std::vector<std::string>{R"(rate(a{slurm_job_id="8308"}[2m]))"});
  EXPECT_EQ(inner.batches[0][1].matchers,
            (std::vector<std::string>{R"(b{slurm_job_id="8308"})", R"(c{slurm_job_id="8308"})"}));
  EXPECT_EQ(inner.batches[0][1].start, 3);
  EXPECT_EQ(inner.batches[0][1].end, 4);
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_EQ(*counts[0], 1);
  EXPECT_EQ(counts[1].status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*counts[2], 2);
}

}  // namespace
}  // namespace diagnose
