// The one way tests run the built `diagnose` binary (or any program): stdout and stderr captured
// apart, into private files, so stderr chatter cannot corrupt a JSON report.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace diagnose::testing {

struct CliRun {
  int exit_code = -1;   // -1: the program could not start, or outlived the timeout
  bool timed_out = false;  // it outlived the timeout and was killed (a hang, when that is the failure looked for)
  std::string out, err;
  // Everything it printed, stdout first: for checks that do not care which stream said it.
  std::string Printed() const { return out + err; }
};

inline constexpr std::chrono::milliseconds kCliTimeout = std::chrono::minutes(3);

// `diagnose ARGS...`.
CliRun RunDiagnoseCli(const std::vector<std::string>& args, std::chrono::milliseconds timeout = kCliTimeout);
// Any program (argv[0] looked up in PATH), captured the same way.
CliRun RunProgram(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = kCliTimeout);

}  // namespace diagnose::testing
