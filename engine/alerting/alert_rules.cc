#include "engine/alerting/alert_rules.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "engine/core/bounded_regex.h"
#include "engine/core/bounded_yaml.h"
#include "engine/core/untrusted_json.h"
#include "engine/playbook/expr.h"
#include "engine/playbook/messages.h"
#include "engine/playbook/promql_template.h"
#include "engine/playbook/yaml_file.h"

namespace diagnose::alerting {

namespace pb = diagnose::playbook;
using pb::LoadCode;

namespace {

const std::set<std::string> kTopKeys = {"records", "alerts"};
const std::set<std::string> kRecordKeys = {"record", "description", "expr", "args"};
const std::set<std::string> kAlertKeys = {"alert", "playbook", "root_cause", "evidence", "severity",
                                          "expr", "for", "args", "summary"};
const std::set<std::string> kArgKeys = {"type", "value", "expr", "doc"};
const std::set<std::string> kSeverities = {"info", "warning", "critical"};

// {{ name }} placeholders of a PromQL template, in order.
std::vector<std::string> Placeholders(const std::string& tpl) {
  std::vector<std::string> names;
  static const std::regex re(R"(\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\})");
  for (auto it = std::sregex_iterator(tpl.begin(), tpl.end(), re); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1].str());
  return names;
}

// A typed arg: `{type, value}` or `{type, expr}`; `for:` also takes a bare duration.
pb::ParamSpec ParseArg(const pb::FileCtx& check, const YAML::Node& n, const std::string& name, bool bare_duration_ok) {
  pb::ParamSpec p;
  p.name = name;
  p.pos = check.Pos(n);
  if (bare_duration_ok && n.IsScalar()) {
    p.type = pb::ParamType::kDuration;
    p.literal = n.Scalar();
    return p;
  }
  if (!n.IsMap()) {
    check.Add(LoadCode::kFieldType, n, name,
              fmt::format(fmt::runtime(pb::msg::kFieldType), name, "a map with 'type' and 'value' or 'expr'"));
    return p;
  }
  pb::CheckKeys(check, n, kArgKeys);
  std::string type_name;
  if (!pb::GetScalar(check, n, "type", true, &type_name)) return p;
  auto type = pb::ParseParamType(type_name);
  if (!type) {
    check.Add(LoadCode::kParamType, n["type"], name,
              "field '" + name + "': unknown type '" + type_name + "' (number, duration, string, bool)");
    return p;
  }
  p.type = *type;
  if (n["doc"] && n["doc"].IsScalar()) p.doc = n["doc"].Scalar();
  YAML::Node value = n["value"], expr = n["expr"];
  if (static_cast<bool>(value) == static_cast<bool>(expr)) {
    check.Add(LoadCode::kMissingField, n, name, "field '" + name + "' needs exactly one of 'value' and 'expr'");
    return p;
  }
  if (value) {
    if (!value.IsScalar()) {
      check.Add(LoadCode::kFieldType, value, name, fmt::format(fmt::runtime(pb::msg::kFieldType), name, "a scalar"));
      return p;
    }
    const std::string& s = value.Scalar();
    if (p.type == pb::ParamType::kNumber || p.type == pb::ParamType::kBool) {
      p.literal = ParseUntrustedJson(s);   // a YAML scalar: bounded in depth like any text others wrote
      if (p.literal.is_discarded()) p.literal = s;
    } else {
      p.literal = s;
    }
    return p;
  }
  if (!expr.IsScalar()) {
    check.Add(LoadCode::kFieldType, expr, name, fmt::format(fmt::runtime(pb::msg::kFieldType), name, "an expression"));
    return p;
  }
  p.expr.source = expr.Scalar();
  p.expr.pos = check.Pos(expr);
  pb::ExprSyntaxError error;
  auto ast = pb::ParseExpr(p.expr.source, &error);
  if (!ast) {
    check.Add(LoadCode::kExprSyntax, expr, name, fmt::format(fmt::runtime(pb::msg::kExprSyntax), name, error.message));
    return p;
  }
  p.expr.ast = std::shared_ptr<const pb::Expr>(std::move(ast));
  return p;
}

// An alert has no job: its args may read thresholds and the playbook's params, nothing else.
void CheckArgScope(const pb::FileCtx& check, const YAML::Node& node, const pb::ParamSpec& arg,
                   const pb::Library& library, const pb::PlaybookSpec* playbook) {
  if (!arg.expr.present()) return;
  std::vector<pb::NameRef> refs;
  pb::CollectNameRefs(*arg.expr.ast, &refs);
  for (const auto& ref : refs) {
    const std::string& root = ref.path[0];
    std::string leaf = ref.path.size() > 1 ? ref.path[1] : "";
    bool known = (root == "thresholds" && library.thresholds.contains(leaf)) ||
                 (root == "params" && playbook && playbook->params.count(leaf));
    if (known) continue;
    std::string what = root == "thresholds" || root == "params"
                           ? "unknown name '" + root + "." + leaf + "'"
                           : "'" + root + "' is not in scope: an alert sees thresholds.* and params.* only (no job, log or window)";
    check.Add(LoadCode::kUnknownReference, node, arg.name, "field '" + arg.name + "': " + what);
  }
}

// Every arg (and `for`) evaluates to a value of its declared type.
void CheckArgValues(const pb::FileCtx& check, const YAML::Node& node, const std::map<std::string, pb::ParamSpec>& args,
                    const pb::Library& library, const pb::PlaybookSpec* playbook) {
  nlohmann::json params = DefaultParams(playbook, library.thresholds);
  for (const auto& [name, arg] : args) {
    if (arg.literal.is_null() && !arg.expr.present()) continue;   // already reported
    auto value = ArgValue(arg, library.thresholds, params);
    if (value.ok()) {
      auto text = pb::FormatParam(arg.type, *value, name);
      if (text.ok()) continue;
      value = text.status();
    }
    check.Add(LoadCode::kParamType, node, name, "field '" + name + "': " + value.status().message());
  }
}

std::map<std::string, pb::ParamSpec> ParseArgs(const pb::FileCtx& check, const YAML::Node& n, const std::string& tpl) {
  std::map<std::string, pb::ParamSpec> args;
  if (YAML::Node a = n["args"]) {
    if (!a.IsMap()) {
      check.Add(LoadCode::kFieldType, a, "args", fmt::format(fmt::runtime(pb::msg::kFieldType), "args", "a map"));
    } else {
      for (auto it = a.begin(); it != a.end(); ++it)
        args[it->first.Scalar()] = ParseArg(check, it->second, it->first.Scalar(), false);
    }
  }
  std::set<std::string> used;
  for (const auto& name : Placeholders(tpl)) {
    used.insert(name);
    if (!args.count(name))
      check.Add(LoadCode::kTemplateParam, n["expr"], "expr", "field 'expr': placeholder '{{ " + name + " }}' has no arg");
  }
  for (const auto& [name, arg] : args)
    if (!used.count(name))
      check.Add(LoadCode::kUnusedArg, arg.pos, name, "arg '" + name + "' is not used by 'expr'");
  return args;
}

std::set<std::string> VerdictRootCauses(const pb::PlaybookSpec& playbook) {
  std::set<std::string> causes;
  for (const auto& rule : playbook.rules)
    if (rule.kind == pb::RuleKind::kVerdict) causes.insert(rule.verdict.root_cause);
  return causes;
}

}  // namespace

