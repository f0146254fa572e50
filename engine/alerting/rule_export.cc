#include "engine/alerting/rule_export.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fstream>
#include <regex>
#include <sstream>

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "engine/core/bounded_regex.h"
#include "engine/core/scratch_dir.h"
#include "engine/core/subprocess.h"
#include "engine/core/text.h"
#include "engine/playbook/promql_lint.h"
#include "engine/playbook/promql_template.h"

namespace diagnose::alerting {

namespace pb = diagnose::playbook;

namespace {

bool Selected(const std::vector<std::string>& playbooks, const std::string& id) {
  return playbooks.empty() || std::find(playbooks.begin(), playbooks.end(), id) != playbooks.end();
}

StatusOr<std::string> Render(const std::string& tpl, const std::map<std::string, pb::ParamSpec>& args,
                             const nlohmann::json& thresholds, const nlohmann::json& params, const std::string& owner) {
  pb::RuleSpec carrier;   // RenderPromql reads only the template
  carrier.query.promql_template = tpl;
  auto rendered = pb::RenderPromql(
      carrier,
      [&](const std::string& name) -> StatusOr<nlohmann::json> {
        auto it = args.find(name);
        if (it == args.end()) return NotFoundError(owner + ": placeholder '" + name + "' has no arg");
        return ArgValue(it->second, thresholds, params);
      },
      [&](const std::string& name) {
        auto it = args.find(name);
        return it == args.end() ? pb::ParamType::kString : it->second.type;
      });
  if (!rendered.ok()) return InvalidArgumentError(owner + ": " + rendered.status().message());
  return rendered;
}

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }

// Where a verdict's `when` reaches for something PromQL does not have.
void CollectBlockers(const pb::Library& library, const pb::PlaybookSpec& playbook, const pb::RuleSpec& rule,
                     std::set<std::string>* visited, std::set<std::string>* blockers) {
  if (!visited->insert(rule.qualified_id).second) return;
  std::vector<const pb::CompiledExpr*> exprs;
  switch (rule.kind) {
    case pb::RuleKind::kQuery:
      if (rule.query.tsdb == JobRole::kBaseline) blockers->insert("baseline:");
      if (rule.query.window != "job") blockers->insert("window:" + rule.query.window);
      for (const auto& [name, arg] : rule.query.args) exprs.push_back(&arg.expr);
      break;
    case pb::RuleKind::kFact:
      exprs.push_back(&rule.fact.value);
      break;
    case pb::RuleKind::kAnalysis:
      blockers->insert("analysis:" + rule.analysis.name);
      exprs.push_back(&rule.analysis.input);
      exprs.push_back(&rule.analysis.baseline_input);
      exprs.push_back(&rule.analysis.phases);
      break;
    case pb::RuleKind::kVerdict:
      exprs.push_back(&rule.verdict.when);
      break;
  }
  for (const auto* e : exprs) {
    if (!e->present()) continue;
    std::vector<pb::NameRef> refs;
    pb::CollectNameRefs(*e->ast, &refs);
    for (const auto& ref : refs)
      if (ref.path[0] == "facts" && ref.path.size() > 1) blockers->insert("facts:facts." + ref.path[1]);
  }
  for (const auto& need : rule.needs) {
    const pb::RuleSpec* dep = nullptr;
    if (need.rfind("common/", 0) == 0) {
      dep = library.FindCommonRule(need.substr(7));
    } else if (need.rfind(playbook.id + "/", 0) == 0) {
      dep = playbook.FindRule(need.substr(playbook.id.size() + 1));
    }
    if (dep) CollectBlockers(library, playbook, *dep, visited, blockers);
  }
}

// {"facts:facts.tgs", "analysis:change_points", ...} -> "needs log facts (facts.tgs); analyses: change_points"
std::string DescribeBlockers(const std::set<std::string>& blockers) {
  std::map<std::string, std::string> by_kind;
  for (const auto& b : blockers) {
    size_t colon = b.find(':');
    std::string& list = by_kind[b.substr(0, colon)];
    if (colon + 1 < b.size()) list += (list.empty() ? "" : ", ") + b.substr(colon + 1);
  }
  const std::vector<std::pair<std::string, std::string>> kinds = {
      {"baseline", "a baseline job's TSDB (--baseline)"}, {"facts", "log facts"}, {"window", "windows from the log"},
      {"analysis", "analyses over the whole job"}};
  std::string out;
  for (const auto& [kind, label] : kinds) {
    auto it = by_kind.find(kind);
    if (it == by_kind.end()) continue;
    out += (out.empty() ? "needs " : "; ") + label + (it->second.empty() ? "" : " (" + it->second + ")");
  }
  return out.empty() ? "no alert written for it yet" : out;
}

}  // namespace

