// `diagnose completion bash|zsh` and `diagnose man`: rendered from the same CLI::App that parses
// the command line, after every command has registered (they run after parsing).
#include <cstdio>
#include <string>

#include "src/cli_docs.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {

int Print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;   // main checks that stdout was written and closed
}

}  // namespace

void RegisterCompletion(CLI::App& app, CommandRegistry& registry) {
  static std::string shell;
  CLI::App* completion = app.add_subcommand(
      "completion", "print a shell completion script (bash: source <(diagnose completion bash))");
  completion->add_option("shell", shell, "the shell to complete for")->required()->check(CLI::IsMember({"bash", "zsh"}));
  CLI::App* root = &app;
  registry.Add(completion, [root] { return Print(shell == "zsh" ? ZshCompletion(*root) : BashCompletion(*root)); });

  CLI::App* man = app.add_subcommand("man", "print this manual page in roff: diagnose man | man -l -");
  registry.Add(man, [root] { return Print(ManPage(*root)); });
}

}  // namespace diagnose::cli
