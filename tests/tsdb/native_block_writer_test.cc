// The native block encoder against its oracle, promtool's create-blocks-from: the same series
// written by both must read back the same through promtool (dump, analyze) and a real Prometheus.
#include "engine/tsdb/native_block_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "engine/core/subprocess.h"
#include "engine/tsdb/block_writer.h"
#include "engine/tsdb/private_prometheus.h"
#include "engine/tsdb/tsdb_dir.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
constexpr double kShapesStart = 1771891200;  // 2026-02-24T00:00:00Z, a multiple of every block window

Series SeriesOf(Labels labels, std::vector<Sample> samples) {
  Series s;
  s.labels = std::move(labels);
  s.samples = std::move(samples);
  return s;
}

std::vector<Sample> EvenlySpaced(int n, double step, double start = kShapesStart, double value0 = 0) {
  std::vector<Sample> out;
  for (int i = 0; i < n; ++i) out.push_back({start + i * step, value0 + i * 0.5});
  return out;
}

// Many label shapes and sample patterns: names sorting before and after __name__, empty values
// (dropped), UTF-8 and escaped characters, 1/121/241 samples, NaN, +-Inf, -0, negatives, jittered
// and sub-second times, huge gaps, spans crossing block windows.
std::vector<Series> ManyShapes() {
  std::vector<Series> out;
  std::mt19937_64 random(7);
  for (int n : {1, 2, 3, 30, 31, 119, 120, 121, 240, 241, 242, 500}) {
    out.push_back(SeriesOf({{"__name__", "count_shapes"}, {"n", std::to_string(n)}}, EvenlySpaced(n, 15)));
  }
  out.push_back(SeriesOf({{"__name__", "labels_around_name"}, {"A", "upper"}, {"zz", "last"}, {"_a", "under"}},
                     EvenlySpaced(50, 10)));
  out.push_back(SeriesOf({{"__name__", "empty_value"}, {"host", "h1"}, {"gone", ""}}, EvenlySpaced(20, 10)));
  out.push_back(SeriesOf({{"__name__", "escapes"}, {"v", "q\"b\\c\nd\te"}, {"u", "Grüße 🚀 日本"}}, EvenlySpaced(5, 10)));
  std::vector<Sample> special = EvenlySpaced(12, 10);
  const double values[] = {std::nan(""), INFINITY, -INFINITY, -0.0, -123.456, 1e300, 5e-324, 0.1, 0, 0, 1, -1};
  for (size_t i = 0; i < special.size(); ++i) special[i].v = values[i];
  out.push_back(SeriesOf({{"__name__", "special_values"}}, special));
  std::vector<Sample> jitter;
  for (int i = 0; i < 400; ++i) {
    jitter.push_back({kShapesStart + i * 10 + static_cast<double>(random() % 2000) / 1000.0,
                      static_cast<double>(random() % 1000000) / 7.0});
  }
  out.push_back(SeriesOf({{"__name__", "jitter"}, {"host", "h2"}}, jitter));
  std::vector<Sample> gaps = {{kShapesStart, 1}, {kShapesStart + 1, 2}, {kShapesStart + 86400 * 3 + 0.123, 3},
                              {kShapesStart + 86400 * 40, 4}, {kShapesStart + 86400 * 40 + 7200, 5}};
  out.push_back(SeriesOf({{"__name__", "huge_gaps"}}, gaps));
  // Every timestamp bucket of the XOR encoding (delta-of-deltas 0, 10 s, 60 s, 200 s, 700 s, -970 s:
  // 14, 17, 20 and 64 bits) and values whose XOR has 63 leading zeros (clamped to 31 on disk).
  std::vector<Sample> buckets;
  double t = kShapesStart;
  bool up = false;
  for (double step : {0.0, 10.0, 10.0, 20.0, 80.0, 280.0, 980.0, 10.0, 10.0}) {
    t += step;
    buckets.push_back({t, up ? std::nextafter(1.0, 2.0) : 1.0});
    up = !up;
  }
  out.push_back(SeriesOf({{"__name__", "xor_buckets"}}, buckets));
  // 13 h at 15 s crosses the 2 h and 6 h windows; a counter with resets.
  std::vector<Sample> long_span = EvenlySpaced(13 * 240, 15);
  for (size_t i = 0; i < long_span.size(); ++i) long_span[i].v = static_cast<double>(i % 1000) * 3;
  out.push_back(SeriesOf({{"__name__", "long_span"}, {"host", "h3"}}, long_span));
  for (int host = 0; host < 20; ++host) {
    for (int gpu = 0; gpu < 4; ++gpu) {
      out.push_back(SeriesOf({{"__name__", "gpu_power"}, {"host", "node" + std::to_string(host)},
                          {"gpu", std::to_string(gpu)}}, EvenlySpaced(720, 10, kShapesStart + 3600, host * 10.0 + gpu)));
    }
  }
  return out;
}

