// Job logs in the launcher's shapes (maxtext-slurm-formats.md §2.1, §2.5, §2.7), written into a temp
// outputs dir by the watch and summary tests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace diagnose {

// A fresh <tmp>/<prefix>-<pid>-<test name>/outputs for each test, removed after it; history_ names
// a sweep history file beside it (not created).
class OutputsDirTest : public ::testing::Test {
 protected:
  OutputsDirTest(std::string prefix, std::string history_name = "sweep-history.jsonl")
      : prefix_(std::move(prefix)), history_name_(std::move(history_name)) {}
  void SetUp() override;
  void TearDown() override;

  std::filesystem::path dir_, outputs_;
  std::string history_;

 private:
  std::string prefix_, history_name_;
};

class JobLog {
 public:
  JobLog(const std::filesystem::path& outputs, std::string id, std::string model, std::vector<std::string> hosts,
         int steps = 15);
  void Steps(int first, int last, double tgs = 2036, double mfu = 34.9);
  void Noise();
  void Summary(bool success, int exit_code, const std::string& reason = "");
  void Write(const std::string& text);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::string id_, model_;
  std::vector<std::string> hosts_;
  std::filesystem::path path_;
};

}  // namespace diagnose
