// Each subcommand lives in its own src/cmd_*.cc file and registers itself here.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/core/terminal.h"
#include "engine/core/text.h"

namespace diagnose::cli {

class CommandRegistry {
 public:
  // `sub` is null for the top-level `diagnose JOB` command.
  void Add(CLI::App* sub, std::function<int()> run) { entries_.push_back({sub, std::move(run)}); }
  // Configures logging from the parsed -v/--log-level (2 for a bad level), then runs the command.
  int Run(CLI::App& app);

 private:
  struct Entry {
    CLI::App* sub;
    std::function<int()> run;
  };
  std::vector<Entry> entries_;
};

void RegisterDiagnose(CLI::App& app, CommandRegistry& registry);
void RegisterLint(CLI::App& app, CommandRegistry& registry);
void RegisterExplain(CLI::App& app, CommandRegistry& registry);
void RegisterTest(CLI::App& app, CommandRegistry& registry);
void RegisterWatch(CLI::App& app, CommandRegistry& registry);
void RegisterNodes(CLI::App& app, CommandRegistry& registry);
void RegisterSummary(CLI::App& app, CommandRegistry& registry);
void RegisterSweep(CLI::App& app, CommandRegistry& registry);
void RegisterProfile(CLI::App& app, CommandRegistry& registry);
// Every command, then -v/--log-level/--limit on each of them.
void RegisterFleet(CLI::App& app, CommandRegistry& registry);
void RegisterRules(CLI::App& app, CommandRegistry& registry);
// `completion bash|zsh` and `man`, rendered from `app` itself (src/cli_docs.h).
void RegisterCompletion(CLI::App& app, CommandRegistry& registry);
void RegisterAll(CLI::App& app, CommandRegistry& registry);

// "Authorization: Bearer x" -> {"Authorization", "Bearer x"}; false when there is no name.
bool SplitHeader(const std::string& raw, std::string* name, std::string* value);

// A number of seconds an option takes (--deadline, --query-timeout): finite and positive, or with
// `zero_means_none` also 0. NaN, an infinity or a negative is a usage error (exit 2), never read
// as "no limit"; a huge value is taken, and saturates where it is used.
CLI::Validator Seconds(bool zero_means_none);

// "<command>: <message>" on stderr as one line, whatever bytes the message carries (a job id with a
// newline, a server's binary answer).
void PrintError(const std::string& command, const std::string& message);

// --parallel N of the commands that diagnose many jobs (summary, watch): the option, and the count
// to use (the flag's, else DefaultParallelDiagnoses), said in one stage line naming `command`.
void AddParallelDiagnosesOption(CLI::App* sub, int* parallel, const std::string& which_jobs);
int ParallelDiagnoses(int flag, const std::string& command);

// The common --color option (auto|always|never), for whatever a command writes to a terminal.
ColorMode RequestedColorMode();

// Every long option ("--format") and subcommand name of `app` and its subcommands.
std::vector<std::string> OptionNames(const CLI::App& app);
std::vector<std::string> SubcommandNames(const CLI::App& app);

}  // namespace diagnose::cli
