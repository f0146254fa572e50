// A job's TSDB damaged in the ways real ones are (a corrupt meta.json, a chunk segment cut short by a
// full disk, an empty block dir left by a crash): `diagnose` still writes a complete report that says
// what it could not read, never claims what the damaged data would have shown, leaves no Prometheus
// behind, and never touches the job's files.
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/fixture_reports.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A block cut right after 8043's own, whose meta.json a full disk cut short.
const std::string kDamagedCopy = "01KJ8F2163BRM113Z5YG9G098Q";

fs::path FirstBlock(const fs::path& outputs) {
  for (const auto& e : fs::recursive_directory_iterator(outputs))
    if (e.is_directory() && e.path().parent_path().filename() == "prometheus" && fs::exists(e.path() / "meta.json"))
      return e.path();
  return {};
}

struct Damage {
  std::string name;
  std::function<void(const fs::path& block)> apply;
};

class TsdbFaultTest : public ::testing::TestWithParam<Damage> {
 protected:
  void SetUp() override {
    REQUIRE_FIXTURE("8043");
    outputs_ = fs::temp_directory_path() / ("diagnose-tsdb-fault-" + GetParam().name + "-" + std::to_string(::getpid()));
    fs::remove_all(outputs_);
    fs::create_directories(outputs_);
    for (const auto& e : fs::directory_iterator(DIAGNOSE_FIXTURE_OUTPUTS))
      if (e.path().filename().string().rfind("8043-", 0) == 0)
        fs::copy(e.path(), outputs_ / e.path().filename(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    const fs::path block = FirstBlock(outputs_);
    ASSERT_FALSE(block.empty());
    GetParam().apply(block);
  }
  void TearDown() override { fs::remove_all(outputs_); }
  fs::path outputs_;
};

TEST_P(TsdbFaultTest, ReportSaysWhatCouldNotBeReadAndTheJobDirIsUntouched) {
  const auto before = e2e::DirSnapshot(outputs_.string());
  e2e::CliRun run = e2e::RunDiagnoseCli({"8043", "--outputs", outputs_.string(), "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json r = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << run.out.substr(0, 500);
  EXPECT_EQ(e2e::DirSnapshot(outputs_.string()), before) << "the job dir was written";
  EXPECT_EQ(r["jobs"][0]["status"], "failed");
  const std::string state = r["tsdb"][0]["state"];
  const std::string name = GetParam().name;
  if (name == "corrupt-meta-json") {
    EXPECT_EQ(state, "unavailable") << e2e::Dump(r["tsdb"]);
    const std::string reason = r["tsdb"][0]["reason"];
    EXPECT_NE(reason.find("meta.json"), std::string::npos) << reason;
    EXPECT_NE(r["decision"].dump().find("conclusions rest on the logs only"), std::string::npos);
  } else if (name == "truncated-chunk") {
    // The server starts (the index is intact) but every query touching the cut chunks fails: those
    // checks are listed as not evaluated, naming the query, and nothing is confirmed from them.
    EXPECT_EQ(state, "served");
    bool names_query = false;
    for (const auto& n : r["not_evaluated"]) names_query |= n.get<std::string>().find("query failed") != std::string::npos;
    EXPECT_TRUE(names_query) << e2e::Dump(r["not_evaluated"]);
    EXPECT_NE(r["verdict"]["confidence"], "confirmed") << e2e::Dump(r["verdict"]);
  } else if (name == "one-of-two-blocks-damaged") {
    // The damaged block is left out, named with why and the time it most likely held; the good
    // block is served and decides as it does alone.
    EXPECT_EQ(state, "served") << e2e::Dump(r["tsdb"]);
    EXPECT_EQ(r["verdict"]["root_cause"], "heartbeat-false-positive") << e2e::Dump(r["verdict"]);
    const std::string gaps = r["tsdb"][0]["gaps"].dump();
    EXPECT_NE(gaps.find("block " + kDamagedCopy + " was left out"), std::string::npos) << gaps;
    EXPECT_NE(gaps.find("meta.json: not valid JSON"), std::string::npos) << gaps;
    EXPECT_NE(gaps.find("the samples it holds are missing, most likely"), std::string::npos) << gaps;
  } else {
    // An empty block dir (no meta.json) is not a block: the rest is served and the answer is whole.
    EXPECT_EQ(state, "served");
    EXPECT_EQ(r["verdict"]["root_cause"], "heartbeat-false-positive") << e2e::Dump(r["verdict"]);
    EXPECT_EQ(r["verdict"]["confidence"], "confirmed");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Damages, TsdbFaultTest,
    ::testing::Values(
        Damage{"corrupt-meta-json", [](const fs::path& block) { std::ofstream(block / "meta.json") << "{\"ulid\": broken"; }},
        Damage{"truncated-chunk", [](const fs::path& block) { fs::resize_file(block / "chunks" / "000001", 1000); }},
        Damage{"empty-block-dir", [](const fs::path& block) {
                 fs::create_directories(block.parent_path() / "01EMPTYBLOCK0000000000000000");
               }},
        Damage{"one-of-two-blocks-damaged", [](const fs::path& block) {
                 const fs::path copy = block.parent_path() / kDamagedCopy;
                 fs::copy(block, copy, fs::copy_options::recursive);
                 std::ofstream(copy / "meta.json", std::ios::trunc) << "{\"ulid\": \"" << kDamagedCopy << "\", \"minTime\": 17714";
               }}),
    [](const ::testing::TestParamInfo<Damage>& info) {
      std::string n = info.param.name;
      for (auto& c : n)
        if (c == '-') c = '_';
      return n;
    });

}  // namespace
}  // namespace diagnose
