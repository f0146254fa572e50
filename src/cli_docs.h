// Shell completion and the man page, rendered from the CLI::App the parser uses: a new option or
// choice reaches `diagnose completion bash|zsh` and `diagnose man` without anyone listing it again.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace diagnose::cli {

struct OptionDoc {
  std::vector<std::string> flags;   // "-o", "--output"; empty for a positional
  std::string positional;           // "job" for a positional
  std::string description;
  std::string value_name;           // CLI11's type name (TEXT, INT, NAME=VALUE); empty for a flag
  std::vector<std::string> choices; // from a CLI::IsMember check
  bool takes_value = false;
  bool repeatable = false;
  bool required = false;
};

struct CommandDoc {
  std::vector<std::string> path;   // {} for `diagnose JOB`, {"fleet", "import"}
  std::string description;
  std::vector<OptionDoc> options;
  std::vector<OptionDoc> positionals;
  std::vector<std::string> subcommands;   // names, in definition order
  bool needs_subcommand = false;
};

// `root` and every visible subcommand, depth first, root first. Hidden options (no group) are left out.
std::vector<CommandDoc> DescribeCommands(const CLI::App& root);

std::string BashCompletion(const CLI::App& root);
std::string ZshCompletion(const CLI::App& root);
std::string ManPage(const CLI::App& root);

// Text safe on a roff text line: `\` and `-` escaped, characters past ASCII as \[uXXXX], and a
// leading `.` or `'` (which roff would take for a request) neutralised.
std::string RoffLine(const std::string& text);

}  // namespace diagnose::cli
