// Check stage: everything that needs more than one rule (names, bindings, rule references, query
// placeholders, cycles), run once every rule of a file has been read so forward references work.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "engine/analysis/analysis.h"
#include "engine/playbook/loader_internal.h"

namespace diagnose::playbook::internal {
namespace {

// Name roots available to every expression (README §6).
const std::set<std::string> kContextRoots = {"facts", "baseline", "discovery", "baseline_discovery"};

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

const Binding* FindBinding(const Scope& scope, const std::string& name) {
  if (!scope.allow_rules) return nullptr;
  auto find = [&](const std::vector<Binding>* list, size_t visible) -> const Binding* {
    if (!list) return nullptr;
    for (size_t i = 0; i < list->size() && i < visible; ++i)
      if ((*list)[i].name == name) return &(*list)[i];
    return nullptr;
  };
  if (const Binding* b = find(scope.lets, scope.lets_visible)) {
    if (scope.lets_used) scope.lets_used->insert(b->name);
    return b;
  }
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

}  // namespace

std::string CheckExpr(const FileCtx& ctx, const Scope& scope, const CompiledExpr& e, const std::string& field,
                      std::set<std::string>* deps, size_t base_offset,
                      const std::function<SourcePos(size_t)>& locate) {
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
      // A table (gpu_models) is a map whose entries are known at run time; a plain threshold a number.
      // A literal path into a loaded table names a model it holds and a level some model has, so a
      // typo is an error rather than a silent fallback.
      if (const nlohmann::json& table = scope.library->thresholds[path[1]]; table.is_object()) {
        if (path.size() == 2) return "map";
        if (table.empty()) return "";
        if (!table.contains(path[2]))
          return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownThreshold), field, path[1] + "." + path[2]));
        if (path.size() >= 4 && !std::any_of(table.begin(), table.end(), [&](const nlohmann::json& levels) { return levels.contains(path[3]); }))
          return err(LoadCode::kUnknownReference, fmt::format(fmt::runtime(msg::kUnknownThreshold), field, path[1] + "." + path[2] + "." + path[3]));
        return path.size() == 4 ? "number" : "";
      }
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

namespace {

// A binding may not hide a name the language already gives a meaning to, nor a rule.
const std::set<std::string> kReservedNames = {"facts", "baseline", "discovery", "baseline_discovery", "params",
                                              "thresholds", "windows", "host", "common"};

}  // namespace

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

