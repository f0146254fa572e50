#include "src/cli_docs.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/core/text.h"
#include "src/exit_status.h"

namespace diagnose::cli {

namespace {

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return lines;
    start = end + 1;
  }
}

// CLI11 says what a check accepts only in the option's type name: "TEXT:{auto,always,never}".
std::vector<std::string> Choices(const std::string& type_name) {
  const size_t open = type_name.find(":{");
  if (open == std::string::npos) return {};
  const size_t close = type_name.find('}', open);
  if (close == std::string::npos) return {};
  std::vector<std::string> choices;
  std::string inner = type_name.substr(open + 2, close - open - 2);
  size_t start = 0;
  while (start <= inner.size()) {
    const size_t comma = inner.find(',', start);
    const std::string choice = inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!choice.empty()) choices.push_back(choice);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return choices;
}

OptionDoc DescribeOption(const CLI::Option& option) {
  OptionDoc doc;
  for (const auto& name : option.get_snames()) doc.flags.push_back("-" + name);
  for (const auto& name : option.get_lnames()) doc.flags.push_back("--" + name);
  if (option.get_positional()) doc.positional = option.get_name(true, false);
  doc.description = option.get_description();
  doc.takes_value = option.get_positional() || option.get_items_expected_max() > 0;   // a flag expects 0
  const std::string type_name = option.get_type_name();
  doc.value_name = doc.takes_value ? type_name.substr(0, type_name.find(':')) : "";
  doc.choices = Choices(type_name);
  doc.repeatable = option.get_expected_max() > 1 || option.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
  doc.required = option.get_required();
  return doc;
}

std::vector<const CLI::App*> VisibleSubcommands(const CLI::App& app) {
  // Option groups are nameless subcommands to CLI11; a subcommand without a group is hidden.
  return app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty() && !sub->get_group().empty(); });
}

void Describe(const CLI::App& app, std::vector<std::string> path, std::vector<CommandDoc>* out) {
  CommandDoc doc;
  doc.path = path;
  doc.description = app.get_description();
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;
    (option->get_positional() ? doc.positionals : doc.options).push_back(DescribeOption(*option));
  }
  const auto subs = VisibleSubcommands(app);
  for (const CLI::App* sub : subs) doc.subcommands.push_back(sub->get_name());
  doc.needs_subcommand = app.get_require_subcommand_min() > 0;
  out->push_back(doc);
  for (const CLI::App* sub : subs) {
    std::vector<std::string> nested = path;
    nested.push_back(sub->get_name());
    Describe(*sub, nested, out);
  }
}

std::string CommandLine(const CommandDoc& command) {
  return command.path.empty() ? "diagnose" : "diagnose " + JoinStrings(command.path, " ");
}

// A positional named for a job (`job`, `jobs`) completes job ids from the outputs dir too.
bool NamesJob(const OptionDoc& positional) { return positional.positional == "job" || positional.positional == "jobs"; }

// ---- bash ----

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string FirstLine(const std::string& text) { return SplitLines(text).front(); }

}  // namespace

std::vector<CommandDoc> DescribeCommands(const CLI::App& root) {
  std::vector<CommandDoc> commands;
  Describe(root, {}, &commands);
  return commands;
}

