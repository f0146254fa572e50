#include "engine/tsdb/wal_writer.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "engine/core/subprocess.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {
namespace fs = std::filesystem;

constexpr double kStart = 1764676800;  // 2025-12-02T12:00:00Z

class WalWriterTest : public ::testing::Test {
 protected:
  // Prometheus' own reading of the TSDB: promtool opens it read-only, replays the WAL into a head
  // and dumps every sample as `{labels} value timestamp_ms`. It writes into the dir, so a copy.
  std::map<std::string, std::map<int64_t, double>> Replay(const std::string& tsdb) {
    const std::string copy = dir_ + "/replay-copy";
    fs::remove_all(copy);
    fs::copy(tsdb, copy, fs::copy_options::recursive);
    SpawnOptions dump;
    dump.argv = {"promtool", "tsdb", "dump", copy};
    dump.stdout_path = dir_ + "/dump.txt";   // megabytes: more than a captured output holds
    dump.stderr_path = dir_ + "/dump.err";
    auto child = ChildProcess::Spawn(dump);
    EXPECT_TRUE(child.ok()) << child.status().ToString();
    std::map<std::string, std::map<int64_t, double>> samples;
    if (!child.ok()) return samples;
    auto code = child->Wait(std::chrono::seconds(120));
    EXPECT_TRUE(code.ok() && *code == 0) << "promtool tsdb dump failed; see " << dump.stderr_path;
    std::ifstream lines(dump.stdout_path);
    for (std::string line; std::getline(lines, line);) {
      const size_t close = line.rfind('}');
      if (line.empty() || line[0] != '{' || close == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 1));
      double value = 0;
      int64_t t = 0;
      rest >> value >> t;
      samples[line.substr(0, close + 1)][t] = value;
    }
    return samples;
  }
  testing::TempDir scratch_{"wal-writer-test"};
  const std::string dir_ = scratch_.path().string();
};

TEST_F(WalWriterTest, PrometheusReplaysEverySampleExactly) {
  // 40 series x 1,440 samples (4 h at 10 s): records far larger than a 32 KiB page, so records
  // are split into first/middle/last fragments; values need all 64 bits.
  WalWriter writer(dir_ + "/tsdb");
  int64_t written = 0;
  for (int h = 0; h < 20; ++h) {
    for (const char* name : {"hw_gpu_power_watts", "hw_rdma_tx_retx_pkts_total"}) {
      Series s;
      s.labels = {{"__name__", name}, {"host", "node-" + std::to_string(h)}, {"instance", "node-" + std::to_string(h) + ":9400"}};
      for (int i = 0; i < 1440; ++i) {
        const double v = std::string(name) == "hw_gpu_power_watts" ? 750.123456789 + h + std::sin(i) : 1e12 + i * 3.0;
        // hosts scraped a few hundred ms apart, as real targets are
        s.samples.push_back({kStart + h * 0.137 + i * 10.0, v});
      }
      written += static_cast<int64_t>(s.samples.size());
      ASSERT_TRUE(writer.Add(std::move(s)).ok());
    }
  }
  auto stats = writer.Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->series, 40);
  EXPECT_EQ(stats->samples, written);
  EXPECT_EQ(stats->segments, 1);
  EXPECT_TRUE(fs::exists(dir_ + "/tsdb/wal/00000000"));
  EXPECT_EQ(fs::file_size(dir_ + "/tsdb/wal/00000000") % (32 * 1024), 0u);

  const auto replayed = Replay(dir_ + "/tsdb");
  ASSERT_EQ(replayed.size(), 40u);
  int64_t read = 0;
  for (const auto& [labels, samples] : replayed) read += static_cast<int64_t>(samples.size());
  EXPECT_EQ(read, written);
  const auto power = replayed.find(R"({__name__="hw_gpu_power_watts", host="node-3", instance="node-3:9400"})");
  ASSERT_NE(power, replayed.end());
  const int64_t t = std::llround((kStart + 3 * 0.137 + 17 * 10.0) * 1000);
  ASSERT_TRUE(power->second.count(t));
  EXPECT_NEAR(power->second.at(t), 750.123456789 + 3 + std::sin(17), 1e-9);
}

TEST_F(WalWriterTest, RefusesWhatTheHeadWouldDropOnReplay) {
  WalWriter writer(dir_ + "/tsdb");
  Series unnamed;
  unnamed.labels = {{"host", "a"}};
  EXPECT_FALSE(writer.Add(unnamed).ok());
  Series backwards;
  backwards.labels = {{"__name__", "up"}};
  backwards.samples = {{kStart + 10, 1}, {kStart, 1}};
  EXPECT_FALSE(writer.Add(backwards).ok());
  ASSERT_TRUE(writer.Finish().ok());
  WalWriter again(dir_ + "/tsdb");
  EXPECT_FALSE(again.Finish().ok()) << "an existing wal/ is never appended to";
}

}  // namespace
}  // namespace diagnose