namespace {

bool SameExpr(const Expr& a, const Expr& b) {
  if (a.kind != b.kind || a.text != b.text || a.literal != b.literal || a.keys != b.keys ||
      a.children.size() != b.children.size())
    return false;
  for (size_t i = 0; i < a.children.size(); ++i)
    if (!SameExpr(*a.children[i], *b.children[i])) return false;
  return true;
}

// `list`, or the map it is the keys or values of: a non-empty map has non-empty keys().
bool SameCollection(const Expr& e, const Expr& list) {
  if (SameExpr(e, list)) return true;
  return list.kind == ExprKind::kCall && (list.text == "keys" || list.text == "values") && list.children.size() == 1 &&
         SameExpr(e, *list.children[0]);
}

bool IsLengthOf(const Expr& e, const Expr& list) {
  return e.kind == ExprKind::kCall && (e.text == "len" || e.text == "count") && e.children.size() == 1 &&
         SameCollection(*e.children[0], list);
}

std::optional<double> NumberLiteral(const Expr& e) {
  if (e.kind == ExprKind::kLiteral && e.literal.is_number()) return e.literal.get<double>();
  return std::nullopt;
}

// True when `cond` being true proves `list` non-empty: `list` itself (an empty list is false),
// `len(list) > n` for n >= 0, `len(list) >= n` for n >= 1, `len(list) != 0`, mirrored forms, and
// any of these as a term of `and` (or in every term of `or`). Anything subtler is not proof.
bool ProvesNonEmpty(const Expr& cond, const Expr& list) {
  if (SameCollection(cond, list) || IsLengthOf(cond, list)) return true;
  if (cond.kind != ExprKind::kBinary || cond.children.size() != 2) return false;
  const Expr& l = *cond.children[0];
  const Expr& r = *cond.children[1];
  const std::string& op = cond.text;
  if (op == "and") return ProvesNonEmpty(l, list) || ProvesNonEmpty(r, list);
  if (op == "or") return ProvesNonEmpty(l, list) && ProvesNonEmpty(r, list);
  auto bound = [&](const Expr& len, const Expr& num, const std::string& o) {
    auto n = NumberLiteral(num);
    if (!IsLengthOf(len, list) || !n) return false;
    return (o == ">" && *n >= 0) || (o == ">=" && *n >= 1) || (o == "!=" && *n == 0);
  };
  const std::string mirrored = op == "<" ? ">" : op == "<=" ? ">=" : op;
  return bound(l, r, op) || bound(r, l, mirrored);
}

// Where a placeholder renders a list (or map) into the sentence without a condition in force that
// proves it non-empty: the placeholder itself when statically list or map typed, or, for
// if(c, a, b) of that type, each branch (c guards a). join() and phrases() are strings: a join's
// list is often guarded by a sibling fact (`accused_tasks` for `accused_hosts`) no static check
// can relate, so only what the type system sees as a list is judged.
void FindListHoles(const Expr& e, bool list_typed, std::vector<const Expr*> guards, std::vector<const Expr*>* holes) {
  if (!list_typed) return;
  if (e.kind == ExprKind::kCall && e.text == "if" && e.children.size() == 3) {
    std::vector<const Expr*> then_guards = guards;
    then_guards.push_back(e.children[0].get());
    FindListHoles(*e.children[1], list_typed, then_guards, holes);
    FindListHoles(*e.children[2], list_typed, guards, holes);
    return;
  }
  if (e.kind == ExprKind::kList && !e.children.empty()) return;
  for (const Expr* g : guards)
    if (ProvesNonEmpty(*g, e)) return;
  holes->push_back(&e);
}

// Where an expression starts in its source (a field access's own offset is its field name's).
size_t StartOffset(const Expr& e) {
  size_t start = e.offset;
  for (const auto& c : e.children) start = std::min(start, StartOffset(*c));
  return start;
}

// What must hold for a sentence to be rendered, and where it is written ("finding.when").
struct SentenceGuard {
  std::vector<const Expr*> conditions;
  std::string written_in;
};

void CheckTemplate(const FileCtx& ctx, const Scope& scope, const Template& t, const std::string& field,
                   std::set<std::string>* deps, const SentenceGuard* guard = nullptr) {
  for (const auto& piece : t.pieces) {
    if (!piece.is_expr || !piece.expr) continue;
    CompiledExpr e;
    e.ast = piece.expr;
    e.source = piece.text;
    const std::string type = CheckExpr(ctx, scope, e, field, deps, piece.offset, t.locate);
    if (guard == nullptr) continue;
    std::vector<const Expr*> holes;
    FindListHoles(*piece.expr, type == "list" || type == "map", guard->conditions, &holes);
    for (const Expr* hole : holes) {
      std::string shown = piece.text;
      shown.erase(0, shown.find_first_not_of(" \t\n"));
      shown.erase(shown.find_last_not_of(" \t\n") + 1);
      ctx.Add(LoadCode::kEmptyListSentence, t.At(piece.offset + StartOffset(*hole)), field,
              fmt::format(fmt::runtime(msg::kEmptyListSentence), field, shown, type, guard->written_in));
    }
  }
}

// The conditions in force where a sentence is rendered: each present one.
SentenceGuard GuardOf(std::initializer_list<const CompiledExpr*> conditions, std::string written_in) {
  SentenceGuard g;
  for (const CompiledExpr* c : conditions)
    if (c->ast) g.conditions.push_back(c->ast.get());
  g.written_in = std::move(written_in);
  return g;
}

// Explicit needs (written `?<id>` by the reader): each must name a rule of this playbook or a shared one.
void ResolveExplicitNeeds(FileCtx& ctx, const Scope& scope, RuleSpec* rule, std::set<std::string>* deps) {
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
      deps->insert(target->qualified_id);
  }
}

