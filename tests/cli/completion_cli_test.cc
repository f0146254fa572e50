// `diagnose completion bash|zsh` and `diagnose man` describe exactly the command line the parser
// accepts. The commands and options are read from CLI11's own --help, not from the generator, so a
// generator that drops an option is caught; the bash script is sourced and driven as readline would.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/fixture_reports.h"

// Its own namespace: the unity build compiles this file together with other CLI tests.
namespace diagnose::e2e::completion_test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct HelpCommand {
  std::vector<std::string> path;
  std::set<std::string> options;   // "-v", "--format"
};

// Every command reachable from `diagnose --help`, with the options its own --help lists.
void ReadHelp(const std::vector<std::string>& path, std::vector<HelpCommand>* out) {
  std::vector<std::string> args = path;
  args.push_back("--help");
  CliRun run = RunDiagnoseCli(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  HelpCommand command{path, {}};
  std::vector<std::string> subs;
  bool in_subcommands = false;
  for (const auto& line : Lines(run.out)) {
    if (!line.empty() && line[0] != ' ') in_subcommands = line == "Subcommands:";
    if (line.size() < 3 || line.rfind("  ", 0) != 0 || line[2] == ' ') continue;
    const std::string first = line.substr(2, line.find(' ', 2) - 2);
    if (in_subcommands) {
      subs.push_back(first);
    } else if (first[0] == '-') {
      std::istringstream names(first);
      for (std::string name; std::getline(names, name, ',');) command.options.insert(name);
    }
  }
  out->push_back(command);
  for (const auto& sub : subs) {
    std::vector<std::string> nested = path;
    nested.push_back(sub);
    ReadHelp(nested, out);
  }
}

const std::vector<HelpCommand>& Commands() {
  static const std::vector<HelpCommand> commands = [] {
    std::vector<HelpCommand> all;
    ReadHelp({}, &all);
    return all;
  }();
  return commands;
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out = "diagnose";
  for (const auto& word : words) out += " " + word;
  return out;
}

std::string Generated(const std::vector<std::string>& args) {
  CliRun run = RunDiagnoseCli(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  return run.out;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = (fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()))).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

class BashCompletionCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { script_ = new std::string(WriteTemp("diagnose-completion.bash", Generated({"completion", "bash"}))); }
  static void TearDownTestSuite() {
    fs::remove(*script_);
    delete script_;
  }

  // What TAB offers after `words` (the last one is being completed), as bash-completion would call it.
  // In an empty directory: a job may be a file, so the files where the test runs would be offered too.
  static std::set<std::string> Complete(const std::vector<std::string>& words) {
    std::vector<std::string> argv = {"bash", "--norc", "--noprofile", "-c",
                                     "source \"$1\" || exit 9; shift; COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); "
                                     "empty=$(mktemp -d) && cd \"$empty\" && _diagnose; rmdir \"$empty\"; "
                                     "printf '%s\\n' \"${COMPREPLY[@]}\"",
                                     "bash", *script_, "diagnose"};
    argv.insert(argv.end(), words.begin(), words.end());
    CliRun run = RunProgram(argv);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.err, "");
    std::set<std::string> offered;
    for (const auto& line : Lines(run.out))
      if (!line.empty()) offered.insert(line);
    return offered;
  }

  static std::string* script_;
};
std::string* BashCompletionCli::script_ = nullptr;

using Offers = std::set<std::string>;

TEST_F(BashCompletionCli, IsValidBashAndMatchesTheBuiltFile) {
  CliRun syntax = RunProgram({"bash", "-n", *script_});
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
  EXPECT_EQ(ReadFileOrEmpty(std::string(DIAGNOSE_BUILD_DIR) + "/completions/diagnose"), ReadFileOrEmpty(*script_))
      << "build/completions/diagnose is stale: the diagnose_docs target did not run";
}

