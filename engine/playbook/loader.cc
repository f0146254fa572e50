#include "engine/playbook/loader.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "engine/core/data_dir.h"
#include "engine/analysis/analysis.h"
#include "engine/core/bounded_yaml.h"
#include "engine/core/limits.h"
#include "engine/core/utf8.h"
#include "engine/report/report.h"

namespace diagnose::playbook {
namespace {

namespace fs = std::filesystem;

std::string JoinSet(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

const std::set<std::string> kPlaybookKeys = {"playbook", "description", "triggers", "params",
                                             "windows", "macros", "rules", "precedence"};
const std::set<std::string> kRulesFileKeys = {"rules", "thresholds", "macros", "windows", "description"};
const std::set<std::string> kRuleCommonKeys = {"id", "description", "needs", "let", "finding"};
const std::set<std::string> kQueryKeys = {"query", "range", "window", "at", "step", "tsdb", "by", "reduce", "args"};
const std::set<std::string> kFactKeys = {"fact", "evidence"};
const std::set<std::string> kAnalysisKeys = {"analysis", "input", "baseline_input", "phases", "windows", "args"};
const std::set<std::string> kVerdictKeys = {"verdict"};
const std::set<std::string> kVerdictBodyKeys = {"when", "root_cause", "confidence", "summary", "hosts", "onset",
                                                "explains", "action", "exclude", "changes", "notes", "suppress",
                                                "fallback_for", "yields"};
const std::set<std::string> kFindingKeys = {"when", "hosts", "summary", "suppress"};
const std::set<std::string> kSuppressKeys = {"times", "during", "reason"};
const std::set<std::string> kTriggerKeys = {"failure_class", "tgs_pattern", "status", "baseline", "tsdb", "when", "always"};
const std::set<std::string> kParamKeys = {"type", "default", "expr", "doc"};
const std::set<std::string> kArgKeys = {"type", "value", "expr"};
const std::set<std::string> kWindowKeys = {"start", "end", "list", "unavailable"};
const std::set<std::string> kExcludeKeys = {"hosts", "priority", "reason"};
const std::set<std::string> kConfidenceKeys = {"level", "when"};
const std::set<std::string> kNoteKeys = {"text", "when"};
const std::set<std::string> kReduce = {"max", "min", "avg", "sum", "last", "first", "count", "stddev"};
const std::set<std::string> kConfidenceLevels = {"confirmed", "likely", "possible", "insufficient-evidence"};
// Name roots available to every expression (README §6).
const std::set<std::string> kContextRoots = {"facts", "baseline", "discovery", "baseline_discovery"};

const std::regex& IdPattern() {
  static const std::regex re("^[a-z_][a-z0-9_]*$");
  return re;
}
const std::regex& PlaybookIdPattern() {
  static const std::regex re("^[a-z0-9][a-z0-9-]*$");
  return re;
}
const std::regex& DurationPattern() {
  static const std::regex re("^([0-9]+(ms|s|m|h|d|w|y))+$");
  return re;
}

// Result fields of each rule kind and their static types (README §3).
std::map<std::string, std::string> FieldsOf(const RuleSpec& rule) {
  switch (rule.kind) {
    case RuleKind::kQuery:
      if (rule.query.reductions.size() > 1)
        return {{"values", "map"}, {"reduced", "map"}, {"hosts", "list"}, {"series", "map"}, {"count", "number"},
                {"max", "number"}, {"min", "number"}, {"avg", "number"}, {"sum", "number"}, {"query", "string"}};
      return {{"values", "map"}, {"hosts", "list"}, {"series", "map"}, {"count", "number"}, {"max", "number"},
              {"min", "number"}, {"avg", "number"}, {"sum", "number"}, {"query", "string"}};
    case RuleKind::kFact:
      return {{"value", ""}, {"hosts", "list"}};
    case RuleKind::kVerdict:
      return {{"fired", "bool"}, {"hosts", "list"}, {"confidence", "string"}};
    case RuleKind::kAnalysis: {
      const auto* def = analysis::FindAnalysis(rule.analysis.name);
      if (def) return def->fields;
      return {};
    }
  }
  return {};
}

struct FileCtx {
  std::string file;
  std::shared_ptr<const std::string> text;
  LoadResult* result = nullptr;
  std::string playbook;
  std::string rule;

  // Where nodes without a position of their own (copies made by `for_each`) were written.
  YAML::Mark expanded_from = YAML::Mark::null_mark();

  SourcePos Pos(const YAML::Node& n) const {
    YAML::Mark m = n.Mark();
    if (m.line < 0) m = expanded_from;
    if (m.line < 0) return {file, 0, 0};
    return {file, m.line + 1, m.column + 1};
  }

  static SourcePos PosInScalar(const std::string& file, const std::string& text, const YAML::Mark& m,
                               const std::string& value, size_t offset) {
    if (m.pos < 0 || static_cast<size_t>(m.pos) >= text.size()) return {file, m.line + 1, m.column + 1};
    size_t r = static_cast<size_t>(m.pos);
    int line = m.line, col = m.column;
    enum { kPlain, kSingle, kDouble, kBlock } style = kPlain;
    size_t block_indent = 0;
    char c = text[r];
    if (c == '"' || c == '\'') {
      style = c == '"' ? kDouble : kSingle;
      ++r;
      ++col;
    } else if (c == '|' || c == '>') {
      style = kBlock;
      while (r < text.size() && text[r] != '\n') ++r;
      if (r < text.size()) ++r;
      ++line;
      col = 0;
      while (r + block_indent < text.size() && text[r + block_indent] == ' ') ++block_indent;
      r += block_indent;
      col = static_cast<int>(block_indent);
    }
    size_t i = 0;
    while (i < offset && r < text.size()) {
      char rc = text[r];
      if (rc == '\n') {
        ++r;
        ++line;
        col = 0;
        while (r < text.size() && text[r] == ' ' &&
               (style != kBlock || static_cast<size_t>(col) < block_indent)) {
          ++r;
          ++col;
        }
        if (i < value.size() && (value[i] == '\n' || value[i] == ' ')) ++i;
        continue;
      }
      if (style == kDouble && rc == '\\') {
        r += 2;
        col += 2;
        ++i;
        continue;
      }
      if (style == kSingle && rc == '\'' && r + 1 < text.size() && text[r + 1] == '\'') {
        r += 2;
        col += 2;
        ++i;
        continue;
      }
      ++r;
      ++col;
      ++i;
    }
    return {file, line + 1, col + 1};
  }

  std::function<SourcePos(size_t)> Locator(const YAML::Node& n) const {
    auto file_copy = file;
    auto text_copy = text;
    YAML::Mark mark = n.Mark();
    if (mark.line < 0) mark = expanded_from;
    // A copy's text is not in the file: point at the rule it was expanded from.
    const bool copied = n.Mark().line < 0;
    std::string value = n.IsScalar() ? n.Scalar() : std::string();
    return [file_copy, text_copy, mark, value, copied](size_t offset) {
      if (copied) return SourcePos{file_copy, mark.line + 1, mark.column + 1};
      return PosInScalar(file_copy, text_copy ? *text_copy : std::string(), mark, value, offset);
    };
  }

  void Add(LoadCode code, const SourcePos& pos, const std::string& field, std::string message) const {
    LoadDiagnostic d;
    d.code = code;
    d.pos = pos;
    d.playbook = playbook;
    d.rule = rule;
    d.field = field;
    d.message = std::move(message);
    result->Add(std::move(d));
  }
  void Add(LoadCode code, const YAML::Node& n, const std::string& field, std::string message) const {
    Add(code, Pos(n), field, std::move(message));
  }
};

void CheckKeys(const FileCtx& ctx, const YAML::Node& map, const std::set<std::string>& allowed) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
    if (!allowed.count(key))
      ctx.Add(LoadCode::kUnknownKey, it->first, key, fmt::format(fmt::runtime(msg::kUnknownKey), key, JoinSet(allowed)));
  }
}

bool GetScalar(const FileCtx& ctx, const YAML::Node& parent, const std::string& key, bool required, std::string* out) {
  YAML::Node n = parent[key];
  if (!n) {
    if (required) ctx.Add(LoadCode::kMissingField, parent, key, fmt::format(fmt::runtime(msg::kMissingField), key));
    return false;
  }
  if (!n.IsScalar()) {
    ctx.Add(LoadCode::kFieldType, n, key, fmt::format(fmt::runtime(msg::kFieldType), key, "a string"));
    return false;
  }
  *out = n.Scalar();
  return true;
}

bool GetStringList(const FileCtx& ctx, const YAML::Node& n, const std::string& key, std::vector<std::string>* out) {
  if (n.IsScalar()) {
    out->push_back(n.Scalar());
    return true;
  }
  if (!n.IsSequence()) {
    ctx.Add(LoadCode::kFieldType, n, key, fmt::format(fmt::runtime(msg::kFieldType), key, "a list of strings"));
    return false;
  }
  for (const auto& item : n) {
    if (!item.IsScalar()) {
      ctx.Add(LoadCode::kFieldType, item, key, fmt::format(fmt::runtime(msg::kFieldType), key, "a list of strings"));
      return false;
    }
    out->push_back(item.Scalar());
  }
  return true;
}

bool GetBool(const FileCtx& ctx, const YAML::Node& n, const std::string& key, bool* out) {
  try {
    *out = n.as<bool>();
    return true;
  } catch (const YAML::Exception&) {
    ctx.Add(LoadCode::kFieldType, n, key, fmt::format(fmt::runtime(msg::kFieldType), key, "true or false"));
    return false;
  }
}

bool GetNumber(const FileCtx& ctx, const YAML::Node& n, const std::string& key, double* out) {
  try {
    if (!n.IsScalar()) throw YAML::Exception(YAML::Mark(), "not scalar");
    *out = n.as<double>();
    return true;
  } catch (const YAML::Exception&) {
    ctx.Add(LoadCode::kFieldType, n, key, fmt::format(fmt::runtime(msg::kFieldType), key, "a number"));
    return false;
  }
}

CompiledExpr ParseExprNode(const FileCtx& ctx, const YAML::Node& n, const std::string& field) {
  CompiledExpr out;
  out.pos = ctx.Pos(n);
  if (!n.IsScalar()) {
    ctx.Add(LoadCode::kFieldType, n, field, fmt::format(fmt::runtime(msg::kFieldType), field, "an expression string"));
    return out;
  }
  out.source = n.Scalar();
  out.locate = ctx.Locator(n);
  ExprSyntaxError err;
  auto ast = ParseExpr(out.source, &err);
  if (!ast) {
    ctx.Add(LoadCode::kExprSyntax, out.At(err.offset), field, fmt::format(fmt::runtime(msg::kExprSyntax), field, err.message));
    return out;
  }
  out.ast = std::shared_ptr<const Expr>(std::move(ast));
  return out;
}

Template ParseTemplateNode(const FileCtx& ctx, const YAML::Node& n, const std::string& field) {
  Template out;
  out.pos = ctx.Pos(n);
  if (!n.IsScalar()) {
    ctx.Add(LoadCode::kFieldType, n, field, fmt::format(fmt::runtime(msg::kFieldType), field, "a string"));
    return out;
  }
  out.source = n.Scalar();
  out.locate = ctx.Locator(n);
  std::vector<ExprSyntaxError> errors;
  out.pieces = ParseTemplate(out.source, &errors);
  for (const auto& e : errors)
    ctx.Add(LoadCode::kExprSyntax, out.At(e.offset), field, fmt::format(fmt::runtime(msg::kExprSyntax), field, e.message));
  return out;
}

// A literal YAML value checked against a parameter type; returns false (and reports) on mismatch.
bool CheckLiteral(const FileCtx& ctx, const YAML::Node& n, const std::string& field, ParamType type,
                  nlohmann::json* out) {
  auto bad = [&](const std::string& shown) {
    ctx.Add(LoadCode::kParamType, n, field, fmt::format(fmt::runtime(msg::kParamType), field, shown, ParamTypeName(type)));
    return false;
  };
  switch (type) {
    case ParamType::kNumber: {
      try {
        *out = n.as<double>();
        return true;
      } catch (const YAML::Exception&) {
        return bad(n.IsScalar() ? "'" + n.Scalar() + "'" : "(not a scalar)");
      }
    }
    case ParamType::kDuration: {
      if (!n.IsScalar()) return bad("(not a scalar)");
      const std::string& s = n.Scalar();
      if (std::regex_match(s, DurationPattern())) {
        *out = s;
        return true;
      }
      try {
        double secs = n.as<double>();
        if (secs > 0) {
          *out = fmt::format("{}s", static_cast<long long>(secs));
          return true;
        }
      } catch (const YAML::Exception&) {
      }
      return bad("'" + s + "'");
    }
    case ParamType::kString:
    case ParamType::kRegex:
      if (!n.IsScalar()) return bad("(not a scalar)");
      *out = n.Scalar();
      return true;
    case ParamType::kBool: {
      try {
        *out = n.as<bool>();
        return true;
      } catch (const YAML::Exception&) {
        return bad(n.IsScalar() ? "'" + n.Scalar() + "'" : "(not a scalar)");
      }
    }
    case ParamType::kHosts:
    case ParamType::kStrings: {
      if (!n.IsSequence()) return bad(n.IsScalar() ? "'" + n.Scalar() + "'" : "(not a list)");
      nlohmann::json list = nlohmann::json::array();
      for (const auto& item : n) {
        if (!item.IsScalar()) return bad("(a list with a non-string item)");
        list.push_back(item.Scalar());
      }
      *out = list;
      return true;
    }
  }
  return false;
}

// A parameter whose value is an expression: a string containing an operator or a name path,
// written in YAML as a quoted or plain scalar. Literals of the declared type win; otherwise the
// scalar is parsed as an expression.
ParamSpec ParseParam(const FileCtx& ctx, const std::string& name, const YAML::Node& n, const std::string& value_key,
                     const std::set<std::string>& keys, const std::string& field_prefix) {
  ParamSpec p;
  p.name = name;
  p.pos = ctx.Pos(n);
  std::string field = field_prefix + name;
  if (!n.IsMap()) {
    ctx.Add(LoadCode::kFieldType, n, field, fmt::format(fmt::runtime(msg::kFieldType), field, "a map with 'type' and '" + value_key + "'"));
    return p;
  }
  CheckKeys(ctx, n, keys);
  std::string type_name;
  if (!GetScalar(ctx, n, "type", true, &type_name)) return p;
  auto type = ParseParamType(type_name);
  if (!type) {
    ctx.Add(LoadCode::kParamType, n["type"], field,
            fmt::format(fmt::runtime(msg::kParamUnknownType), field, type_name,
                        "number, duration, string, hosts, strings, regex, bool"));
    return p;
  }
  p.type = *type;
  if (n["doc"] && n["doc"].IsScalar()) p.doc = n["doc"].Scalar();
  // `expr:` computes the value from data; `value:`/`default:` is a literal of the declared type,
  // except that a hosts/strings scalar is an expression (a literal list is a YAML list) (README §4).
  YAML::Node v = n[value_key];
  YAML::Node e = n["expr"];
  if (v && e) {
    ctx.Add(LoadCode::kFieldType, e, field, fmt::format(fmt::runtime(msg::kFieldType), field, "either '" + value_key + "' or 'expr', not both"));
    return p;
  }
  if (!v && !e) {
    ctx.Add(LoadCode::kMissingField, n, field, fmt::format(fmt::runtime(msg::kMissingField), field + "." + value_key));
    return p;
  }
  bool as_expr = static_cast<bool>(e);
  if (v && v.IsScalar()) {
    if (p.type == ParamType::kHosts || p.type == ParamType::kStrings) {
      as_expr = true;
    }
  }
  if (!as_expr) {
    CheckLiteral(ctx, v, field, p.type, &p.literal);
    return p;
  }
  if (p.type == ParamType::kRegex) {
    ctx.Add(LoadCode::kParamType, e ? e : v, field, fmt::format(fmt::runtime(msg::kRegexRuntime), field));
    return p;
  }
  p.expr = ParseExprNode(ctx, e ? e : v, field);
  return p;
}

// PromQL `{{ name }}` placeholders with their offsets.
struct Placeholder {
  std::string name;
  size_t offset;
};
std::vector<Placeholder> FindPlaceholders(const FileCtx& ctx, const std::string& tpl, const CompiledExpr& where) {
  std::vector<Placeholder> out;
  size_t pos = 0;
  while ((pos = tpl.find("{{", pos)) != std::string::npos) {
    size_t close = tpl.find("}}", pos + 2);
    if (close == std::string::npos) {
      ctx.Add(LoadCode::kTemplateParam, where.At(pos), "query", fmt::format(fmt::runtime(msg::kTemplateUnterminated)));
      break;
    }
    std::string inner = tpl.substr(pos + 2, close - pos - 2);
    size_t b = inner.find_first_not_of(' ');
    size_t e = inner.find_last_not_of(' ');
    std::string name = b == std::string::npos ? "" : inner.substr(b, e - b + 1);
    out.push_back({name, pos + 2 + (b == std::string::npos ? 0 : b)});
    pos = close + 2;
  }
  return out;
}

void ParseQuery(const FileCtx& ctx, const YAML::Node& n, RuleSpec* rule) {
  QuerySpec& q = rule->query;
  YAML::Node qn = n["query"];
  if (!qn.IsScalar()) {
    ctx.Add(LoadCode::kFieldType, qn, "query", fmt::format(fmt::runtime(msg::kFieldType), "query", "a PromQL string"));
    return;
  }
  q.promql_template = qn.Scalar();
  q.template_pos = ctx.Pos(qn);
  if (n["range"]) GetBool(ctx, n["range"], "range", &q.range);
  if (n["window"]) GetScalar(ctx, n, "window", false, &q.window);
  if (n["at"]) {
    std::string at;
    if (GetScalar(ctx, n, "at", false, &at)) {
      q.at = at;
      if (at != "start" && at != "end") q.at_expr = ParseExprNode(ctx, n["at"], "at");
    }
  }
  if (n["step"]) {
    std::string step;
    if (GetScalar(ctx, n, "step", false, &step)) {
      double secs = 0;
      if (!analysis::ParseDurationSeconds(step, &secs) || secs <= 0)
        ctx.Add(LoadCode::kParamType, n["step"], "step", fmt::format(fmt::runtime(msg::kParamType), "step", "'" + step + "'", "duration"));
      else
        q.step_seconds = secs;
    }
  }
  if (n["tsdb"]) {
    GetScalar(ctx, n, "tsdb", false, &q.tsdb);
    if (q.tsdb != "subject" && q.tsdb != "baseline")
      ctx.Add(LoadCode::kBadValue, n["tsdb"], "tsdb", fmt::format(fmt::runtime(msg::kBadValue), "tsdb", q.tsdb, "subject, baseline"));
  }
  if (n["by"]) GetStringList(ctx, n["by"], "by", &q.by);
  if (YAML::Node reduce = n["reduce"]) {
    std::vector<std::string> hows;
    if (reduce.IsSequence()) {
      GetStringList(ctx, reduce, "reduce", &hows);
      if (hows.empty())
        ctx.Add(LoadCode::kBadValue, reduce, "reduce", fmt::format(fmt::runtime(msg::kBadValue), "reduce", "[]", JoinSet(kReduce)));
    } else if (GetScalar(ctx, n, "reduce", false, &q.reduce)) {
      hows.push_back(q.reduce);
    }
    std::set<std::string> seen;
    for (const auto& how : hows) {
      if (!kReduce.count(how))
        ctx.Add(LoadCode::kBadValue, reduce, "reduce", fmt::format(fmt::runtime(msg::kBadValue), "reduce", how, JoinSet(kReduce)));
      else if (!seen.insert(how).second)
        ctx.Add(LoadCode::kBadValue, reduce, "reduce", fmt::format(fmt::runtime(msg::kBadValue), "reduce", how + " (listed twice)", JoinSet(kReduce)));
    }
    if (!hows.empty()) q.reduce = hows.front();
    q.reductions = hows;
    if (hows.size() > 1 && !q.range)
      ctx.Add(LoadCode::kBadValue, reduce, "reduce", fmt::format(fmt::runtime(msg::kBadValue), "reduce", "a list", "one reduction (an instant query has one value per series; set `range: true`)"));
  }
  if (YAML::Node args = n["args"]) {
    if (!args.IsMap()) {
      ctx.Add(LoadCode::kFieldType, args, "args", fmt::format(fmt::runtime(msg::kFieldType), "args", "a map"));
    } else {
      for (auto it = args.begin(); it != args.end(); ++it) {
        std::string name = it->first.Scalar();
        q.args[name] = ParseParam(ctx, name, it->second, "value", kArgKeys, "args.");
      }
    }
  }
}

void ParseAnalysis(const FileCtx& ctx, const YAML::Node& n, RuleSpec* rule) {
  AnalysisSpec& a = rule->analysis;
  if (!GetScalar(ctx, n, "analysis", true, &a.name)) return;
  const auto* def = analysis::FindAnalysis(a.name);
  if (!def) {
    std::set<std::string> names;
    for (const auto& [k, v] : analysis::Registry()) names.insert(k);
    ctx.Add(LoadCode::kUnknownAnalysis, n["analysis"], "analysis", fmt::format(fmt::runtime(msg::kUnknownAnalysis), a.name, JoinSet(names)));
    return;
  }
  for (const char* key : {"input", "baseline_input", "phases", "windows"}) {
    YAML::Node v = n[key];
    CompiledExpr* target = std::string(key) == "input" ? &a.input
                           : std::string(key) == "baseline_input" ? &a.baseline_input
                           : std::string(key) == "phases" ? &a.phases : &a.windows;
    if (v) {
      *target = ParseExprNode(ctx, v, key);
    } else if (std::find(def->required_inputs.begin(), def->required_inputs.end(), key) != def->required_inputs.end()) {
      ctx.Add(LoadCode::kMissingField, n, key, fmt::format(fmt::runtime(msg::kAnalysisInput), key, a.name));
    }
  }
  std::set<std::string> arg_names;
  for (const auto& [k, v] : def->args) {
    arg_names.insert(k);
    a.args[k] = v.default_value;
  }
  if (YAML::Node args = n["args"]) {
    if (!args.IsMap()) {
      ctx.Add(LoadCode::kFieldType, args, "args", fmt::format(fmt::runtime(msg::kFieldType), "args", "a map"));
      return;
    }
    for (auto it = args.begin(); it != args.end(); ++it) {
      std::string k = it->first.Scalar();
      auto spec = def->args.find(k);
      if (spec == def->args.end()) {
        ctx.Add(LoadCode::kUnknownAnalysis, it->first, "args." + k,
                fmt::format(fmt::runtime(msg::kUnknownAnalysisArg), a.name, k, JoinSet(arg_names)));
        continue;
      }
      const YAML::Node v = it->second;   // a copy: `it->` returns a temporary
      const std::string& type = spec->second.type;
      bool ok = v.IsScalar();
      if (ok && type == "number") {
        try {
          a.args[k] = v.as<double>();
        } catch (const YAML::Exception&) {
          ok = false;
        }
      } else if (ok && type == "bool") {
        try {
          a.args[k] = v.as<bool>();
        } catch (const YAML::Exception&) {
          ok = false;
        }
      } else if (ok && type == "duration") {
        double secs = 0;
        ok = analysis::ParseDurationSeconds(v.Scalar(), &secs);
        if (ok) a.args[k] = secs;
      } else if (ok) {
        const auto& allowed = spec->second.allowed;
        ok = allowed.empty() || std::find(allowed.begin(), allowed.end(), v.Scalar()) != allowed.end();
        if (ok) a.args[k] = v.Scalar();
      }
      if (!ok) {
        std::string want = type;
        if (!spec->second.allowed.empty()) {
          want = "one of";
          for (const auto& s : spec->second.allowed) want += " " + s;
        }
        ctx.Add(LoadCode::kParamType, v, "args." + k, fmt::format(fmt::runtime(msg::kAnalysisArgType), k, want));
      }
    }
  }
}

std::optional<SuppressSpec> ParseSuppress(const FileCtx& ctx, const YAML::Node& n, const std::string& field) {
  if (!n) return std::nullopt;
  if (!n.IsMap()) {
    ctx.Add(LoadCode::kFieldType, n, field, fmt::format(fmt::runtime(msg::kFieldType), field, "a map"));
    return std::nullopt;
  }
  CheckKeys(ctx, n, kSuppressKeys);
  SuppressSpec s;
  for (const char* key : {"times", "during"}) {
    if (!n[key]) {
      ctx.Add(LoadCode::kMissingField, n, field + "." + key, fmt::format(fmt::runtime(msg::kMissingField), field + "." + key));
      continue;
    }
    (std::string(key) == "times" ? s.times : s.during) = ParseExprNode(ctx, n[key], field + "." + key);
  }
  if (n["reason"]) s.reason = ParseTemplateNode(ctx, n["reason"], field + ".reason");
  return s;
}

void ParseVerdict(const FileCtx& ctx, const YAML::Node& vn, RuleSpec* rule) {
  VerdictSpec& v = rule->verdict;
  if (!vn.IsMap()) {
    ctx.Add(LoadCode::kFieldType, vn, "verdict", fmt::format(fmt::runtime(msg::kFieldType), "verdict", "a map"));
    return;
  }
  CheckKeys(ctx, vn, kVerdictBodyKeys);
  if (vn["when"]) v.when = ParseExprNode(ctx, vn["when"], "verdict.when");
  else ctx.Add(LoadCode::kMissingField, vn, "verdict.when", fmt::format(fmt::runtime(msg::kMissingField), "verdict.when"));
  if (GetScalar(ctx, vn, "root_cause", true, &v.root_cause) && !IsKnownRootCause(v.root_cause))
    ctx.Add(LoadCode::kBadValue, vn["root_cause"], "verdict.root_cause",
            fmt::format(fmt::runtime(msg::kBadValue), "verdict.root_cause", v.root_cause, "the contract vocabulary"));
  if (YAML::Node c = vn["confidence"]) {
    if (c.IsScalar()) {
      v.confidence.push_back({c.Scalar(), {}});
      if (!kConfidenceLevels.count(c.Scalar()))
        ctx.Add(LoadCode::kBadValue, c, "verdict.confidence", fmt::format(fmt::runtime(msg::kBadValue), "verdict.confidence", c.Scalar(), JoinSet(kConfidenceLevels)));
    } else if (c.IsSequence()) {
      for (const auto& item : c) {
        if (!item.IsMap()) {
          ctx.Add(LoadCode::kFieldType, item, "verdict.confidence", fmt::format(fmt::runtime(msg::kFieldType), "verdict.confidence", "a list of {level, when}"));
          continue;
        }
        CheckKeys(ctx, item, kConfidenceKeys);
        ConfidenceLevel level;
        if (GetScalar(ctx, item, "level", true, &level.level) && !kConfidenceLevels.count(level.level))
          ctx.Add(LoadCode::kBadValue, item["level"], "verdict.confidence.level",
                  fmt::format(fmt::runtime(msg::kBadValue), "verdict.confidence.level", level.level, JoinSet(kConfidenceLevels)));
        if (item["when"]) level.when = ParseExprNode(ctx, item["when"], "verdict.confidence.when");
        v.confidence.push_back(std::move(level));
      }
    } else {
      ctx.Add(LoadCode::kFieldType, c, "verdict.confidence", fmt::format(fmt::runtime(msg::kFieldType), "verdict.confidence", "a level or a list"));
    }
  } else {
    v.confidence.push_back({"likely", {}});
  }
  if (vn["summary"]) v.summary = ParseTemplateNode(ctx, vn["summary"], "verdict.summary");
  if (vn["hosts"]) v.hosts = ParseExprNode(ctx, vn["hosts"], "verdict.hosts");
  if (vn["onset"]) v.onset = ParseExprNode(ctx, vn["onset"], "verdict.onset");
  if (vn["explains"]) GetStringList(ctx, vn["explains"], "verdict.explains", &v.explains);
  if (vn["action"] && GetScalar(ctx, vn, "action", false, &v.action) && !IsKnownAction(v.action))
    ctx.Add(LoadCode::kBadValue, vn["action"], "verdict.action",
            fmt::format(fmt::runtime(msg::kBadValue), "verdict.action", v.action, "the contract vocabulary"));
  if (YAML::Node ex = vn["exclude"]) {
    if (!ex.IsSequence()) {
      ctx.Add(LoadCode::kFieldType, ex, "verdict.exclude", fmt::format(fmt::runtime(msg::kFieldType), "verdict.exclude", "a list"));
    } else {
      for (const auto& item : ex) {
        if (!item.IsMap()) {
          ctx.Add(LoadCode::kFieldType, item, "verdict.exclude", fmt::format(fmt::runtime(msg::kFieldType), "verdict.exclude", "a list of maps"));
          continue;
        }
        CheckKeys(ctx, item, kExcludeKeys);
        ExcludeSpec spec;
        if (item["hosts"]) spec.hosts = ParseExprNode(ctx, item["hosts"], "verdict.exclude.hosts");
        else ctx.Add(LoadCode::kMissingField, item, "verdict.exclude.hosts", fmt::format(fmt::runtime(msg::kMissingField), "verdict.exclude.hosts"));
        double prio = 0;
        if (item["priority"] && GetNumber(ctx, item["priority"], "verdict.exclude.priority", &prio)) spec.priority = static_cast<int>(prio);
        if (spec.priority < 1 || spec.priority > 4)
          ctx.Add(LoadCode::kBadValue, item["priority"] ? item["priority"] : item, "verdict.exclude.priority",
                  fmt::format(fmt::runtime(msg::kBadValue), "verdict.exclude.priority", spec.priority, "1, 2, 3, 4"));
        if (item["reason"]) spec.reason = ParseTemplateNode(ctx, item["reason"], "verdict.exclude.reason");
        v.exclude.push_back(std::move(spec));
      }
    }
  }
  if (YAML::Node ch = vn["changes"]) {
    if (!ch.IsMap()) {
      ctx.Add(LoadCode::kFieldType, ch, "verdict.changes", fmt::format(fmt::runtime(msg::kFieldType), "verdict.changes", "a map"));
    } else {
      for (auto it = ch.begin(); it != ch.end(); ++it)
        v.changes[it->first.Scalar()] = ParseTemplateNode(ctx, it->second, "verdict.changes." + it->first.Scalar());
    }
  }
  v.suppress = ParseSuppress(ctx, vn["suppress"], "verdict.suppress");
  if (vn["fallback_for"]) GetStringList(ctx, vn["fallback_for"], "verdict.fallback_for", &v.fallback_for);
  if (vn["yields"]) GetBool(ctx, vn["yields"], "verdict.yields", &v.yields);
  if (YAML::Node notes = vn["notes"]) {
    if (notes.IsSequence()) {
      for (const auto& item : notes) {
        NoteSpec note;
        if (item.IsMap()) {
          CheckKeys(ctx, item, kNoteKeys);
          if (item["text"]) note.text = ParseTemplateNode(ctx, item["text"], "verdict.notes.text");
          else ctx.Add(LoadCode::kMissingField, item, "verdict.notes", fmt::format(fmt::runtime(msg::kMissingField), "verdict.notes.text"));
          if (item["when"]) note.when = ParseExprNode(ctx, item["when"], "verdict.notes.when");
        } else {
          note.text = ParseTemplateNode(ctx, item, "verdict.notes");
        }
        v.notes.push_back(std::move(note));
      }
    } else {
      ctx.Add(LoadCode::kFieldType, notes, "verdict.notes", fmt::format(fmt::runtime(msg::kFieldType), "verdict.notes", "a list"));
    }
  }
}

// One entry of `windows:` (a playbook's or rules/common's).
std::optional<WindowSpec> ParseWindow(const FileCtx& ctx, const std::string& name, const YAML::Node& n) {
  WindowSpec w;
  w.name = name;
  w.pos = ctx.Pos(n);
  const std::string field = "windows." + name;
  if (!n.IsMap()) {
    ctx.Add(LoadCode::kFieldType, n, field, fmt::format(fmt::runtime(msg::kFieldType), field, "a map with 'start' and 'end', or 'list'"));
    return std::nullopt;
  }
  if (IsBuiltinWindow(name))
    ctx.Add(LoadCode::kBadValue, n, field, fmt::format(fmt::runtime(msg::kBadValue), "windows", name, "a name other than job, baseline_job"));
  CheckKeys(ctx, n, kWindowKeys);
  if (n["unavailable"]) GetScalar(ctx, n, "unavailable", false, &w.unavailable);
  if (n["list"]) {
    w.list = ParseExprNode(ctx, n["list"], field + ".list");
    if (n["start"] || n["end"])
      ctx.Add(LoadCode::kBadValue, n, field, fmt::format(fmt::runtime(msg::kBadValue), field, "both 'list' and 'start'/'end'", "one of them"));
    return w;
  }
  if (n["start"]) w.start = ParseExprNode(ctx, n["start"], field + ".start");
  else ctx.Add(LoadCode::kMissingField, n, field, fmt::format(fmt::runtime(msg::kMissingField), "start"));
  if (n["end"]) w.end = ParseExprNode(ctx, n["end"], field + ".end");
  else ctx.Add(LoadCode::kMissingField, n, field, fmt::format(fmt::runtime(msg::kMissingField), "end"));
  return w;
}

// `for_each` (README §3.7): a rule written once for several items. Each item (a scalar, or a map
// of scalars) gives one copy of the rule, id `<id>_<key>`, with `${key}` and `${field}` replaced
// in every scalar of it. Copies carry no position of their own; errors point at the template.
struct RuleNode {
  YAML::Node node;
  YAML::Mark expanded_from = YAML::Mark::null_mark();   // set for a for_each copy
};

std::vector<RuleNode> ExpandForEach(FileCtx& ctx, const YAML::Node& rules) {
  static const std::regex key_pattern("^[a-z0-9_]+$");
  static const std::regex placeholder(R"(\$\{([a-z_][a-z0-9_]*)\})");
  std::vector<RuleNode> out;
  // Copies count against the same node budget as the file itself (an expansion is an alias bomb's
  // cousin: a few lines on disk can mean millions of nodes).
  const int64_t budget = GetLimit(LimitId::kYamlNodes);
  int64_t copied = 0;
  for (const auto& rn : rules) {
    if (!rn.IsMap() || !rn["for_each"]) {
      out.push_back({rn});
      continue;
    }
    YAML::Node items = rn["for_each"];
    if (!items.IsMap() || items.size() == 0) {
      ctx.Add(LoadCode::kFieldType, items, "for_each", fmt::format(fmt::runtime(msg::kFieldType), "for_each", "a map of key: item"));
      continue;
    }
    for (auto it = items.begin(); it != items.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (!std::regex_match(key, key_pattern)) {
        ctx.Add(LoadCode::kBadValue, it->first, "for_each", fmt::format(fmt::runtime(msg::kBadValue), "for_each", key, "[a-z0-9_]+"));
        continue;
      }
      if (!rn["id"] || !rn["id"].IsScalar()) {
        ctx.Add(LoadCode::kMissingField, rn, "id", fmt::format(fmt::runtime(msg::kMissingField), "id"));
        break;
      }
      std::map<std::string, std::string> values = {{"key", key}};
      if (it->second.IsScalar()) values["item"] = it->second.Scalar();
      else if (it->second.IsMap())
        for (auto f = it->second.begin(); f != it->second.end(); ++f)
          if (f->second.IsScalar()) values[f->first.Scalar()] = f->second.Scalar();
      std::set<std::string> unknown;
      std::function<YAML::Node(const YAML::Node&, bool)> copy = [&](const YAML::Node& n, bool top) -> YAML::Node {
        if (++copied > budget) return YAML::Node();
        if (n.IsScalar()) {
          std::string s = n.Scalar(), replaced;
          auto last = s.cbegin();
          for (std::sregex_iterator m(s.begin(), s.end(), placeholder), end; m != end; ++m) {
            replaced.append(last, s.cbegin() + m->position());
            auto v = values.find((*m)[1].str());
            if (v == values.end()) unknown.insert((*m)[1].str());
            replaced += v == values.end() ? m->str() : v->second;
            last = s.cbegin() + m->position() + m->length();
          }
          replaced.append(last, s.cend());
          return YAML::Node(replaced);
        }
        if (n.IsSequence()) {
          YAML::Node seq(YAML::NodeType::Sequence);
          for (const auto& x : n) seq.push_back(copy(x, false));
          return seq;
        }
        if (n.IsMap()) {
          YAML::Node map(YAML::NodeType::Map);
          for (auto f = n.begin(); f != n.end(); ++f) {
            const std::string k = f->first.Scalar();
            if (top && k == "for_each") continue;
            map[k] = top && k == "id" ? YAML::Node(f->second.Scalar() + "_" + key) : copy(f->second, false);
          }
          return map;
        }
        return YAML::Node(YAML::NodeType::Null);   // no position: the rule written is reported
      };
      YAML::Node expanded = copy(rn, true);
      if (copied > budget) {
        ctx.Add(LoadCode::kLimit, rn, "for_each", LimitExceeded(LimitId::kYamlNodes, ctx.file + " (for_each copies)").message());
        return out;
      }
      for (const auto& name : unknown)
        ctx.Add(LoadCode::kTemplateParam, rn, "for_each",
                fmt::format(fmt::runtime(msg::kBadValue), "for_each", "${" + name + "}", "${key} or a field of every item"));
      out.push_back({expanded, rn.Mark()});
    }
  }
  return out;
}

// `let:` / `macros:`: a map of name -> expression, kept in the order written.
std::vector<Binding> ParseBindings(const FileCtx& ctx, const YAML::Node& n, const std::string& field) {
  std::vector<Binding> out;
  if (!n.IsMap()) {
    ctx.Add(LoadCode::kFieldType, n, field, fmt::format(fmt::runtime(msg::kFieldType), field, "a map of name: expression"));
    return out;
  }
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    Binding b;
    b.name = it->first.Scalar();
    if (!std::regex_match(b.name, IdPattern()))
      ctx.Add(LoadCode::kBadValue, it->first, field, fmt::format(fmt::runtime(msg::kBadValue), field, b.name, "[a-z_][a-z0-9_]*"));
    else if (!seen.insert(b.name).second)
      ctx.Add(LoadCode::kDuplicateId, it->first, field, fmt::format(fmt::runtime(msg::kDuplicateId), b.name, ctx.Pos(n).ToString()));
    b.expr = ParseExprNode(ctx, it->second, field + "." + b.name);
    out.push_back(std::move(b));
  }
  return out;
}