std::string BashCompletion(const CLI::App& root) {
  const auto commands = DescribeCommands(root);
  std::string spec, values;
  for (const auto& command : commands) {
    std::vector<std::string> opts, valued, positionals;
    for (const auto& option : command.options) {
      opts.insert(opts.end(), option.flags.begin(), option.flags.end());
      if (option.takes_value) valued.insert(valued.end(), option.flags.begin(), option.flags.end());
      if (option.choices.empty()) continue;
      for (const auto& flag : option.flags)
        values += "    " + ShellQuote(JoinStrings(command.path, " ") + "|" + flag) + ") echo " + ShellQuote(JoinStrings(option.choices, " ")) + " ;;\n";
    }
    for (size_t i = 0; i < command.positionals.size(); ++i) {
      const OptionDoc& positional = command.positionals[i];
      std::string kind = !positional.choices.empty() ? "choice" : NamesJob(positional) ? "job" : "file";
      if (positional.repeatable) kind += "...";
      positionals.push_back(kind);
      if (!positional.choices.empty())
        values += "    " + ShellQuote(JoinStrings(command.path, " ") + "|@" + std::to_string(i)) + ") echo " +
                  ShellQuote(JoinStrings(positional.choices, " ")) + " ;;\n";
    }
    spec += "    " + ShellQuote(JoinStrings(command.path, " ")) + ")\n      subs=" + ShellQuote(JoinStrings(command.subcommands, " ")) +
            " opts=" + ShellQuote(JoinStrings(opts, " ")) + " valued=" + ShellQuote(JoinStrings(valued, " ")) +
            "\n      positionals=(" + JoinStrings(positionals, " ") + ") ;;\n";
  }
  return R"SH(# bash completion for diagnose. Generated by `diagnose completion bash` from the parser's own
# definition: regenerate it rather than editing it.

# Sets subs, opts, valued (options that take a value) and positionals for a command path.
_diagnose_spec() {
  subs= opts= valued= positionals=()
  case $1 in
)SH" + spec + R"SH(  esac
}

# The values a choice option (or positional @N) of a command path accepts.
_diagnose_values() {
  case "$1|$2" in
)SH" + values + R"SH(  esac
}

# Slurm job ids with a log in the outputs dir (`<id>-*.log`).
_diagnose_job_ids() {
  local dir=${1:-${DIAGNOSE_OUTPUTS:-outputs}} f
  for f in "$dir"/[0-9]*-*.log; do
    [[ -e $f ]] || continue
    f=${f##*/}
    f=${f%%-*}
    [[ $f == *[!0-9]* ]] || printf '%s\n' "$f"
  done
}

_diagnose_files() {
  compopt -o filenames 2>/dev/null
  local line
  while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -f -- "$1")
}

_diagnose_words() {
  local line
  while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -W "$1" -- "$2")
}

_diagnose() {
  local subs opts valued positionals
  local cur=${COMP_WORDS[COMP_CWORD]} path= word pending= outputs= i npos=0 ended=
  COMPREPLY=()
  _diagnose_spec ''
  # Readline splits `--format=json` at '=' (COMP_WORDBREAKS): the '=' word only joins the two halves.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    [[ $word == = ]] && continue
    if [[ -n $pending ]]; then
      [[ $pending == --outputs ]] && outputs=$word
      pending=
      continue
    fi
    if [[ -z $ended && $word == -- ]]; then ended=1; continue; fi
    if [[ -z $ended && $word == -* ]]; then
      [[ " $valued " == *" $word "* ]] && pending=$word
      continue
    fi
    if [[ -z $ended && " $subs " == *" $word "* ]]; then
      path=${path:+$path }$word
      npos=0
      _diagnose_spec "$path"
      continue
    fi
    npos=$((npos + 1))
  done
  [[ $cur == = ]] && cur=
  if [[ -n $pending ]]; then
    local choices
    choices=$(_diagnose_values "$path" "$pending")
    if [[ -n $choices ]]; then _diagnose_words "$choices" "$cur"; else _diagnose_files "$cur"; fi
    return 0
  fi
  if [[ -z $ended && $cur == -* ]]; then
    _diagnose_words "$opts" "$cur"
    return 0
  fi
  local kind= n=${#positionals[@]}
  if ((npos < n)); then
    kind=${positionals[npos]}
  elif ((n > 0)) && [[ ${positionals[n - 1]} == *... ]]; then
    kind=${positionals[n - 1]}
    npos=$((n - 1))
  fi
  ((npos == 0)) && [[ -z $ended ]] && _diagnose_words "$subs" "$cur"
  case ${kind%...} in
    choice) _diagnose_words "$(_diagnose_values "$path" "@$npos")" "$cur" ;;
    job) _diagnose_words "$(_diagnose_job_ids "$outputs")" "$cur"; _diagnose_files "$cur" ;;
    file) _diagnose_files "$cur" ;;
  esac
  return 0
}

complete -F _diagnose diagnose
)SH";
}

// ---- zsh ----

