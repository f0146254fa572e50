#include "engine/tsdb/block_writer.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "engine/core/subprocess.h"
#include "engine/tsdb/tsdb_dir.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
constexpr double kStart = 1771891200;  // 2026-02-24T00:00:00Z

class BlockWriterTestBase : public ::testing::Test {
 protected:
  virtual BlockEncoder Encoder() const = 0;

  BlockWriteOptions Options(const std::string& name = "tsdb") {
    BlockWriteOptions options;
    options.encoder = Encoder();
    options.output_dir = dir_ + "/" + name;
    options.scratch_dir = dir_;
    return options;
  }

  // promtool's own view of the blocks, via a copy because `tsdb dump` needs and creates wal/.
  std::string Dump(const std::string& tsdb) {
    const std::string copy = dir_ + "/dump-copy";
    fs::remove_all(copy);
    fs::copy(tsdb, copy, fs::copy_options::recursive);
    fs::create_directories(copy + "/wal");
    auto r = RunCommand({"promtool", "tsdb", "dump", copy}, std::chrono::seconds(60));
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->output : "";
  }

  testing::TempDir scratch_{"block-writer-test"};
  const std::string dir_ = scratch_.path().string();
};

// What both encoders do alike.
class BlockWriterTest : public BlockWriterTestBase, public ::testing::WithParamInterface<BlockEncoder> {
 protected:
  BlockEncoder Encoder() const override { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Encoders, BlockWriterTest, ::testing::Values(BlockEncoder::kNative, BlockEncoder::kPromtool),
                         [](const auto& info) { return info.param == BlockEncoder::kNative ? "native" : "promtool"; });

// The promtool encoder's scratch files, batches and runs.
class PromtoolBlockWriterTest : public BlockWriterTestBase {
 protected:
  BlockEncoder Encoder() const override { return BlockEncoder::kPromtool; }
};

class NativeBlockWriterTest : public BlockWriterTestBase {
 protected:
  BlockEncoder Encoder() const override { return BlockEncoder::kNative; }
};

Series MakeSeries(Labels labels, int n, double step, double start = kStart) {
  Series s;
  s.labels = std::move(labels);
  for (int i = 0; i < n; ++i) s.samples.push_back({start + i * step, static_cast<double>(i)});
  return s;
}

TEST_P(BlockWriterTest, CountsAreVerifiedAgainstBlockMeta) {
  std::vector<Series> series;
  for (int h = 0; h < 3; ++h) {
    series.push_back(MakeSeries({{"__name__", "hw_gpu_temp_celsius"}, {"host", "node" + std::to_string(h)},
                                 {"gpu", "0"}}, 720, 10));
  }
  auto stats = WriteBlocks(series, Options());
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->series, 3);
  EXPECT_EQ(stats->samples_written, 3 * 720);
  EXPECT_EQ(stats->samples_in_blocks, 3 * 720);
  EXPECT_EQ(stats->duplicates_dropped, 0);
  EXPECT_GE(stats->blocks, 1);
  EXPECT_GT(stats->bytes, 0);
  auto blocks = ListBlockDirs(Options().output_dir);
  ASSERT_TRUE(blocks.ok());
  EXPECT_EQ(blocks->front().min_time_ms, static_cast<int64_t>(kStart) * 1000);
  EXPECT_EQ(blocks->back().max_time_ms, static_cast<int64_t>(kStart + 719 * 10) * 1000 + 1);
  // The scratch OpenMetrics files and their private dir are removed.
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    EXPECT_NE(e.path().extension(), ".om") << e.path();
    EXPECT_NE(e.path().filename().string().rfind("diagnose-blocks-", 0), 0u) << e.path();
  }
}

TEST_P(BlockWriterTest, UnsortedAndDuplicateSamplesStillGiveExactCounts) {
  // 7000 descending samples cross promtool's 5000-sample commit batch: unsorted input would fail
  // there, and inside a batch it would be silently dropped.
  Series s;
  s.labels = {{"__name__", "tb_step"}, {"host", "a"}};
  for (int i = 6999; i >= 0; --i) s.samples.push_back({kStart + i, static_cast<double>(i)});
  for (int i = 0; i < 100; ++i) s.samples.push_back({kStart + i * 7, -1});  // duplicates of existing times
  std::shuffle(s.samples.begin(), s.samples.end(), std::mt19937(42));
  auto stats = WriteBlocks({s}, Options());
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->samples_written, 7000);
  EXPECT_EQ(stats->duplicates_dropped, 100);
  EXPECT_EQ(stats->samples_in_blocks, 7000);
}

TEST_P(BlockWriterTest, SubSecondTimestampsKeepMillisecondPrecision) {
  Series s;
  s.labels = {{"__name__", "x"}};
  s.samples = {{kStart + 0.25, 1}, {kStart + 0.5, 2}, {kStart + 0.2504, 3}};  // third rounds onto the first
  auto stats = WriteBlocks({s}, Options());
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->samples_in_blocks, 2);
  EXPECT_EQ(stats->duplicates_dropped, 1);
  auto blocks = ListBlockDirs(Options().output_dir);
  ASSERT_TRUE(blocks.ok());
  EXPECT_EQ(blocks->front().min_time_ms, static_cast<int64_t>(kStart) * 1000 + 250);
}