bool ParseRule(FileCtx& ctx, const YAML::Node& n, const std::string& playbook_id, RuleSpec* rule) {
  rule->pos = ctx.Pos(n);
  if (!n.IsMap()) {
    ctx.Add(LoadCode::kFieldType, n, "rules", fmt::format(fmt::runtime(msg::kFieldType), "rules[]", "a map"));
    return false;
  }
  if (!GetScalar(ctx, n, "id", true, &rule->id)) return false;
  ctx.rule = rule->id;
  if (!std::regex_match(rule->id, IdPattern()))
    ctx.Add(LoadCode::kBadValue, n["id"], "id", fmt::format(fmt::runtime(msg::kBadValue), "id", rule->id, "[a-z_][a-z0-9_]*"));
  rule->playbook = playbook_id;
  rule->qualified_id = (playbook_id.empty() ? "common" : playbook_id) + "/" + rule->id;
  std::vector<std::string> kinds;
  for (const char* k : {"query", "fact", "analysis", "verdict"})
    if (n[k]) kinds.push_back(k);
  std::set<std::string> allowed = kRuleCommonKeys;
  if (kinds.empty()) {
    ctx.Add(LoadCode::kRuleKind, n, "", msg::kRuleKindNone);
    CheckKeys(ctx, n, [] {
      std::set<std::string> all = kRuleCommonKeys;
      for (const auto* s : {&kQueryKeys, &kFactKeys, &kAnalysisKeys, &kVerdictKeys}) all.insert(s->begin(), s->end());
      return all;
    }());
    return false;
  }
  if (kinds.size() > 1) {
    ctx.Add(LoadCode::kRuleKind, n[kinds[1]], kinds[1], fmt::format(fmt::runtime(msg::kRuleKindMany), kinds[0], kinds[1]));
  }
  const std::string& kind = kinds[0];
  if (kind == "query") {
    rule->kind = RuleKind::kQuery;
    allowed.insert(kQueryKeys.begin(), kQueryKeys.end());
  } else if (kind == "fact") {
    rule->kind = RuleKind::kFact;
    allowed.insert(kFactKeys.begin(), kFactKeys.end());
  } else if (kind == "analysis") {
    rule->kind = RuleKind::kAnalysis;
    allowed.insert(kAnalysisKeys.begin(), kAnalysisKeys.end());
  } else {
    rule->kind = RuleKind::kVerdict;
    allowed.insert(kVerdictKeys.begin(), kVerdictKeys.end());
  }
  for (size_t i = 1; i < kinds.size(); ++i) allowed.insert(kinds[i]);   // already reported
  CheckKeys(ctx, n, allowed);
  if (n["description"] && n["description"].IsScalar()) rule->description = n["description"].Scalar();
  if (n["needs"]) {
    std::vector<std::string> needs;
    GetStringList(ctx, n["needs"], "needs", &needs);
    // Resolved in the reference pass; remember the raw names with the node's position.
    for (auto& need : needs) rule->needs.push_back("?" + need);
  }
  if (n["let"]) rule->lets = ParseBindings(ctx, n["let"], "let");
  switch (rule->kind) {
    case RuleKind::kQuery:
      ParseQuery(ctx, n, rule);
      break;
    case RuleKind::kFact:
      rule->fact.value = ParseExprNode(ctx, n["fact"], "fact");
      if (n["evidence"]) rule->fact.evidence = ParseExprNode(ctx, n["evidence"], "evidence");
      break;
    case RuleKind::kAnalysis:
      ParseAnalysis(ctx, n, rule);
      break;
    case RuleKind::kVerdict:
      ParseVerdict(ctx, n["verdict"], rule);
      break;
  }
  if (YAML::Node f = n["finding"]) {
    if (!f.IsMap()) {
      ctx.Add(LoadCode::kFieldType, f, "finding", fmt::format(fmt::runtime(msg::kFieldType), "finding", "a map"));
    } else {
      CheckKeys(ctx, f, kFindingKeys);
      FindingSpec spec;
      if (f["when"]) spec.when = ParseExprNode(ctx, f["when"], "finding.when");
      else ctx.Add(LoadCode::kMissingField, f, "finding.when", fmt::format(fmt::runtime(msg::kMissingField), "finding.when"));
      if (f["hosts"]) spec.hosts = ParseExprNode(ctx, f["hosts"], "finding.hosts");
      if (f["summary"]) spec.summary = ParseTemplateNode(ctx, f["summary"], "finding.summary");
      spec.suppress = ParseSuppress(ctx, f["suppress"], "finding.suppress");
      rule->finding = std::move(spec);
    }
  }
  return true;
}