// A verdict's expressions and sentences (each sentence guarded by the conditions in force where it
// is rendered), its fallback_for targets and its suppression. What only `onset` reads goes to
// `onset_deps`.
void CheckVerdictRefs(FileCtx& ctx, const Scope& scope, RuleSpec* rule, std::set<std::string>* deps,
                      std::set<std::string>* onset_deps) {
  Scope host_scope = scope;
  host_scope.allow_host = true;
  auto& v = rule->verdict;
  CheckExpr(ctx, scope, v.when, "verdict.when", deps);
  for (auto& c : v.confidence) CheckExpr(ctx, scope, c.when, "verdict.confidence.when", deps);
  const SentenceGuard verdict_guard = GuardOf({&v.when}, "verdict.when");
  CheckTemplate(ctx, scope, v.summary, "verdict.summary", deps, &verdict_guard);
  CheckExpr(ctx, scope, v.hosts, "verdict.hosts", deps);
  CheckExpr(ctx, scope, v.onset, "verdict.onset", onset_deps);
  for (auto& ex : v.exclude) {
    CheckExpr(ctx, scope, ex.hosts, "verdict.exclude.hosts", deps);
    CheckTemplate(ctx, host_scope, ex.reason, "verdict.exclude.reason", deps, &verdict_guard);
  }
  for (auto& [k, t] : v.changes) CheckTemplate(ctx, scope, t, "verdict.changes." + k, deps, &verdict_guard);
  for (auto& note : v.notes) {
    const SentenceGuard note_guard = GuardOf({&v.when, &note.when}, "the note's when");
    CheckTemplate(ctx, scope, note.text, "verdict.notes", deps, &note_guard);
    CheckExpr(ctx, scope, note.when, "verdict.notes.when", deps);
  }
  rule->after.clear();
  rule->fallback_primaries.clear();
  for (const auto& id : v.fallback_for) {
    const RuleSpec* target = scope.local_rules ? FindIn(*scope.local_rules, id) : nullptr;
    if (!target || target->kind != RuleKind::kVerdict || target == rule)
      ctx.Add(LoadCode::kUnknownReference, rule->pos, "verdict.fallback_for",
              fmt::format(fmt::runtime(msg::kUnknownRule), "verdict.fallback_for", id + " (another verdict of this playbook)"));
    else {
      rule->after.push_back(target->qualified_id);
      rule->fallback_primaries.push_back(target->qualified_id);
    }
  }
  if (v.suppress) {
    CheckExpr(ctx, scope, v.suppress->times, "verdict.suppress.times", deps);
    CheckExpr(ctx, scope, v.suppress->during, "verdict.suppress.during", deps);
    CheckTemplate(ctx, scope, v.suppress->reason, "verdict.suppress.reason", deps);
  }
}

// A finding reads its own rule's result (evaluated after it), so a self-reference is no cycle.
void CheckFindingRefs(FileCtx& ctx, const Scope& scope, RuleSpec* rule, std::set<std::string>* deps) {
  std::set<std::string> finding_deps;
  CheckExpr(ctx, scope, rule->finding->when, "finding.when", &finding_deps);
  CheckExpr(ctx, scope, rule->finding->hosts, "finding.hosts", &finding_deps);
  // A clear finding with a hole falls back to its description at run time; a fired one must not
  // have one, so its `when` has to prove the list non-empty.
  const SentenceGuard finding_guard = GuardOf({&rule->finding->when}, "finding.when");
  CheckTemplate(ctx, scope, rule->finding->summary, "finding.summary", &finding_deps, &finding_guard);
  if (rule->finding->suppress) {
    CheckExpr(ctx, scope, rule->finding->suppress->times, "finding.suppress.times", &finding_deps);
    CheckExpr(ctx, scope, rule->finding->suppress->during, "finding.suppress.during", &finding_deps);
    CheckTemplate(ctx, scope, rule->finding->suppress->reason, "finding.suppress.reason", &finding_deps);
  }
  finding_deps.erase(rule->qualified_id);
  deps->insert(finding_deps.begin(), finding_deps.end());
}

}  // namespace

