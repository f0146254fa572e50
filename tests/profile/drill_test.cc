#include "engine/profile/drill.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/profile/worked_examples_support.h"

namespace diagnose::profile {
namespace {

using ::testing::HasSubstr;

std::string DrillTempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("diagnose-drill-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

const KernelFamilies& Families() {
  static const KernelFamilies families = [] {
    auto loaded = LoadKernelFamilies(KernelFamiliesPath(DIAGNOSE_SOURCE_DIR));
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
    return *loaded;
  }();
  return families;
}

class Window {
 public:
  Window(const std::string& name, const fixturegen::TraceWindowSpec& spec,
         const std::string& ts = "2026_03_01_10_00_00")
      : root_(DrillTempDir(name)) {
    Add(spec, ts);
  }
  ~Window() { std::filesystem::remove_all(root_); }
  void Add(const fixturegen::TraceWindowSpec& spec, const std::string& ts) {
    auto written = fixturegen::WriteTraceWindow(spec, root_ + "/run/tensorboard/plugins/profile/" + ts);
    ASSERT_TRUE(written.ok()) << written.status().message();
  }
  ProfileDrill Drill(DrillOptions options = {}) const {
    auto files = FindTraceFiles({root_});
    EXPECT_TRUE(files.ok()) << files.status().message();
    auto drill = RunDrill(*files, Families(), options);
    EXPECT_TRUE(drill.ok()) << drill.status().message();
    return *drill;
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

const FamilyRow& Family(const ProfileDrill& d, const std::string& id) {
  for (const auto& f : d.families)
    if (f.id == id) return f;
  static FamilyRow none;
  ADD_FAILURE() << "no family " << id;
  return none;
}

// Within 1 % (the tolerance), and at least the table's last printed digit.
void ExpectNear(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, std::max(0.01 * std::abs(expected), 0.005)) << what;
}

TEST(WorkedExamples, SparseGmmTable) {
  const auto variants = worked::SparseGmmVariants();
  const double step[] = {82.5, 26.1, 38.0};
  const double total[] = {45.1, 33.5, 26.9};
  const double gap[] = {37.4, -7.4, 11.1};
  std::vector<ProfileDrill> drills;
  for (size_t i = 0; i < variants.size(); ++i) {
    Window window("gmm" + variants[i].label, variants[i].spec);
    drills.push_back(window.Drill());
    const ProfileDrill& d = drills.back();
    EXPECT_EQ(d.gpus, 64);
    EXPECT_EQ(d.steps, 3);
    EXPECT_EQ(d.divisor, 192);
    EXPECT_EQ(d.writeback_step, 8);
    ASSERT_TRUE(d.step_seconds);
    ExpectNear(*d.step_seconds, step[i], variants[i].label + " step");
    ExpectNear(d.total_kernel, total[i], variants[i].label + " total kernel");
    ASSERT_TRUE(d.step_minus_total);
    ExpectNear(*d.step_minus_total, gap[i], variants[i].label + " step - total");
  }
  EXPECT_EQ(drills[0].launcher_mode, "1-node/proc");
  EXPECT_EQ(drills[1].launcher_mode, "1-GPU/proc");
  ExpectNear(Family(drills[0], "ragged_all_to_all").seconds, 28.4, "RaggedAllToAllKernelImpl");
  ASSERT_TRUE(drills[0].blocker);
  EXPECT_THAT(drills[0].blocker->kernel, HasSubstr("RaggedAllToAllKernelImpl"));
  EXPECT_THAT(drills[0].blocker->remedy, HasSubstr("ragged_all_to_all_one_shot_kernel=false"));
  ExpectNear(drills[0].blocker->gap_seconds, 30.0, "ragged gap");
  ExpectNear(Family(drills[1], "rccl").seconds, 15.3, "RCCL 1-GPU");
  ExpectNear(drills[1].median.overlap, 14.0, "RCCL under compute");
  EXPECT_FALSE(drills[1].blocker) << "a negative step - total kernel is overlap, not a blocker";
  ASSERT_TRUE(drills[2].blocker);
  EXPECT_EQ(drills[2].blocker->kernel, "input_scatter_fusion_2.kd");
  ExpectNear(drills[2].blocker->kernel_seconds, 4.4, "input_scatter_fusion_2.kd");

  const auto warnings = ComparisonWarnings({"1node", "1gpu"}, {drills[0], drills[1]});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("WARNING: launcher modes differ"));
  const std::string table = FormatComparisonText({"1node", "1gpu", "deepep"}, drills);
  EXPECT_THAT(table, HasSubstr("WARNING: launcher modes differ"));
  EXPECT_THAT(table, HasSubstr("+37.400"));
  EXPECT_THAT(table, HasSubstr("-7.400"));
}

TEST(WorkedExamples, MoeVariantsTable) {
  const auto variants = worked::MoeVariants();
  const double scatter[] = {8.97, 4.45, 0.04};
  const double total[] = {26.93, 21.69, 19.13};
  const double step[] = {38.0, 30.5, 23.9};
  const double gap[] = {11.1, 8.8, 4.8};
  std::vector<ProfileDrill> drills;
  for (size_t i = 0; i < variants.size(); ++i) {
    Window window("moe" + variants[i].label, variants[i].spec);
    drills.push_back(window.Drill());
    const ProfileDrill& d = drills.back();
    ExpectNear(Family(d, "input_scatter_fusion").seconds, scatter[i], variants[i].label + " input_scatter_fusion");
    ExpectNear(d.total_kernel, total[i], variants[i].label + " total");
    ExpectNear(*d.step_seconds, step[i], variants[i].label + " step");
    ExpectNear(*d.step_minus_total, gap[i], variants[i].label + " step - total");
  }
  // The fusion family is itemised per kernel name.
  ASSERT_EQ(Family(drills[0], "input_scatter_fusion").kernels.size(), 2u);
  EXPECT_EQ(Family(drills[0], "input_scatter_fusion").kernels[0].name, "input_scatter_fusion_1.kd");
  EXPECT_TRUE(ComparisonWarnings({"v1", "v2", "v3"}, drills).empty());
  const std::string table = FormatComparisonText({"v1", "v2", "v3"}, drills);
  EXPECT_THAT(table, HasSubstr("input_scatter_fusion_2.kd"));
  EXPECT_THAT(table, HasSubstr("(  -7.500)"));   // v2's step against v1
}

TEST(Drill, StepTimeGivenFromOutsideTheWindowWins) {
  Window window("given", worked::MoeVariants()[1].spec);
  DrillOptions options;
  options.step_seconds = 25.0;
  options.step_source = "the log's steady state";
  const auto d = window.Drill(options);
  ExpectNear(*d.step_minus_total, 25.0 - 21.69, "step - total");
  EXPECT_EQ(d.step_source, "the log's steady state");
  EXPECT_THAT(FormatDrillText(d), HasSubstr("Step time 25.00 s (the log's steady state)"));
}

TEST(Drill, ChecksGpuCountAndProfiledStepsAgainstWhatWasAsked) {
  Window window("checks", worked::MoeVariants()[2].spec);
  DrillOptions options;
  options.expected_gpus = 128;
  options.profile_steps = 5;
  options.profile_steps_given = true;
  const auto d = window.Drill(options);
  const std::string text = FormatDrillText(d);
  EXPECT_THAT(text, HasSubstr("warning: GPUs detected 64 but the job ran 128"));
  EXPECT_THAT(text, HasSubstr("--profile-steps 5 but the host annotated 3 profiled steps"));
  EXPECT_EQ(d.steps, 3);
}

TEST(Drill, WindowSplitOverTimestampDirectoriesIsGlobbedWhole) {
  auto first = worked::MoeVariants()[1].spec;
  auto second = first;
  first.hosts = worked::Hosts(4, "a");
  second.hosts = worked::Hosts(4, "b");
  Window window("split", first, "2026_03_01_10_00_00");
  window.Add(second, "2026_03_01_10_00_07");
  const auto d = window.Drill();
  EXPECT_EQ(d.gpus, 64);
  EXPECT_EQ(d.window_dirs.size(), 2u);
  for (const auto& w : d.warnings) EXPECT_THAT(w, ::testing::Not(HasSubstr("stale")));
}

TEST(Drill, StaleWindowFromAnEarlierRunIsNamed) {
  auto spec = worked::MoeVariants()[1].spec;
  spec.hosts = worked::Hosts(1);
  Window window("stale", spec, "2026_03_01_10_00_00");
  window.Add(spec, "2026_03_01_14_00_00");
  const std::string text = FormatDrillText(window.Drill());
  EXPECT_THAT(text, HasSubstr("240 min apart: a stale window from an earlier run is included"));
  EXPECT_THAT(text, HasSubstr("node-10.trace.json.gz appears in 2 timestamp directories"));
}

TEST(Drill, OneSlowGpuIsNamedAgainstItsPeers) {
  auto spec = worked::MoeVariants()[2].spec;
  spec.slow_host = "node-13";
  spec.slow_device = 5;
  spec.slow_factor = 1.25;
  Window window("slow", spec);
  const auto d = window.Drill();
  ASSERT_TRUE(d.slow_gpu);
  EXPECT_EQ(d.slow_gpu->what, "GPU 5 of node-13");
  EXPECT_GT(d.slow_gpu->robust_z, 3.5);
  EXPECT_FALSE(d.slow_host) << "one GPU does not make its host's median slow";
  // Its main-stream kernels run 1.25x longer: the families that make it slow, against the median GPU.
  ASSERT_FALSE(d.slow_gpu->slower_families.empty());
  for (const auto& f : d.slow_gpu->slower_families) EXPECT_NEAR(f.seconds / f.median, 1.25, 0.01) << f.label;
}

TEST(Drill, NoGpuStandsOutWhenAllAreAlike) {
  Window window("alike", worked::MoeVariants()[2].spec);
  const auto d = window.Drill();
  EXPECT_FALSE(d.slow_gpu);
  EXPECT_THAT(FormatDrillText(d), HasSubstr("Slowest GPU: none stands out"));
}

TEST(Drill, RemappedPidsGiveTheSameNumbers) {
  auto spec = worked::MoeVariants()[0].spec;
  spec.device_pid_base = 1001;
  Window window("remapped", spec);
  const auto d = window.Drill();
  EXPECT_EQ(d.gpus, 64);
  ExpectNear(d.total_kernel, 26.93, "total with remapped pids");
}

TEST(Drill, WithoutStepAnnotationsTheStepsAreAssumedAndSaid) {
  auto spec = worked::MoeVariants()[0].spec;
  spec.host_steps = false;
  Window window("nosteps", spec);
  const auto d = window.Drill();
  EXPECT_EQ(d.steps, 3);
  EXPECT_FALSE(d.step_seconds);
  EXPECT_THAT(FormatDrillText(d), HasSubstr("Step time unknown: give --step-seconds"));
  EXPECT_THAT(FormatDrillText(d), HasSubstr("no host step annotation"));
}

TEST(Drill, JsonCarriesTheTable) {
  Window window("json", worked::MoeVariants()[0].spec);
  const auto j = DrillJson(window.Drill());
  EXPECT_EQ(j["gpus"], 64);
  EXPECT_EQ(j["divisor"], 192);
  EXPECT_EQ(j["main_stream_blocker"]["kernel"], "input_scatter_fusion_2.kd");
  EXPECT_EQ(j["per_gpu"].size(), 64u);
}

TEST(KernelFamilies, BadRegexNamesFileLineAndColumn) {
  auto families = ParseKernelFamilies("families:\n  - id: x\n    label: X\n    match: '(['\n    kind: compute\n", "f.yaml");
  ASSERT_FALSE(families.ok());
  EXPECT_THAT(families.status().message(), HasSubstr("f.yaml:4:12: match is not a valid regex"));
  auto kind = ParseKernelFamilies("families:\n  - {id: x, label: X, match: a, kind: disk}\n", "k.yaml");
  ASSERT_FALSE(kind.ok());
  EXPECT_THAT(kind.status().message(), HasSubstr("k.yaml:2:"));
}

TEST(KernelFamilies, TheShippedTableClassifiesTheRunbooksKernels) {
  const auto& f = Families();
  const auto id = [&](const std::string& kernel) {
    const size_t i = f.Classify(kernel);
    return i < f.families.size() ? f.families[i].id : std::string(kOtherFamilyId);
  };
  EXPECT_EQ(id("void stream_executor::gpu::RaggedAllToAllKernelImpl<8>"), "ragged_all_to_all");
  EXPECT_EQ(id("primus_turbo::deep_ep::intranode::dispatch"), "deep_ep");
  EXPECT_EQ(id("primus_turbo::grouped_gemm_kernel"), "gemm");
  EXPECT_EQ(id("input_scatter_fusion_2.kd"), "input_scatter_fusion");
  EXPECT_EQ(id("loop_transpose_fusion_4.kd"), "other_fusions");
  EXPECT_EQ(id("ncclDevKernel_Generic_1"), "rccl");
  EXPECT_EQ(id("aiter::fmha_fwd"), "flash_attention");
  EXPECT_EQ(id("hipMemsetAsync"), "other");
}

}  // namespace
}  // namespace diagnose::profile
