#include "src/commands.h"

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "engine/core/limits.h"
#include "engine/core/logging.h"
#include "engine/core/utf8.h"
#include "engine/pipeline/parallel_diagnoses.h"

namespace diagnose::cli {

namespace {

struct CommonArgs {
  int verbose = 0;
  std::string level;
  std::string color = "auto";
  std::vector<std::string> limits;
};

CommonArgs& Common() {
  static CommonArgs args;
  return args;
}

std::string LimitHelp() {
  std::string help = "raise (or lower) a bound on untrusted input, NAME=VALUE; repeatable. Limits:";
  for (const auto& info : AllLimits())
    help += std::string("\n  ") + info.name + " (" + FormatLimitValue(info.id, info.default_value) + "): " + info.what;
  return help;
}

// On every command, not only the top level: CLI11 takes a parent's options only before the
// subcommand's name, and `diagnose summary DIR -v` is what people type. A command that already
// has its own -v (`test -v`: each test's verdict) keeps it; --log-level works there too.
void AddCommonFlags(CLI::App& app) {
  CommonArgs& args = Common();
  if (app.get_option_no_throw("-v") == nullptr)
    app.add_flag("-v", args.verbose,
                 "progress on stderr even when it is not a terminal (-vv debug, -vvv trace)")
        ->group("Logging");
  app.add_option("--log-level", args.level, "stderr log level: trace|debug|info|warn|error|off "
                                            "(default: info on a terminal, else off)")
      ->group("Logging");
  app.add_option("--limit", args.limits, LimitHelp())->group("Limits")->type_name("NAME=VALUE");
  app.add_option("--color", args.color,
                 "colour on a terminal: auto (unless NO_COLOR is set or TERM=dumb), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->group("Logging");
}

}  // namespace

ColorMode RequestedColorMode() { return ParseColorMode(Common().color).value_or(ColorMode::kAuto); }

int CommandRegistry::Run(CLI::App& app) {
  if (Status configured = ConfigureLogging(LogSettingsForStderr(Common().level, Common().verbose, RequestedColorMode()));
      !configured.ok()) {
    PrintError("diagnose", configured.message());
    return 2;
  }
  for (const auto& assignment : Common().limits) {
    if (Status set = SetLimitFromText(assignment); !set.ok()) {
      PrintError("diagnose", set.message());
      return 2;
    }
  }
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
  RegisterSummary(app, registry);
  RegisterSweep(app, registry);
  RegisterProfile(app, registry);
  RegisterFleet(app, registry);
  RegisterRules(app, registry);
  RegisterCompletion(app, registry);
  // Nested commands (`fleet import`) take them too.
  std::function<void(CLI::App&)> add_everywhere = [&](CLI::App& a) {
    AddCommonFlags(a);
    for (CLI::App* sub : a.get_subcommands([](CLI::App*) { return true; })) add_everywhere(*sub);
  };
  add_everywhere(app);
}

std::vector<std::string> OptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options())
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    const auto nested = OptionNames(*sub);
    names.insert(names.end(), nested.begin(), nested.end());
  }
  return names;
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

CLI::Validator Seconds(bool zero_means_none) {
  return CLI::Validator(
      [zero_means_none](std::string& text) -> std::string {
        char* end = nullptr;
        const double seconds = std::strtod(text.c_str(), &end);
        const bool number = !text.empty() && end == text.c_str() + text.size() && std::isfinite(seconds);
        if (number && (seconds > 0 || (zero_means_none && seconds == 0))) return "";
        return "'" + text + "' is not a number of seconds " + (zero_means_none ? ">= 0 (0: none)" : "> 0");
      },
      zero_means_none ? "SECONDS>=0" : "SECONDS>0");
}

bool SplitHeader(const std::string& raw, std::string* name, std::string* value) {
  auto colon = raw.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  *name = raw.substr(0, colon);
  auto start = raw.find_first_not_of(' ', colon + 1);
  *value = start == std::string::npos ? "" : raw.substr(start);
  return true;
}

void AddParallelDiagnosesOption(CLI::App* sub, int* parallel, const std::string& which_jobs) {
  sub->add_option("--parallel", *parallel,
                  which_jobs + ": diagnose N at a time (default: the usable cores, capped so that N diagnoses at " +
                      std::to_string(kDiagnosisPeakBytes >> 20) +
                      " MiB each, their private Prometheus included, fit in half the available memory); the "
                      "output is the same for every N")
      ->check(CLI::Range(1, 64));
}

int ParallelDiagnoses(int flag, const std::string& command) {
  if (flag > 0) {
    Stage("{}: {} job(s) diagnosed at a time (--parallel)", command, flag);
    return flag;
  }
  const ParallelismBound bound = DefaultParallelDiagnoses();
  Stage("{}: {} job(s) diagnosed at a time ({})", command, bound.parallel, bound.reason);
  return bound.parallel;
}

void PrintError(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", command.c_str(), OneLine(message).c_str());
}

}  // namespace diagnose::cli