TEST_P(BlockWriterTest, EscapedLabelValuesSurvive) {
  Series s = MakeSeries({{"__name__", "weird"}, {"host", "q\"b\\c\nd"}, {"utf8", "Grüße"}}, 5, 10);
  s.samples.push_back({kStart + 100, std::nan("")});
  s.samples.push_back({kStart + 110, INFINITY});
  s.samples.push_back({kStart + 120, 1.5e-7});
  auto stats = WriteBlocks({s}, Options());
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->samples_in_blocks, 8);
  const std::string dump = Dump(Options().output_dir);
  EXPECT_NE(dump.find(R"(host="q\"b\\c\nd")"), std::string::npos) << dump;
  EXPECT_NE(dump.find("Grüße"), std::string::npos) << dump;
  EXPECT_NE(dump.find("+Inf"), std::string::npos) << dump;
  EXPECT_NE(dump.find("1.5e-07"), std::string::npos) << dump;
}

TEST_P(BlockWriterTest, SplitPiecesOfOneSeriesAreMergedByWriteBlocks) {
  Labels labels = {{"__name__", "x"}, {"host", "a"}};
  auto stats = WriteBlocks({MakeSeries(labels, 10, 10), MakeSeries(labels, 10, 10, kStart + 5)}, Options());
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->series, 1);
  EXPECT_EQ(stats->samples_in_blocks, 20);
}

TEST_P(BlockWriterTest, IncrementalWriterRefusesTheSameSeriesTwice) {
  BlockWriter writer(Options());
  Labels labels = {{"__name__", "x"}, {"host", "a"}};
  ASSERT_TRUE(writer.Add(MakeSeries(labels, 10, 10)).ok());
  Status again = writer.Add(MakeSeries(labels, 10, 10));
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("host=\"a\""), std::string::npos);
}

TEST_P(BlockWriterTest, InvalidNamesAreRejectedBeforePromtool) {
  BlockWriter writer(Options());
  EXPECT_EQ(writer.Add(MakeSeries({{"__name__", "x"}, {"gpu-id", "0"}}, 3, 1)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(writer.Add(MakeSeries({{"__name__", "x.y"}}, 3, 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writer.Add(MakeSeries({{"host", "a"}}, 3, 1)).code(), StatusCode::kInvalidArgument);
  auto empty = writer.Finish();
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);  // nothing valid was added
}

TEST_P(BlockWriterTest, IncrementalWriterStreamsManySeriesIntoExistingDir) {
  // Two writers into one dir: the second verifies only the blocks it added.
  ASSERT_TRUE(WriteBlocks({MakeSeries({{"__name__", "first"}}, 100, 60)}, Options()).ok());
  BlockWriter writer(Options());
  int64_t expected = 0;
  for (int h = 0; h < 24; ++h) {
    for (int g = 0; g < 8; ++g) {
      Series s = MakeSeries({{"__name__", "hw_gpu_power_watts"}, {"host", "h" + std::to_string(h)},
                             {"gpu", std::to_string(g)}}, 1000, 10);
      expected += 1000;
      ASSERT_TRUE(writer.Add(std::move(s)).ok());
    }
  }
  auto stats = writer.Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->series, 24 * 8);
  EXPECT_EQ(stats->samples_in_blocks, expected);
  auto blocks = ListBlockDirs(Options().output_dir);
  ASSERT_TRUE(blocks.ok());
  int64_t total = 0;
  for (const auto& b : *blocks) total += b.num_samples;
  EXPECT_EQ(total, expected + 100);
}


TEST_F(PromtoolBlockWriterTest, LargeWritesAreSplitIntoSeveralPromtoolRunsOfWholeSeries) {
  // A budget below two series forces one promtool run per series: the runs' blocks overlap in time
  // and each holds whole series, and promtool's own dump still sees every sample exactly once.
  BlockWriteOptions options = Options();
  options.max_samples_per_promtool_run = 150;
  BlockWriter writer(options);
  for (int h = 0; h < 4; ++h) {
    ASSERT_TRUE(writer.Add(MakeSeries({{"__name__", "hw_gpu_power_watts"}, {"host", "h" + std::to_string(h)}}, 100,
                                      10)).ok());
  }
  auto stats = writer.Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->promtool_runs, 4);
  EXPECT_EQ(stats->samples_written, 400);
  EXPECT_EQ(stats->samples_in_blocks, 400);
  EXPECT_EQ(stats->blocks, 4);
  const std::string dump = Dump(options.output_dir);
  for (int h = 0; h < 4; ++h) {
    const std::string series = "host=\"h" + std::to_string(h) + "\"";
    size_t count = 0;
    for (size_t at = dump.find(series); at != std::string::npos; at = dump.find(series, at + 1)) ++count;
    EXPECT_EQ(count, 100u) << series;
  }
  for (const auto& e : fs::recursive_directory_iterator(dir_)) EXPECT_NE(e.path().extension(), ".om") << e.path();
}

TEST_F(PromtoolBlockWriterTest, OneRunWhenTheWriteFitsTheBudget) {
  BlockWriteOptions options = Options();
  options.max_samples_per_promtool_run = 400;
  BlockWriter writer(options);
  for (int h = 0; h < 4; ++h) {
    ASSERT_TRUE(writer.Add(MakeSeries({{"__name__", "x"}, {"host", "h" + std::to_string(h)}}, 100, 10)).ok());
  }
  auto stats = writer.Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->promtool_runs, 1);
  EXPECT_EQ(stats->samples_in_blocks, 400);
}

