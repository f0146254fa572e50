#include "engine/triage/log_scanner.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/triage/triage_support.h"

namespace diagnose {
namespace {

// A scanner of "job.log" with the project's signature table, as triage builds one.
class LogScannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto table = LoadSignatureTable(testing::RulesDir() + "/triage/failure-signatures.yaml");
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    table_ = std::make_unique<SignatureTable>(std::move(table).value());
    auto limits = ScanLimitsFromTable(*table_);
    ASSERT_TRUE(limits.ok()) << limits.status().ToString();
    matcher_ = std::make_unique<SignatureMatcher>(*table_, LogScanner::Triggers());
    scanner_ = std::make_unique<LogScanner>(*table_, *matcher_, *limits, "job.log", -1, 0);
  }
  std::unique_ptr<SignatureTable> table_;
  std::unique_ptr<SignatureMatcher> matcher_;
  std::unique_ptr<LogScanner> scanner_;
};

// Step lines that repeat the step just recorded take a short path in the scanner; lines that only
// look like repeats (more digits, an ANSI code that joins digits once stripped, leading zeros, an
// absl prefix) must come out exactly as the full parse reads them.
TEST_F(LogScannerTest, RepeatedStepLinesAgreeWithTheFullParse) {
  LogScanner& scanner = *scanner_;
  const std::vector<std::string> lines = {
      " 0: \x1b[36m(MaxTextTrainerActor pid=11)\x1b[0m completed step: 5, seconds: 1.5, loss: 2.0",
      " 1: \x1b[36m(MaxTextTrainerActor pid=12)\x1b[0m completed step: 5, seconds: 1.5, loss: 2.0",
      " 2: \x1b[36m(MaxTextTrainerActor pid=13)\x1b[0m completed step: 5\x1b[0m1, seconds: 2.5",
      " 3: completed step: 005, seconds: 9.0",
      " 4: completed step: 51",
      " 5: completed step: 510, seconds: 3.5",
      " 6: I0224 19:21:00.123456 77 train.py:10] completed step: 510, seconds: 3.5",
      "completed step: 510, seconds: 3.5",
      "11: (MaxTextTrainerActor pid=14) completed step: 9, seconds: 4.5",
  };
  for (size_t i = 0; i < lines.size(); ++i) scanner.Feed(lines[i], static_cast<int64_t>(i) + 1);
  const ScanResult& r = scanner.result();
  std::vector<int64_t> steps;
  for (const auto& kv : r.steps) steps.push_back(kv.first);
  EXPECT_EQ(steps, (std::vector<int64_t>{5, 9, 51, 510}));
  EXPECT_DOUBLE_EQ(r.steps.at(51).seconds, 2.5);   // the ANSI code was stripped, joining "5" and "1"
  EXPECT_EQ(r.steps.at(51).task, 2);
  EXPECT_EQ(r.steps.at(510).where.line, 6);
  EXPECT_EQ(r.last_step_by_task, (std::map<int, int64_t>{{-1, 510}, {0, 5}, {1, 5}, {2, 51}, {3, 5}, {4, 51},
                                                         {5, 510}, {6, 510}, {11, 9}}));
  EXPECT_EQ(r.lines, static_cast<int64_t>(lines.size()));
  EXPECT_EQ(r.lines_after_last_step, 0);
  EXPECT_TRUE(r.ray);
}

// A node that crashed mid-write leaves NUL bytes in the log; a field garbled another way leaves a
// key without a number. Neither may become a value (a loss of 0.000 reads as a collapsed loss):
// the line is skipped and counted. NUL padding before a line is dropped and the line read.
// The MFU patch names the GPU model: its Instinct token is kept (the rules' model levels read it
// when no Ray series names the model), the same model on every task names it, tasks naming two
// models name none (no one model's levels apply; so the Ray path decides), and a value without a
// model token is kept as printed (the table then knows no such model).
TEST_F(LogScannerTest, TheMfuLineNamesTheGpuModel) {
  LogScanner& scanner = *scanner_;
  scanner.Feed(" 0: [MFU] MFU tracking enabled (gpu=AMD Instinct MI250X, dtype=bf16, peak=383 TFLOP/s, source=auto)", 1);
  scanner.Feed(" 1: [MFU] MFU tracking enabled (gpu=MI250X, dtype=bf16, peak=383 TFLOP/s, source=auto)", 2);
  EXPECT_EQ(scanner.result().gpu_device, "MI250X");
  scanner.Feed(" 2: [MFU] MFU tracking enabled (gpu=MI355X, dtype=bf16, peak=2500 TFLOP/s, source=auto)", 3);
  scanner.Feed(" 3: [MFU] MFU tracking enabled (gpu=MI250X, dtype=bf16, peak=383 TFLOP/s, source=auto)", 4);
  EXPECT_EQ(scanner.result().gpu_device, "") << "two models across the tasks name none, whatever comes after";
  EXPECT_TRUE(scanner.result().gpu_devices_differ);
  LogScanner other(*table_, *matcher_, *ScanLimitsFromTable(*table_), "job.log", -1, 0);
  other.Feed("[MFU] MFU tracking disabled (gpu=H200 not in lookup table; set HARDWARE_PEAK_TFLOPS=<value> to override)", 1);
  EXPECT_EQ(other.result().gpu_device, "H200");
  LogScanner none(*table_, *matcher_, *ScanLimitsFromTable(*table_), "job.log", -1, 0);
  none.Feed("[MFU] something else entirely", 1);
  EXPECT_EQ(none.result().gpu_device, "");
}