TEST_F(BashCompletionCli, CompletesSubcommandsOptionsAndChoices) {
  EXPECT_EQ(Complete({"li"}), Offers({"lint"}));
  EXPECT_EQ(Complete({"8308", "--for"}), Offers({"--format"}));
  EXPECT_EQ(Complete({"8308", "--format", ""}), Offers({"text", "md", "json", "html"}));
  EXPECT_EQ(Complete({"8308", "--color", "a"}), Offers({"auto", "always"}));
  // Readline splits `--format=j` into "--format" "=" "j".
  EXPECT_EQ(Complete({"8308", "--format", "=", "j"}), Offers({"json"}));
  EXPECT_EQ(Complete({"8308", "--format", "="}), Offers({"text", "md", "json", "html"}));
  EXPECT_EQ(Complete({"fleet", ""}), Offers({"import", "nodes"}));
  EXPECT_EQ(Complete({"rules", "export", "--for", ""}), Offers({"prometheus", "vmalert"}));
  EXPECT_EQ(Complete({"completion", ""}), Offers({"bash", "zsh"}));
  EXPECT_EQ(Complete({"nodes", "--mode", "b"}), Offers({"bisect"}));
  // A value that is not a choice is not taken for a subcommand: `--outputs lint` is a directory.
  EXPECT_EQ(Complete({"--outputs", "lint", "--for"}), Offers({"--format"}));
  // A flag takes no value: what follows it is a subcommand or the job again.
  EXPECT_EQ(Complete({"--logs-only", "li"}), Offers({"lint"}));
}