TEST(PromtoolBlockWindowTest, IsTheLargestTsdbRangeNotAboveTheMaximum) {
  constexpr int64_t kHour = 3'600'000;
  EXPECT_EQ(PromtoolBlockWindowMs("6h").value(), 6 * kHour);
  EXPECT_EQ(PromtoolBlockWindowMs("2h").value(), 2 * kHour);
  EXPECT_EQ(PromtoolBlockWindowMs("1h").value(), 2 * kHour);     // never below TSDB's 2 h
  EXPECT_EQ(PromtoolBlockWindowMs("5h59m").value(), 2 * kHour);
  EXPECT_EQ(PromtoolBlockWindowMs("1d").value(), 18 * kHour);
  EXPECT_EQ(PromtoolBlockWindowMs("1h30m").value(), 2 * kHour);
  EXPECT_EQ(PromtoolBlockWindowMs("21600000ms").value(), 6 * kHour);
  EXPECT_EQ(PromtoolBlockWindowMs("10y").value(), 2 * kHour * 19683);  // the largest range, 2h x 3^9
  EXPECT_EQ(PromtoolBlockWindowMs("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PromtoolBlockWindowMs("6").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PromtoolBlockWindowMs("6x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PromtoolBlockWindowMs("h").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(PromtoolBlockWriterTest, EachBlockWindowIsOnePromtoolRunOverItsOwnFile) {
  // 13 h from midnight with 6 h windows: three windows, so three runs per batch and three blocks,
  // each inside its window; two batches (budget of one series) give six, the series split whole.
  BlockWriteOptions options = Options();
  options.max_block_duration = "6h";
  options.max_samples_per_promtool_run = 800;
  BlockWriter writer(options);
  const int samples = 13 * 60;   // one a minute
  for (int h = 0; h < 2; ++h) {
    ASSERT_TRUE(writer.Add(MakeSeries({{"__name__", "x"}, {"host", "h" + std::to_string(h)}}, samples, 60)).ok());
  }
  auto stats = writer.Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->promtool_runs, 6);
  EXPECT_EQ(stats->blocks, 6);
  EXPECT_EQ(stats->samples_in_blocks, 2 * samples);
  auto blocks = ListBlockDirs(options.output_dir);
  ASSERT_TRUE(blocks.ok());
  ASSERT_EQ(blocks->size(), 6u);
  constexpr int64_t kWindow = 6 * 3'600'000;
  std::map<int64_t, int64_t> samples_per_window;
  for (const auto& b : *blocks) {
    const int64_t window = b.min_time_ms / kWindow;
    EXPECT_EQ((b.max_time_ms - 1) / kWindow, window) << b.ulid << " straddles a window boundary";
    EXPECT_EQ(b.num_series, 1) << b.ulid;
    samples_per_window[window] += b.num_samples;
  }
  ASSERT_EQ(samples_per_window.size(), 3u);
  EXPECT_EQ(samples_per_window.begin()->second, 2 * 6 * 60);   // midnight to 06:00, both series
  EXPECT_EQ(samples_per_window.rbegin()->second, 2 * 60);       // 12:00 to 13:00
  const std::string dump = Dump(options.output_dir);
  for (int h = 0; h < 2; ++h) {
    const std::string series = "host=\"h" + std::to_string(h) + "\"";
    size_t count = 0;
    for (size_t at = dump.find(series); at != std::string::npos; at = dump.find(series, at + 1)) ++count;
    EXPECT_EQ(count, static_cast<size_t>(samples)) << series;
  }
}

TEST_P(BlockWriterTest, AnUnknownBlockDurationFailsBeforeAnythingIsWritten) {
  BlockWriteOptions options = Options();
  options.max_block_duration = "six hours";
  BlockWriter writer(options);
  Status added = writer.Add(MakeSeries({{"__name__", "x"}}, 3, 1));
  EXPECT_EQ(added.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(added.message().find("six hours"), std::string::npos) << added.message();
  EXPECT_FALSE(writer.Finish().ok());
  EXPECT_FALSE(fs::exists(options.output_dir));
}

}  // namespace
}  // namespace diagnose
