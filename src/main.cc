// diagnose: command-line entry. Parses arguments and dispatches to one subcommand; all logic lives
// in engine/.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/core/cleanup_registry.h"
#include "src/commands.h"

int main(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the blocked termination signals.
  diagnose::InstallTerminationHandler();
  CLI::App app{"diagnose: incident diagnosis for maxtext-slurm LLM training jobs"};
  app.set_version_flag("--version", std::string(DIAGNOSE_VERSION));
  app.require_subcommand(0, 1);
  diagnose::cli::CommandRegistry registry;
  diagnose::cli::RegisterAll(app, registry);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return registry.Run(app);
}