// Parts of a log scanned apart and merged judge the models together: one part naming MI300X and a
// later one MI355X name none, as one pass over both would; a part naming none leaves the model.
TEST(ScanResultTest, MergedPartsNamingTwoGpuModelsNameNone) {
  ScanResult first, same, other;
  first.NoteGpuDevice("MI300X", false);
  same.NoteGpuDevice("MI300X", false);
  first.NoteGpuDevice(same.gpu_device, same.gpu_devices_differ);
  first.NoteGpuDevice("", false);
  EXPECT_EQ(first.gpu_device, "MI300X");
  other.NoteGpuDevice("MI355X", false);
  first.NoteGpuDevice(other.gpu_device, other.gpu_devices_differ);
  EXPECT_EQ(first.gpu_device, "");
  ScanResult later_alone;
  later_alone.NoteGpuDevice("MI300X", false);
  later_alone.NoteGpuDevice(first.gpu_device, first.gpu_devices_differ);
  EXPECT_EQ(later_alone.gpu_device, "") << "a part that already named two models outweighs a single name";
}

// Each task's own address: the Ray launcher's bind= (head and workers, srun-labelled) and k8s's
// "Starting on <host> (<ip>)"; what is not an address, or comes from no task, is not kept.
TEST_F(LogScannerTest, TasksReportTheirOwnAddresses) {
  LogScanner& scanner = *scanner_;
  const std::vector<std::string> lines = {
      " 0: [Ray] Starting HEAD on mx-n1:6400 (bind=10.45.0.21)",
      " 1: [Ray] Starting WORKER -> 10.45.0.21:6400 (bind=10.45.0.22)",
      " 2: [Ray] Starting WORKER -> 10.45.0.21:6400 (bind=fe80::7)",
      " 3: [Ray] Starting WORKER -> 10.45.0.21:6400 (bind=$(hostname -i))",
      " 1: [Ray] Starting WORKER -> 10.45.0.21:6400 (bind=10.45.0.99)",
      "[Ray] Starting WORKER -> 10.45.0.21:6400 (bind=10.45.0.50)",
      "[4] Starting on mx-n5 (10.45.0.25)",
      "[5] Starting on mx-n6",
  };
  for (size_t i = 0; i < lines.size(); ++i) scanner.Feed(lines[i], static_cast<int64_t>(i) + 1);
  EXPECT_EQ(scanner.result().task_addresses,
            (std::map<int, std::string>{{0, "10.45.0.21"}, {1, "10.45.0.22"}, {2, "fe80::7"}, {4, "10.45.0.25"}}));
  EXPECT_EQ(scanner.result().confirmed_hosts.at(4), "mx-n5");
  EXPECT_EQ(scanner.result().confirmed_hosts.at(5), "mx-n6");
}

TEST_F(LogScannerTest, DamagedStepLinesAreSkippedAndCountedNeverReadAsValues) {
  LogScanner& scanner = *scanner_;
  using namespace std::string_literals;
  const std::vector<std::string> lines = {
      "completed step: 1, seconds: 1.5, loss: 2.5"s,
      "completed step: 2, seconds: 1.5, loss: \0.568"s,
      "completed step: 3, seconds: 1.5, loss: x.568"s,
      "\0\0\0\0completed step: 4, seconds: 1.5, loss: 2.25"s,
      "completed step: 5, seconds: 1.\0\0\0"s,
      "\0\0\0\0"s,
      "completed step: 6, seconds: 1.5, loss: 2.0"s,
  };
  for (size_t i = 0; i < lines.size(); ++i) scanner.Feed(lines[i], static_cast<int64_t>(i) + 1);
  const ScanResult& r = scanner.result();
  std::vector<int64_t> steps;
  for (const auto& kv : r.steps) steps.push_back(kv.first);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 4, 6}));
  for (const auto& kv : r.steps) EXPECT_GT(kv.second.loss, 1.0) << "step " << kv.first;
  EXPECT_EQ(r.damaged_lines, 3);   // the all-NUL line is padding: nothing to read, nothing damaged
  EXPECT_EQ(r.first_damaged.file, "job.log");
  EXPECT_EQ(r.first_damaged.line, 2);
  EXPECT_EQ(r.lines, static_cast<int64_t>(lines.size()));
}

}  // namespace
}  // namespace diagnose
