// `diagnose rules export`: the alert book rendered as standard Prometheus rule groups (recording
// rules, then alerting rules with `for:`, labels and annotations), and the playbook verdicts that
// PromQL alone cannot say, each with the reason found in its dependencies (log facts, analyses,
// a baseline job, TGS phase windows).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/alerting/alert_rules.h"
#include "engine/core/status.h"
#include "engine/playbook/loader.h"
#include "engine/playbook/metric_catalogue.h"
#include "engine/playbook/playbook.h"

namespace diagnose::alerting {

// Prometheus evaluates a group's rules in order on its own storage, so alerts (after the records, in
// the same group) read the recorded series. vmalert writes recording results through remote write,
// asynchronously: an alert of the same evaluation would not see them, so for vmalert every record
// an alert uses is inlined.
enum class RuleTarget { kPrometheus, kVmalert };

struct ExportOptions {
  RuleTarget target = RuleTarget::kPrometheus;
  std::vector<std::string> playbooks;   // empty: every playbook
  std::string interval = "30s";         // the groups' evaluation interval
  // A fleet store holds many jobs' series (Thanos, Mimir, VictoriaMetrics): every aggregation and
  // vector match of the exported rules keeps this label, so two jobs on hosts of the same name stay
  // apart and an alert says which job it is about. "" = a per-job Prometheus.
  std::string job_label;
  // The endpoint the "command" annotation tells the reader to ask; "" = the alerting server's own
  // external URL ({{ $externalURL }}), right for a per-job Prometheus.
  std::string query_url;
};

struct RenderedRecord {
  std::string record;
  std::string expr;
};

struct RenderedAlert {
  std::string alert;
  std::string expr;
  std::string hold;    // `for:`, e.g. "300s"
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  const AlertSpec* spec = nullptr;
};

struct NotExportable {
  std::string playbook;
  std::string root_cause;
  std::string reason;
};

struct RuleExport {
  std::vector<RenderedRecord> records;   // only those the exported alerts use
  std::vector<RenderedAlert> alerts;
  std::vector<NotExportable> not_exportable;
  std::string interval;
};

// kNotFound for an unknown playbook in `options.playbooks`; kInvalidArgument when an arg does not
// render (a threshold changed to a value of the wrong type).
StatusOr<RuleExport> ExportRules(const AlertBook& book, const playbook::Library& library, const ExportOptions& options);

// The rule file (YAML), with the not-exportable verdicts listed in its header comment.
std::string RuleFileYaml(const RuleExport& rules, const std::string& generated_from);

// `expr` with `label` kept through every aggregation and vector match: added to each `by (...)` and
// `on (...)` list, and `by (label)` given to an aggregation that has no grouping. Strings, label
// matchers and range brackets are passed over; `without (...)` and `ignoring (...)` keep it already.
std::string KeepLabelInGroupings(const std::string& expr, const std::string& label);

// Replaces each whole-word use of a record's name in `expr` by its parenthesised expression.
std::string InlineRecords(const std::string& expr, const std::vector<RenderedRecord>& records);

// The playbook verdicts (root cause not none/unknown) that no alert covers, with why.
std::vector<NotExportable> FindNotExportable(const AlertBook& book, const playbook::Library& library,
                                             const std::vector<std::string>& playbooks);

// Prometheus's own parser on the export (`promtool check rules`, argv): each rejected expression
// or annotation template comes back at its alert's or record's file:line:col. kUnavailable when
// promtool cannot be run.
StatusOr<std::vector<playbook::LoadDiagnostic>> CheckExportedRules(const AlertBook& book, const playbook::Library& library,
                                                                   const std::string& promtool = "promtool");

// Unknown-metric warnings for the records' and alerts' `expr` (lint's catalogue check); a record's
// name is known to every expression. At the `expr` field: its scalar carries no per-offset map.
std::vector<playbook::LoadDiagnostic> CheckAlertMetricNames(const AlertBook& book, const playbook::MetricCatalogue& catalogue,
                                                            const std::string& shown_as);

}  // namespace diagnose::alerting