// ---- reference and type pass ----

struct Scope {
  const Library* library = nullptr;
  const PlaybookSpec* playbook = nullptr;      // null for shared rules and common files
  const std::vector<RuleSpec>* local_rules = nullptr;
  bool allow_rules = true;                     // false in triggers and windows
  bool allow_host = false;                     // exclude reasons
  // Named expressions in reach, innermost first: the rule's `let:`, the playbook's `macros:`,
  // rules/common `macros:`. While a binding list is being checked only its earlier entries count.
  const std::vector<Binding>* lets = nullptr;
  size_t lets_visible = SIZE_MAX;
  size_t playbook_macros_visible = SIZE_MAX;
  size_t common_macros_visible = SIZE_MAX;
};

const Binding* FindBinding(const Scope& scope, const std::string& name) {
  if (!scope.allow_rules) return nullptr;
  auto find = [&](const std::vector<Binding>* list, size_t visible) -> const Binding* {
    if (!list) return nullptr;
    for (size_t i = 0; i < list->size() && i < visible; ++i)
      if ((*list)[i].name == name) return &(*list)[i];
    return nullptr;
  };
  if (const Binding* b = find(scope.lets, scope.lets_visible)) return b;
  if (scope.playbook)
    if (const Binding* b = find(&scope.playbook->macros, scope.playbook_macros_visible)) return b;
  return find(&scope.library->common_macros, scope.common_macros_visible);
}

