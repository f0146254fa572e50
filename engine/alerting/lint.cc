#include "engine/alerting/lint.h"

#include <filesystem>
#include <set>

#include "engine/alerting/rule_export.h"
#include "engine/core/bounded_yaml.h"
#include "engine/playbook/metric_catalogue.h"
#include "engine/playbook/promql_lint.h"
#include "engine/triage/signature_table.h"

namespace diagnose::alerting {

namespace {

namespace fs = std::filesystem;
namespace pb = diagnose::playbook;

bool Under(const std::string& file, const std::string& dir) {
  return fs::absolute(file).lexically_normal().string().find(dir) != std::string::npos;
}

// Directories hold other YAML too (rules/triage, rules/sweep, rules/discovery.yaml with their own
// schemas): from a directory only playbooks, rules/common and rules/alerts files are linted; a file
// named explicitly is always linted.
std::vector<std::string> FilesToLint(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    const bool explicit_file = fs::is_regular_file(p);
    for (const auto& f : pb::FindYamlFiles(p, false)) {
      const bool ours = Under(f, "/rules/common/") || Under(f, "/playbooks/") || Under(f, "/rules/alerts/") ||
                        pb::LooksLikePlaybook(f);
      if (explicit_file || ours) files.push_back(f);
    }
  }
  return files;
}

// The failure-signature table has its own schema: linted for its examples (every class reads its
// own; a class of the same or a higher priority that also matches one is named). Taken out of
// `paths` when named there; linted with the data dir when no path is given.
std::vector<std::string> TakeSignatureTables(std::vector<std::string>* paths, bool data_dir_default,
                                             const std::string& data_dir) {
  std::vector<std::string> tables;
  if (data_dir_default) tables.push_back(data_dir + "/rules/triage/failure-signatures.yaml");
  for (auto it = paths->begin(); it != paths->end();) {
    if (fs::is_regular_file(*it) && Under(*it, "/rules/triage/")) {
      tables.push_back(*it);
      it = paths->erase(it);
    } else {
      ++it;
    }
  }
  return tables;
}

void LintSignatureTable(const std::string& file, pb::LoadResult* result) {
  auto table = LoadSignatureTable(file);
  if (!table.ok()) {
    result->Add({pb::LoadCode::kYamlParse, {file, 0, 0}, "", "", "", table.status().message()});
    return;
  }
  for (const auto& finding : CheckSignatureExamples(*table))
    result->Add({finding.error ? pb::LoadCode::kBadValue : pb::LoadCode::kSignatureOverlap,
                 {file, finding.line, finding.column}, "", "", "", finding.message});
}

// Alerting rules read the playbooks and thresholds just loaded; promtool checks what they export.
void LintAlerts(const std::vector<std::string>& alerts, const pb::Loader& loader,
                const StatusOr<pb::MetricCatalogue>& catalogue, const std::string& catalogue_name,
                pb::LoadResult* result, std::vector<std::string>* unchecked) {
  AlertBook book;
  for (const auto& f : alerts) {
    auto text = ReadYamlFile(f);
    if (!text.ok()) {
      result->Add({pb::LoadCode::kFileRead, {f, 0, 0}, "", "", "", text.status().message()});
      continue;
    }
    LoadAlertText(*text, f, loader.library(), &book, result);
  }
  if (!result->ok()) return;
  auto checked = CheckExportedRules(book, loader.library());
  if (checked.ok()) {
    for (auto& d : *checked) result->Add(std::move(d));
  } else {
    unchecked->push_back("alerting rules not checked by promtool: " + checked.status().message());
  }
  if (catalogue.ok())
    for (auto& d : CheckAlertMetricNames(book, *catalogue, catalogue_name)) result->Add(std::move(d));
}

}  // namespace

