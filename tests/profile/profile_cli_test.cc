// `diagnose profile` as a user runs it: the worked examples' windows side by side, the warning when
// launcher modes differ, and one clear stderr line for a file it cannot read.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/bench/child_run.h"
#include "tests/profile/worked_examples_support.h"

namespace diagnose::profile {
namespace {

using ::testing::HasSubstr;

class ProfileCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (std::filesystem::temp_directory_path() / ("diagnose-profile-cli-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string Window(const std::string& name, const fixturegen::TraceWindowSpec& spec) {
    const std::string dir = root_ + "/" + name + "/run/tensorboard/plugins/profile/2026_03_01_10_00_00";
    auto written = fixturegen::WriteTraceWindow(spec, dir);
    EXPECT_TRUE(written.ok());
    return root_ + "/" + name;
  }
  std::string root_;
};

TEST_F(ProfileCli, ComparesVariantsInColumnsWithDeltas) {
  const auto moe = worked::MoeVariants();
  const std::string v1 = Window("v1", moe[0].spec), v2 = Window("v2", moe[1].spec);
  const auto run = bench::RunChild({DIAGNOSE_BINARY, "profile", v1, "--compare", v2});
  ASSERT_EQ(WEXITSTATUS(run.status), 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("GPUs detected 64; looks like 1-node/proc (8.0 GPUs/file)"));
  EXPECT_THAT(run.out, HasSubstr("divisor 192"));
  EXPECT_THAT(run.out, HasSubstr("input_scatter_fusion_2.kd"));
  EXPECT_THAT(run.out, HasSubstr("(  -7.500)"));   // step 30.5 against 38.0
  EXPECT_THAT(run.out, ::testing::Not(HasSubstr("WARNING")));
}

TEST_F(ProfileCli, WarnsLoudlyWhenLauncherModesDiffer) {
  const auto gmm = worked::SparseGmmVariants();
  const std::string one_node = Window("a", gmm[0].spec), one_gpu = Window("b", gmm[1].spec);
  const auto run = bench::RunChild({DIAGNOSE_BINARY, "profile", one_node, "--compare", one_gpu, "--format", "json"});
  ASSERT_EQ(WEXITSTATUS(run.status), 0);
  const auto j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["comparison_warnings"].size(), 1u);
  EXPECT_THAT(j["comparison_warnings"][0].get<std::string>(), HasSubstr("WARNING: launcher modes differ"));
  EXPECT_EQ(j["compare"]["launcher_mode"], "1-GPU/proc");
}

TEST_F(ProfileCli, AnUnreadableFileIsOneLineNamingIt) {
  auto spec = worked::MoeVariants()[2].spec;
  spec.hosts = worked::Hosts(1);
  const std::string dir = Window("cut", spec);
  std::string file;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) file = e.path().string();
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 3);
  const auto run = bench::RunChild({DIAGNOSE_BINARY, "profile", file}, /*merge_stderr=*/true);
  EXPECT_EQ(WEXITSTATUS(run.status), 1);
  EXPECT_EQ(run.out, "diagnose profile: " + file + ": truncated gzip: the compressed stream ends at byte " +
                         std::to_string(std::filesystem::file_size(file)) + " before the end of its member (" +
                         run.out.substr(run.out.rfind('(') + 1));
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1);
}

}  // namespace
}  // namespace diagnose::profile