void CheckRuleRefs(FileCtx& ctx, const Scope& outer_scope, RuleSpec* rule) {
  ctx.rule = rule->id;
  Scope scope = outer_scope;
  scope.lets = &rule->lets;
  std::set<std::string> lets_used;
  scope.lets_used = &lets_used;
  CheckBindings(ctx, scope, &rule->lets, &scope.lets_visible, "let");
  std::set<std::string> deps;
  // What only a verdict's `onset` reads: an ordering aid between causes, not evidence, so the
  // verdict runs after it but is not skipped when it was (the onset is then unknown). Likewise what
  // only an analysis's optional input reads (tgs_attribution's other faults): the analysis runs
  // after it and, when it failed, without that input (its expression reads null there).
  std::set<std::string> ordering_deps;
  ResolveExplicitNeeds(ctx, scope, rule, &deps);
  // A description stands in for a finding that did not fire, when no rule may have a result: it
  // reads only what is known before anything is asked (params, thresholds, windows).
  Scope static_scope = scope;
  static_scope.allow_rules = false;
  static_scope.lets = nullptr;
  std::set<std::string> description_deps;
  CheckTemplate(ctx, static_scope, rule->description_text, "description", &description_deps);
  switch (rule->kind) {
    case RuleKind::kQuery: {
      auto& q = rule->query;
      CheckExpr(ctx, scope, q.at_expr, "at", &deps);
      const WindowSpec* shared = scope.library->FindSharedWindow(q.window);
      if (!IsBuiltinWindow(q.window) && !(shared && !shared->is_list()) &&
          !(scope.playbook && scope.playbook->windows.count(q.window) && !scope.playbook->windows.at(q.window).is_list()))
        ctx.Add(LoadCode::kUnknownReference, rule->pos, "window", fmt::format(fmt::runtime(msg::kUnknownWindow), "window", q.window));
      for (auto& [name, arg] : q.args) CheckExpr(ctx, scope, arg.expr, "args." + name, &deps);
      break;
    }
    case RuleKind::kFact:
      CheckExpr(ctx, scope, rule->fact.value, "fact", &deps);
      CheckExpr(ctx, scope, rule->fact.evidence, "evidence", &deps);
      break;
    case RuleKind::kAnalysis: {
      const auto* def = analysis::FindAnalysis(rule->analysis.name);
      auto sink = [&](const char* input) {
        const bool required = !def || std::find(def->required_inputs.begin(), def->required_inputs.end(), input) !=
                                          def->required_inputs.end();
        return required ? &deps : &ordering_deps;
      };
      CheckExpr(ctx, scope, rule->analysis.input, "input", sink("input"));
      CheckExpr(ctx, scope, rule->analysis.baseline_input, "baseline_input", sink("baseline_input"));
      CheckExpr(ctx, scope, rule->analysis.phases, "phases", sink("phases"));
      CheckExpr(ctx, scope, rule->analysis.windows, "windows", sink("windows"));
      break;
    }
    case RuleKind::kVerdict:
      CheckVerdictRefs(ctx, scope, rule, &deps, &ordering_deps);
      break;
  }
  if (rule->finding) CheckFindingRefs(ctx, scope, rule, &deps);
  rule->needs.assign(deps.begin(), deps.end());
  for (const auto& id : ordering_deps)
    if (!deps.count(id)) rule->after.push_back(id);
  for (const auto& b : rule->lets)
    if (!lets_used.count(b.name))
      ctx.Add(LoadCode::kUnusedBinding, b.expr.pos, "let." + b.name,
              fmt::format(fmt::runtime(msg::kUnusedBinding), b.name, rule->id));
}

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

}  // namespace diagnose::playbook::internal
