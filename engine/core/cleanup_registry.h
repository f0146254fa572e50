// Process-wide registry of cleanups that must run however the process ends: private Prometheus
// servers to stop, temp dirs to remove. Normal exits run them through RAII owners (which then
// unregister); SIGINT/SIGTERM/SIGHUP are taken by a dedicated sigwait thread that runs every
// registered cleanup (newest first), says on stderr what stopped the run, and exits with 128+signal.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace diagnose {

class CleanupRegistry {
 public:
  using Id = uint64_t;

  static CleanupRegistry& Instance();

  // `cleanup` must be safe to run from the signal thread while other threads are still running:
  // it should only kill/wait by pid and remove paths.
  Id Register(std::string what, std::function<void()> cleanup);
  void Unregister(Id id);
  // Runs and forgets every registered cleanup, newest first.
  void RunAll();
  size_t size();

 private:
  CleanupRegistry() = default;
};

// Held by a thread from the moment it creates something it must clean up (a temp dir, a child
// process) until the cleanup is registered, while it fills what it created, and while it tears it
// down before unregistering (so a signal never races a removal already under way). The termination
// thread takes it before cleaning up, so a signal never lands between a creation and its
// registration (leaking it) or in the middle of a copy (which would recreate a removed dir), and
// never gives it back, so nothing new is created after the cleanup. Recursive.
class AcquisitionScope {
 public:
  AcquisitionScope();
  ~AcquisitionScope();
  AcquisitionScope(const AcquisitionScope&) = delete;
  AcquisitionScope& operator=(const AcquisitionScope&) = delete;
};

// The one stderr line the termination thread prints after the cleanups ran, given the signal's
// name ("SIGTERM"); by default "diagnose: stopped by SIGTERM; its child processes and temporary
// files were removed". A command with more to say (watch: how many jobs it handled) replaces it.
void SetTerminationLine(std::function<std::string(const std::string& signal_name)> line);

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in every thread it creates later)
// and starts the thread that sigwaits for them; ignores SIGPIPE (a closed reader is a write error).
// Call it from main before starting other threads.
// Idempotent. Child processes reset their signal mask (subprocess.cc).
void InstallTerminationHandler();

// Writes a finished report to `out` (stdio, flushed) so that a termination signal leaves it whole
// or absent: a signal that comes first means no report, one that comes during the write waits up
// to 5 s for it to end (a reader that does not read within that gets a cut-short report, and a
// stderr line says so), and a pipe is first enlarged to hold the report where the system allows.
// False on a write error (errno set).
bool WriteWholeReport(std::FILE* out, std::string_view text);

}  // namespace diagnose