class NativeBlocksAgainstPromtool : public ::testing::Test {
 protected:
  StatusOr<BlockWriteStats> Write(const std::vector<Series>& series, BlockEncoder encoder, const std::string& name,
                                  const std::string& max_block_duration) {
    BlockWriteOptions options;
    options.encoder = encoder;
    options.output_dir = scratch_ / name;
    options.scratch_dir = scratch_.path().string();
    options.max_block_duration = max_block_duration;
    return WriteBlocks(series, options);
  }

  // promtool's own reading of the blocks, line-sorted (its order is its own), via a copy because
  // `tsdb dump` needs and creates wal/.
  std::vector<std::string> Dump(const std::string& tsdb) {
    const std::string copy = scratch_ / "dump-copy";
    fs::remove_all(copy);
    fs::copy(tsdb, copy, fs::copy_options::recursive);
    fs::create_directories(copy + "/wal");
    // Into a file: RunCommand's captured output is bounded, and a dump is not.
    const std::string out = scratch_ / "dump.txt";
    SpawnOptions spawn;
    spawn.argv = {"promtool", "tsdb", "dump", copy};
    spawn.stdout_path = out;
    spawn.stderr_path = scratch_ / "dump.err";
    auto child = ChildProcess::Spawn(spawn);
    EXPECT_TRUE(child.ok()) << child.status().ToString();
    std::vector<std::string> lines;
    if (!child.ok()) return lines;
    auto exit_code = child->Wait(std::chrono::seconds(120));
    EXPECT_TRUE(exit_code.ok() && *exit_code == 0) << testing::ReadFileOrEmpty(scratch_ / "dump.err");
    std::ifstream in(out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::sort(lines.begin(), lines.end());
    return lines;
  }

  // Per block window: series, samples and chunks of the blocks in it.
  std::map<int64_t, std::tuple<int64_t, int64_t, int64_t>> StatsByWindow(const std::string& tsdb, int64_t window) {
    std::map<int64_t, std::tuple<int64_t, int64_t, int64_t>> out;
    auto blocks = ListBlockDirs(tsdb);
    EXPECT_TRUE(blocks.ok());
    if (!blocks.ok()) return out;
    for (const auto& b : *blocks) {
      EXPECT_EQ(b.min_time_ms / window, (b.max_time_ms - 1) / window) << b.ulid << " straddles a window";
      std::ifstream in(fs::path(tsdb) / b.ulid / "meta.json");
      std::stringstream text;
      text << in.rdbuf();
      const std::string meta = text.str();
      const size_t at = meta.find("\"numChunks\": ");
      EXPECT_NE(at, std::string::npos) << meta;
      auto& [series, samples, chunks] = out[b.min_time_ms / window];
      series += b.num_series;
      samples += b.num_samples;
      if (at != std::string::npos) chunks += std::stoll(meta.substr(at + 13));
    }
    return out;
  }

  void ExpectSameBlocks(const std::vector<Series>& series, const std::string& max_block_duration) {
    const std::string native = scratch_ / ("native-" + max_block_duration);
    const std::string promtool = scratch_ / ("promtool-" + max_block_duration);
    auto native_stats = Write(series, BlockEncoder::kNative, "native-" + max_block_duration, max_block_duration);
    auto promtool_stats = Write(series, BlockEncoder::kPromtool, "promtool-" + max_block_duration, max_block_duration);
    ASSERT_TRUE(native_stats.ok()) << native_stats.status().ToString();
    ASSERT_TRUE(promtool_stats.ok()) << promtool_stats.status().ToString();
    EXPECT_EQ(native_stats->series, promtool_stats->series);
    EXPECT_EQ(native_stats->samples_written, promtool_stats->samples_written);
    EXPECT_EQ(native_stats->samples_in_blocks, promtool_stats->samples_in_blocks);
    EXPECT_EQ(native_stats->duplicates_dropped, promtool_stats->duplicates_dropped);
    const auto native_dump = Dump(native), promtool_dump = Dump(promtool);
    EXPECT_EQ(static_cast<int64_t>(native_dump.size()), native_stats->samples_in_blocks);   // one line a sample
    EXPECT_TRUE(native_dump == promtool_dump) << native_dump.size() << " vs " << promtool_dump.size() << " lines";
    for (size_t i = 0; i < std::min(native_dump.size(), promtool_dump.size()); ++i) {
      ASSERT_EQ(native_dump[i], promtool_dump[i]) << "first difference at sorted line " << i;
    }
    const int64_t window = PromtoolBlockWindowMs(max_block_duration).value();
    EXPECT_EQ(StatsByWindow(native, window), StatsByWindow(promtool, window));   // the same chunk cuts too
    auto analyze = RunCommand({"promtool", "tsdb", "analyze", native}, std::chrono::seconds(120));
    ASSERT_TRUE(analyze.ok());
    EXPECT_EQ(analyze->exit_code, 0) << analyze->output;
  }

  testing::TempDir scratch_{"native-blocks-test"};
};

TEST_F(NativeBlocksAgainstPromtool, ManyShapesWithTwoHourWindows) { ExpectSameBlocks(ManyShapes(), "2h"); }

TEST_F(NativeBlocksAgainstPromtool, ManyShapesWithSixHourWindows) { ExpectSameBlocks(ManyShapes(), "6h"); }

TEST_F(NativeBlocksAgainstPromtool, SixHourSpanInBothWindowSizes) {
  std::vector<Series> series;
  for (int host = 0; host < 8; ++host) {
    series.push_back(SeriesOf({{"__name__", "six_hours"}, {"host", "h" + std::to_string(host)}},
                          EvenlySpaced(6 * 360, 10, kShapesStart + 1800 * host, host)));
  }
  ExpectSameBlocks(series, "6h");
  ExpectSameBlocks(series, "2h");
}

TEST_F(NativeBlocksAgainstPromtool, ChunkAndIndexBytesMatchPromtoolsForOneWindowInLabelOrder) {
  // Series added in label order into one window: the chunk segment and the index are then the
  // bytes Prometheus' own writer lays out.
  std::vector<Series> series;
  for (int host = 0; host < 5; ++host) {
    for (int n : {1, 121, 241}) {
      series.push_back(SeriesOf({{"__name__", "bytes"}, {"host", "h" + std::to_string(host)}, {"n", std::to_string(n)}},
                            EvenlySpaced(n, 10, kShapesStart, host)));
    }
  }
  std::sort(series.begin(), series.end(), [](const Series& a, const Series& b) { return a.labels < b.labels; });
  ASSERT_TRUE(Write(series, BlockEncoder::kNative, "native", "2h").ok());
  ASSERT_TRUE(Write(series, BlockEncoder::kPromtool, "promtool", "2h").ok());
  auto native = ListBlockDirs(scratch_ / "native");
  auto promtool = ListBlockDirs(scratch_ / "promtool");
  ASSERT_TRUE(native.ok() && promtool.ok());
  ASSERT_EQ(native->size(), 1u);
  ASSERT_EQ(promtool->size(), 1u);
  for (const char* file : {"chunks/000001", "index", "tombstones"}) {
    const std::string a = testing::ReadFileOrEmpty(fs::path(scratch_ / "native") / native->front().ulid / file);
    const std::string b = testing::ReadFileOrEmpty(fs::path(scratch_ / "promtool") / promtool->front().ulid / file);
    EXPECT_FALSE(a.empty()) << file;
    EXPECT_TRUE(a == b) << file << ": " << a.size() << " vs " << b.size() << " bytes";
  }
}

TEST_F(NativeBlocksAgainstPromtool, ChunksSpreadOverManySegmentFilesReadBackTheSame) {
  // 4 KiB segments instead of 512 MiB: every segment after the first starts with a chunk whose
  // reference names that segment, and the index still finds each one.
  std::vector<Series> series;
  const std::string dir = scratch_ / "native-segments";
  {
    NativeBlockWriter writer(dir, 2 * 3'600'000, 4096);
    for (int host = 0; host < 40; ++host) {
      Series s = SeriesOf({{"__name__", "segments"}, {"host", "h" + std::to_string(host)}},
                          EvenlySpaced(700, 10, kShapesStart, host * 1.25));
      std::vector<TimedSample> samples;
      for (const Sample& sample : s.samples) samples.push_back({std::llround(sample.t * 1000), sample.v});
      ASSERT_TRUE(writer.Add(s.labels, samples).ok());
      series.push_back(std::move(s));
    }
    ASSERT_TRUE(writer.Finish().ok());
  }
  ASSERT_TRUE(Write(series, BlockEncoder::kPromtool, "promtool-segments", "2h").ok());
  auto blocks = ListBlockDirs(dir);
  ASSERT_TRUE(blocks.ok());
  ASSERT_EQ(blocks->size(), 1u);
  size_t segments = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / blocks->front().ulid / "chunks")) {
    EXPECT_LE(fs::file_size(e.path()), 4096u) << e.path();
    ++segments;
  }
  EXPECT_GT(segments, 5u);
  EXPECT_LT(segments, 40u);   // not one file per chunk (240 chunks)
  const auto native_dump = Dump(dir);
  EXPECT_EQ(native_dump.size(), 40u * 700u);
  EXPECT_TRUE(native_dump == Dump(scratch_ / "promtool-segments"));
  auto analyze = RunCommand({"promtool", "tsdb", "analyze", dir}, std::chrono::seconds(120));
  ASSERT_TRUE(analyze.ok());
  EXPECT_EQ(analyze->exit_code, 0) << analyze->output;
}

