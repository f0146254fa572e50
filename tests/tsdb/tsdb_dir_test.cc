#include "engine/tsdb/tsdb_dir.h"

#include <gtest/gtest.h>

#include "tests/support/files.h"

namespace diagnose {
namespace {

constexpr double kHour = 3600, kDay = 86400;

BlockMeta Block(const std::string& ulid, double first_s, double last_s) {
  return BlockMeta{.ulid = ulid,
                   .min_time_ms = static_cast<int64_t>(first_s * 1000),
                   .max_time_ms = static_cast<int64_t>(last_s * 1000) + 1};
}

// A job of 4 h ending at t=1000 days: its two blocks, and a block of a job run 400 days earlier.
const double kEnd = 1000 * kDay;
const std::vector<BlockMeta> kShared = {Block("older", kEnd - 400 * kDay - 4 * kHour, kEnd - 400 * kDay),
                                        Block("own-1", kEnd - 4 * kHour, kEnd - 2 * kHour),
                                        Block("own-2", kEnd - 2 * kHour, kEnd - 60)};

TEST(AnchoredRun, WithoutTheRunsLengthTheLoggedSpanIsKept) {
  const LoggedRunSpan logged{.end = kEnd};
  const LoggedRunSpan run = AnchoredRun(kShared, logged);
  EXPECT_EQ(run.start, logged.start);
  for (const auto& block : kShared) EXPECT_FALSE(BlockOutsideRun(block, run)) << block.ulid;
}

TEST(AnchoredRun, TheLengthAnchorsTheStartOnTheNewestBlockSoAnOlderJobsBlockIsOutside) {
  const LoggedRunSpan run = AnchoredRun(kShared, LoggedRunSpan{.end = kEnd, .length_seconds = 4 * kHour});
  EXPECT_DOUBLE_EQ(run.start, kEnd - 60 - 4 * kHour);
  EXPECT_TRUE(BlockOutsideRun(kShared[0], run));
  EXPECT_FALSE(BlockOutsideRun(kShared[1], run));
  EXPECT_FALSE(BlockOutsideRun(kShared[2], run));
}

// A job dir copied months later: the log's mtime (the end) moved, the data did not. The anchor is
// the newest block, so the job's own blocks stay in and only the older job's block is out.
TEST(AnchoredRun, AnEndMovedByACopyStillKeepsTheJobsOwnBlocks) {
  const LoggedRunSpan run = AnchoredRun(kShared, LoggedRunSpan{.end = kEnd + 90 * kDay, .length_seconds = 4 * kHour});
  EXPECT_TRUE(BlockOutsideRun(kShared[0], run));
  EXPECT_FALSE(BlockOutsideRun(kShared[1], run));
  EXPECT_FALSE(BlockOutsideRun(kShared[2], run));
}

// A block written after the run (a node clock a year ahead) is not the anchor: it is outside.
TEST(AnchoredRun, ABlockAfterTheRunIsOutsideAndDoesNotAnchorTheStart) {
  std::vector<BlockMeta> blocks = kShared;
  blocks.push_back(Block("later", kEnd + 365 * kDay, kEnd + 365 * kDay + kHour));
  const LoggedRunSpan run = AnchoredRun(blocks, LoggedRunSpan{.end = kEnd, .length_seconds = 4 * kHour});
  EXPECT_DOUBLE_EQ(run.start, kEnd - 60 - 4 * kHour);
  EXPECT_TRUE(BlockOutsideRun(blocks.back(), run));
  EXPECT_FALSE(BlockOutsideRun(kShared[2], run));
}

// Within a day of the span a block is still the job's: unzoned log stamps move it by hours.
TEST(BlockOutsideRun, ADayOfToleranceEitherSide) {
  const LoggedRunSpan run{.start = kEnd - 4 * kHour, .end = kEnd};
  EXPECT_FALSE(BlockOutsideRun(Block("hours-early", kEnd - 20 * kHour, kEnd - 10 * kHour), run));
  EXPECT_TRUE(BlockOutsideRun(Block("days-early", kEnd - 3 * kDay, kEnd - 2 * kDay), run));
  EXPECT_FALSE(BlockOutsideRun(Block("hours-late", kEnd + 10 * kHour, kEnd + 11 * kHour), run));
  EXPECT_TRUE(BlockOutsideRun(Block("days-late", kEnd + 2 * kDay, kEnd + 3 * kDay), run));
}

// One block whose meta.json a full disk cut short need not hide the rest: with a list to put it on,
// it is named there with the parse error; without one, the listing fails naming the file, as before.
TEST(ListBlockDirs, ADamagedMetaJsonIsListedApartWhenAsked) {
  testing::TempDir dir("diagnose-damaged-block");
  const std::string good = "01KHT7TGZTYY0FESCMG905P98P", damaged = "01KHT7TGZTYY0FESCMG905P98Q";
  testing::WriteFile(dir.path() / good / "meta.json", R"({"ulid":")" + good + R"(","minTime":1000,"maxTime":2001})");
  testing::WriteFile(dir.path() / damaged / "meta.json", R"({"ulid": ")" + damaged + R"(", "minTime": 17714)");
  std::vector<DamagedBlock> left_out;
  auto blocks = ListBlockDirs(dir.path().string(), &left_out);
  ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
  ASSERT_EQ(blocks->size(), 1u);
  EXPECT_EQ((*blocks)[0].ulid, good);
  ASSERT_EQ(left_out.size(), 1u);
  EXPECT_EQ(left_out[0].ulid, damaged);
  EXPECT_NE(left_out[0].why.find(damaged + "/meta.json: not valid JSON"), std::string::npos) << left_out[0].why;
  auto strict = ListBlockDirs(dir.path().string());
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), StatusCode::kDataLoss);
}

TEST(UlidSeconds, TheFirstTenCharactersAreMillisecondsSinceTheEpoch) {
  EXPECT_EQ(UlidSeconds("00000000010000000000000000"), 0.001);
  EXPECT_EQ(UlidSeconds("000000001Z0000000000000000"), 0.063);
  // 8308's block, cut at 2026-02-19T06:01:32.410Z
  EXPECT_NEAR(UlidSeconds("01KHT7TGZTYY0FESCMG905P98P"), 1771480892.410, 0.001);
}

}  // namespace
}  // namespace diagnose
