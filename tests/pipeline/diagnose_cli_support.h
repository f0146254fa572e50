// Runs the built `diagnose` binary as a sweep driver would and returns what it printed; shared by
// the end-to-end tests on the generated fixtures (fixtures/outputs, made by the `fixtures` target).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace diagnose::e2e {

// README's exit status 3: a report is on stdout, but the metrics it needed could not be read.
inline constexpr int kIncompleteExit = 3;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

// Every entry under `root` (path -> content, "dir" or "other"), for "the job dir is byte-identical".
std::map<std::string, std::string> DirSnapshot(const std::string& root);

// A file's bytes ("" when it cannot be read).
std::string Slurp(const std::string& path);

// `diagnose ARGS...`; stdout and stderr go to private files so stderr chatter cannot corrupt JSON.
CliRun RunDiagnoseCli(const std::vector<std::string>& args);
// Any program (argv[0] looked up in PATH), captured the same way.
CliRun RunProgram(const std::vector<std::string>& argv);

// `diagnose ARGS... --outputs fixtures/outputs --format json`, parsed. Records a test failure (and
// returns null) when the binary fails or prints something that is not one JSON document.
nlohmann::json DiagnoseFixtureJson(const std::vector<std::string>& args);

// Whether fixtures/outputs holds a job dir for `id`. The fixtures are part of every build, so a
// missing one is a failure of the build, not a reason to skip.
bool FixturePresent(const std::string& id);
// fixtures/outputs/<id>-*/ (the job dir), or "" when it was not generated.
std::string FixtureJobDir(const std::string& id);

// decision.exclude[].host of a contract report.
std::set<std::string> ExcludedHosts(const nlohmann::json& report);
// A report (or part of one) trimmed for a failure message.
std::string Dump(const nlohmann::json& report);
// The finding with this id, or null.
const nlohmann::json* FindingById(const nlohmann::json& report, const std::string& id);

}  // namespace diagnose::e2e

#define REQUIRE_FIXTURE(id) \
  ASSERT_TRUE(::diagnose::e2e::FixturePresent(id)) << "fixture " << (id) << " not generated (build target `fixtures`)"