const RuleSpec* FindIn(const std::vector<RuleSpec>& rules, const std::string& id) {
  for (const auto& r : rules)
    if (r.id == id) return &r;
  return nullptr;
}

std::string TypeOfParam(ParamType t) {
  switch (t) {
    case ParamType::kNumber: return "number";
    case ParamType::kBool: return "bool";
    case ParamType::kHosts:
    case ParamType::kStrings: return "list";
    default: return "string";
  }
}

// Checks one expression: names resolve, fields exist, statically known types agree. Adds the
// qualified ids of referenced rules to `deps`.
std::string CheckExpr(const FileCtx& ctx, const Scope& scope, const CompiledExpr& e, const std::string& field,
                      std::set<std::string>* deps, size_t base_offset = 0,
                      const std::function<SourcePos(size_t)>& locate = nullptr) {
  if (!e.ast) return "";
  auto at = [&](size_t off) { return locate ? locate(base_offset + off) : e.At(base_offset + off); };
  std::vector<NameRef> refs;
  CollectNameRefs(*e.ast, &refs);
  std::map<size_t, bool> reported;
  // Resolve names and remember their types for the type pass.
  auto resolve_type = [&](const std::vector<std::string>& path, size_t offset, bool report) -> std::string {
    const std::string& root = path[0];
    auto err = [&](LoadCode code, const std::string& message) {
      if (report && !reported[offset]) {
        reported[offset] = true;
        ctx.Add(code, at(offset), field, message);
      }
      return std::string();
    };
    if (kContextRoots.count(root)) return "";
    if (root == "host") {
      if (!scope.allow_host) return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownName), field, root));
      return "string";
    }
    if (root == "params") {
      if (!scope.playbook) return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kSharedUsesPlaybook), field, "params"));
      if (path.size() < 2) return "map";
      auto it = scope.playbook->params.find(path[1]);
      if (it == scope.playbook->params.end()) return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownParam), field, path[1]));
      return path.size() == 2 ? TypeOfParam(it->second.type) : "";
    }
    if (root == "thresholds") {
      if (path.size() < 2) return "map";
      if (!scope.library->thresholds.contains(path[1]))
        return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownThreshold), field, path[1]));
      return path.size() == 2 ? "number" : "";
    }
    if (root == "windows") {
      if (path.size() < 2) return "map";
      const WindowSpec* shared = scope.library->FindSharedWindow(path[1]);
      if (shared && shared->is_list()) return path.size() == 2 ? "list" : "";
      if (scope.playbook && scope.playbook->windows.count(path[1]) && scope.playbook->windows.at(path[1]).is_list())
        return path.size() == 2 ? "list" : "";
      bool known = IsBuiltinWindow(path[1]) || shared || (scope.playbook && scope.playbook->windows.count(path[1]));
      if (!known) return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownWindow), field, path[1]));
      return path.size() == 3 ? "number" : "";
    }
    if (const Binding* b = FindBinding(scope, root)) {
      if (report) deps->insert(b->needs.begin(), b->needs.end());
      return path.size() == 1 ? b->static_type : "";
    }
    const RuleSpec* rule = nullptr;
    size_t field_index = 1;
    std::string shown = root;
    if (root == "common") {
      if (path.size() < 2) return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownName), field, root));
      rule = scope.library->FindCommonRule(path[1]);
      if (!rule && !scope.playbook && scope.local_rules) rule = FindIn(*scope.local_rules, path[1]);
      if (!rule) return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownSharedRule), field, path[1]));
      field_index = 2;
      shown = "common." + path[1];
    } else if (scope.allow_rules && scope.local_rules) {
      rule = FindIn(*scope.local_rules, root);
      if (!rule) return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownRule), field, root));
    } else {
      return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownName), field, root));
    }
    if (!scope.allow_rules) return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownName), field, shown));
    if (report) deps->insert(rule->qualified_id);
    if (path.size() <= field_index) return "map";
    auto fields = FieldsOf(*rule);
    auto it = fields.find(path[field_index]);
    if (it == fields.end()) {
      std::set<std::string> names;
      for (const auto& [k, v] : fields) names.insert(k);
      std::string kind = RuleKindName(rule->kind);
      if (rule->kind == RuleKind::kAnalysis) kind += " " + rule->analysis.name;
      if (fields.empty()) return "";   // unknown analysis, already reported
      return err(LoadCode::kTypeMismatch, fmt::format(fmt::runtime(msg::kUnknownField), field, shown, kind, path[field_index], JoinSet(names)));
    }
    return path.size() == field_index + 1 ? it->second : "";
  };
  for (const auto& ref : refs) resolve_type(ref.path, ref.offset, true);
  std::vector<ExprSyntaxError> type_errors;
  std::string type = StaticType(*e.ast, [&](const std::vector<std::string>& path) { return resolve_type(path, 0, false); }, &type_errors);
  for (const auto& te : type_errors)
    ctx.Add(LoadCode::kTypeMismatch, at(te.offset), field, fmt::format(fmt::runtime(msg::kTypeMismatch), field, te.message));
  return type;
}

