// diagnose: command-line entry. Parses arguments and dispatches to one subcommand; all logic lives
// in engine/.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/core/cleanup_registry.h"
#include "engine/core/utf8.h"
#include "src/commands.h"

namespace {

// Exit status when diagnose itself failed (an exception, memory exhausted): distinct from every
// answer about a job, so a sweep driver never mistakes it for one. sysexits' EX_SOFTWARE.
constexpr int kInternalFailureExit = 70;

[[noreturn]] void DieInternal(const std::string& what) {
  std::fprintf(stderr, "diagnose: internal failure: %s\n", diagnose::OneLine(what).c_str());
  diagnose::CleanupRegistry::Instance().RunAll();   // no orphaned Prometheus or temp copy
  std::_Exit(kInternalFailureExit);
}

// An exception escaping a worker thread ends in std::terminate, not in main's handler.
void OnTerminate() {
  std::string what = "terminated";
  if (auto current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::bad_alloc&) {
      what = "out of memory";
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "unknown exception";
    }
  }
  DieInternal(what);
}

// A report nobody received is a failure: a full disk or a closed pipe must not exit 0.
int FinishStdout(int rc) {
  std::cout.flush();
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  const int flush_errno = errno;
  const bool close_failed = std::fclose(stdout) != 0;
  if (!failed && !close_failed) return rc;
  std::fprintf(stderr, "diagnose: writing to standard output failed: %s\n",
               std::strerror(failed ? flush_errno : errno));
  return rc == 0 ? 1 : rc;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the blocked termination signals.
  diagnose::InstallTerminationHandler();
  std::set_terminate(OnTerminate);
  int rc = 0;
  try {
    CLI::App app{"diagnose: incident diagnosis for maxtext-slurm LLM training jobs"};
    app.set_version_flag("--version", std::string(DIAGNOSE_VERSION));
    app.require_subcommand(0, 1);
    diagnose::cli::CommandRegistry registry;
    diagnose::cli::RegisterAll(app, registry);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // --help and --version exit 0; every other parse error is a usage error, 2 as documented
      // (CLI11's own codes, 106 for a missing option and so on, mean nothing to a sweep driver).
      return FinishStdout(app.exit(e) == 0 ? 0 : 2);
    }
    rc = registry.Run(app);
  } catch (const std::bad_alloc&) {
    DieInternal("out of memory");
  } catch (const std::exception& e) {
    DieInternal(e.what());
  }
  return FinishStdout(rc);
}