std::string InlineRecords(const std::string& expr, const std::vector<RenderedRecord>& records) {
  std::string out;
  size_t i = 0;
  while (i < expr.size()) {
    if (IsNameChar(expr[i]) && (i == 0 || !IsNameChar(expr[i - 1]))) {
      size_t j = i;
      while (j < expr.size() && IsNameChar(expr[j])) ++j;
      std::string word = expr.substr(i, j - i);
      auto it = std::find_if(records.begin(), records.end(), [&](const RenderedRecord& r) { return r.record == word; });
      out += it == records.end() ? word : "(" + it->expr + ")";
      i = j;
      continue;
    }
    out += expr[i++];
  }
  return out;
}

namespace {

bool IsAggregation(const std::string& word) {
  static const std::set<std::string> kAggregations = {"sum",    "min",    "max",    "avg",     "count",  "quantile",
                                                      "topk",   "bottomk", "stddev", "stdvar", "group", "count_values"};
  return kAggregations.count(word) > 0;
}

size_t SkipSpace(const std::string& s, size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// The index just past the bracket that closes the one at `open` (s[open] is '(', '{' or '['), passing
// over quoted strings; s.size() when it never closes.
size_t PastClosing(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' || c == '\'' || c == '`') {
      for (++i; i < s.size() && s[i] != c; ++i)
        if (s[i] == '\\' && c != '`') ++i;
      continue;
    }
    if (c == '(' || c == '{' || c == '[') ++depth;
    if ((c == ')' || c == '}' || c == ']') && --depth == 0) return i + 1;
  }
  return s.size();
}

// "(host, instance)" + "job" -> "(host, instance, job)"; "()" -> "(job)"; unchanged when present.
std::string WithLabel(const std::string& list, const std::string& label) {
  std::vector<std::string> labels;
  std::string name;
  for (size_t i = 1; i + 1 <= list.size(); ++i) {
    const char c = i + 1 == list.size() ? ',' : list[i];   // the closing ')' ends the last name
    if (c == ',') {
      if (name == label) return list;
      if (!name.empty()) labels.push_back(name);
      name.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      name += c;
    }
  }
  labels.push_back(label);
  return "(" + JoinStrings(labels, ", ") + ")";
}

}  // namespace

std::string KeepLabelInGroupings(const std::string& expr, const std::string& label) {
  if (label.empty()) return expr;
  std::string out;
  size_t i = 0;
  while (i < expr.size()) {
    const char c = expr[i];
    if (c == '"' || c == '\'' || c == '`' || c == '{' || c == '[') {
      // A string, a matcher block or a range: copied as it is (label names inside are not groupings).
      size_t end = c == '{' || c == '[' ? PastClosing(expr, i) : i + 1;
      if (c != '{' && c != '[') {
        while (end < expr.size() && expr[end] != c) end += expr[end] == '\\' && c != '`' ? 2 : 1;
        end = std::min(expr.size(), end + 1);
      }
      out += expr.substr(i, end - i);
      i = end;
      continue;
    }
    if (!IsNameChar(c) || (i > 0 && IsNameChar(expr[i - 1]))) {
      out += c;
      ++i;
      continue;
    }
    size_t j = i;
    while (j < expr.size() && IsNameChar(expr[j])) ++j;
    const std::string word = expr.substr(i, j - i);
    out += word;
    const size_t next = SkipSpace(expr, j);
    if ((word == "by" || word == "on") && next < expr.size() && expr[next] == '(') {
      const size_t end = PastClosing(expr, next);
      out += expr.substr(j, next - j) + WithLabel(expr.substr(next, end - next), label);
      i = end;
      continue;
    }
    if (IsAggregation(word) && next < expr.size() && expr[next] == '(') {
      // No prefix grouping; a postfix one (`sum(x) by (host)`) is handled when its `by` is reached.
      const size_t after = SkipSpace(expr, PastClosing(expr, next));
      const bool postfix = expr.compare(after, 2, "by") == 0 || expr.compare(after, 7, "without") == 0;
      if (!postfix) out += " by (" + label + ") ";
    }
    i = j;
  }
  return out;
}

