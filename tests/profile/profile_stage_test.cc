// The profile drill inside `diagnose JOB` (engine/pipeline/profile_stage.cc). Here, beside the
// profile tests, because it needs the trace writer only profile_tests links.
#include "engine/pipeline/profile_stage.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tools/fixturegen/trace_writer.h"

namespace diagnose {
namespace {

// A job dir holding one profiler window of one small trace file.
class JobWithWindow {
 public:
  JobWithWindow() {
    dir_ = (std::filesystem::temp_directory_path() / ("diagnose-profile-stage-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(dir_);
    fixturegen::TraceWindowSpec spec;
    spec.hosts = {"node-1"};
    spec.gpus_per_host = 2;
    spec.steps = 2;
    spec.step_seconds = 1;
    spec.slices = {{"ck::gemm", 0, 0, 0.5, 3}};
    written_ = fixturegen::WriteTraceWindow(spec, dir_ + "/run/tensorboard/plugins/profile/2026_02_12_09_08_30").ok();
  }
  ~JobWithWindow() { std::filesystem::remove_all(dir_); }
  const std::string& dir() const { return dir_; }
  bool written() const { return written_; }

 private:
  std::string dir_;
  bool written_ = false;
};

// Adversarial test 17 (defect 06): a window of large traces was read to its end whatever the run's
// --deadline (44 s with --deadline 5). Past the deadline the window is left out, saying so.
TEST(ProfileStage, TheDeadlineLeavesTheWindowOutNamingTheFile) {
  JobWithWindow job;
  ASSERT_TRUE(job.written());
  JobFacts facts;
  facts.job_dir = job.dir();
  const std::optional<JobProfile> unhurried = DrillJobProfile(facts, DIAGNOSE_SOURCE_DIR);
  ASSERT_TRUE(unhurried.has_value());
  EXPECT_TRUE(unhurried->error.empty()) << unhurried->error;
  EXPECT_TRUE(unhurried->drill.has_value());

  const std::optional<JobProfile> late = DrillJobProfile(facts, DIAGNOSE_SOURCE_DIR, std::chrono::steady_clock::now());
  ASSERT_TRUE(late.has_value());
  EXPECT_FALSE(late->drill.has_value());
  EXPECT_NE(late->error.find("the run's deadline passed while reading " + job.dir()), std::string::npos) << late->error;
  ASSERT_FALSE(JobProfileLines(*late).empty());
  EXPECT_EQ(JobProfileLines(*late).front().rfind("profile window not read: the run's deadline passed", 0), 0u);
}

}  // namespace
}  // namespace diagnose