namespace {

// Inside an _arguments spec, brackets and colons have meaning.
std::string ZshSpecText(const std::string& text) {
  std::string out;
  for (char c : FirstLine(text)) {
    if (c == '[' || c == ']' || c == ':' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string ZshFunction(const CommandDoc& command) {
  return "_diagnose__" + (command.path.empty() ? std::string("root") : JoinStrings(command.path, "_"));
}

std::string ZshAction(const OptionDoc& option) {
  if (!option.choices.empty()) return "(" + JoinStrings(option.choices, " ") + ")";
  if (!option.positional.empty() && NamesJob(option)) return "_diagnose_jobs";
  return "_files";
}

std::string ZshValueName(const OptionDoc& option) {
  std::string name = option.positional.empty() ? option.value_name : option.positional;
  std::replace(name.begin(), name.end(), ':', '_');
  return name.empty() ? "value" : name;
}

}  // namespace

std::string ZshCompletion(const CLI::App& root) {
  const auto commands = DescribeCommands(root);
  std::string functions;
  for (const auto& command : commands) {
    std::vector<std::string> specs;
    for (const auto& option : command.options) {
      for (const auto& flag : option.flags) {
        std::string spec = option.repeatable ? "*" : "";
        spec += flag;
        if (option.takes_value) spec += flag.rfind("--", 0) == 0 ? "=" : "+";
        spec += "[" + ZshSpecText(option.description) + "]";
        if (option.takes_value) spec += ":" + ZshSpecText(ZshValueName(option)) + ":" + ZshAction(option);
        specs.push_back(ShellQuote(spec));
      }
    }
    std::vector<std::string> positional_specs;
    for (size_t i = 0; i < command.positionals.size(); ++i) {
      const OptionDoc& positional = command.positionals[i];
      const std::string where = positional.repeatable ? "*" : std::to_string(i + 1);
      positional_specs.push_back(
          ShellQuote(where + ":" + ZshSpecText(ZshValueName(positional)) + ":" + ZshAction(positional)));
    }
    std::string body = "  local -a specs=(\n";
    for (const auto& spec : specs) body += "    " + spec + "\n";
    body += "  )\n";
    if (command.subcommands.empty()) {
      body += "  _arguments -s -S $specs " + JoinStrings(positional_specs, " ") + "\n";
    } else {
      std::string described, dispatch;
      for (const auto& other : commands) {
        if (other.path.size() != command.path.size() + 1 ||
            !std::equal(command.path.begin(), command.path.end(), other.path.begin()))
          continue;
        described += "    " + ShellQuote(other.path.back() + ":" + FirstLine(other.description)) + "\n";
        dispatch += "      " + other.path.back() + ") " + ZshFunction(other) + " ;;\n";
      }
      // A command that also takes positionals (`diagnose JOB`) offers them beside its subcommands;
      // after a positional, only its own options remain.
      const bool takes_job = !command.positionals.empty() && NamesJob(command.positionals.front());
      body += "  local curcontext=$curcontext state line ret=1\n  typeset -A opt_args\n"
              "  _arguments -C -s -S $specs ': :->command' '*:: :->args' && ret=0\n"
              "  case $state in\n"
              "    command)\n      local -a commands=(\n" + described + "      )\n"
              "      _describe -t commands " + ShellQuote(CommandLine(command) + " command") + " commands && ret=0\n" +
              (takes_job ? "      _diagnose_jobs && ret=0\n" : "") +
              "      ;;\n"
              "    args)\n      case $words[1] in\n" + dispatch +
              (takes_job ? "      *) _arguments -s -S $specs && ret=0 ;;\n" : "") +
              "      esac\n      ;;\n  esac\n  return ret\n";
    }
    functions += ZshFunction(command) + "() {\n" + body + "}\n\n";
  }
  return R"SH(#compdef diagnose
# zsh completion for diagnose. Generated by `diagnose completion zsh` from the parser's own
# definition: regenerate it rather than editing it.

# Slurm job ids with a log in the outputs dir (`<id>-*.log`), and files: a job is also a dir or a log.
_diagnose_jobs() {
  local dir=${opt_args[--outputs]:-${DIAGNOSE_OUTPUTS:-outputs}}
  local -a ids
  ids=( $dir/<->-*.log(N:t) )
  ids=( ${ids%%-*} )
  compadd -a ids
  _files
}

)SH" + functions + R"SH(_diagnose() {
  _diagnose__root "$@"
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _diagnose "$@"
else
  compdef _diagnose diagnose
fi
)SH";
}

// ---- man page ----

std::string RoffLine(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\\') out += "\\e";
      else if (c == '-') out += "\\-";
      else if (c == '\t') out += ' ';
      else if (c >= 0x20 && c != 0x7f) out += static_cast<char>(c);
      ++i;
      continue;
    }
    // UTF-8 to \[uXXXX]: groff then needs no input encoding; a malformed byte becomes U+FFFD.
    const int length = c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    uint32_t code = length == 4 ? c & 0x07u : length == 3 ? c & 0x0fu : c & 0x1fu;
    bool valid = length > 0 && i + length <= text.size();
    for (int k = 1; valid && k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xc0u) == 0x80u;
      code = (code << 6) | (next & 0x3fu);
    }
    char buffer[16];
    std::snprintf(buffer, sizeof(buffer), "\\[u%04X]", valid ? static_cast<unsigned>(code) : 0xFFFDu);
    out += buffer;
    i += valid ? length : 1;
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

namespace {

std::string Bold(const std::string& text) { return "\\fB" + RoffLine(text) + "\\fR"; }
std::string Italic(const std::string& text) { return "\\fI" + RoffLine(text) + "\\fR"; }

// A macro argument: quoted, so spaces stay inside it; a double quote would end it early.
std::string MacroArg(const std::string& text) {
  std::string escaped;
  for (char c : RoffLine(text)) escaped += c == '"' ? std::string("\\(dq") : std::string(1, c);
  return "\"" + escaped + "\"";
}

void Paragraphs(const std::string& text, std::string* out) {
  bool first = true;
  for (const auto& line : SplitLines(text)) {
    if (!first) *out += ".br\n";
    *out += RoffLine(line) + "\n";
    first = false;
  }
}

std::string Placeholder(const OptionDoc& option) {
  if (!option.choices.empty()) return JoinStrings(option.choices, "|");
  if (!option.positional.empty()) {
    std::string name = option.positional;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
    return name;
  }
  return option.value_name;
}

std::string Synopsis(const CommandDoc& command) {
  std::string line = Bold(CommandLine(command)) + " [" + Italic("OPTIONS") + "]";
  for (const auto& positional : command.positionals) {
    std::string word = Italic(Placeholder(positional)) + (positional.repeatable ? "..." : "");
    line += " " + (positional.required ? word : "[" + word + "]");
  }
  return line;
}

void OptionEntry(const OptionDoc& option, std::string* out) {
  std::string tag;
  if (option.positional.empty()) {
    for (const auto& flag : option.flags) tag += (tag.empty() ? "" : ", ") + Bold(flag);
    if (option.takes_value) tag += " " + Italic(Placeholder(option));
  } else {
    tag = Italic(Placeholder(option)) + (option.repeatable ? "..." : "");
  }
  if (option.repeatable && option.positional.empty()) tag += " ...";
  *out += ".TP\n" + tag + "\n";
  Paragraphs(option.description, out);
  if (!option.choices.empty()) *out += ".br\n" + RoffLine("One of: " + JoinStrings(option.choices, ", ") + ".") + "\n";
  if (option.required && option.positional.empty()) *out += ".br\n" + RoffLine("Required.") + "\n";
}

bool SameOption(const OptionDoc& a, const OptionDoc& b) {
  return a.flags == b.flags && a.description == b.description && a.takes_value == b.takes_value;
}

// What the page says about the environment and files; the man page test checks that every variable
// the sources read with getenv() is listed here.
struct Entry {
  const char* name;
  const char* what;
};

constexpr Entry kEnvironment[] = {
    {"DIAGNOSE_OUTPUTS", "Where job outputs live when --outputs is not given (else ./outputs)."},
    {"DIAGNOSE_DATA_DIR",
     "Where rules/ and playbooks/ live when --data-dir is not given (else the install's share/diagnose, else the "
     "source tree the binary was built from)."},
    {"DIAGNOSE_SWEEP_HISTORY",
     "The sweep history diagnose summary reads when --history is not given (else sweep-history.jsonl beside the "
     "outputs dir)."},
    {"NO_COLOR", "Set and not empty: no colour in the text report or on standard error, unless --color always."},
    {"TERM", "dumb: no colour, as with NO_COLOR."},
    {"TMPDIR",
     "Where the private Prometheus copy of a job's TSDB (diagnose-prom-*) and other scratch files are made (else "
     "/tmp)."},
    {"PATH", "Searched for prometheus and promtool (Debian package prometheus)."},
};

constexpr Entry kFiles[] = {
    {"./outputs", "The default outputs dir: <id>-*.log job logs and their job directories (with prometheus/)."},
    {"PREFIX/share/diagnose/rules, PREFIX/share/diagnose/playbooks",
     "The installed rules and playbooks, found relative to the binary (PREFIX/bin/diagnose)."},
    {"sweep-history.jsonl", "Beside the outputs dir: the sweep history diagnose summary reads by default."},
    {"$TMPDIR/diagnose-prom-*",
     "Private Prometheus copies, removed on every exit path; ones left by a killed run are removed at the next "
     "start."},
};

}  // namespace

std::string ManPage(const CLI::App& root) {
  const auto commands = DescribeCommands(root);
  const CommandDoc& top = commands.front();
  // Options every command shares (-v, --log-level, --limit, --help) are described once; an option
  // of the same name that means something else (`test -v`) stays with its command.
  std::vector<OptionDoc> common;
  for (const auto& option : top.options) {
    size_t same = 0;
    for (size_t i = 1; i < commands.size(); ++i)
      same += std::any_of(commands[i].options.begin(), commands[i].options.end(),
                          [&](const OptionDoc& o) { return SameOption(o, option); });
    if (commands.size() > 1 && same * 2 > commands.size() - 1) common.push_back(option);
  }
  const auto is_common = [&](const OptionDoc& option) {
    return std::any_of(common.begin(), common.end(), [&](const OptionDoc& c) { return SameOption(c, option); });
  };

  std::string page;
  page += ".\\\" Generated by `diagnose man` from the parser's own definition: regenerate it rather than editing it.\n";
  page += ".TH DIAGNOSE 1 \"\" " + MacroArg(std::string("diagnose ") + DIAGNOSE_VERSION) + " \"User Commands\"\n";
  // `diagnose --help` opens with "diagnose: what it is"; whatis(1) wants "diagnose - what it is".
  std::string summary = top.description;
  if (summary.rfind("diagnose: ", 0) == 0) summary = summary.substr(10);
  page += ".nh\n.SH NAME\n" + RoffLine("diagnose - " + summary) + "\n";
  page += ".SH SYNOPSIS\n";
  bool first = true;
  for (const auto& command : commands) {
    if (command.needs_subcommand) continue;
    page += (first ? "" : ".br\n") + Synopsis(command) + "\n";
    first = false;
  }
  page += ".SH DESCRIPTION\n" +
          RoffLine("diagnose JOB explains what happened to a training job: it triages the job's logs, opens the "
                   "job's persisted Prometheus TSDB (or queries --prometheus URL), runs the playbooks and prints a "
                   "verdict with evidence and the decision a sweep driver acts on (retry, exclude nodes, change a "
                   "parameter, give up, stop the sweep). The job directory is never written.") +
          "\n.PP\n" +
          RoffLine("JOB is a Slurm job id, a k8s or local job id, a job directory or a job log file. --format json "
                   "(the default when standard output is not a terminal) is the machine contract, schema "
                   "diagnose/v1.") +
          "\n";
  page += ".SH COMMANDS\n";
  for (size_t i = 1; i < commands.size(); ++i) {
    page += ".TP\n" + Bold(CommandLine(commands[i])) + "\n";
    Paragraphs(commands[i].description, &page);
  }
  page += ".SH OPTIONS\n";
  for (const auto& command : commands) {
    std::vector<const OptionDoc*> own;
    for (const auto& positional : command.positionals) own.push_back(&positional);
    for (const auto& option : command.options)
      if (!is_common(option)) own.push_back(&option);
    if (own.empty()) continue;
    page += ".SS " + MacroArg(CommandLine(command)) + "\n";
    for (const OptionDoc* option : own) OptionEntry(*option, &page);
  }
  if (!common.empty()) {
    page += ".SS " + MacroArg("Every command") + "\n";
    for (const auto& option : common) OptionEntry(option, &page);
  }
  page += ".SH EXIT STATUS\n";
  for (const auto& status : kExitStatuses) {
    page += ".TP\n" + Bold(std::to_string(status.code)) + "\n";
    Paragraphs(status.meaning, &page);
  }
  page += ".SH ENVIRONMENT\n";
  for (const auto& entry : kEnvironment) page += ".TP\n" + Bold(entry.name) + "\n" + RoffLine(entry.what) + "\n";
  page += ".SH FILES\n";
  for (const auto& entry : kFiles) page += ".TP\n" + Italic(entry.name) + "\n" + RoffLine(entry.what) + "\n";
  page += ".SH SEE ALSO\n.BR prometheus (1),\n.BR promtool (1)\n.PP\n" +
          RoffLine("docs/contract.md (the command line, the JSON report, exit codes and vocabulary) in the source "
                   "tree; diagnose completion bash|zsh for shell completion.") +
          "\n";
  return page;
}

}  // namespace diagnose::cli
