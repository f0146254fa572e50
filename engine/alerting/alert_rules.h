// Alerting rules as data (rules/alerts/*.yaml, playbooks/README.md "Alerting rules"): the part of a
// playbook that PromQL can say alone, with its thresholds as typed args computed from rules/common
// thresholds and the playbook's params. Loaded against the playbook Library so that every playbook,
// root cause, threshold and param an alert names is checked at load time, with file:line:col.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/playbook/loader.h"
#include "engine/playbook/playbook.h"

namespace diagnose::alerting {

// A recording rule: a shared per-host rate or level that alerts (and dashboards) read by name.
struct RecordSpec {
  std::string record;
  std::string description;
  std::string expr_template;
  std::map<std::string, playbook::ParamSpec> args;
  playbook::SourcePos pos;
  playbook::SourcePos expr_pos;
};

struct AlertSpec {
  std::string alert;
  std::string playbook;      // the playbook whose knowledge it carries
  std::string root_cause;    // one of that playbook's verdicts
  std::vector<std::string> evidence;   // the playbook's rules it carries (local ids, or common.<id>)
  std::string severity;      // warning | critical
  std::string expr_template;
  playbook::ParamSpec hold;  // Prometheus's `for:` (a duration)
  std::map<std::string, playbook::ParamSpec> args;
  std::string summary;       // a Prometheus template, rendered by Prometheus
  playbook::SourcePos pos;
  playbook::SourcePos expr_pos;
};

struct AlertBook {
  std::vector<RecordSpec> records;
  std::vector<AlertSpec> alerts;
  const AlertSpec* Find(const std::string& alert) const;
};

// One alerts file's text; problems go to `result` with file:line:col.
void LoadAlertText(const std::string& text, const std::string& name, const playbook::Library& library,
                   AlertBook* book, playbook::LoadResult* result);

// Every *.yaml under <data_dir>/rules/alerts, sorted by name; a missing directory is an empty book.
AlertBook LoadAlertBook(const std::string& data_dir, const playbook::Library& library, playbook::LoadResult* result);

// The value of an arg, from its literal or its expression over `thresholds` and `params` (the
// playbook's defaults): an alert sees no job, so nothing else is in scope.
StatusOr<nlohmann::json> ArgValue(const playbook::ParamSpec& arg, const nlohmann::json& thresholds,
                                  const nlohmann::json& params);

// The playbook's params at their defaults, as `params.<name>` sees them.
nlohmann::json DefaultParams(const playbook::PlaybookSpec* playbook, const nlohmann::json& thresholds);

}  // namespace diagnose::alerting
