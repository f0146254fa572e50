#include "src/commands.h"

#include <cstdio>

#include "engine/core/utf8.h"

namespace diagnose::cli {

int CommandRegistry::Run(CLI::App& app) {
  for (const auto& entry : entries_)
    if (entry.sub != nullptr && entry.sub->parsed()) return entry.run();
  for (const auto& entry : entries_)
    if (entry.sub == nullptr) return entry.run();
  return 2;
}

void RegisterAll(CLI::App& app, CommandRegistry& registry) {
  RegisterDiagnose(app, registry);
  RegisterLint(app, registry);
  RegisterExplain(app, registry);
  RegisterTest(app, registry);
  RegisterWatch(app, registry);
  RegisterNodes(app, registry);
}

void PrintError(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", command.c_str(), OneLine(message).c_str());
}

}  // namespace diagnose::cli