TEST_F(NativeBlocksAgainstPromtool, ARealPrometheusAnswersTheSame) {
  const std::vector<Series> series = ManyShapes();
  ASSERT_TRUE(Write(series, BlockEncoder::kNative, "native", "2h").ok());
  ASSERT_TRUE(Write(series, BlockEncoder::kPromtool, "promtool", "2h").ok());
  auto native = PrivatePrometheus::Start(scratch_ / "native");
  auto promtool = PrivatePrometheus::Start(scratch_ / "promtool");
  ASSERT_TRUE(native.ok()) << native.status().ToString();
  ASSERT_TRUE(promtool.ok()) << promtool.status().ToString();
  const double end = kShapesStart + 13 * 3600;
  const std::vector<Query> queries = {
      Query::Range("gpu_power", kShapesStart, end, 60),
      Query::Range("rate(long_span[5m])", kShapesStart, end, 300),
      Query::Range("max_over_time(jitter[1m])", kShapesStart, kShapesStart + 4000, 30),
      Query::Range("special_values", kShapesStart, kShapesStart + 120, 10),
      Query::Instant("count_shapes", kShapesStart + 300),
      Query::Instant("count by (__name__) ({__name__=~\".+\"})", kShapesStart + 600),
      Query::Instant("last_over_time(huge_gaps[50d])", kShapesStart + 86400 * 41),
      Query::Instant("{__name__=~\"escapes|empty_value|labels_around_name\"}", kShapesStart + 100),
  };
  for (const Query& query : queries) {
    auto a = (*native)->client().Run(query);
    auto b = (*promtool)->client().Run(query);
    ASSERT_TRUE(a.ok() && b.ok()) << query.promql;
    EXPECT_FALSE(a->series.empty()) << query.promql;
    std::map<Labels, std::vector<Sample>> by_a, by_b;
    for (const auto& s : a->series) by_a[s.labels] = s.samples;
    for (const auto& s : b->series) by_b[s.labels] = s.samples;
    ASSERT_EQ(by_a.size(), by_b.size()) << query.promql;
    for (auto ia = by_a.begin(), ib = by_b.begin(); ia != by_a.end(); ++ia, ++ib) {
      ASSERT_EQ(ia->first, ib->first) << query.promql;
      ASSERT_EQ(ia->second.size(), ib->second.size()) << query.promql;
      for (size_t i = 0; i < ia->second.size(); ++i) {
        EXPECT_EQ(ia->second[i].t, ib->second[i].t) << query.promql;
        const double x = ia->second[i].v, y = ib->second[i].v;
        EXPECT_TRUE((std::isnan(x) && std::isnan(y)) || (x == y && std::signbit(x) == std::signbit(y)))
            << query.promql << " at " << ia->second[i].t << ": " << x << " vs " << y;
      }
    }
  }
}

