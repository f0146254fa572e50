// diagnose: command-line entry. Parses arguments and dispatches to one subcommand; all logic lives
// in engine/.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/core/cleanup_registry.h"
#include "engine/core/utf8.h"
#include "src/commands.h"
#include "src/exit_status.h"

namespace {

using diagnose::ClosestName;
using diagnose::cli::OptionNames;
using diagnose::cli::SubcommandNames;

[[noreturn]] void DieInternal(const std::string& what) {
  std::fprintf(stderr, "diagnose: internal failure: %s\n", diagnose::OneLine(what).c_str());
  diagnose::CleanupRegistry::Instance().RunAll();   // no orphaned Prometheus or temp copy
  std::_Exit(diagnose::cli::kExitInternalFailure);
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

// "unknown option --formt; did you mean --format?" for the first unknown option one typo away, or "".
std::string OptionSuggestion(const CLI::App& app, int argc, char** argv) {
  const std::vector<std::string> known = OptionNames(app);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), arg) != known.end()) continue;
    const std::string closest = ClosestName(arg, known);
    if (!closest.empty()) return "unknown option " + diagnose::OneLine(arg) + "; did you mean " + closest + "?";
  }
  return "";
}

// "'sumary' is not a subcommand; did you mean `diagnose summary`?" for the first word, among those
// before any option, that stands where a subcommand may (`diagnose WORD`, `diagnose rules WORD`),
// is one typo from one there and names no file; or "". A job id or a path is never taken for one.
std::string SubcommandSuggestion(const CLI::App& app, int argc, char** argv) {
  const CLI::App* level = &app;
  std::string command = "diagnose";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return "";
    const std::vector<std::string> names = SubcommandNames(*level);
    if (names.empty()) return "";
    if (std::find(names.begin(), names.end(), word) != names.end()) {
      for (const CLI::App* sub : level->get_subcommands([](const CLI::App*) { return true; }))
        if (sub->get_name() == word) level = sub;
      command += " " + word;
      continue;
    }
    const bool alphabetic = std::all_of(word.begin(), word.end(), [](unsigned char c) { return std::isalpha(c) != 0; });
    const std::string closest = ClosestName(word, names);
    std::error_code ec;
    if (!alphabetic || closest.empty() || std::filesystem::exists(word, ec)) return "";
    return "'" + diagnose::OneLine(word) + "' is not a subcommand; did you mean `" + command + " " + closest + "`?";
  }
  return "";
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
      // (CLI11's own codes, 106 for a missing option and so on, mean nothing to a sweep driver),
      // told in one line like every other error rather than CLI11's two.
      if (e.get_exit_code() == 0) return FinishStdout(app.exit(e));
      std::string message = SubcommandSuggestion(app, argc, argv);
      if (message.empty()) message = OptionSuggestion(app, argc, argv);
      if (message.empty()) message = diagnose::OneLine(e.what()) + " (see `diagnose --help`)";
      std::fprintf(stderr, "diagnose: %s\n", message.c_str());
      return FinishStdout(diagnose::cli::kExitUsage);
    }
    // `diagnose lnit` parses as a job named "lnit", `diagnose rules exprot` as `rules` with a stray
    // word: a word one typo from a subcommand, naming no file, is a usage error with a suggestion
    // rather than a search for a job that does not exist.
    if (const std::string message = SubcommandSuggestion(app, argc, argv); !message.empty()) {
      std::fprintf(stderr, "diagnose: %s\n", message.c_str());
      return FinishStdout(diagnose::cli::kExitUsage);
    }
    rc = registry.Run(app);
  } catch (const std::bad_alloc&) {
    DieInternal("out of memory");
  } catch (const std::exception& e) {
    DieInternal(e.what());
  }
  // A command may leave owners for the exit to take back without running their destructors
  // (BackgroundWork::LeaveDiscardsToTheExit); a server or temp copy still registered then is
  // stopped and removed here rather than orphaned.
  diagnose::CleanupRegistry::Instance().RunAll();
  return FinishStdout(rc);
}
