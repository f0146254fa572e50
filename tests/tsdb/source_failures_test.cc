#include "engine/tsdb/source_failures.h"

#include <gtest/gtest.h>

#include "tests/support/table_query_client.h"

namespace diagnose {
namespace {

// Answers a label's values with the label itself; `unreachable` and `refused` fail as a dead
// endpoint and as a bad question would.
class LabelEchoClient : public testing::QueryOnlyClient {
 public:
  int asked = 0;
  StatusOr<QueryResult> Run(const Query&) override { return QueryResult{}; }
  StatusOr<std::vector<std::string>> LabelValues(const std::string& label, const std::vector<std::string>&, double,
                                                 double) override {
    ++asked;
    if (label == "unreachable") return UnavailableError("connection refused");
    if (label == "refused") return InvalidArgumentError("bad matcher");
    return std::vector<std::string>{label};
  }
};

std::vector<LabelValuesQuestion> Questions(const std::vector<std::string>& labels) {
  std::vector<LabelValuesQuestion> questions;
  for (const auto& l : labels) questions.push_back({l, {}, 0, 1});
  return questions;
}

// A batch reads as the same questions asked one at a time would: after the first source failure
// the later answers are "not asked" and not counted as requests, whatever the endpoint said.
TEST(SourceFailureRecorderTest, ABatchOfLabelValuesTripsAsQuestionsAskedInOrderWould) {
  LabelEchoClient inner;
  SourceFailureRecorder recorder(inner);
  auto answers = recorder.LabelValuesBatch(Questions({"host", "refused", "instance", "unreachable", "ip", "job"}));
  ASSERT_EQ(answers.size(), 6u);
  EXPECT_EQ(*answers[0], std::vector<std::string>{"host"});
  EXPECT_EQ(answers[1].status().code(), StatusCode::kInvalidArgument);   // the question's fault: no trip
  EXPECT_EQ(*answers[2], std::vector<std::string>{"instance"});
  EXPECT_EQ(answers[3].status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(answers[3].status().message(), "connection refused");
  for (size_t i = 4; i < answers.size(); ++i) {
    EXPECT_EQ(answers[i].status().code(), StatusCode::kUnavailable);
    EXPECT_NE(answers[i].status().message().find("not asked"), std::string::npos) << answers[i].status().message();
  }
  EXPECT_EQ(recorder.requests(), 4);
  EXPECT_EQ(recorder.failures(), 1);
  EXPECT_EQ(recorder.first_failure(), "connection refused");
  // Tripped: the next batch is not sent at all.
  inner.asked = 0;
  auto later = recorder.LabelValuesBatch(Questions({"host", "ip"}));
  EXPECT_EQ(inner.asked, 0);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_FALSE(later[0].ok());
  EXPECT_FALSE(later[1].ok());
}

// A series look-up that only sizes another question (range_split.h) is neither a request nor a
// failure of the source: the diagnosis stays complete when it fails, and later questions are asked.
TEST(SourceFailureRecorderTest, AFailedEstimateIsNotASourceFailure) {
  class RefusingSeries : public testing::QueryOnlyClient {
   public:
    StatusOr<QueryResult> Run(const Query&) override { return QueryResult{}; }
    StatusOr<std::vector<Labels>> SeriesMatching(const std::vector<std::string>&, double, double) override {
      return UnavailableError("series API down");
    }
  } inner;
  SourceFailureRecorder recorder(inner);
  const auto counts = recorder.SeriesCountsForEstimate({{{"up"}, 0, 1}, {{"down"}, 0, 1}});
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_FALSE(counts[0].ok());
  EXPECT_FALSE(counts[1].ok());
  EXPECT_EQ(recorder.requests(), 0);
  EXPECT_EQ(recorder.failures(), 0);
  EXPECT_TRUE(recorder.Run(Query{}).ok()) << "not tripped";
  EXPECT_FALSE(recorder.SeriesMatching({"up"}, 0, 1).ok());
  EXPECT_EQ(recorder.failures(), 1) << "the same look-up asked for its answer is a failure";
  // Tripped: estimates are not asked either, each refused in its place.
  const auto later = recorder.SeriesCountsForEstimate({{{"up"}, 0, 1}, {{"down"}, 0, 1}});
  ASSERT_EQ(later.size(), 2u);
  EXPECT_NE(later[1].status().message().find("not asked"), std::string::npos) << later[1].status().ToString();
}

}  // namespace
}  // namespace diagnose
