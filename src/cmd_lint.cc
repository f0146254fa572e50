// `diagnose lint [PATH...] [--format json]`: validates playbooks and shared rules. Prints
// `<file>: Ok`, `<file>: Ok, with warnings` or `<file>: Invalid` followed by every diagnostic
// (file:line:col); exits 1 when any file has errors. What is linted is engine/alerting/lint.h's.
#include <cstdio>
#include <iostream>

#include "engine/alerting/lint.h"
#include "engine/core/json.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {
struct LintArgs {
  std::vector<std::string> paths;
  std::string format = "text";
  std::string data_dir;                    // as `diagnose JOB --data-dir`
  std::vector<std::string> playbook_dirs;  // as `diagnose JOB --playbooks`: linted with the data dir's
};

int RunLint(const LintArgs& args) {
  namespace pb = diagnose::playbook;
  const alerting::LintReport report = alerting::Lint(
      {args.paths, args.data_dir.empty() ? pb::PlaybookDataDir() : args.data_dir, args.playbook_dirs});
  for (const auto& why : report.unchecked) PrintError("diagnose lint", why);
  if (args.format == "json") {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : report.files) {
      pb::LoadResult one;
      for (const auto& d : f.diagnostics) one.Add(d);
      files.push_back({{"file", f.file},
                       {"status", f.errors ? "invalid" : f.warnings ? "warnings" : "ok"},
                       {"diagnostics", one.AsJson()}});
    }
    nlohmann::json out = {{"files", files}, {"errors", report.errors}, {"warnings", report.warnings}};
    std::cout << DumpJson(out, 2) << "\n";
    return report.errors ? 1 : 0;
  }
  for (const auto& f : report.files) {
    std::printf("%s: %s\n", f.file.c_str(), f.errors ? "Invalid" : f.warnings ? "Ok, with warnings" : "Ok");
    for (const auto& d : f.diagnostics) std::printf("  %s\n", d.ToString().c_str());
  }
  for (const auto& d : report.context_errors) std::printf("%s\n", d.ToString().c_str());
  if (report.files.empty()) {
    std::fprintf(stderr, "diagnose lint: no YAML files found\n");
    return 1;
  }
  return report.errors ? 1 : 0;
}
}  // namespace

void RegisterLint(CLI::App& app, CommandRegistry& registry) {
  static LintArgs args;
  CLI::App* sub = app.add_subcommand("lint", "validate playbooks and shared rules (file:line:col errors)");
  sub->add_option("paths", args.paths, "files or directories (default: rules/common and playbooks/ of the data dir)");
  sub->add_option("--format", args.format, "text|json")->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--data-dir", args.data_dir,
                  "where rules/ and playbooks/ live (default: $DIAGNOSE_DATA_DIR or the source tree)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--playbooks", args.playbook_dirs,
                  "a directory of playbooks of one's own, linted on top of the data dir's (repeatable)")
      ->check(CLI::ExistingDirectory);
  registry.Add(sub, [] { return RunLint(args); });
}

}  // namespace diagnose::cli