std::vector<NotExportable> FindNotExportable(const AlertBook& book, const pb::Library& library,
                                             const std::vector<std::string>& playbooks) {
  std::vector<NotExportable> out;
  for (const auto& playbook : library.playbooks) {
    if (!Selected(playbooks, playbook.id)) continue;
    std::set<std::string> reported;
    for (const auto& rule : playbook.rules) {
      if (rule.kind != pb::RuleKind::kVerdict) continue;
      const std::string& cause = rule.verdict.root_cause;
      if (cause == "none" || cause == "unknown" || reported.count(cause)) continue;
      bool covered = std::any_of(book.alerts.begin(), book.alerts.end(), [&](const AlertSpec& a) {
        return a.playbook == playbook.id && a.root_cause == cause;
      });
      if (covered) continue;
      std::set<std::string> visited, blockers;
      CollectBlockers(library, playbook, rule, &visited, &blockers);
      out.push_back({playbook.id, cause, DescribeBlockers(blockers)});
      reported.insert(cause);
    }
  }
  return out;
}

namespace {

// What the reader of a firing alert runs next, naming the job (from the alert's own labels when the
// store has a job label) and the endpoint that holds it.
std::string DiagnoseCommand(const ExportOptions& options) {
  const std::string url = options.query_url.empty() ? "{{ $externalURL }}" : options.query_url;
  if (options.job_label.empty()) return "diagnose JOB --prometheus " + url + " (JOB: the Slurm job id)";
  return "diagnose {{ $labels." + options.job_label + " }} --prometheus " + url + " --job-label " + options.job_label;
}

}  // namespace

StatusOr<RuleExport> ExportRules(const AlertBook& book, const pb::Library& library, const ExportOptions& options) {
  for (const auto& id : options.playbooks)
    if (!library.FindPlaybook(id)) return NotFoundError("unknown playbook '" + id + "'");
  // Both go into PromQL or a template as they are: a label name, and a URL with no template braces.
  static const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");
  if (!options.job_label.empty() && !BoundedRegexMatch(options.job_label, kLabelName))
    return InvalidArgumentError("--job-label '" + options.job_label + "' is not a Prometheus label name");
  if (options.query_url.find("{{") != std::string::npos || options.query_url.find("}}") != std::string::npos)
    return InvalidArgumentError("--query-url must not contain template braces");
  RuleExport out;
  out.interval = options.interval;
  std::vector<RenderedRecord> all_records;
  for (const auto& r : book.records) {
    auto expr = Render(r.expr_template, r.args, library.thresholds, nlohmann::json::object(), "record " + r.record);
    if (!expr.ok()) return expr.status();
    all_records.push_back({r.record, KeepLabelInGroupings(*expr, options.job_label)});
  }
  std::set<std::string> used_records;
  for (const auto& a : book.alerts) {
    if (!Selected(options.playbooks, a.playbook)) continue;
    const pb::PlaybookSpec* playbook = library.FindPlaybook(a.playbook);
    nlohmann::json params = DefaultParams(playbook, library.thresholds);
    auto rendered = Render(a.expr_template, a.args, library.thresholds, params, "alert " + a.alert);
    if (!rendered.ok()) return rendered.status();
    const std::string kept = KeepLabelInGroupings(*rendered, options.job_label);
    const std::string* expr = &kept;
    auto hold_value = ArgValue(a.hold, library.thresholds, params);
    if (!hold_value.ok()) return InvalidArgumentError("alert " + a.alert + ": for: " + hold_value.status().message());
    auto hold = pb::FormatParam(pb::ParamType::kDuration, *hold_value, "for");
    if (!hold.ok()) return InvalidArgumentError("alert " + a.alert + ": " + hold.status().message());
    for (const auto& r : all_records)
      if (InlineRecords(*expr, {r}) != *expr) used_records.insert(r.record);
    RenderedAlert alert;
    alert.alert = a.alert;
    alert.expr = options.target == RuleTarget::kVmalert ? InlineRecords(*expr, all_records) : *expr;
    alert.hold = *hold;
    alert.spec = &a;
    alert.labels = {{"severity", a.severity}, {"playbook", a.playbook}, {"root_cause", a.root_cause}};
    alert.annotations["summary"] = a.summary;
    if (playbook) alert.annotations["runbook"] = playbook->description;
    alert.annotations["command"] = DiagnoseCommand(options) + " runs the " + a.playbook +
                                   " playbook with the job's log and its whole window";
    out.alerts.push_back(std::move(alert));
  }
  for (const auto& r : all_records)
    if (used_records.count(r.record)) out.records.push_back(r);
  out.not_exportable = FindNotExportable(book, library, options.playbooks);
  return out;
}

