// Child processes are started from an argument vector (never a shell), are the direct children of
// this process (so waitpid reaps them), and die with it (PR_SET_PDEATHSIG). A ChildProcess that goes
// out of scope terminates and reaps its child.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace diagnose {

struct SpawnOptions {
  std::vector<std::string> argv;        // argv[0] is looked up in PATH when it has no '/'
  std::string stdout_path;              // empty: /dev/null
  std::string stderr_path;              // empty: /dev/null; may equal stdout_path
  std::string working_dir;              // empty: inherit
  // "NAME=VALUE" settings the child gets unless this process's environment already sets NAME: a
  // tuning default that a user's own setting overrides.
  std::vector<std::string> default_environment;
};

struct RunResult;

class ChildProcess {
 public:
  static StatusOr<ChildProcess> Spawn(const SpawnOptions& options);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();   // Terminate(): SIGTERM, grace period, SIGKILL, waitpid

  int pid() const { return pid_; }
  bool Running();                       // non-blocking; reaps if it exited
  std::optional<int> ExitCode() const;  // exit status, or 128+signal; unset while running
  // Blocks until exit or timeout; returns the exit code, kDeadlineExceeded on timeout.
  StatusOr<int> Wait(std::chrono::milliseconds timeout);
  void Terminate(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

 private:
  // RunCommand spawns onto an unlinked capture file, which Spawn's path-based options cannot express.
  friend StatusOr<RunResult> RunCommand(const std::vector<std::string>& argv,
                                        std::chrono::milliseconds timeout);
  explicit ChildProcess(int pid) : pid_(pid) {}
  int pid_ = -1;
  std::optional<int> exit_code_;
};

struct RunResult {
  int exit_code = 0;
  std::string output;   // stdout+stderr, truncated to a bound
};

// Runs to completion with a timeout; output captured through a private temp file.
StatusOr<RunResult> RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// Finds an executable in PATH; empty when absent.
std::string FindExecutable(const std::string& name);

}  // namespace diagnose
