#include "engine/analysis/record_analyses.h"

#include <gtest/gtest.h>

namespace diagnose::analysis {
namespace {

AnalysisInput With(Json input, Json args) {
  AnalysisInput in;
  in.input = std::move(input);
  in.args = std::move(args);
  return in;
}

TEST(SelectRecordsTest, KeepsMatchingRecordsAndTheirHosts) {
  Json classes = Json::parse(R"([
    {"failure_class": "hsa-error", "host": "node-b", "count": 3},
    {"failure_class": "nccl-timeout", "host": "node-a"},
    {"failure_class": "hsa-error", "host": "node-a"},
    {"failure_class": "hsa-error", "host": ""}
  ])");
  auto r = SelectRecords(With(classes, {{"field", "failure_class"}, {"equals", "hsa-error"}}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["count"], 3);
  EXPECT_EQ((*r)["hosts"], Json::parse(R"(["node-a", "node-b"])"));
  EXPECT_EQ((*r)["values"]["node-b"], 3);
  EXPECT_EQ((*r)["values"]["node-a"], 1);
}

TEST(SelectRecordsTest, ComparesNumbersAsText) {
  auto r = SelectRecords(With(Json::parse(R"([{"task": 4, "host": "x"}, {"task": 5, "host": "y"}])"),
                              {{"field", "task"}, {"equals", "5"}}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["hosts"], Json::parse(R"(["y"])"));
}

TEST(SelectRecordsTest, RejectsNonListInputAndMissingField) {
  EXPECT_FALSE(SelectRecords(With(Json::object(), {{"field", "a"}, {"equals", "b"}})).ok());
  EXPECT_FALSE(SelectRecords(With(Json::array(), {{"equals", "b"}})).ok());
  auto empty = SelectRecords(With(Json::array(), {{"field", "a"}, {"equals", "b"}}));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)["count"], 0);
  EXPECT_TRUE((*empty)["hosts"].empty());
}

Json Steps(int first, int last, double normal, std::map<int, double> slow) {
  Json steps = Json::array();
  for (int s = first; s <= last; ++s)
    steps.push_back({{"step", s}, {"seconds", slow.count(s) ? slow[s] : normal + 0.01 * (s % 7)}});
  return steps;
}

TEST(CheckpointStepsTest, SeparatesCheckpointSpikesFromOthers) {
  // Period 50: saves at 0, 50, 100, 150; each save's cost lands in the next step.
  Json steps = Steps(0, 199, 30, {{0, 400}, {1, 260}, {51, 250}, {101, 245}, {151, 255}, {120, 180}});
  auto r = CheckpointSteps(With(Json::array({steps, 50}), Json::object()));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["checkpoint_steps"], Json::parse("[0, 50, 100, 150]"));
  EXPECT_EQ((*r)["max_write_seconds"], 260);
  EXPECT_EQ((*r)["max_write_step"], 0);
  EXPECT_EQ((*r)["expected_spikes"], Json::parse("[51, 101, 151]"));   // 0 and 1 are warm-up
  EXPECT_EQ((*r)["unexpected_spikes"], Json::parse("[120]"));
  EXPECT_NEAR((*r)["median_seconds"].get<double>(), 30.03, 0.05);
}

TEST(CheckpointStepsTest, RestoredRunStartsAtTheFirstLoggedStep) {
  Json steps = Steps(201, 320, 30, {{301, 700}});
  auto r = CheckpointSteps(With(Json::array({steps, 100}), {{"spike_ratio", 5}}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["checkpoint_steps"], Json::parse("[300]"));
  EXPECT_EQ((*r)["write_seconds"]["300"], 700);
  EXPECT_EQ((*r)["unexpected_spikes"], Json::array());
}

TEST(CheckpointStepsTest, ComparesTheLongestWriteWithTheHeartbeatTimeout) {
  Json steps = Steps(0, 230, 30, {{101, 720}, {201, 300}});
  auto r = CheckpointSteps(With(Json::array({steps, 100, "900"}), Json::object()));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["max_write_step"], 100);
  EXPECT_NEAR((*r)["write_fraction"].get<double>(), 0.8, 1e-9);
  EXPECT_EQ((*r)["current_checkpoint"], 200);
  auto unknown = CheckpointSteps(With(Json::array({steps, 100, "soon"}), Json::object()));
  ASSERT_TRUE(unknown.ok());
  EXPECT_TRUE((*unknown)["write_fraction"].is_null());
  EXPECT_TRUE((*unknown)["heartbeat_timeout"].is_null());
}

TEST(CheckpointStepsTest, NoPeriodIsAPrecondition) {
  auto r = CheckpointSteps(With(Json::array({Steps(0, 10, 30, {}), nullptr}), Json::object()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(CheckpointSteps(With(Json::object(), Json::object())).ok());
}

TEST(CheckpointStepsTest, AStepFarBeyondTheOthersCountsOnlyThePeriodsThatHoldRecords) {
  // One log line claiming step 10^12 (or 10^30, past int64): the range to it holds 10^10
  // checkpoints, which used to be enumerated one by one (and `s += period` overflowed near INT64_MAX).
  for (double far : {1e12, 9.2e18, 1e30}) {
    Json steps = Steps(0, 120, 30, {});
    steps.push_back({{"step", far}, {"seconds", 30}});
    auto r = CheckpointSteps(With(Json::array({steps, 50}), Json::object()));
    ASSERT_TRUE(r.ok()) << r.status().message();
    const Json& c = (*r)["checkpoint_steps"];
    ASSERT_EQ(c.size(), 4u) << far;
    EXPECT_EQ(c[0], 0);
    EXPECT_EQ(c[2], 100);
    EXPECT_EQ(c[3].get<int64_t>() % 50, 0);
    EXPECT_GT(c[3].get<int64_t>(), 1000000);
  }
  // A period below one step would divide by zero once truncated.
  auto tiny = CheckpointSteps(With(Json::array({Steps(0, 10, 30, {}), 0.5}), Json::object()));
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ((*tiny)["checkpoint_steps"].size(), 11u);
}

TEST(CheckpointStepsTest, RegisteredUnderTheirNames) {
  ASSERT_NE(FindAnalysis("select_records"), nullptr);
  ASSERT_NE(FindAnalysis("checkpoint_steps"), nullptr);
  EXPECT_EQ(FindAnalysis("checkpoint_steps")->required_inputs, std::vector<std::string>{"input"});
}

}  // namespace
}  // namespace diagnose::analysis