std::string RuleFileYaml(const RuleExport& rules, const std::string& generated_from) {
  // One group, records first: Prometheus evaluates a group's rules in order, and an alert reading a
  // record of another group would see the previous evaluation's value, or none at first.
  YAML::Emitter y;
  y << YAML::BeginMap << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq;
  y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "diagnose";
  y << YAML::Key << "interval" << YAML::Value << rules.interval;
  y << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq;
  for (const auto& r : rules.records)
    y << YAML::BeginMap << YAML::Key << "record" << YAML::Value << r.record << YAML::Key << "expr" << YAML::Value
      << r.expr << YAML::EndMap;
  for (const auto& a : rules.alerts) {
    y << YAML::BeginMap << YAML::Key << "alert" << YAML::Value << a.alert;
    y << YAML::Key << "expr" << YAML::Value << YAML::Literal << a.expr;
    y << YAML::Key << "for" << YAML::Value << a.hold;
    y << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : a.labels) y << YAML::Key << k << YAML::Value << v;
    y << YAML::EndMap << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : a.annotations) y << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
    y << YAML::EndMap << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  std::string header = "# Generated by `diagnose rules export` from " + generated_from + ".\n";
  if (!rules.not_exportable.empty()) {
    header += "# Not exportable (PromQL alone cannot say them; run `diagnose JOB` for these):\n";
    for (const auto& n : rules.not_exportable)
      header += "#   " + n.playbook + " -> " + n.root_cause + ": " + n.reason + "\n";
  }
  return header + y.c_str() + "\n";
}

StatusOr<std::vector<pb::LoadDiagnostic>> CheckExportedRules(const AlertBook& book, const pb::Library& library,
                                                             const std::string& promtool) {
  namespace fs = std::filesystem;
  std::vector<pb::LoadDiagnostic> out;
  auto exported = ExportRules(book, library, {});
  if (!exported.ok()) return exported.status();
  // Every record, used or not, so a typo in an unused one is found too.
  exported->records.clear();
  for (const auto& r : book.records) {
    auto expr = Render(r.expr_template, r.args, library.thresholds, nlohmann::json::object(), "record " + r.record);
    if (!expr.ok()) return expr.status();
    exported->records.push_back({r.record, *expr});
  }
  ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::Create("diagnose-alert-lint", "promtool"));
  const fs::path rules_file = dir.path() / "alerts.rules.yml";
  std::ofstream(rules_file) << RuleFileYaml(*exported, "lint");
  auto run = RunCommand({promtool, "check", "rules", rules_file.string()}, std::chrono::seconds(60));
  if (!run.ok()) return UnavailableError("cannot run " + promtool + " (Debian package 'prometheus'): " + run.status().message());
  // `<file>: 1:45: group "g", rule 1, "NAME": could not parse expression: ...`
  // The message is the rest of the line: a `(.*)$` would recurse once per byte of it (a long
  // expression echoed back), so the regex reads a bounded window and stops at the name.
  static const std::regex kError(R"re(group "[^"]*", rule \d+, "([^"]+)": )re");
  std::istringstream lines(run->output);
  for (std::string line; std::getline(lines, line);) {
    std::cmatch m;
    if (!BoundedRegexSearch(line, kError, 0, 0, &m)) continue;
    const std::string name = m[1].str();
    pb::LoadDiagnostic d;
    d.code = pb::LoadCode::kPromqlSyntax;
    d.rule = name;
    d.field = "expr";
    d.message = "Prometheus rejects the rule: " + line.substr(static_cast<size_t>(m[0].second - line.data()));
    if (const AlertSpec* a = book.Find(name)) d.pos = a->expr_pos;
    for (const auto& r : book.records)
      if (r.record == name) d.pos = r.expr_pos;
    out.push_back(std::move(d));
  }
  if (out.empty() && run->exit_code != 0)
    return UnavailableError(promtool + " check rules failed without naming a rule: " + run->output.substr(0, 400));
  return out;
}

std::vector<pb::LoadDiagnostic> CheckAlertMetricNames(const AlertBook& book, const pb::MetricCatalogue& catalogue,
                                                      const std::string& shown_as) {
  std::vector<std::string> records;
  for (const auto& r : book.records) records.push_back(r.record);
  std::vector<pb::LoadDiagnostic> out;
  auto check = [&](const std::string& expr, const pb::SourcePos& pos, const std::string& id) {
    for (auto& d : pb::UnknownMetrics(expr, catalogue, records, shown_as, [&](size_t) { return pos; })) {
      d.rule = id;
      d.field = "expr";
      out.push_back(std::move(d));
    }
  };
  for (const auto& r : book.records) check(r.expr_template, r.expr_pos, r.record);
  for (const auto& a : book.alerts) check(a.expr_template, a.expr_pos, a.alert);
  return out;
}

}  // namespace diagnose::alerting
