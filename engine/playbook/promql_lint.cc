#include "engine/playbook/promql_lint.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "engine/core/bounded_regex.h"
#include "engine/core/json.h"
#include "engine/core/scratch_dir.h"
#include "engine/core/text.h"
#include "engine/core/subprocess.h"
#include "engine/playbook/messages.h"
#include "engine/playbook/promql_template.h"

namespace diagnose::playbook {

namespace fs = std::filesystem;

namespace {

// A value of each type as the engine would be given one; RenderPromql formats and escapes it.
nlohmann::json SampleOf(ParamType type) {
  switch (type) {
    case ParamType::kNumber: return 1;
    case ParamType::kDuration: return "5m";
    case ParamType::kHosts: return nlohmann::json::array({"host-a", "host-b"});
    case ParamType::kStrings: return nlohmann::json::array({"a", "b"});
    case ParamType::kRegex: return ".*";
    case ParamType::kBool: return true;
    case ParamType::kString: return "x";
  }
  return "x";
}

struct Checked {
  const RuleSpec* rule;
  const PlaybookSpec* playbook;
};

// promtool's parser took over a minute on 100,000 nested parentheses (the lint's 60 s limit), so a
// query nesting deeper than any real one is refused here without asking it.
constexpr int kMaxPromqlNesting = 256;

// The deepest bracket nesting of `promql`, outside string literals.
int BracketNesting(std::string_view promql) {
  int depth = 0, deepest = 0;
  char quote = 0;
  for (size_t i = 0; i < promql.size(); ++i) {
    const char c = promql[i];
    if (quote != 0) {
      if (c == '\\' && quote != '`') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'' || c == '`') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

LoadDiagnostic SyntaxDiagnostic(const Checked& query, std::string message) {
  const RuleSpec& r = *query.rule;
  LoadDiagnostic d;
  d.code = LoadCode::kPromqlSyntax;
  d.pos = r.query.template_pos.line > 0 ? r.query.template_pos : r.pos;
  d.playbook = r.playbook;
  d.rule = r.id;
  d.field = "query";
  d.message = std::move(message);
  return d;
}

}  // namespace

std::string BindForSyntaxCheck(const RuleSpec& rule, const PlaybookSpec* playbook) {
  auto type_of = [&](const std::string& name) {
    if (auto a = rule.query.args.find(name); a != rule.query.args.end()) return a->second.type;
    if (playbook != nullptr)
      if (auto p = playbook->params.find(name); p != playbook->params.end()) return p->second.type;
    return ParamType::kString;
  };
  // The engine's own renderer, so the check sees the query exactly as it would be sent.
  auto rendered = RenderPromql(
      rule, [&](const std::string& name) -> StatusOr<nlohmann::json> { return SampleOf(type_of(name)); }, type_of);
  return rendered.ok() ? *rendered : rule.query.promql_template;   // an unterminated {{ is the loader's report
}

StatusOr<std::vector<LoadDiagnostic>> CheckPromqlSyntax(const Library& library, const std::string& promtool) {
  std::vector<Checked> queries;
  for (const auto& r : library.common_rules)
    if (r.kind == RuleKind::kQuery) queries.push_back({&r, nullptr});
  for (const auto& pb : library.playbooks)
    for (const auto& r : pb.rules)
      if (r.kind == RuleKind::kQuery) queries.push_back({&r, &pb});
  std::vector<LoadDiagnostic> out;
  std::erase_if(queries, [&](const Checked& q) {
    if (BracketNesting(q.rule->query.promql_template) <= kMaxPromqlNesting) return false;
    out.push_back(SyntaxDiagnostic(q, "the query nests brackets deeper than " + std::to_string(kMaxPromqlNesting) +
                                          " levels; not a query Prometheus should be asked"));
    return true;
  });
  if (queries.empty()) return out;

  // JSON is YAML: the expressions need no escaping of our own.
  nlohmann::json rules = nlohmann::json::array();
  for (size_t i = 0; i < queries.size(); ++i)
    rules.push_back({{"record", "lint_" + std::to_string(i)}, {"expr", BindForSyntaxCheck(*queries[i].rule, queries[i].playbook)}});
  const nlohmann::json file = {{"groups", {{{"name", "diagnose-lint"}, {"rules", rules}}}}};
  ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::Create("diagnose-lint", "promtool"));
  const fs::path path = dir.path() / "queries.rules.yml";
  {
    std::ofstream out(path);
    out << DumpJson(file, 1) << "\n";
  }
  auto run = RunCommand({promtool, "check", "rules", path.string()}, std::chrono::seconds(60));
  if (!run.ok()) return UnavailableError("cannot run " + promtool + " (Debian package 'prometheus'): " + run.status().message());

  // `<file>: 5:15: group "diagnose-lint", rule 1, "lint_0": could not parse expression: 1:16: parse error: ...`
  // The message is the rest of the line, read without a `(.*)$`, which recursed once per byte.
  static const std::regex kError(R"re("lint_(\d+)": )re");
  std::istringstream lines(run->output);
  for (std::string line; std::getline(lines, line);) {
    std::cmatch m;
    if (!BoundedRegexSearch(line, kError, 0, 0, &m)) continue;
    const size_t i = std::stoul(m[1].str());
    if (i >= queries.size()) continue;
    out.push_back(SyntaxDiagnostic(queries[i], "Prometheus rejects the query: " +
                                                   line.substr(static_cast<size_t>(m[0].second - line.data())) +
                                                   " (as bound for the check: `" +
                                                   BindForSyntaxCheck(*queries[i].rule, queries[i].playbook) + "`)"));
  }
  if (out.empty() && run->exit_code != 0)
    return UnavailableError(promtool + " check rules failed without naming a rule: " + run->output.substr(0, 400));
  return out;
}

std::vector<LoadDiagnostic> UnknownMetrics(const std::string& promql_template, const MetricCatalogue& catalogue,
                                           const std::vector<std::string>& also_known, const std::string& shown_as,
                                           const std::function<SourcePos(size_t)>& at) {
  std::vector<LoadDiagnostic> out;
  std::vector<std::string> names;
  for (const auto& ref : ExtractMetricNames(promql_template)) {
    if (catalogue.Contains(ref.name) || std::count(also_known.begin(), also_known.end(), ref.name)) continue;
    if (names.empty()) {
      names = catalogue.Names();
      names.insert(names.end(), also_known.begin(), also_known.end());
    }
    const std::string closest = ClosestName(ref.name, names);
    LoadDiagnostic d;
    d.code = LoadCode::kUnknownMetric;
    d.pos = at(ref.offset);
    d.message = fmt::format(fmt::runtime(msg::kUnknownMetric), ref.name, shown_as,
                            closest.empty() ? "" : "; did you mean '" + closest + "'?");
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<LoadDiagnostic> CheckMetricNames(const Library& library, const MetricCatalogue& catalogue,
                                             const std::string& shown_as) {
  std::vector<LoadDiagnostic> out;
  auto check = [&](const RuleSpec& r) {
    if (r.kind != RuleKind::kQuery) return;
    for (auto& d : UnknownMetrics(r.query.promql_template, catalogue, {}, shown_as,
                                  [&](size_t offset) { return r.query.TemplateAt(offset); })) {
      d.playbook = r.playbook;
      d.rule = r.id;
      d.field = "query";
      out.push_back(std::move(d));
    }
  };
  for (const auto& r : library.common_rules) check(r);
  for (const auto& pb : library.playbooks)
    for (const auto& r : pb.rules) check(r);
  return out;
}

}  // namespace diagnose::playbook
