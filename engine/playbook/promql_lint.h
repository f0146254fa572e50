// `diagnose lint` checks every query template with Prometheus's own parser: placeholders are bound
// to a sample of their declared type, the queries written as recording rules of one group, and
// `promtool check rules` run on that file (argv, no shell). Each error it reports is mapped back to
// the template's file:line:col, with Prometheus's message (which names the position in the query).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/playbook/loader.h"
#include "engine/playbook/metric_catalogue.h"
#include "engine/playbook/playbook.h"

namespace diagnose::playbook {

// The template rendered by the engine's own RenderPromql, each {{ placeholder }} given a sample of
// its type ("5m" for a duration, host-a and host-b for hosts, ...).
std::string BindForSyntaxCheck(const RuleSpec& rule, const PlaybookSpec* playbook);

// kUnavailable when promtool cannot be run (not installed); otherwise one diagnostic per query
// Prometheus rejects.
StatusOr<std::vector<LoadDiagnostic>> CheckPromqlSyntax(const Library& library,
                                                        const std::string& promtool = "promtool");

// One unknown-metric warning (no playbook, rule or field set) per metric name `promql_template`
// selects that is neither in the catalogue nor in `also_known` (recording rules), at `at(offset)`.
std::vector<LoadDiagnostic> UnknownMetrics(const std::string& promql_template, const MetricCatalogue& catalogue,
                                           const std::vector<std::string>& also_known, const std::string& shown_as,
                                           const std::function<SourcePos(size_t)>& at);

// One warning per metric name a query selects that the catalogue does not hold, at the name's
// file:line:col, with the closest catalogued name when one is a typo away. `shown_as` names the
// catalogue in the message ("rules/metrics.yaml").
std::vector<LoadDiagnostic> CheckMetricNames(const Library& library, const MetricCatalogue& catalogue,
                                             const std::string& shown_as);

}  // namespace diagnose::playbook