// A binding may not hide a name the language already gives a meaning to, nor a rule.
const std::set<std::string> kReservedNames = {"facts", "baseline", "discovery", "baseline_discovery", "params",
                                              "thresholds", "windows", "host", "common"};

// Checks each binding of `list` against the ones before it (`visible` counts them while it runs).
void CheckBindings(const FileCtx& ctx, const Scope& scope, std::vector<Binding>* list, size_t* visible,
                   const std::string& field) {
  for (size_t i = 0; i < list->size(); ++i) {
    auto& b = (*list)[i];
    bool shadows_rule = (scope.local_rules && FindIn(*scope.local_rules, b.name)) ||
                        (!scope.playbook && scope.library->FindCommonRule(b.name));
    // A name means one thing wherever it is read: bindings are resolved by name where they are used,
    // so one may not hide another (a rule's let over a macro, a playbook macro over a shared one).
    Scope outer = scope;
    outer.lets_visible = list == scope.lets ? 0 : scope.lets_visible;
    if (&scope.library->common_macros == list) outer.common_macros_visible = 0;
    if (scope.playbook && &scope.playbook->macros == list) outer.playbook_macros_visible = 0;
    const Binding* hidden = FindBinding(outer, b.name);
    if (kReservedNames.count(b.name) || shadows_rule || hidden)
      ctx.Add(LoadCode::kBadValue, b.expr.pos, field + "." + b.name,
              fmt::format(fmt::runtime(msg::kBindingHides), field + "." + b.name, b.name,
                          shadows_rule ? "the rule of that id"
                          : hidden     ? "the binding of that name at " + hidden->expr.pos.ToString()
                                       : "a name of the language (" + JoinSet(kReservedNames) + ")"));
    *visible = i;
    std::set<std::string> deps;
    // `host` is the host being excused inside an exclusion reason, null elsewhere.
    Scope with_host = scope;
    with_host.allow_host = true;
    b.static_type = CheckExpr(ctx, with_host, b.expr, field + "." + b.name, &deps);
    b.needs.assign(deps.begin(), deps.end());
  }
  *visible = SIZE_MAX;
}

