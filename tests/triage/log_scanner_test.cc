#include "engine/triage/log_scanner.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/triage/triage_support.h"

namespace diagnose {
namespace {

// Step lines that repeat the step just recorded take a short path in the scanner; lines that only
// look like repeats (more digits, an ANSI code that joins digits once stripped, leading zeros, an
// absl prefix) must come out exactly as the full parse reads them.
TEST(LogScannerTest, RepeatedStepLinesAgreeWithTheFullParse) {
  auto table = LoadSignatureTable(testing::RulesDir() + "/triage/failure-signatures.yaml");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  auto limits = ScanLimitsFromTable(*table);
  ASSERT_TRUE(limits.ok()) << limits.status().ToString();
  SignatureMatcher matcher(*table, LogScanner::Triggers());
  LogScanner scanner(*table, matcher, *limits, "job.log", -1, 0);
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

}  // namespace
}  // namespace diagnose
