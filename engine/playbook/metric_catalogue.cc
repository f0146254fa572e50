#include "engine/playbook/metric_catalogue.h"

#include <cctype>
#include <set>

#include "engine/core/bounded_regex.h"
#include "engine/core/bounded_yaml.h"
#include "engine/core/yaml_reader.h"

namespace diagnose::playbook {

namespace {

bool IdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool IdentChar(char c) { return IdentStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// PromQL keywords are case-insensitive; `inf` and `nan` are number literals.
const std::set<std::string> kKeywords = {"and", "or", "unless", "atan2", "bool", "offset", "inf", "nan",
                                         "by", "without", "on", "ignoring", "group_left", "group_right"};
// Keywords whose parenthesised list holds label names, not expressions.
const std::set<std::string> kLabelListKeywords = {"by", "without", "on", "ignoring", "group_left", "group_right"};

}  // namespace

StatusOr<MetricCatalogue> MetricCatalogue::Load(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadYamlFile(path));
  return Parse(text, path);
}

namespace {

StatusOr<CatalogueMetric> ReadMetric(const YamlReader& r, const YAML::Node& m, std::vector<std::regex>& patterns) {
  if (!m.IsMap()) return r.Error(m, "a metric is a map with 'name' or 'pattern'");
  CatalogueMetric metric;
  metric.line = m.Mark().line + 1;
  RETURN_IF_ERROR(ReadOptional(r, m, "name", metric.name, &YamlReader::String));
  RETURN_IF_ERROR(ReadOptional(r, m, "pattern", metric.pattern, &YamlReader::String));
  RETURN_IF_ERROR(ReadOptional(r, m, "meaning", metric.meaning, &YamlReader::String));
  RETURN_IF_ERROR(ReadOptional(r, m, "node_labels", metric.node_labels, &YamlReader::Strings));
  if (metric.name.empty() == metric.pattern.empty())
    return r.Error(m, "a metric needs exactly one of 'name' and 'pattern'");
  if (metric.meaning.empty()) return r.Error(m, "metric '" + metric.name + metric.pattern + "' needs a 'meaning'");
  if (!metric.pattern.empty()) {
    try {
      patterns.emplace_back(metric.pattern);
    } catch (const std::regex_error& e) {
      return r.Error(m["pattern"], "pattern '" + metric.pattern + "': " + e.what());
    }
  }
  return metric;
}

}  // namespace

StatusOr<MetricCatalogue> MetricCatalogue::Parse(const std::string& text, const std::string& source) {
  ASSIGN_OR_RETURN(const YAML::Node root, LoadBoundedYaml(text, source));
  MetricCatalogue out;
  out.source_ = source;
  const YAML::Node list = root["metrics"];
  if (!list || !list.IsSequence()) return InvalidArgumentError(source + ": 'metrics' must be a list");
  YamlReader r(source);
  r.Each(list, YAML::NodeType::Sequence, "'metrics' must be a list", [&](const YAML::Node& m) -> Status {
    ASSIGN_OR_RETURN(CatalogueMetric metric, ReadMetric(r, m, out.patterns_));
    out.metrics_.push_back(std::move(metric));
    return Status::Ok();
  });
  RETURN_IF_ERROR(r.Finish());
  return out;
}

bool MetricCatalogue::Contains(const std::string& name) const {
  for (const auto& m : metrics_)
    if (m.name == name) return true;
  for (const auto& re : patterns_)
    if (BoundedRegexMatch(name, re)) return true;
  return false;
}

std::vector<std::string> MetricCatalogue::Names() const {
  std::vector<std::string> names;
  for (const auto& m : metrics_)
    if (!m.name.empty()) names.push_back(m.name);
  return names;
}

std::vector<MetricRef> ExtractMetricNames(const std::string& promql_template) {
  // Placeholders become blanks (newlines kept); a name that touches one is built from it
  // (`hw_gpu_ras_{{ block }}_ue_total`) and is not judged.
  std::string s = promql_template;
  std::vector<bool> near_placeholder(s.size() + 1, false);
  for (size_t p = s.find("{{"); p != std::string::npos; p = s.find("{{", p)) {
    const size_t close = s.find("}}", p + 2);
    const size_t end = close == std::string::npos ? s.size() : close + 2;
    for (size_t i = p; i < end; ++i)
      if (s[i] != '\n') s[i] = ' ';
    if (p > 0) near_placeholder[p - 1] = true;
    near_placeholder[end] = true;
    p = end;
  }
  const size_t n = s.size();
  auto skip_space = [&](size_t i) {
    while (i < n && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return i;
  };
  // Past the string literal opening at i.
  auto skip_string = [&](size_t i) {
    const char quote = s[i++];
    while (i < n && s[i] != quote) i += (s[i] == '\\' && quote != '`') ? 2 : 1;
    return std::min(n, i + 1);
  };
  auto read_ident = [&](size_t i) {
    size_t j = i;
    while (j < n && IdentChar(s[j])) ++j;
    return j;
  };
  std::vector<MetricRef> out;
  size_t i = 0;
  while (i < n) {
    const char c = s[i];
    if (c == '#') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '"' || c == '\'' || c == '`') {
      i = skip_string(i);
    } else if (c == '[') {
      // Ranges and subqueries: durations only.
      while (i < n && s[i] != ']') ++i;
      ++i;
    } else if (c == '{') {
      // Label matchers: only `__name__ = "..."` names a metric.
      ++i;
      while (i < n && s[i] != '}') {
        if (s[i] == '"' || s[i] == '\'' || s[i] == '`') {
          i = skip_string(i);
        } else if (IdentStart(s[i])) {
          const size_t end = read_ident(i);
          const std::string label = s.substr(i, end - i);
          i = skip_space(end);
          if (label == "__name__" && i < n && s[i] == '=' && (i + 1 >= n || s[i + 1] != '~')) {
            i = skip_space(i + 1);
            if (i < n && (s[i] == '"' || s[i] == '\'' || s[i] == '`')) {
              const size_t close = skip_string(i);
              const std::string value = s.substr(i + 1, close - i - 2);
              if (!value.empty() && value.find_first_not_of(' ') != std::string::npos && value.find(' ') == std::string::npos)
                out.push_back({value, i + 1});
              i = close;
            }
          }
        } else {
          ++i;
        }
      }
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      // Numbers and durations (5m, 1h30m, 1e3, 0x1f).
      while (i < n && (IdentChar(s[i]) || s[i] == '.')) ++i;
    } else if (IdentStart(c)) {
      const size_t end = read_ident(i);
      const std::string word = s.substr(i, end - i);
      const std::string lower = Lower(word);
      const size_t next = skip_space(end);
      if (kLabelListKeywords.count(lower)) {
        if (next < n && s[next] == '(') {
          i = next;
          while (i < n && s[i] != ')') ++i;
          ++i;
          continue;
        }
      } else if (!kKeywords.count(lower)) {
        const bool call = next < n && s[next] == '(';
        // `sum by (host) (...)`: an aggregation whose grouping comes first.
        bool aggregation = false;
        if (!call && next < n && IdentStart(s[next])) {
          const std::string after = Lower(s.substr(next, read_ident(next) - next));
          aggregation = after == "by" || after == "without";
        }
        const bool built = near_placeholder[i] || near_placeholder[end - 1];
        if (!call && !aggregation && !built) out.push_back({word, i});
      }
      i = end;
    } else {
      ++i;
    }
  }
  return out;
}

}  // namespace diagnose::playbook