void CheckTemplate(const FileCtx& ctx, const Scope& scope, const Template& t, const std::string& field,
                   std::set<std::string>* deps) {
  for (const auto& piece : t.pieces) {
    if (!piece.is_expr || !piece.expr) continue;
    CompiledExpr e;
    e.ast = piece.expr;
    e.source = piece.text;
    CheckExpr(ctx, scope, e, field, deps, piece.offset, t.locate);
  }
}

void CheckRuleRefs(FileCtx& ctx, const Scope& outer_scope, RuleSpec* rule) {
  ctx.rule = rule->id;
  Scope scope = outer_scope;
  scope.lets = &rule->lets;
  CheckBindings(ctx, scope, &rule->lets, &scope.lets_visible, "let");
  std::set<std::string> deps;
  // Explicit needs.
  std::vector<std::string> explicit_needs;
  for (const auto& n : rule->needs)
    if (!n.empty() && n[0] == '?') explicit_needs.push_back(n.substr(1));
  rule->needs.clear();
  for (const auto& need : explicit_needs) {
    const RuleSpec* target = nullptr;
    if (need.rfind("common.", 0) == 0) target = scope.library->FindCommonRule(need.substr(7));
    if (!target && scope.local_rules) target = FindIn(*scope.local_rules, need);
    if (!target)
      ctx.Add(LoadCode::kUnknownReference, rule->pos, "needs", fmt::format(fmt::runtime(msg::kUnknownRule), "needs", need));
    else
      deps.insert(target->qualified_id);
  }
  Scope host_scope = scope;
  host_scope.allow_host = true;
  switch (rule->kind) {
    case RuleKind::kQuery: {
      auto& q = rule->query;
      CheckExpr(ctx, scope, q.at_expr, "at", &deps);
      const WindowSpec* shared = scope.library->FindSharedWindow(q.window);
      if (!IsBuiltinWindow(q.window) && !(shared && !shared->is_list()) &&
          !(scope.playbook && scope.playbook->windows.count(q.window) && !scope.playbook->windows.at(q.window).is_list()))
        ctx.Add(LoadCode::kUnknownReference, rule->pos, "window", fmt::format(fmt::runtime(msg::kUnknownWindow), "window", q.window));
      CompiledExpr where;
      where.pos = q.template_pos;
      where.locate = nullptr;
      for (auto& [name, arg] : q.args) CheckExpr(ctx, scope, arg.expr, "args." + name, &deps);
      break;
    }
    case RuleKind::kFact:
      CheckExpr(ctx, scope, rule->fact.value, "fact", &deps);
      CheckExpr(ctx, scope, rule->fact.evidence, "evidence", &deps);
      break;
    case RuleKind::kAnalysis:
      CheckExpr(ctx, scope, rule->analysis.input, "input", &deps);
      CheckExpr(ctx, scope, rule->analysis.baseline_input, "baseline_input", &deps);
      CheckExpr(ctx, scope, rule->analysis.phases, "phases", &deps);
      CheckExpr(ctx, scope, rule->analysis.windows, "windows", &deps);
      break;
    case RuleKind::kVerdict: {
      auto& v = rule->verdict;
      CheckExpr(ctx, scope, v.when, "verdict.when", &deps);
      for (auto& c : v.confidence) CheckExpr(ctx, scope, c.when, "verdict.confidence.when", &deps);
      CheckTemplate(ctx, scope, v.summary, "verdict.summary", &deps);
      CheckExpr(ctx, scope, v.hosts, "verdict.hosts", &deps);
      CheckExpr(ctx, scope, v.onset, "verdict.onset", &deps);
      for (auto& ex : v.exclude) {
        CheckExpr(ctx, scope, ex.hosts, "verdict.exclude.hosts", &deps);
        CheckTemplate(ctx, host_scope, ex.reason, "verdict.exclude.reason", &deps);
      }
      for (auto& [k, t] : v.changes) CheckTemplate(ctx, scope, t, "verdict.changes." + k, &deps);
      for (auto& note : v.notes) {
        CheckTemplate(ctx, scope, note.text, "verdict.notes", &deps);
        CheckExpr(ctx, scope, note.when, "verdict.notes.when", &deps);
      }
      rule->after.clear();
      for (const auto& id : v.fallback_for) {
        const RuleSpec* target = scope.local_rules ? FindIn(*scope.local_rules, id) : nullptr;
        if (!target || target->kind != RuleKind::kVerdict || target == rule)
          ctx.Add(LoadCode::kUnknownReference, rule->pos, "verdict.fallback_for",
                  fmt::format(fmt::runtime(msg::kUnknownRule), "verdict.fallback_for", id + " (another verdict of this playbook)"));
        else
          rule->after.push_back(target->qualified_id);
      }
      if (v.suppress) {
        CheckExpr(ctx, scope, v.suppress->times, "verdict.suppress.times", &deps);
        CheckExpr(ctx, scope, v.suppress->during, "verdict.suppress.during", &deps);
        CheckTemplate(ctx, scope, v.suppress->reason, "verdict.suppress.reason", &deps);
      }
      break;
    }
  }
  if (rule->finding) {
    // A finding reads its own rule's result (evaluated after it), so a self-reference is no cycle.
    std::set<std::string> finding_deps;
    CheckExpr(ctx, scope, rule->finding->when, "finding.when", &finding_deps);
    CheckExpr(ctx, scope, rule->finding->hosts, "finding.hosts", &finding_deps);
    CheckTemplate(ctx, scope, rule->finding->summary, "finding.summary", &finding_deps);
    if (rule->finding->suppress) {
      CheckExpr(ctx, scope, rule->finding->suppress->times, "finding.suppress.times", &finding_deps);
      CheckExpr(ctx, scope, rule->finding->suppress->during, "finding.suppress.during", &finding_deps);
      CheckTemplate(ctx, scope, rule->finding->suppress->reason, "finding.suppress.reason", &finding_deps);
    }
    finding_deps.erase(rule->qualified_id);
    deps.insert(finding_deps.begin(), finding_deps.end());
  }
  rule->needs.assign(deps.begin(), deps.end());
}

// PromQL placeholders: each must name an arg or a playbook param; literal args already type-checked.
void CheckQueryTemplate(const FileCtx& ctx, const Scope& scope, RuleSpec* rule, const YAML::Node& query_node) {
  auto& q = rule->query;
  CompiledExpr where;
  where.source = q.promql_template;
  where.pos = q.template_pos;
  where.locate = ctx.Locator(query_node);
  std::set<std::string> used;
  for (const auto& ph : FindPlaceholders(ctx, q.promql_template, where)) {
    bool known = q.args.count(ph.name) || (scope.playbook && scope.playbook->params.count(ph.name));
    if (!known && ph.name == kWindowLengthPlaceholder) {
      // The length of the query's own window, as if written out as an arg (so every renderer,
      // export and lint included, sees an ordinary duration arg).
      ParamSpec arg;
      arg.name = ph.name;
      arg.type = ParamType::kDuration;
      arg.pos = where.At(ph.offset);
      arg.expr.source = "windows." + q.window + ".end - windows." + q.window + ".start";
      arg.expr.pos = arg.pos;
      ExprSyntaxError err;
      arg.expr.ast = std::shared_ptr<const Expr>(ParseExpr(arg.expr.source, &err));
      if (!arg.expr.ast) {
        ctx.Add(LoadCode::kTemplateParam, arg.pos, "query",
                fmt::format(fmt::runtime(msg::kTemplateUnknown), ph.name + " (window '" + q.window + "' is not a name expressions can use)"));
        continue;
      }
      std::set<std::string> no_rules;
      CheckExpr(ctx, scope, arg.expr, "args." + ph.name, &no_rules);
      q.args[ph.name] = std::move(arg);
      known = true;
    }
    if (!known) {
      ctx.Add(LoadCode::kTemplateParam, where.At(ph.offset), "query",
              fmt::format(fmt::runtime(msg::kTemplateUnknown), ph.name));
      continue;
    }
    used.insert(ph.name);
    if (std::find(q.placeholders.begin(), q.placeholders.end(), ph.name) == q.placeholders.end())
      q.placeholders.push_back(ph.name);
  }
  for (const auto& [name, arg] : q.args)
    if (!used.count(name)) ctx.Add(LoadCode::kUnusedArg, arg.pos, "args." + name, fmt::format(fmt::runtime(msg::kUnusedArg), name));
}

// Cycles among `rules` (qualified ids in needs), reported once each with the path.
void CheckCycles(FileCtx& ctx, const std::vector<RuleSpec>& rules) {
  std::map<std::string, const RuleSpec*> by_id;
  for (const auto& r : rules) by_id[r.qualified_id] = &r;
  std::map<std::string, int> color;   // 0 white, 1 on stack, 2 done
  std::vector<std::string> stack;
  std::set<std::set<std::string>> reported;
  std::function<void(const RuleSpec&)> dfs = [&](const RuleSpec& r) {
    color[r.qualified_id] = 1;
    stack.push_back(r.qualified_id);
    std::vector<std::string> edges = r.needs;
    edges.insert(edges.end(), r.after.begin(), r.after.end());
    for (const auto& dep : edges) {
      auto it = by_id.find(dep);
      if (it == by_id.end()) continue;
      if (color[dep] == 1) {
        auto start = std::find(stack.begin(), stack.end(), dep);
        std::set<std::string> members(start, stack.end());
        if (reported.insert(members).second) {
          std::string path;
          for (auto s = start; s != stack.end(); ++s) path += by_id[*s]->id + " -> ";
          path += it->second->id;
          ctx.rule = it->second->id;
          ctx.Add(LoadCode::kCycle, it->second->pos, "needs", fmt::format(fmt::runtime(msg::kCycle), path));
        }
      } else if (color[dep] == 0) {
        dfs(*it->second);
      }
    }
    stack.pop_back();
    color[r.qualified_id] = 2;
  };
  for (const auto& r : rules)
    if (color[r.qualified_id] == 0) dfs(r);
}

std::shared_ptr<const std::string> ReadText(const std::string& path, LoadResult* result) {
  auto text = ReadYamlFile(path);
  if (!text.ok()) {
    const bool limit = text.status().code() == StatusCode::kResourceExhausted;
    result->Add({limit ? LoadCode::kLimit : LoadCode::kFileRead, {path, 0, 0}, "", "", "",
                 limit ? text.status().message() : fmt::format(fmt::runtime(msg::kFileRead), text.status().message())});
    return nullptr;
  }
  return std::make_shared<const std::string>(std::move(text).value());
}

