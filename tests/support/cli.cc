#include "tests/support/cli.h"

#include <unistd.h>

#include <filesystem>

#include "engine/core/subprocess.h"
#include "tests/support/files.h"

namespace diagnose::testing {

namespace fs = std::filesystem;

namespace {

// A run's private output file: read, then removed.
std::string TakeOutput(const std::string& path) {
  std::string text = ReadFileOrEmpty(path);
  std::error_code ec;
  fs::remove(path, ec);
  return text;
}

}  // namespace

CliRun RunDiagnoseCli(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {DIAGNOSE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv, timeout);
}

CliRun RunProgram(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
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
  auto code = child->Wait(timeout);
  run.exit_code = code.ok() ? *code : -1;
  run.timed_out = !code.ok();
  run.out = TakeOutput(options.stdout_path);
  run.err = TakeOutput(options.stderr_path);
  return run;
}

}  // namespace diagnose::testing
