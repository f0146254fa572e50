// `diagnose lint [PATH...] [--format json]`: validates playbooks and shared rules. Prints
// `<file>: Ok`, `<file>: Ok, with warnings` or `<file>: Invalid` followed by every diagnostic
// (file:line:col); exits 1 when any file has errors.
#include <cstdio>
#include <iostream>
#include <filesystem>
#include <set>

#include "engine/alerting/rule_export.h"
#include "engine/playbook/loader.h"
#include "engine/core/bounded_yaml.h"
#include "engine/core/json.h"
#include "engine/playbook/metric_catalogue.h"
#include "engine/playbook/promql_lint.h"
#include "engine/triage/signature_table.h"
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
  const std::string data_dir = args.data_dir.empty() ? pb::PlaybookDataDir() : args.data_dir;
  std::vector<std::string> paths = args.paths;
  if (paths.empty()) paths = {data_dir + "/rules/common", data_dir + "/playbooks"};
  // An overlay is linted as diagnose loads it: on top of the data dir's playbooks, so an id that
  // clashes with a shipped one is reported.
  paths.insert(paths.end(), args.playbook_dirs.begin(), args.playbook_dirs.end());
  std::vector<std::string> files;
  // The failure-signature table has its own schema: linted for its examples (every class reads its
  // own; another class that also matches one is named), with the data dir or when named.
  std::vector<std::string> signature_files;
  if (args.paths.empty()) signature_files.push_back(data_dir + "/rules/triage/failure-signatures.yaml");
  for (auto it = paths.begin(); it != paths.end();) {
    const bool signatures = std::filesystem::is_regular_file(*it) &&
                            std::filesystem::absolute(*it).lexically_normal().string().find("/rules/triage/") != std::string::npos;
    if (signatures) {
      signature_files.push_back(*it);
      it = paths.erase(it);
    } else {
      ++it;
    }
  }
  // Directories hold other YAML too (rules/triage, rules/sweep, rules/discovery.yaml with their own
  // schemas): from a directory only playbooks and rules/common files are linted; a file named
  // explicitly is always linted.
  for (const auto& p : paths) {
    bool explicit_file = std::filesystem::is_regular_file(p);
    for (const auto& f : pb::FindYamlFiles(p, false)) {
      std::string abs = std::filesystem::absolute(f).lexically_normal().string();
      bool ours = abs.find("/rules/common/") != std::string::npos || abs.find("/playbooks/") != std::string::npos ||
                  abs.find("/rules/alerts/") != std::string::npos || pb::LooksLikePlaybook(f);
      if (explicit_file || ours) files.push_back(f);
    }
  }
  // Split shared-rule files from playbooks: shared rules load first so playbooks can use them.
  // When none is given, the data dir's rules/common is loaded as context (not reported).
  pb::Loader loader;
  std::vector<std::string> common, playbooks, alerts;
  for (const auto& f : files) {
    if (std::filesystem::absolute(f).lexically_normal().string().find("/rules/alerts/") != std::string::npos)
      alerts.push_back(f);
    else
      (pb::LooksLikePlaybook(f) ? playbooks : common).push_back(f);
  }
  // With no path, the data dir's alerting rules are linted with everything else.
  if (args.paths.empty())
    for (const auto& f : pb::FindYamlFiles(data_dir + "/rules/alerts", false)) {
      alerts.push_back(f);
      files.push_back(f);
    }
  if (common.empty())
    loader.LoadCommonFiles(pb::FindYamlFiles(data_dir + "/rules/common", false));
  loader.LoadCommonFiles(common);
  for (const auto& f : playbooks) loader.LoadAnyFile(f);
  // Alerting rules name playbooks: linted alone, they are checked against the data dir's.
  if (playbooks.empty() && !alerts.empty())
    for (const auto& f : pb::FindYamlFiles(data_dir + "/playbooks", false))
      if (std::filesystem::path(f).parent_path() == std::filesystem::path(data_dir) / "playbooks") loader.LoadAnyFile(f);
  pb::LoadResult result = loader.result();
  // Metric names Prometheus accepts but the TSDB never holds: warnings, as a catalogue can lag a new
  // exporter (the query still runs and reports "no data").
  const std::string catalogue_name = "rules/metrics.yaml";
  const auto catalogue = pb::MetricCatalogue::Load(data_dir + "/" + catalogue_name);
  if (!catalogue.ok()) PrintError("diagnose lint", "metric names not checked: " + catalogue.status().message());
  // Alerting rules read the playbooks and thresholds just loaded.
  if (result.ok() && !alerts.empty()) {
    alerting::AlertBook book;
    for (const auto& f : alerts) {
      auto text = ReadYamlFile(f);
      if (!text.ok()) {
        result.Add({pb::LoadCode::kFileRead, {f, 0, 0}, "", "", "", text.status().message()});
        continue;
      }
      alerting::LoadAlertText(*text, f, loader.library(), &book, &result);
    }
    if (result.ok()) {
      auto checked = alerting::CheckExportedRules(book, loader.library());
      if (checked.ok()) {
        for (auto& d : *checked) result.Add(std::move(d));
      } else {
        PrintError("diagnose lint", "alerting rules not checked by promtool: " + checked.status().message());
      }
      if (catalogue.ok())
        for (auto& d : alerting::CheckAlertMetricNames(book, *catalogue, catalogue_name)) result.Add(std::move(d));
    }
  }
  // PromQL through Prometheus's own parser, once the YAML itself is sound.
  if (result.ok()) {
    auto promql = pb::CheckPromqlSyntax(loader.library());
    if (promql.ok()) {
      for (auto& d : *promql) result.Add(std::move(d));
    } else {
      PrintError("diagnose lint", "PromQL not checked: " + promql.status().message());
    }
  }
  if (result.ok() && catalogue.ok())
    for (auto& d : pb::CheckMetricNames(loader.library(), *catalogue, catalogue_name)) result.Add(std::move(d));
  for (const auto& f : signature_files) {
    files.push_back(f);
    auto table = LoadSignatureTable(f);
    if (!table.ok()) {
      result.Add({pb::LoadCode::kYamlParse, {f, 0, 0}, "", "", "", table.status().message()});
      continue;
    }
    for (const auto& finding : CheckSignatureExamples(*table))
      result.Add({finding.error ? pb::LoadCode::kBadValue : pb::LoadCode::kSignatureOverlap,
                  {f, finding.line, finding.column}, "", "", "", finding.message});
  }
  int errors = 0, warnings = 0;
  nlohmann::json json_files = nlohmann::json::array();
  std::set<std::string> reported(files.begin(), files.end());
  for (const auto& f : files) {
    auto diags = result.ForFile(f);
    int e = 0, w = 0;
    for (const auto& d : diags) (d.warning() ? w : e)++;
    errors += e;
    warnings += w;
    std::string status = e ? "Invalid" : w ? "Ok, with warnings" : "Ok";
    if (args.format == "json") {
      nlohmann::json list = nlohmann::json::array();
      pb::LoadResult one;
      for (const auto& d : diags) one.Add(d);
      json_files.push_back({{"file", f}, {"status", e ? "invalid" : w ? "warnings" : "ok"}, {"diagnostics", one.AsJson()}});
    } else {
      std::printf("%s: %s\n", f.c_str(), status.c_str());
      for (const auto& d : diags) std::printf("  %s\n", d.ToString().c_str());
    }
  }
  // Problems in context files (the data dir's shared rules) still matter.
  for (const auto& d : result.diagnostics()) {
    if (reported.count(d.pos.file) || d.warning()) continue;
    ++errors;
    if (args.format != "json") std::printf("%s\n", d.ToString().c_str());
  }
  if (args.format == "json") {
    nlohmann::json out = {{"files", json_files}, {"errors", errors}, {"warnings", warnings}};
    std::cout << DumpJson(out, 2) << "\n";
  } else if (files.empty()) {
    std::fprintf(stderr, "diagnose lint: no YAML files found\n");
    return 1;
  }
  return errors ? 1 : 0;
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