TEST_F(BashCompletionCli, CompletesJobIdsFromTheOutputsDirAndFiles) {
  REQUIRE_FIXTURE("8308");
  const Offers ids = Complete({"--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "830"});
  EXPECT_TRUE(ids.count("8308")) << ::testing::PrintToString(ids);
  const std::string dir = std::string(DIAGNOSE_FIXTURE_OUTPUTS) + "/8308-";
  const Offers files = Complete({"lint", dir});
  ASSERT_FALSE(files.empty());
  for (const auto& file : files) EXPECT_EQ(file.rfind(dir, 0), 0u) << file;
  // --history takes a file, not a choice.
  EXPECT_FALSE(Complete({"8308", "--history", dir}).empty());
}

TEST_F(BashCompletionCli, OffersEveryOptionOfEveryCommand) {
  for (const auto& command : Commands()) {
    std::vector<std::string> words = command.path;
    words.push_back("-");
    const Offers offered = Complete(words);
    for (const auto& option : command.options)
      EXPECT_TRUE(offered.count(option)) << Joined(command.path) << " " << option << " is not completed";
  }
}

TEST(CompletionCli, ZshScriptParsesAndMatchesTheBuiltFile) {
  const std::string script = Generated({"completion", "zsh"});
  EXPECT_EQ(script.rfind("#compdef diagnose\n", 0), 0u);
  EXPECT_EQ(ReadFileOrEmpty(std::string(DIAGNOSE_BUILD_DIR) + "/completions/_diagnose"), script);
  for (const auto& command : Commands())
    for (const auto& option : command.options)
      EXPECT_TRUE(script.find("'" + option) != std::string::npos || script.find("'*" + option) != std::string::npos)
          << Joined(command.path) << " " << option;   // '*' marks a repeatable option
  if (std::system("command -v zsh >/dev/null 2>&1") != 0) return;   // zsh is optional; bash is the contract
  const std::string path = WriteTemp("_diagnose", script);
  CliRun syntax = RunProgram({"zsh", "-n", path});
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
  fs::remove(path);
}

TEST(CompletionCli, AnUnknownShellIsAUsageError) {
  CliRun run = RunDiagnoseCli({"completion", "fish"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(run.out, "");
}

// ---- man page ----

std::string ManPage() {
  static const std::string page = Generated({"man"});
  return page;
}

std::string RoffEscaped(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

// The lines from `.XX heading` up to the next heading of the same or a higher level.
std::string Section(const std::string& page, const std::string& heading) {
  const size_t start = page.find(heading + "\n");
  if (start == std::string::npos) return "";
  size_t end = page.find("\n.SH ", start + 1);
  if (heading.rfind(".SS", 0) == 0) end = std::min(end, page.find("\n.SS ", start + 1));
  return page.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

TEST(ManPageCli, MatchesTheBuiltFile) {
  EXPECT_EQ(ReadFileOrEmpty(std::string(DIAGNOSE_BUILD_DIR) + "/diagnose.1"), ManPage());
}

TEST(ManPageCli, HasTheStandardSections) {
  size_t previous = 0;
  for (const char* section : {".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH COMMANDS", ".SH OPTIONS",
                              ".SH EXIT STATUS", ".SH ENVIRONMENT", ".SH FILES", ".SH SEE ALSO"}) {
    const size_t at = ManPage().find(std::string("\n") + section + "\n");
    ASSERT_NE(at, std::string::npos) << section;
    EXPECT_GT(at, previous) << section << " out of order";
    previous = at;
  }
}

TEST(ManPageCli, DescribesEveryCommandAndEveryOption) {
  const std::string page = ManPage();
  const std::string common = Section(page, ".SS \"Every command\"");
  for (const auto& command : Commands()) {
    const std::string name = RoffEscaped(Joined(command.path));
    if (!command.path.empty()) {
      EXPECT_NE(Section(page, ".SH COMMANDS").find("\\fB" + name + "\\fR"), std::string::npos) << name;
    }
    const std::string own = Section(page, ".SS \"" + name + "\"");
    for (const auto& option : command.options) {
      const std::string bold = "\\fB" + RoffEscaped(option) + "\\fR";
      EXPECT_TRUE(own.find(bold) != std::string::npos || common.find(bold) != std::string::npos)
          << Joined(command.path) << " " << option << " is not in the man page";
    }
  }
  EXPECT_NE(Section(page, ".SS \"diagnose\"").find("text|md|json|html"), std::string::npos);
}

TEST(ManPageCli, ListsTheContractsExitStatuses) {
  const std::string contract = ReadFileOrEmpty(std::string(DIAGNOSE_ENGINE_SOURCE_DIR) + "/../docs/contract.md");
  const std::string exit_section = Section(ManPage(), ".SH EXIT STATUS");
  std::smatch row;
  std::set<std::string> codes;
  const std::regex table_row(R"(\n\| (\d+) \|)");
  for (auto it = contract.cbegin(); std::regex_search(it, contract.cend(), row, table_row); it = row[0].second)
    codes.insert(row[1]);
  EXPECT_EQ(codes, (std::set<std::string>{"0", "1", "2", "3", "70"}));
  for (const auto& code : codes) EXPECT_NE(exit_section.find(".TP\n\\fB" + code + "\\fR\n"), std::string::npos) << code;
}

TEST(ManPageCli, ListsEveryEnvironmentVariableTheSourcesRead) {
  const std::string environment = Section(ManPage(), ".SH ENVIRONMENT");
  const std::regex getenv_call(R"re(getenv\("([A-Z_]+)"\))re");
  std::set<std::string> names;
  const fs::path engine = DIAGNOSE_ENGINE_SOURCE_DIR;
  for (const fs::path& root : {engine, engine.parent_path() / "src"})
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (entry.path().extension() != ".cc" && entry.path().extension() != ".h") continue;
      const std::string text = ReadFileOrEmpty(entry.path().string());
      std::smatch m;
      for (auto it = text.cbegin(); std::regex_search(it, text.cend(), m, getenv_call); it = m[0].second)
        names.insert(m[1]);
    }
  EXPECT_TRUE(names.count("DIAGNOSE_DATA_DIR") && names.count("NO_COLOR")) << "the source scan found nothing";
  for (const auto& name : names)
    EXPECT_NE(environment.find("\\fB" + name + "\\fR"), std::string::npos) << name << " is read but not documented";
}

TEST(ManPageCli, EscapesTextForRoff) {
  const std::set<std::string> requests = {".TH", ".nh", ".SH", ".SS", ".TP", ".PP", ".br", ".BR"};
  for (const auto& line : Lines(ManPage())) {
    if (line.rfind(".\\\"", 0) == 0) continue;   // a comment says what it likes
    EXPECT_NE(line.rfind('\'', 0), 0u) << line;
    if (line.rfind('.', 0) == 0) {
      EXPECT_TRUE(requests.count(line.substr(0, line.find(' ')))) << line;
    }
    for (size_t i = 0; i < line.size(); ++i)
      if (line[i] == '-') {
        EXPECT_TRUE(i > 0 && line[i - 1] == '\\') << "unescaped '-' in: " << line;
      }
  }
  if (std::system("command -v groff >/dev/null 2>&1") != 0) return;   // formatting check only where groff is
  const std::string path = WriteTemp("diagnose.1", ManPage());
  CliRun lint = RunProgram({"groff", "-man", "-Tutf8", "-ww", "-z", path});
  EXPECT_EQ(lint.exit_code, 0) << lint.err;
  EXPECT_EQ(lint.err, "") << "groff warnings";
  fs::remove(path);
}

}  // namespace
}  // namespace diagnose::e2e::completion_test
