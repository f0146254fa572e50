// A diagnosis on a private server hands it, once nothing more is asked of it, to
// DiagnoseOptions::closing (the CLI's BackgroundWork, so that it closes while the report is
// written), or closes it itself before returning. Either way nothing of it outlives its owner: no
// child process, no copy in the temp dir, and the same report.
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/subprocess.h"
#include "engine/pipeline/pipeline.h"
#include "engine/report/render.h"
#include "tests/support/fixture_reports.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const fs::path& dir) {
    if (const char* old = std::getenv("TMPDIR")) previous_ = old;
    setenv("TMPDIR", dir.c_str(), 1);
  }
  ~ScopedTmpdir() {
    if (previous_) setenv("TMPDIR", previous_->c_str(), 1);
    else unsetenv("TMPDIR");
  }

 private:
  std::optional<std::string> previous_;
};

// Children of this process, zombies included (each thread lists the children it started).
std::vector<std::string> ChildrenOfThisProcess() {
  std::vector<std::string> children;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "children");
    std::string pid;
    while (in >> pid) children.push_back(pid);
  }
  return children;
}

std::vector<std::string> EntriesOf(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

// What the report concludes, as the CLI writes it: its verdict, causal chain and decision (its
// timings differ run to run, and so do the last digits of some aggregations Prometheus 2.42 sums in
// Go's map order).
nlohmann::json Conclusions(const Report& report) {
  StatusOr<std::string> rendered = RenderReport(report, "json", {});
  EXPECT_TRUE(rendered.ok());
  const nlohmann::json doc = nlohmann::json::parse(rendered.ok() ? *rendered : "{}");
  return {{"verdict", doc.value("verdict", nlohmann::json())},
          {"causal_chain", doc.value("causal_chain", nlohmann::json())},
          {"decision", doc.value("decision", nlohmann::json())}};
}

TEST(Closing, ThePrivateServerIsGoneWhenRunDiagnosisReturnsOrItsBackgroundWorkIsDone) {
  REQUIRE_FIXTURE("8308");
  if (FindExecutable("prometheus").empty()) GTEST_SKIP() << "prometheus is not installed (scripts/install-deps.sh installs it)";
  const fs::path tmp = fs::temp_directory_path() / ("diagnose-closing-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  ScopedTmpdir tmpdir(tmp);
  DiagnoseOptions options;
  options.job_ref = "8308";
  options.outputs_dir = DIAGNOSE_FIXTURE_OUTPUTS;
  options.now = 1'900'000'000;

  StatusOr<Report> in_line = RunDiagnosis(options);
  ASSERT_TRUE(in_line.ok()) << in_line.status().message();
  ASSERT_FALSE(in_line->tsdb.empty());
  ASSERT_EQ(in_line->tsdb.front().state, TsdbAvailability::kServed) << "the diagnosis read no metrics";
  EXPECT_EQ(EntriesOf(tmp), std::vector<std::string>{}) << "the copy outlived RunDiagnosis";
  EXPECT_EQ(ChildrenOfThisProcess(), std::vector<std::string>{}) << "the server outlived RunDiagnosis";

  std::optional<StatusOr<Report>> beside;
  {
    BackgroundWork closing;
    options.closing = &closing;
    beside = RunDiagnosis(options);
  }
  ASSERT_TRUE(beside->ok()) << beside->status().message();
  EXPECT_EQ(EntriesOf(tmp), std::vector<std::string>{}) << "the copy outlived the background work";
  EXPECT_EQ(ChildrenOfThisProcess(), std::vector<std::string>{}) << "the server outlived the background work";
  EXPECT_EQ(Conclusions(**beside), Conclusions(*in_line));
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace diagnose