const AlertSpec* AlertBook::Find(const std::string& alert) const {
  for (const auto& a : alerts)
    if (a.alert == alert) return &a;
  return nullptr;
}

nlohmann::json DefaultParams(const pb::PlaybookSpec* playbook, const nlohmann::json& thresholds) {
  nlohmann::json params = nlohmann::json::object();
  if (!playbook) return params;
  for (const auto& [name, spec] : playbook->params) {
    auto value = ArgValue(spec, thresholds, params);
    if (value.ok()) params[name] = *value;
  }
  return params;
}

StatusOr<nlohmann::json> ArgValue(const pb::ParamSpec& arg, const nlohmann::json& thresholds, const nlohmann::json& params) {
  if (!arg.expr.present()) return arg.literal;
  pb::NameResolver resolve = [&](const std::string& root) -> const pb::Value* {
    if (root == "thresholds") return &thresholds;
    if (root == "params") return &params;
    return nullptr;
  };
  auto value = pb::EvalExpr(*arg.expr.ast, resolve);
  if (!value.ok()) return value.status();
  if (value->is_null()) return InvalidArgumentError("'" + arg.expr.source + "' has no value");
  return value;
}

namespace {

// Ids seen so far in one file: records and alerts share one namespace of names.
class UniqueIds {
 public:
  bool Claim(const pb::FileCtx& check, const YAML::Node& n, const std::string& field) {
    auto [it, fresh] = seen_.emplace(check.rule, check.Pos(n));
    if (fresh) return true;
    check.Add(LoadCode::kDuplicateId, n, field,
              fmt::format(fmt::runtime(pb::msg::kDuplicateId), check.rule, it->second.ToString()));
    return false;
  }

