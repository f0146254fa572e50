// Runs the built `diagnose` binary as a sweep driver would and returns what it printed; shared by
// the end-to-end tests on the generated fixtures (fixtures/outputs, made by the `fixtures` target).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cli.h"
#include "tests/support/files.h"

namespace diagnose::e2e {

using testing::CliRun;
using testing::ReadFileOrEmpty;
using testing::RunDiagnoseCli;
using testing::RunProgram;

// README's exit status 3: a report is on stdout, but the metrics it needed could not be read.
inline constexpr int kIncompleteExit = 3;

// Every entry under `root` (path -> content, "dir" or "other"), for "the job dir is byte-identical".
std::map<std::string, std::string> DirSnapshot(const std::string& root);

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
// That finding's status word, "absent" when the report has no such finding.
std::string StatusOfFinding(const nlohmann::json& report, const std::string& id);

}  // namespace diagnose::e2e

#define REQUIRE_FIXTURE(id) \
  ASSERT_TRUE(::diagnose::e2e::FixturePresent(id)) << "fixture " << (id) << " not generated (build target `fixtures`)"
