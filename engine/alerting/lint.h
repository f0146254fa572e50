// Lint: playbooks, shared rules and alerting rules checked the way `diagnose` loads them (YAML and
// schema, then PromQL through Prometheus's own parser, metric names against rules/metrics.yaml,
// alerting rules through promtool), with every diagnostic positioned (file:line:col). The CLI
// prints the report; this decides what is linted and in which context.
#pragma once

#include <string>
#include <vector>

#include "engine/playbook/loader.h"

namespace diagnose::alerting {

struct LintRequest {
  std::vector<std::string> paths;          // files or directories; none: the data dir's rules/common and playbooks
  std::string data_dir;                    // where rules/ and playbooks/ live (as `diagnose JOB --data-dir`)
  std::vector<std::string> playbook_dirs;  // one's own playbooks, linted on top of the data dir's
};

struct LintedFile {
  std::string file;
  std::vector<playbook::LoadDiagnostic> diagnostics;
  int errors = 0;
  int warnings = 0;
};

struct LintReport {
  std::vector<LintedFile> files;                         // every file linted, in the order found
  std::vector<playbook::LoadDiagnostic> context_errors;  // errors in files loaded only as context
  std::vector<std::string> unchecked;                    // checks that could not run, and why
  int errors = 0;                                        // files' errors plus context errors
  int warnings = 0;
};

LintReport Lint(const LintRequest& request);

}  // namespace diagnose::alerting