 private:
  std::map<std::string, pb::SourcePos> seen_;
};

// An entry of `records:` or `alerts:` is a map named by its `id_key`: the file's diagnostics about
// the rest of it name that id. Nullopt (reported) when the entry has no name to go by.
std::optional<pb::FileCtx> EntryNamedBy(const pb::FileCtx& file, const YAML::Node& entry, const std::string& section,
                                        const std::string& id_key, const std::set<std::string>& keys, std::string* id) {
  if (!entry.IsMap()) {
    file.Add(LoadCode::kFieldType, entry, section, "each " + section.substr(0, section.size() - 1) + " is a map");
    return std::nullopt;
  }
  if (!pb::GetScalar(file, entry, id_key, true, id)) return std::nullopt;
  pb::FileCtx check = file.ForRule(*id);
  pb::CheckKeys(check, entry, keys);
  return check;
}

void ReadRecord(const pb::FileCtx& file, const YAML::Node& r, const pb::Library& library, UniqueIds& ids, AlertBook* book) {
  static const std::regex record_name("^[a-zA-Z_:][a-zA-Z0-9_:]*$");
  RecordSpec spec;
  spec.pos = file.Pos(r);
  const std::optional<pb::FileCtx> check = EntryNamedBy(file, r, "records", "record", kRecordKeys, &spec.record);
  if (!check) return;
  if (!BoundedRegexMatch(spec.record, record_name))
    check->Add(LoadCode::kBadValue, r["record"], "record", "field 'record': '" + spec.record + "' is not a metric name");
  // Prometheus's naming rule for recorded series (level:metric:operations), and what keeps
  // InlineRecords, a replacement of whole words, from touching a label name or a function.
  else if (spec.record.find(':') == std::string::npos)
    check->Add(LoadCode::kBadValue, r["record"], "record",
               "field 'record': '" + spec.record + "' has no ':' (recording rule names are level:metric:operations)");
  if (!pb::GetScalar(*check, r, "expr", true, &spec.expr_template)) return;
  spec.expr_pos = check->Pos(r["expr"]);
  if (r["description"] && r["description"].IsScalar()) spec.description = r["description"].Scalar();
  spec.args = ParseArgs(*check, r, spec.expr_template);
  for (const auto& [arg_name, arg] : spec.args) CheckArgScope(*check, r["args"][arg_name], arg, library, nullptr);
  CheckArgValues(*check, r, spec.args, library, nullptr);
  if (ids.Claim(*check, r["record"], "record")) book->records.push_back(std::move(spec));
}

// `evidence:` names rules of the alert's playbook, or shared ones as common.<id>.
void ReadEvidence(const pb::FileCtx& check, const YAML::Node& a, const pb::Library& library,
                  const pb::PlaybookSpec* playbook, AlertSpec& spec) {
  YAML::Node evidence = a["evidence"];
  if (!evidence || !evidence.IsSequence() || evidence.size() == 0) {
    check.Add(LoadCode::kMissingField, evidence ? evidence : YAML::Node(a), "evidence",
              "field 'evidence' must list the playbook rules the alert carries");
    return;
  }
  for (const auto& e : evidence) {
    std::string rule_id = e.IsScalar() ? e.Scalar() : "";
    bool shared = rule_id.rfind("common.", 0) == 0;
    if (shared && !library.FindCommonRule(rule_id.substr(7)))
      check.Add(LoadCode::kUnknownReference, e, "evidence", "field 'evidence': unknown shared rule '" + rule_id + "'");
    else if (!shared && playbook && !playbook->FindRule(rule_id))
      check.Add(LoadCode::kUnknownReference, e, "evidence",
                "field 'evidence': playbook '" + spec.playbook + "' has no rule '" + rule_id + "'");
    spec.evidence.push_back(rule_id);
  }
}

void ReadAlert(const pb::FileCtx& file, const YAML::Node& a, const pb::Library& library, UniqueIds& ids, AlertBook* book) {
  static const std::regex alert_name("^[a-zA-Z_][a-zA-Z0-9_]*$");
  AlertSpec spec;
  spec.pos = file.Pos(a);
  const std::optional<pb::FileCtx> named = EntryNamedBy(file, a, "alerts", "alert", kAlertKeys, &spec.alert);
  if (!named) return;
  const pb::FileCtx& check = *named;
  const std::string& id = spec.alert;
  if (!BoundedRegexMatch(id, alert_name))
    check.Add(LoadCode::kBadValue, a["alert"], "alert", "field 'alert': '" + id + "' is not a valid alert name");
  bool complete = pb::GetScalar(check, a, "playbook", true, &spec.playbook) &
                  pb::GetScalar(check, a, "root_cause", true, &spec.root_cause) &
                  pb::GetScalar(check, a, "severity", true, &spec.severity) &
                  pb::GetScalar(check, a, "expr", true, &spec.expr_template) &
                  pb::GetScalar(check, a, "summary", true, &spec.summary);
  if (!complete) return;
  spec.expr_pos = check.Pos(a["expr"]);
  const pb::PlaybookSpec* playbook = library.FindPlaybook(spec.playbook);
  if (!playbook) {
    check.Add(LoadCode::kUnknownReference, a["playbook"], "playbook", "field 'playbook': unknown playbook '" + spec.playbook + "'");
  } else if (!VerdictRootCauses(*playbook).count(spec.root_cause)) {
    check.Add(LoadCode::kUnknownReference, a["root_cause"], "root_cause",
              "field 'root_cause': playbook '" + spec.playbook + "' has no verdict with root cause '" + spec.root_cause + "'");
  }
  ReadEvidence(check, a, library, playbook, spec);
  if (!kSeverities.count(spec.severity))
    check.Add(LoadCode::kBadValue, a["severity"], "severity",
              fmt::format(fmt::runtime(pb::msg::kBadValue), "severity", spec.severity, pb::JoinSet(kSeverities)));
  if (!a["for"]) {
    check.Add(LoadCode::kMissingField, a, "for", fmt::format(fmt::runtime(pb::msg::kMissingField), "for"));
    return;
  }
  spec.hold = ParseArg(check, a["for"], "for", true);
  if (spec.hold.type != pb::ParamType::kDuration)
    check.Add(LoadCode::kParamType, a["for"], "for", "field 'for' must be of type duration");
  spec.args = ParseArgs(check, a, spec.expr_template);
  for (const auto& [arg_name, arg] : spec.args) CheckArgScope(check, a["args"][arg_name], arg, library, playbook);
  CheckArgScope(check, a["for"], spec.hold, library, playbook);
  CheckArgValues(check, a, spec.args, library, playbook);
  CheckArgValues(check, a["for"], {{"for", spec.hold}}, library, playbook);
  if (ids.Claim(check, a["alert"], "alert")) book->alerts.push_back(std::move(spec));
}

}  // namespace

