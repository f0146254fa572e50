// Benchmarks time other programs (grep, python3, the diagnose binary) beside the engine: each is
// started from an argument vector (no shell), its stdout captured, and its own rusage kept, so each
// child's peak RSS is its own.
#pragma once

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

extern char** environ;

namespace diagnose::bench {

struct ChildRun {
  double seconds = 0;
  double cpu_seconds = 0;   // user + system, every thread of the child
  double max_rss_mib = 0;
  int status = -1;
  std::string out;
};

// `merge_stderr`: the child's stderr goes to `out` too (tests of one-line error messages).
inline ChildRun RunChild(const std::vector<std::string>& args, bool merge_stderr = false) {
  ChildRun run;
  int pipefd[2];
  if (::pipe(pipefd) != 0) return run;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  if (merge_stderr) posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (rc == 0) {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) run.out.append(buf, static_cast<size_t>(n));
    struct rusage usage {};
    ::wait4(pid, &run.status, 0, &usage);
    run.max_rss_mib = usage.ru_maxrss / 1024.0;
    const auto seconds_of = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    run.cpu_seconds = seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime);
  }
  ::close(pipefd[0]);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace diagnose::bench