TEST(NativeBlockWriter, AnUnfinishedWriterLeavesNoBlock) {
  testing::TempDir scratch("native-blocks-unfinished");
  const std::string dir = scratch / "tsdb";
  {
    NativeBlockWriter writer(dir, 2 * 3'600'000);
    std::vector<TimedSample> samples;
    for (int i = 0; i < 1000; ++i) samples.push_back({int64_t{1771891200000} + i * 15'000, 1.0 * i});
    ASSERT_TRUE(writer.Add({{"__name__", "x"}}, samples).ok());
    ASSERT_FALSE(fs::is_empty(dir));   // the block under construction, which Prometheus would delete
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      EXPECT_EQ(e.path().extension(), ".tmp-for-creation") << name;
      EXPECT_TRUE(IsUlid(e.path().stem().string())) << name;
    }
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(NativeBlockWriter, SameInputGivesTheSameUniqueBlockNames) {
  testing::TempDir scratch("native-blocks-ulid");
  std::vector<TimedSample> samples;
  for (int i = 0; i < 1000; ++i) samples.push_back({int64_t{1771891200000} + i * 15'000, 1.0 * i});
  auto names = [&](const std::string& dir, int writes) {
    for (int w = 0; w < writes; ++w) {
      NativeBlockWriter writer(dir, 2 * 3'600'000);
      EXPECT_TRUE(writer.Add({{"__name__", "x"}}, samples).ok());
      EXPECT_TRUE(writer.Finish().ok());
    }
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  };
  const auto once = names(scratch / "a", 1), again = names(scratch / "b", 1), twice = names(scratch / "c", 2);
  ASSERT_EQ(once.size(), 3u);   // 1000 samples at 15 s (4 h 10 min) reach a third 2 h window
  EXPECT_EQ(once, again);
  ASSERT_EQ(twice.size(), 6u);  // a second identical write into the same dir gets new names
  for (const auto& name : twice) EXPECT_TRUE(IsUlid(name)) << name;
}

TEST(NativeBlockWriter, ASeriesThatDiffersOnlyByAnEmptyLabelIsTheSameSeries) {
  testing::TempDir scratch("native-blocks-empty-label");
  NativeBlockWriter writer(scratch / "tsdb", 2 * 3'600'000);
  const std::vector<TimedSample> samples = {{1771891200000, 1}, {1771891210000, 2}};
  ASSERT_TRUE(writer.Add({{"__name__", "x"}, {"host", "a"}, {"rack", ""}}, samples).ok());
  EXPECT_EQ(writer.Add({{"__name__", "x"}, {"host", "a"}}, samples).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(writer.Add({{"__name__", "x"}, {"host", "b"}, {"rack", ""}}, samples).ok());
  auto stats = writer.Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->samples, 4);
}

TEST(NativeBlockWriter, AnUnwritableDirIsAnErrorAndLeavesNothing) {
  {
    NativeBlockWriter writer("/dev/null/tsdb", 2 * 3'600'000);
    const std::vector<TimedSample> samples = {{1771891200000, 1}};
    EXPECT_EQ(writer.Add({{"__name__", "x"}}, samples).code(), StatusCode::kUnavailable);
    EXPECT_FALSE(writer.Finish().ok());
  }   // destroyed with no block set up: must not touch one
}

TEST(NativeBlockWriter, RefusesSeriesItCannotEncode) {
  testing::TempDir scratch("native-blocks-refused");
  NativeBlockWriter writer(scratch / "tsdb", 2 * 3'600'000);
  const std::vector<TimedSample> backwards = {{1771891210000, 1}, {1771891200000, 2}};
  const std::vector<TimedSample> repeated = {{1771891200000, 1}, {1771891200000, 2}};
  const std::vector<TimedSample> fine = {{1771891200000, 1}, {1771891210000, 2}};
  EXPECT_EQ(writer.Add({{"__name__", "x"}}, backwards).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writer.Add({{"__name__", "y"}}, repeated).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writer.Add({{"__name__", ""}}, fine).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writer.Add({{"__name__", "z"}, {"", "v"}}, fine).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(writer.Add({{"__name__", "x"}}, fine).ok());   // a refused series did not take its name
  auto stats = writer.Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->samples, 2);
}

TEST(NativeBlockWriter, FormatsUlidsAsCrockfordBase32) {
  const uint8_t zero[10] = {};
  EXPECT_EQ(FormatUlid(0, zero), "00000000000000000000000000");
  const uint8_t ones[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(FormatUlid((uint64_t{1} << 48) - 1, ones), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
  // The ULID spec's example time, 1469918176385 ms, encodes as 01ARYZ6S41.
  EXPECT_EQ(FormatUlid(1469918176385, zero).substr(0, 10), "01ARYZ6S41");
}

}  // namespace
}  // namespace diagnose
