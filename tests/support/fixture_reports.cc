#include "tests/support/fixture_reports.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace diagnose::e2e {

namespace fs = std::filesystem;

std::map<std::string, std::string> DirSnapshot(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_symlink()) out[e.path().string()] = "symlink:" + fs::read_symlink(e.path()).string();
    else if (e.is_regular_file()) out[e.path().string()] = ReadFileOrEmpty(e.path().string());
    else out[e.path().string()] = e.is_directory() ? "dir" : "other";
  }
  return out;
}

nlohmann::json DiagnoseFixtureJson(const std::vector<std::string>& args) {
  std::vector<std::string> full = args;
  for (const char* a : {"--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"}) full.push_back(a);
  CliRun run = RunDiagnoseCli(full);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json report = nlohmann::json::parse(run.out, nullptr, false);
  EXPECT_FALSE(report.is_discarded()) << run.out.substr(0, 500);
  return report.is_discarded() ? nlohmann::json() : report;
}

std::string FixtureJobDir(const std::string& id) {
  std::error_code ec;
  if (!fs::is_directory(DIAGNOSE_FIXTURE_OUTPUTS, ec)) return "";
  for (const auto& e : fs::directory_iterator(DIAGNOSE_FIXTURE_OUTPUTS, ec))
    if (e.path().filename().string().rfind(id + "-", 0) == 0 && e.is_directory()) return e.path().string();
  return "";
}

bool FixturePresent(const std::string& id) { return !FixtureJobDir(id).empty(); }

std::set<std::string> ExcludedHosts(const nlohmann::json& report) {
  std::set<std::string> out;
  for (const auto& e : report["decision"]["exclude"]) out.insert(e["host"].get<std::string>());
  return out;
}

std::string Dump(const nlohmann::json& report) { return report.dump(1).substr(0, 6000); }

const nlohmann::json* FindingById(const nlohmann::json& report, const std::string& id) {
  for (const auto& f : report["findings"])
    if (f.value("id", "") == id) return &f;
  return nullptr;
}

std::string StatusOfFinding(const nlohmann::json& report, const std::string& id) {
  const nlohmann::json* finding = FindingById(report, id);
  return finding ? finding->value("status", "") : "absent";
}

}  // namespace diagnose::e2e
