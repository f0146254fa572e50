#include "tests/pipeline/diagnose_cli_support.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "engine/core/subprocess.h"

namespace diagnose::e2e {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::map<std::string, std::string> DirSnapshot(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_symlink()) out[e.path().string()] = "symlink:" + fs::read_symlink(e.path()).string();
    else if (e.is_regular_file()) out[e.path().string()] = Slurp(e.path().string());
    else out[e.path().string()] = e.is_directory() ? "dir" : "other";
  }
  return out;
}

namespace {
// A run's private output file: read, then removed.
std::string TakeOutput(const std::string& path) {
  std::string text = Slurp(path);
  std::error_code ec;
  fs::remove(path, ec);
  return text;
}
}  // namespace

CliRun RunDiagnoseCli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {DIAGNOSE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv);
}

CliRun RunProgram(const std::vector<std::string>& argv) {
  std::string base = (fs::temp_directory_path() / ("diagnose-cli-" + std::to_string(getpid()))).string();
  SpawnOptions options;
  options.argv = argv;
  options.stdout_path = base + ".out";
  options.stderr_path = base + ".err";
  CliRun run;
  auto child = ChildProcess::Spawn(options);
  if (!child.ok()) {
    run.err = child.status().message();
    return run;
  }
  auto code = child->Wait(std::chrono::minutes(3));
  run.exit_code = code.ok() ? *code : -1;
  run.out = TakeOutput(options.stdout_path);
  run.err = TakeOutput(options.stderr_path);
  return run;
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

}  // namespace diagnose::e2e