void LoadAlertText(const std::string& text, const std::string& name, const pb::Library& library, AlertBook* book,
                   pb::LoadResult* result) {
  auto root = LoadBoundedYaml(text, name);
  if (!root.ok()) {
    result->Add({LoadCode::kYamlParse, {name, 0, 0}, "", "", "", root.status().message()});
    return;
  }
  pb::FileCtx file;
  file.file = name;
  file.result = result;
  if (!root->IsMap()) {
    file.Add(LoadCode::kFieldType, pb::SourcePos{name, 1, 1}, "", "an alerts file is a map with 'records' and 'alerts'");
    return;
  }
  pb::CheckKeys(file, *root, kTopKeys);
  for (const char* section : {"records", "alerts"}) {
    YAML::Node n = (*root)[section];
    if (n && !n.IsSequence())
      file.Add(LoadCode::kFieldType, n, section, fmt::format(fmt::runtime(pb::msg::kFieldType), section, "a list"));
  }
  UniqueIds ids;
  if (const YAML::Node records = (*root)["records"]; records.IsSequence())
    for (const auto& r : records) ReadRecord(file, r, library, ids, book);
  if (const YAML::Node alerts = (*root)["alerts"]; alerts.IsSequence())
    for (const auto& a : alerts) ReadAlert(file, a, library, ids, book);
}

AlertBook LoadAlertBook(const std::string& data_dir, const pb::Library& library, pb::LoadResult* result) {
  AlertBook book;
  std::string dir = data_dir + "/rules/alerts";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return book;
  for (const auto& file : pb::FindYamlFiles(dir, false)) {
    auto text = ReadYamlFile(file);
    if (!text.ok()) {
      result->Add({LoadCode::kFileRead, {file, 0, 0}, "", "", "", text.status().message()});
      continue;
    }
    LoadAlertText(*text, file, library, &book, result);
  }
  return book;
}

}  // namespace diagnose::alerting
