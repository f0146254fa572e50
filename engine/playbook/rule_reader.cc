// Read stage: YAML -> RuleSpec, one rule at a time with no knowledge of other rules (those checks
// are rule_checker.cc's), so a rule parses the same wherever it is written.
#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "engine/analysis/analysis.h"
#include "engine/core/bounded_regex.h"
#include "engine/core/limits.h"
#include "engine/playbook/loader_internal.h"
#include "engine/report/report.h"

namespace diagnose::playbook::internal {
namespace {

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
const std::set<std::string> kArgKeys = {"type", "value", "expr"};
const std::set<std::string> kWindowKeys = {"start", "end", "list", "unavailable"};
const std::set<std::string> kTriggerKeys = {"failure_class", "tgs_pattern", "status", "baseline", "tsdb", "when", "always"};
const std::set<std::string> kParamKeys = {"type", "default", "expr", "doc"};
const std::set<std::string> kExcludeKeys = {"hosts", "priority", "reason"};
const std::set<std::string> kConfidenceKeys = {"level", "when"};
const std::set<std::string> kNoteKeys = {"text", "when"};
const std::set<std::string> kReduce = [] {
  std::set<std::string> words;
  for (Reduction how : ValuesOf<Reduction>()) words.emplace(ToString(how));
  return words;
}();
// The contract words, for the message that names what a misspelt level should have been.
const std::set<std::string> kConfidenceLevels = [] {
  std::set<std::string> words;
  for (const Confidence c : kAllConfidences) words.insert(std::string(ToString(c)));
  return words;
}();

const std::regex& IdPattern() {
  static const std::regex re("^[a-z_][a-z0-9_]*$");
  return re;
}
const std::regex& DurationPattern() {
  static const std::regex re("^([0-9]+(ms|s|m|h|d|w|y))+$");
  return re;
}

// What an expression and a template field share before their own parsing: the position, and the
// source text with its locator when the node is a string (else a field-type error, and false).
template <typename Parsed>
bool ReadSourceText(const FileCtx& ctx, const YAML::Node& n, const std::string& field, const char* expected, Parsed& out) {
  out.pos = ctx.Pos(n);
  if (!n.IsScalar()) {
    ctx.Add(LoadCode::kFieldType, n, field, fmt::format(fmt::runtime(msg::kFieldType), field, expected));
    return false;
  }
  out.source = n.Scalar();
  out.locate = ctx.Locator(n);
  return true;
}

}  // namespace

CompiledExpr ParseExprNode(const FileCtx& ctx, const YAML::Node& n, const std::string& field) {
  CompiledExpr out;
  if (!ReadSourceText(ctx, n, field, "an expression string", out)) return out;
  ExprSyntaxError err;
  auto ast = ParseExpr(out.source, &err);
  if (!ast) {
    ctx.Add(LoadCode::kExprSyntax, out.At(err.offset), field, fmt::format(fmt::runtime(msg::kExprSyntax), field, err.message));
    return out;
  }
  out.ast = std::shared_ptr<const Expr>(std::move(ast));
  return out;
}

namespace {

Template ParseTemplateNode(const FileCtx& ctx, const YAML::Node& n, const std::string& field) {
  Template out;
  if (!ReadSourceText(ctx, n, field, "a string", out)) return out;
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
      const std::optional<double> number = ScalarAs<double>(n);
      if (!number) return bad(n.IsScalar() ? "'" + n.Scalar() + "'" : "(not a scalar)");
      *out = *number;
      return true;
    }
    case ParamType::kDuration: {
      if (!n.IsScalar()) return bad("(not a scalar)");
      const std::string& s = n.Scalar();
      if (BoundedRegexMatch(s, DurationPattern())) {
        *out = s;
        return true;
      }
      if (const std::optional<double> secs = ScalarAs<double>(n); secs && *secs > 0) {
        *out = fmt::format("{}s", static_cast<long long>(*secs));
        return true;
      }
      return bad("'" + s + "'");
    }
    case ParamType::kString:
    case ParamType::kRegex:
      if (!n.IsScalar()) return bad("(not a scalar)");
      *out = n.Scalar();
      return true;
    case ParamType::kBool: {
      const std::optional<bool> flag = ScalarAs<bool>(n);
      if (!flag) return bad(n.IsScalar() ? "'" + n.Scalar() + "'" : "(not a scalar)");
      *out = *flag;
      return true;
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

}  // namespace

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

namespace {

void ParseQuery(const FileCtx& ctx, const YAML::Node& n, RuleSpec* rule) {
  QuerySpec& q = rule->query;
  YAML::Node qn = n["query"];
  if (!qn.IsScalar()) {
    ctx.Add(LoadCode::kFieldType, qn, "query", fmt::format(fmt::runtime(msg::kFieldType), "query", "a PromQL string"));
    return;
  }
  q.promql_template = qn.Scalar();
  q.template_pos = ctx.Pos(qn);
  q.template_locate = ctx.Locator(qn);
  if (n["range"]) GetBool(ctx, n["range"], "range", &q.range);
  if (n["window"]) GetScalar(ctx, n, "window", false, &q.window);
  if (n["at"]) {
    std::string at;
    if (GetScalar(ctx, n, "at", false, &at)) {
      // Only `start` and `end` are words; any other text (even "expression") is an expression.
      const std::optional<QueryAt> word = ParseWord<QueryAt>(at);
      q.at = word && *word != QueryAt::kExpression ? *word : QueryAt::kExpression;
      if (q.at == QueryAt::kExpression) q.at_expr = ParseExprNode(ctx, n["at"], "at");
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
    std::string tsdb;
    if (GetScalar(ctx, n, "tsdb", false, &tsdb)) {
      if (const std::optional<JobRole> role = ParseWord<JobRole>(tsdb))
        q.tsdb = *role;
      else
        ctx.Add(LoadCode::kBadValue, n["tsdb"], "tsdb", fmt::format(fmt::runtime(msg::kBadValue), "tsdb", tsdb, "subject, baseline"));
    }
  }
  if (n["by"]) GetStringList(ctx, n["by"], "by", &q.by);
  if (YAML::Node reduce = n["reduce"]) {
    std::vector<std::string> hows;
    if (reduce.IsSequence()) {
      GetStringList(ctx, reduce, "reduce", &hows);
      if (hows.empty())
        ctx.Add(LoadCode::kBadValue, reduce, "reduce", fmt::format(fmt::runtime(msg::kBadValue), "reduce", "[]", JoinSet(kReduce)));
    } else if (std::string how; GetScalar(ctx, n, "reduce", false, &how)) {
      hows.push_back(how);
    }
    std::set<std::string> seen;
    for (const auto& how : hows) {
      if (!kReduce.count(how))
        ctx.Add(LoadCode::kBadValue, reduce, "reduce", fmt::format(fmt::runtime(msg::kBadValue), "reduce", how, JoinSet(kReduce)));
      else if (!seen.insert(how).second)
        ctx.Add(LoadCode::kBadValue, reduce, "reduce", fmt::format(fmt::runtime(msg::kBadValue), "reduce", how + " (listed twice)", JoinSet(kReduce)));
    }
    q.reductions.clear();
    for (const auto& how : hows)
      if (const std::optional<Reduction> parsed = ParseWord<Reduction>(how)) q.reductions.push_back(*parsed);
    if (!q.reductions.empty()) q.reduce = q.reductions.front();
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
        const std::optional<double> number = ScalarAs<double>(v);
        ok = number.has_value();
        if (ok) a.args[k] = *number;
      } else if (ok && type == "bool") {
        const std::optional<bool> flag = ScalarAs<bool>(v);
        ok = flag.has_value();
        if (ok) a.args[k] = *flag;
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
      if (const std::optional<Confidence> level = ParseConfidence(c.Scalar())) v.confidence.push_back({*level, {}});
      else ctx.Add(LoadCode::kBadValue, c, "verdict.confidence", fmt::format(fmt::runtime(msg::kBadValue), "verdict.confidence", c.Scalar(), JoinSet(kConfidenceLevels)));
    } else if (c.IsSequence()) {
      for (const auto& item : c) {
        if (!item.IsMap()) {
          ctx.Add(LoadCode::kFieldType, item, "verdict.confidence", fmt::format(fmt::runtime(msg::kFieldType), "verdict.confidence", "a list of {level, when}"));
          continue;
        }
        CheckKeys(ctx, item, kConfidenceKeys);
        ConfidenceLevel level;
        std::string word;
        if (GetScalar(ctx, item, "level", true, &word)) {
          if (const std::optional<Confidence> parsed = ParseConfidence(word)) level.level = *parsed;
          else ctx.Add(LoadCode::kBadValue, item["level"], "verdict.confidence.level",
                       fmt::format(fmt::runtime(msg::kBadValue), "verdict.confidence.level", word, JoinSet(kConfidenceLevels)));
        }
        if (item["when"]) level.when = ParseExprNode(ctx, item["when"], "verdict.confidence.when");
        v.confidence.push_back(std::move(level));
      }
    } else {
      ctx.Add(LoadCode::kFieldType, c, "verdict.confidence", fmt::format(fmt::runtime(msg::kFieldType), "verdict.confidence", "a level or a list"));
    }
  } else {
    v.confidence.push_back({Confidence::kLikely, {}});
  }
  if (vn["summary"]) v.summary = ParseTemplateNode(ctx, vn["summary"], "verdict.summary");
  if (vn["hosts"]) v.hosts = ParseExprNode(ctx, vn["hosts"], "verdict.hosts");
  if (vn["onset"]) v.onset = ParseExprNode(ctx, vn["onset"], "verdict.onset");
  if (vn["explains"]) GetStringList(ctx, vn["explains"], "verdict.explains", &v.explains);
  if (std::string action; vn["action"] && GetScalar(ctx, vn, "action", false, &action)) {
    if (const std::optional<DecisionAction> parsed = ParseDecisionAction(action))
      v.action = *parsed;
    else
      ctx.Add(LoadCode::kBadValue, vn["action"], "verdict.action",
              fmt::format(fmt::runtime(msg::kBadValue), "verdict.action", action, "the contract vocabulary"));
  }
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

}  // namespace

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

std::map<std::string, ParamSpec> ParseParams(const FileCtx& ctx, const YAML::Node& n) {
  std::map<std::string, ParamSpec> params;
  if (!n.IsMap()) {
    ctx.Add(LoadCode::kFieldType, n, "params", fmt::format(fmt::runtime(msg::kFieldType), "params", "a map"));
    return params;
  }
  for (auto it = n.begin(); it != n.end(); ++it)
    params[it->first.Scalar()] = ParseParam(ctx, it->first.Scalar(), it->second, "default", kParamKeys, "params.");
  return params;
}

std::vector<TriggerSpec> ParseTriggers(const FileCtx& ctx, const YAML::Node& n) {
  std::vector<TriggerSpec> triggers;
  if (!n.IsSequence()) {
    ctx.Add(LoadCode::kFieldType, n, "triggers", fmt::format(fmt::runtime(msg::kFieldType), "triggers", "a list"));
    return triggers;
  }
  for (const auto& tn : n) {
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
    triggers.push_back(std::move(t));
  }
  return triggers;
}

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
      if (!BoundedRegexMatch(key, key_pattern)) {
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
    if (!BoundedRegexMatch(b.name, IdPattern()))
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
  if (!BoundedRegexMatch(rule->id, IdPattern()))
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
  if (n["description"] && n["description"].IsScalar()) {
    rule->description = n["description"].Scalar();
    if (rule->description.find("{{") != std::string::npos)
      rule->description_text = ParseTemplateNode(ctx, n["description"], "description");
  }
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

}  // namespace diagnose::playbook::internal