bool ParseYaml(FileCtx& ctx, YAML::Node* root) {
  if (static_cast<int64_t>(ctx.text->size()) > GetLimit(LimitId::kYamlFileBytes)) {
    ctx.Add(LoadCode::kLimit, SourcePos{ctx.file, 0, 0}, "", LimitExceeded(LimitId::kYamlFileBytes, ctx.file).message());
    return false;
  }
  try {
    *root = YAML::Load(*ctx.text);
  } catch (const YAML::ParserException& e) {
    ctx.Add(LoadCode::kYamlParse, SourcePos{ctx.file, e.mark.line + 1, e.mark.column + 1}, "",
            fmt::format(fmt::runtime(msg::kYamlParse), e.msg));
    return false;
  }
  if (Status bounded = CheckYamlBounds(*root, ctx.file); !bounded.ok()) {
    ctx.Add(LoadCode::kLimit, SourcePos{ctx.file, 0, 0}, "", bounded.message());
    return false;
  }
  return true;
}

// rules/common `windows:`. Loaded for every shared file before any rule, so a rule may use a window
// of a file loaded after its own.
void LoadSharedWindows(const FileCtx& ctx, const YAML::Node& root, Library* library) {
  if (YAML::Node windows = root["windows"]) {
    if (!windows.IsMap()) {
      ctx.Add(LoadCode::kFieldType, windows, "windows", fmt::format(fmt::runtime(msg::kFieldType), "windows", "a map"));
    } else {
      for (auto it = windows.begin(); it != windows.end(); ++it) {
        auto w = ParseWindow(ctx, it->first.Scalar(), it->second);
        if (!w) continue;
        if (const WindowSpec* prev = library->FindSharedWindow(w->name)) {
          ctx.Add(LoadCode::kDuplicateId, it->first, "windows", fmt::format(fmt::runtime(msg::kDuplicateId), w->name, prev->pos.ToString()));
          continue;
        }
        // Shared windows read the context and the windows before them, never rules.
        Scope no_rules;
        no_rules.library = library;
        no_rules.allow_rules = false;
        std::set<std::string> ignored;
        for (const auto* e : {&w->start, &w->end, &w->list}) CheckExpr(ctx, no_rules, *e, "windows." + w->name, &ignored);
        library->shared_windows.push_back(std::move(*w));
      }
    }
  }
}

void LoadCommonRoot(FileCtx& ctx, const YAML::Node& root, Library* library, bool windows_loaded) {
  if (!root.IsMap()) {
    ctx.Add(LoadCode::kFieldType, root, "", fmt::format(fmt::runtime(msg::kFieldType), "(file)", "a map with 'rules' and/or 'thresholds'"));
    return;
  }
  CheckKeys(ctx, root, kRulesFileKeys);
  if (YAML::Node th = root["thresholds"]) {
    if (!th.IsMap()) {
      ctx.Add(LoadCode::kFieldType, th, "thresholds", fmt::format(fmt::runtime(msg::kFieldType), "thresholds", "a map of numbers"));
    } else {
      for (auto it = th.begin(); it != th.end(); ++it) {
        double v = 0;
        if (GetNumber(ctx, it->second, "thresholds." + it->first.Scalar(), &v)) library->thresholds[it->first.Scalar()] = v;
      }
    }
  }
  if (!windows_loaded) LoadSharedWindows(ctx, root, library);
  size_t first_macro = library->common_macros.size();
  if (YAML::Node macros = root["macros"]) {
    for (auto& b : ParseBindings(ctx, macros, "macros")) {
      for (const auto& prev : library->common_macros)
        if (prev.name == b.name)
          ctx.Add(LoadCode::kDuplicateId, b.expr.pos, "macros", fmt::format(fmt::runtime(msg::kDuplicateId), b.name, prev.expr.pos.ToString()));
      library->common_macros.push_back(std::move(b));
    }
  }
  // Shared macros see the shared rules loaded so far and the macros before them.
  auto check_macros = [&] {
    // Shared macros are read in every playbook's scope, where a bare id is that playbook's rule:
    // they name shared rules as `common.<id>`.
    Scope scope;
    scope.library = library;
    std::vector<Binding> mine(std::make_move_iterator(library->common_macros.begin() + first_macro),
                              std::make_move_iterator(library->common_macros.end()));
    library->common_macros.resize(first_macro);
    scope.common_macros_visible = first_macro;
    Scope own = scope;
    own.lets = &mine;
    CheckBindings(ctx, own, &mine, &own.lets_visible, "macros");
    for (auto& b : mine) library->common_macros.push_back(std::move(b));
  };
  YAML::Node rules = root["rules"];
  if (!rules) {
    check_macros();
    return;
  }
  if (!rules.IsSequence()) {
    ctx.Add(LoadCode::kFieldType, rules, "rules", fmt::format(fmt::runtime(msg::kFieldType), "rules", "a list"));
    return;
  }
  size_t first_new = library->common_rules.size();
  std::vector<RuleNode> parsed;
  for (const auto& [rn, expanded_from] : ExpandForEach(ctx, rules)) {
    RuleSpec rule;
    ctx.expanded_from = expanded_from;
    if (!ParseRule(ctx, rn, "", &rule)) continue;
    if (const RuleSpec* prev = library->FindCommonRule(rule.id)) {
      ctx.Add(LoadCode::kDuplicateId, rn["id"], "id", fmt::format(fmt::runtime(msg::kDuplicateId), rule.id, prev->pos.ToString()));
      continue;
    }
    library->common_rules.push_back(std::move(rule));
    parsed.push_back({rn, expanded_from});
  }
  ctx.expanded_from = YAML::Mark::null_mark();
  check_macros();
  Scope scope;
  scope.library = library;
  scope.local_rules = &library->common_rules;
  for (size_t i = first_new; i < library->common_rules.size(); ++i) {
    auto& rule = library->common_rules[i];
    // Shared rules reference each other as bare ids or `common.<id>`.
    CheckRuleRefs(ctx, scope, &rule);
    const RuleNode& written = parsed[i - first_new];
    ctx.expanded_from = written.expanded_from;
    if (rule.kind == RuleKind::kQuery) CheckQueryTemplate(ctx, scope, &rule, written.node["query"]);
    ctx.expanded_from = YAML::Mark::null_mark();
  }
  ctx.rule.clear();
  CheckCycles(ctx, library->common_rules);
}

