// The metric catalogue (rules/metrics.yaml): the series names queries may ask for. A misspelt
// metric name is valid PromQL that selects nothing, so Prometheus's parser cannot catch it and the
// rule quietly reports "no data"; lint checks each query's names against this list instead.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace diagnose::playbook {

struct CatalogueMetric {
  std::string name;               // exact name; "" for a pattern entry
  std::string pattern;            // full-match regex, "" for a name entry
  std::string meaning;
  std::vector<std::string> node_labels;
  int line = 0;
};

class MetricCatalogue {
 public:
  static StatusOr<MetricCatalogue> Load(const std::string& path);
  static StatusOr<MetricCatalogue> Parse(const std::string& text, const std::string& source);

  bool Contains(const std::string& name) const;
  // The exact names, for "did you mean".
  std::vector<std::string> Names() const;
  const std::vector<CatalogueMetric>& metrics() const { return metrics_; }
  const std::string& source() const { return source_; }

 private:
  std::vector<CatalogueMetric> metrics_;
  std::vector<std::regex> patterns_;
  std::string source_;
};

// A metric name a PromQL template selects, with its byte offset in the template.
struct MetricRef {
  std::string name;
  size_t offset = 0;
};

// The metric names of a query template: bare selectors (`name`, `name{...}`, `name[5m]`) and
// `__name__="..."` matchers. Function and aggregation names, keywords, label names (in braces and
// in by/without/on/ignoring/group_left/group_right lists), strings, numbers, durations and
// `{{ placeholders }}` are not names. A lexer of our own, not promtool: it must say where each name
// is, and run without Prometheus installed.
std::vector<MetricRef> ExtractMetricNames(const std::string& promql_template);

}  // namespace diagnose::playbook
