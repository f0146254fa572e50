#include <cstdio>
#include <iostream>

#include "src/commands.h"

namespace diagnose::cli {

namespace {
struct DiagnoseArgs {
  std::string job;
  std::string outputs;
  std::string format;
};
}  // namespace

void RegisterDiagnose(CLI::App& app, CommandRegistry& registry) {
  static DiagnoseArgs args;
  app.add_option("job", args.job, "Slurm/k8s/local job id, job directory or job log file");
  app.add_option("--outputs", args.outputs, "where job outputs live (default $DIAGNOSE_OUTPUTS, else ./outputs)");
  app.add_option("--format", args.format, "text|md|json|html");
  registry.Add(nullptr, [] {
    std::fprintf(stderr, "diagnose: pipeline not wired yet\n");
    return 1;
  });
}

}  // namespace diagnose::cli
