// The incremental follower: header, labelled step lines, JOB SUMMARY, partial lines, offsets.

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/watch/log_follow.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

class FollowTest : public ::testing::Test {
 protected:
  void Append(const std::string& text) {
    std::ofstream out(path_, std::ios::app | std::ios::binary);
    out << text;
  }
  testing::TempDir dir_{"follow-test"};
  const std::string path_ = dir_ / "9805-JAX-grok-1.log";
};

std::string Step(int task, int step, double tgs, const std::string& label_pad = "") {
  return label_pad + std::to_string(task) + ": completed step: " + std::to_string(step) +
         ", seconds: 30.309, TFLOP/s/device: 207.973, MFU: 8.32%, Tokens/s/device: " + std::to_string(tgs) +
         ", total_weights: 4194304, loss: 7.123\n";
}

TEST_F(FollowTest, HeaderStepsAndSummary) {
  Append(
      "JOB_ID=9805\nJOB_NAME=JAX-grok-1\nNNODES=2\nJOB_NODELIST=gpu[101-102]\nJAX_COORDINATOR_PORT=23456\n"
      "PASSTHROUGH_ARGS=\"per_device_batch_size=8 steps=15\"\nMODEL_NAME=grok-1\n"
      "0: JOB_ID=should-not-override\n0: MODEL_NAME=other\n");
  LogFollower f(path_);
  auto polled = f.Poll();
  ASSERT_TRUE(polled.ok());
  EXPECT_FALSE(*polled);
  EXPECT_EQ(f.progress().job_id, "9805");
  EXPECT_EQ(f.progress().model, "grok-1");
  EXPECT_EQ(f.progress().nnodes, 2);
  EXPECT_EQ(f.progress().hosts, (std::vector<std::string>{"gpu101", "gpu102"}));
  EXPECT_EQ(f.progress().passthrough, "per_device_batch_size=8 steps=15");

  for (int s = 0; s < 15; ++s) Append(Step(0, s, s < 5 ? 100 : 2000 + s) + Step(1, s, 1));
  polled = f.Poll();
  ASSERT_TRUE(polled.ok());
  EXPECT_TRUE(*polled);
  EXPECT_EQ(f.progress().last_step, 14);
  EXPECT_EQ(f.progress().steady_steps, 10);
  EXPECT_DOUBLE_EQ(f.progress().steady_tgs_sum / 10, 2009.5);
  EXPECT_EQ(f.offset(), fs::file_size(path_));
  // Nothing new: no progress.
  polled = f.Poll();
  EXPECT_FALSE(*polled);

  Append(
      "========================== JOB SUMMARY ==========================\n  Job:    9805 (JAX-grok-1)\n"
      "  Model:  grok-1\n  Nodes:  2\n  Wall:   5m 3s\n"
      "  Status: \x1b[31mFAILED (exit 143) \xE2\x80\x94 CANCELLED (scancel / SIGTERM)\x1b(B\x1b[m\n"
      "=================================================================\n");
  polled = f.Poll();
  EXPECT_TRUE(*polled);
  EXPECT_TRUE(f.progress().summary_seen);
  EXPECT_EQ(f.progress().summary_status, "FAILED");
  EXPECT_EQ(f.progress().exit_code, 143);
  EXPECT_EQ(f.progress().reason.rfind("CANCELLED", 0), 0u) << f.progress().reason;
}

TEST_F(FollowTest, PartialLineIsCountedOnceWhenCompleted) {
  const std::string line = Step(0, 7, 1000);
  Append(line.substr(0, 20));
  LogFollower f(path_);
  ASSERT_TRUE(f.Poll().ok());
  EXPECT_FALSE(f.progress().last_step);
  Append(line.substr(20));
  auto polled = f.Poll();
  EXPECT_TRUE(*polled);
  EXPECT_EQ(f.progress().last_step, 7);
  EXPECT_EQ(f.progress().step_lines, 1);
}

TEST_F(FollowTest, WideLabelsRayPrefixAndK8sUnlabelled) {
  Append(" 8: completed step: 3, seconds: 1.0, TFLOP/s/device: 1.0, Tokens/s/device: 5.0, total_weights: 1, loss: 1\n");
  Append("0: \x1b[36m(MaxTextTrainerActor pid=123)\x1b[0m completed step: 4, seconds: 1.0, Tokens/s/device: 5.0\n");
  Append("completed step: 5, seconds: 1.0, TFLOP/s/device: 1.0, Tokens/s/device: 5.0, total_weights: 1, loss: 1\n");
  LogFollower f(path_);
  ASSERT_TRUE(f.Poll().ok());
  EXPECT_EQ(f.progress().last_step, 5);
  EXPECT_EQ(f.progress().step_lines, 3);
}

TEST_F(FollowTest, NoiseIsNotProgressAndOverlongLinesAreBounded) {
  Append(Step(0, 1, 10));
  LogFollower f(path_);
  ASSERT_TRUE(f.Poll().ok());
  Append("gpu101:1:2 [0] NCCL WARN Timeout\n" + std::string(300000, 'x') + "\n");
  auto polled = f.Poll();
  EXPECT_FALSE(*polled);
  EXPECT_EQ(f.progress().last_step, 1);
}

TEST_F(FollowTest, VanishedLogIsNotFound) {
  Append(Step(0, 1, 10));
  LogFollower f(path_);
  ASSERT_TRUE(f.Poll().ok());
  fs::remove(path_);
  auto polled = f.Poll();
  ASSERT_FALSE(polled.ok());
  EXPECT_EQ(polled.status().code(), StatusCode::kNotFound);
}

TEST(Passthrough, Split) {
  auto kv = SplitPassthrough("steps=15 _env_XLA_FLAGS=\"--a --b\" flag");
  ASSERT_EQ(kv.size(), 3u);
  EXPECT_EQ(kv[1].first, "_env_XLA_FLAGS");
  EXPECT_EQ(kv[1].second, "--a --b");
  EXPECT_EQ(kv[2].first, "flag");
}

}  // namespace
}  // namespace diagnose