LintReport Lint(const LintRequest& request) {
  LintReport report;
  const std::string& data_dir = request.data_dir;
  std::vector<std::string> paths = request.paths;
  if (paths.empty()) paths = {data_dir + "/rules/common", data_dir + "/playbooks"};
  const std::vector<std::string> signature_tables = TakeSignatureTables(&paths, request.paths.empty(), data_dir);
  std::vector<std::string> files = FilesToLint(paths);
  // An overlay is linted as diagnose loads it: on top of the data dir's playbooks (an id that clashes
  // with a shipped one is reported), every YAML file in it as a playbook, whatever it holds.
  std::vector<std::string> overlay;
  for (const auto& dir : request.playbook_dirs)
    for (const auto& f : pb::YamlFilesIn(dir)) overlay.push_back(f);
  // Split shared-rule files from playbooks: shared rules load first so playbooks can use them.
  // When none is given, the data dir's rules/common is loaded as context (not reported).
  pb::Loader loader;
  std::vector<std::string> common, playbooks, alerts;
  for (const auto& f : files) {
    if (Under(f, "/rules/alerts/"))
      alerts.push_back(f);
    else
      (pb::LooksLikePlaybook(f) ? playbooks : common).push_back(f);
  }
  // With no path, the data dir's alerting rules are linted with everything else.
  if (request.paths.empty())
    for (const auto& f : pb::FindYamlFiles(data_dir + "/rules/alerts", false)) {
      alerts.push_back(f);
      files.push_back(f);
    }
  if (common.empty()) loader.LoadCommonFiles(pb::FindYamlFiles(data_dir + "/rules/common", false));
  loader.LoadCommonFiles(common);
  for (const auto& f : playbooks) loader.LoadAnyFile(f);
  for (const auto& f : overlay) loader.LoadPlaybookFile(f);
  files.insert(files.end(), overlay.begin(), overlay.end());
  // Alerting rules name playbooks: linted alone, they are checked against the data dir's.
  if (playbooks.empty() && !alerts.empty())
    for (const auto& f : pb::FindYamlFiles(data_dir + "/playbooks", false))
      if (fs::path(f).parent_path() == fs::path(data_dir) / "playbooks") loader.LoadAnyFile(f);
  pb::LoadResult result = loader.result();
  // Metric names Prometheus accepts but the TSDB never holds: warnings, as a catalogue can lag a new
  // exporter (the query still runs and reports "no data").
  const std::string catalogue_name = "rules/metrics.yaml";
  const auto catalogue = pb::MetricCatalogue::Load(data_dir + "/" + catalogue_name);
  if (!catalogue.ok()) report.unchecked.push_back("metric names not checked: " + catalogue.status().message());
  if (result.ok() && !alerts.empty()) LintAlerts(alerts, loader, catalogue, catalogue_name, &result, &report.unchecked);
  // PromQL through Prometheus's own parser, once the YAML itself is sound.
  if (result.ok()) {
    auto promql = pb::CheckPromqlSyntax(loader.library());
    if (promql.ok()) {
      for (auto& d : *promql) result.Add(std::move(d));
    } else {
      report.unchecked.push_back("PromQL not checked: " + promql.status().message());
    }
  }
  if (result.ok() && catalogue.ok())
    for (auto& d : pb::CheckMetricNames(loader.library(), *catalogue, catalogue_name)) result.Add(std::move(d));
  for (const auto& f : signature_tables) {
    LintSignatureTable(f, &result);
    files.push_back(f);
  }

  for (const auto& f : files) {
    LintedFile linted{f, result.ForFile(f)};
    for (const auto& d : linted.diagnostics) (d.warning() ? linted.warnings : linted.errors)++;
    report.errors += linted.errors;
    report.warnings += linted.warnings;
    report.files.push_back(std::move(linted));
  }
  // Problems in context files (the data dir's shared rules) still matter.
  const std::set<std::string> reported(files.begin(), files.end());
  for (const auto& d : result.diagnostics()) {
    if (reported.count(d.pos.file) || d.warning()) continue;
    ++report.errors;
    report.context_errors.push_back(d);
  }
  return report;
}

}  // namespace diagnose::alerting