void LoadPlaybook(LoadResult* result, Library* library, std::shared_ptr<const std::string> text, const std::string& name) {
  FileCtx ctx;
  ctx.file = name;
  ctx.text = text;
  ctx.result = result;
  YAML::Node root;
  if (!ParseYaml(ctx, &root)) return;
  if (!root.IsMap()) {
    ctx.Add(LoadCode::kFieldType, root, "", fmt::format(fmt::runtime(msg::kFieldType), "(file)", "a map with 'playbook'"));
    return;
  }
  PlaybookSpec pb;
  pb.file = name;
  pb.pos = ctx.Pos(root);
  CheckKeys(ctx, root, kPlaybookKeys);
  if (!GetScalar(ctx, root, "playbook", true, &pb.id)) return;
  ctx.playbook = pb.id;
  if (!std::regex_match(pb.id, PlaybookIdPattern()))
    ctx.Add(LoadCode::kBadValue, root["playbook"], "playbook", fmt::format(fmt::runtime(msg::kBadValue), "playbook", pb.id, "[a-z0-9-]+"));
  if (const PlaybookSpec* prev = library->FindPlaybook(pb.id)) {
    ctx.Add(LoadCode::kDuplicateId, root["playbook"], "playbook", fmt::format(fmt::runtime(msg::kDuplicateId), pb.id, prev->pos.ToString()));
    return;
  }
  GetScalar(ctx, root, "description", true, &pb.description);
  if (YAML::Node params = root["params"]) {
    if (!params.IsMap()) {
      ctx.Add(LoadCode::kFieldType, params, "params", fmt::format(fmt::runtime(msg::kFieldType), "params", "a map"));
    } else {
      for (auto it = params.begin(); it != params.end(); ++it)
        pb.params[it->first.Scalar()] = ParseParam(ctx, it->first.Scalar(), it->second, "default", kParamKeys, "params.");
    }
  }
  if (YAML::Node windows = root["windows"]) {
    if (!windows.IsMap()) {
      ctx.Add(LoadCode::kFieldType, windows, "windows", fmt::format(fmt::runtime(msg::kFieldType), "windows", "a map"));
    } else {
      for (auto it = windows.begin(); it != windows.end(); ++it)
        if (auto w = ParseWindow(ctx, it->first.Scalar(), it->second)) pb.windows[w->name] = std::move(*w);
    }
  }
  if (YAML::Node macros = root["macros"]) pb.macros = ParseBindings(ctx, macros, "macros");
  if (YAML::Node triggers = root["triggers"]) {
    if (!triggers.IsSequence()) {
      ctx.Add(LoadCode::kFieldType, triggers, "triggers", fmt::format(fmt::runtime(msg::kFieldType), "triggers", "a list"));
    } else {
      for (const auto& tn : triggers) {
        TriggerSpec t;
        t.pos = ctx.Pos(tn);
        if (!tn.IsMap()) {
          ctx.Add(LoadCode::kFieldType, tn, "triggers", fmt::format(fmt::runtime(msg::kFieldType), "triggers[]", "a map"));
          continue;
        }
        CheckKeys(ctx, tn, kTriggerKeys);
        if (tn["failure_class"]) GetStringList(ctx, tn["failure_class"], "triggers.failure_class", &t.failure_class);
        if (tn["tgs_pattern"]) GetStringList(ctx, tn["tgs_pattern"], "triggers.tgs_pattern", &t.tgs_pattern);
        if (tn["status"]) GetStringList(ctx, tn["status"], "triggers.status", &t.status);
        bool b = false;
        if (tn["baseline"] && GetBool(ctx, tn["baseline"], "triggers.baseline", &b)) t.baseline = b;
        if (tn["tsdb"] && GetBool(ctx, tn["tsdb"], "triggers.tsdb", &b)) t.tsdb = b;
        if (tn["always"] && GetBool(ctx, tn["always"], "triggers.always", &b)) t.always = b;
        if (tn["when"]) t.when = ParseExprNode(ctx, tn["when"], "triggers.when");
        pb.triggers.push_back(std::move(t));
      }
    }
  }
  YAML::Node rules = root["rules"];
  std::vector<RuleNode> rule_nodes;
  if (!rules) {
    ctx.Add(LoadCode::kMissingField, root, "rules", fmt::format(fmt::runtime(msg::kMissingField), "rules"));
  } else if (!rules.IsSequence()) {
    ctx.Add(LoadCode::kFieldType, rules, "rules", fmt::format(fmt::runtime(msg::kFieldType), "rules", "a list"));
  } else {
    for (const auto& [rn, expanded_from] : ExpandForEach(ctx, rules)) {
      RuleSpec rule;
      ctx.expanded_from = expanded_from;
      if (!ParseRule(ctx, rn, pb.id, &rule)) {
        ctx.rule.clear();
        continue;
      }
      if (const RuleSpec* prev = pb.FindRule(rule.id)) {
        ctx.Add(LoadCode::kDuplicateId, rn["id"], "id", fmt::format(fmt::runtime(msg::kDuplicateId), rule.id, prev->pos.ToString()));
        ctx.rule.clear();
        continue;
      }
      pb.rules.push_back(std::move(rule));
      rule_nodes.push_back({rn, expanded_from});
      ctx.rule.clear();
    }
    ctx.expanded_from = YAML::Mark::null_mark();
  }
  // Reference and type pass: every rule is known now, so forward references work.
  Scope scope;
  scope.library = library;
  scope.playbook = &pb;
  scope.local_rules = &pb.rules;
  Scope no_rules = scope;
  no_rules.allow_rules = false;
  std::set<std::string> ignored;
  for (auto& t : pb.triggers) CheckExpr(ctx, no_rules, t.when, "triggers.when", &ignored);
  for (auto& [k, w] : pb.windows) {
    if (library->FindSharedWindow(k))
      ctx.Add(LoadCode::kDuplicateId, w.pos, "windows." + k, fmt::format(fmt::runtime(msg::kDuplicateId), k, library->FindSharedWindow(k)->pos.ToString()));
    CheckExpr(ctx, no_rules, w.start, "windows." + k + ".start", &ignored);
    CheckExpr(ctx, no_rules, w.end, "windows." + k + ".end", &ignored);
    CheckExpr(ctx, no_rules, w.list, "windows." + k + ".list", &ignored);
  }
  for (auto& [k, p] : pb.params) CheckExpr(ctx, no_rules, p.expr, "params." + k, &ignored);
  CheckBindings(ctx, scope, &pb.macros, &scope.playbook_macros_visible, "macros");
  for (const auto& r : pb.rules)
    for (const auto& m : library->common_macros)
      if (m.name == r.id) {
        ctx.rule = r.id;
        ctx.Add(LoadCode::kDuplicateId, r.pos, "id",
                fmt::format(fmt::runtime(msg::kBindingHides), "id", r.id, "the shared macro at " + m.expr.pos.ToString()));
      }
  ctx.rule.clear();
  for (size_t i = 0; i < pb.rules.size(); ++i) {
    CheckRuleRefs(ctx, scope, &pb.rules[i]);
    ctx.expanded_from = rule_nodes[i].expanded_from;
    if (pb.rules[i].kind == RuleKind::kQuery) CheckQueryTemplate(ctx, scope, &pb.rules[i], rule_nodes[i].node["query"]);
    ctx.expanded_from = YAML::Mark::null_mark();
  }
  ctx.rule.clear();
  CheckCycles(ctx, pb.rules);
  // Unused rules: nothing references them and they report nothing themselves.
  std::set<std::string> referenced;
  for (const auto& r : pb.rules) referenced.insert(r.needs.begin(), r.needs.end());
  for (const auto& r : pb.rules) {
    if (r.kind == RuleKind::kVerdict || r.finding || referenced.count(r.qualified_id)) continue;
    ctx.rule = r.id;
    ctx.Add(LoadCode::kUnusedRule, r.pos, "id", fmt::format(fmt::runtime(msg::kUnusedRule), r.id));
  }
  ctx.rule.clear();
  if (YAML::Node prec = root["precedence"]) {
    std::vector<std::string> ids;
    GetStringList(ctx, prec, "precedence", &ids);
    for (const auto& id : ids) {
      const RuleSpec* r = pb.FindRule(id);
      if (!r || r->kind != RuleKind::kVerdict)
        ctx.Add(LoadCode::kUnknownReference, prec, "precedence", fmt::format(fmt::runtime(msg::kPrecedenceNotVerdict), id));
      else
        pb.precedence.push_back(id);
    }
  }
  // Verdicts missing from `precedence` follow in file order.
  for (const auto& r : pb.rules)
    if (r.kind == RuleKind::kVerdict && std::find(pb.precedence.begin(), pb.precedence.end(), r.id) == pb.precedence.end())
      pb.precedence.push_back(r.id);
  library->playbooks.push_back(std::move(pb));
}

void LoadCommon(LoadResult* result, Library* library, std::shared_ptr<const std::string> text, const std::string& name) {
  FileCtx ctx;
  ctx.file = name;
  ctx.text = std::move(text);
  ctx.result = result;
  YAML::Node root;
  if (ParseYaml(ctx, &root)) LoadCommonRoot(ctx, root, library, false);
}

}  // namespace

std::string LoadDiagnostic::ToString() const {
  std::string out = pos.ToString() + ": ";
  if (!playbook.empty()) out += "playbook \"" + playbook + "\", ";
  if (!rule.empty()) out += "rule \"" + rule + "\": ";
  else if (!playbook.empty()) out.replace(out.size() - 2, 2, ": ");
  out += std::string(warning() ? "warning: " : "") + message;
  return out;
}

bool LoadResult::ok() const { return errors() == 0; }

int LoadResult::errors() const {
  int n = 0;
  for (const auto& d : diagnostics_) n += d.warning() ? 0 : 1;
  return n;
}

int LoadResult::warnings() const {
  return static_cast<int>(diagnostics_.size()) - errors();
}

std::vector<LoadDiagnostic> LoadResult::ForFile(const std::string& file) const {
  std::vector<LoadDiagnostic> out;
  for (const auto& d : diagnostics_)
    if (d.pos.file == file) out.push_back(d);
  std::stable_sort(out.begin(), out.end(), [](const LoadDiagnostic& a, const LoadDiagnostic& b) {
    return a.pos.line != b.pos.line ? a.pos.line < b.pos.line : a.pos.col < b.pos.col;
  });
  return out;
}

nlohmann::json LoadResult::AsJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : diagnostics_) {
    // Names and messages quote the file's own bytes, which need not be UTF-8.
    out.push_back({{"file", ValidUtf8(d.pos.file)}, {"line", d.pos.line}, {"col", d.pos.col},
                   {"severity", d.warning() ? "warning" : "error"}, {"code", LoadCodeName(d.code)},
                   {"playbook", ValidUtf8(d.playbook)}, {"rule", ValidUtf8(d.rule)}, {"field", ValidUtf8(d.field)},
                   {"message", ValidUtf8(d.message)}});
  }
  return out;
}

void Loader::LoadCommonFile(const std::string& path) { LoadCommonFiles({path}); }

void Loader::LoadCommonFiles(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    try {
      YAML::Node root = YAML::LoadFile(path);
      if (root.IsMap() && root["thresholds"] && root["thresholds"].IsMap())
        for (auto it = root["thresholds"].begin(); it != root["thresholds"].end(); ++it)
          library_.thresholds[it->first.Scalar()] = it->second.as<double>();
    } catch (const YAML::Exception&) {
      // Reported with its position when the file is loaded below.
    }
  }
  std::vector<std::pair<FileCtx, YAML::Node>> files;
  for (const auto& path : paths) {
    auto text = ReadText(path, &result_);
    if (!text) continue;
    FileCtx ctx;
    ctx.file = path;
    ctx.text = text;
    ctx.result = &result_;
    YAML::Node root;
    if (ParseYaml(ctx, &root)) files.emplace_back(std::move(ctx), root);
  }
  for (auto& [ctx, root] : files)
    if (root.IsMap()) LoadSharedWindows(ctx, root, &library_);
  for (auto& [ctx, root] : files) LoadCommonRoot(ctx, root, &library_, true);
}

void Loader::LoadCommonText(const std::string& text, const std::string& name) {
  LoadCommon(&result_, &library_, std::make_shared<const std::string>(text), name);
}

void Loader::LoadPlaybookFile(const std::string& path) {
  auto text = ReadText(path, &result_);
  if (!text) return;
  LoadPlaybook(&result_, &library_, text, path);
}

void Loader::LoadPlaybookText(const std::string& text, const std::string& name) {
  LoadPlaybook(&result_, &library_, std::make_shared<const std::string>(text), name);
}

void Loader::LoadAnyFile(const std::string& path) {
  auto text = ReadText(path, &result_);
  if (!text) return;
  bool is_playbook = false;
  try {
    YAML::Node root = YAML::Load(*text);
    is_playbook = root.IsMap() && root["playbook"];
  } catch (const YAML::Exception&) {
    is_playbook = true;   // reported by the playbook loader with its position
  }
  if (is_playbook) LoadPlaybook(&result_, &library_, text, path);
  else LoadCommon(&result_, &library_, text, path);
}

std::vector<std::string> FindYamlFiles(const std::string& path, bool include_tests) {
  std::vector<std::string> out;
  auto is_yaml = [&](const fs::path& p) {
    std::string name = p.filename().string();
    bool yaml = p.extension() == ".yaml" || p.extension() == ".yml";
    bool test = name.find(".test.") != std::string::npos;
    return yaml && (include_tests ? test : !test);
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (auto it = fs::recursive_directory_iterator(path, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->is_regular_file() && is_yaml(it->path())) out.push_back(it->path().string());
    }
  } else {
    out.push_back(path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool LooksLikePlaybook(const std::string& path) {
  try {
    YAML::Node root = YAML::LoadFile(path);
    return root.IsMap() && root["playbook"];
  } catch (const YAML::Exception&) {
    return true;
  }
}

std::string PlaybookDataDir() { return DefaultDataDir(); }

Library LoadLibraryDir(const std::string& data_dir, LoadResult* result) {
  Loader loader;
  std::error_code ec;
  auto list = [&](const std::string& dir) {
    std::vector<std::string> files;
    if (!fs::is_directory(dir, ec)) return files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      auto ext = entry.path().extension();
      if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
  };
  loader.LoadCommonFiles(list(data_dir + "/rules/common"));
  for (const auto& f : list(data_dir + "/playbooks")) loader.LoadPlaybookFile(f);
  for (const auto& d : loader.result().diagnostics()) result->Add(d);
  return loader.TakeLibrary();
}

}  // namespace diagnose::playbook
