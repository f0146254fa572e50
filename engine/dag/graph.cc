#include "engine/dag/graph.h"

#include <algorithm>
#include <set>

#include <boost/graph/topological_sort.hpp>

#include "engine/dag/evaluate.h"
#include "engine/dag/expression_roots.h"

namespace diagnose::dag {
namespace {

using nlohmann::json;
using playbook::PlaybookSpec;
using playbook::RuleKind;
using playbook::RuleSpec;

bool Contains(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

json ExprJson(const playbook::CompiledExpr& e) { return e.present() ? json(e.source) : json(); }

json RuleDefinition(const RuleSpec& r) {
  json d;
  d["kind"] = playbook::RuleKindName(r.kind);
  switch (r.kind) {
    case RuleKind::kQuery: {
      const auto& q = r.query;
      d["query"] = q.promql_template;
      d["range"] = q.range;
      d["window"] = q.window;
      if (!q.range) d["at"] = q.at == QueryAt::kExpression ? nlohmann::json(q.at_expr.source) : nlohmann::json(q.at);
      if (q.range) {
        d["step_seconds"] = q.step_seconds;
        d["reduce"] = q.reduce;
      }
      d["tsdb"] = q.tsdb;
      d["by"] = q.by;
      json args = json::object();
      for (const auto& [k, a] : q.args)
        args[k] = {{"type", playbook::ParamTypeName(a.type)},
                   {"value", a.expr.present() ? json({{"expr", a.expr.source}}) : a.literal}};
      d["args"] = args;
      break;
    }
    case RuleKind::kFact:
      d["fact"] = r.fact.value.source;
      if (r.fact.evidence.present()) d["evidence"] = r.fact.evidence.source;
      break;
    case RuleKind::kAnalysis:
      d["analysis"] = r.analysis.name;
      d["input"] = ExprJson(r.analysis.input);
      if (r.analysis.baseline_input.present()) d["baseline_input"] = r.analysis.baseline_input.source;
      if (r.analysis.phases.present()) d["phases"] = r.analysis.phases.source;
      if (r.analysis.windows.present()) d["windows"] = r.analysis.windows.source;
      d["args"] = r.analysis.args;
      break;
    case RuleKind::kVerdict: {
      const auto& v = r.verdict;
      d["when"] = v.when.source;
      d["root_cause"] = v.root_cause;
      json conf = json::array();
      for (const auto& c : v.confidence) conf.push_back({{"level", c.level}, {"when", ExprJson(c.when)}});
      d["confidence"] = conf;
      d["action"] = ToString(v.action);
      json ex = json::array();
      for (const auto& e : v.exclude) ex.push_back({{"hosts", e.hosts.source}, {"priority", e.priority}, {"reason", e.reason.source}});
      d["exclude"] = ex;
      json ch = json::object();
      for (const auto& [k, t] : v.changes) ch[k] = t.source;
      d["changes"] = ch;
      d["explains"] = v.explains;
      break;
    }
  }
  if (r.finding) d["finding"] = {{"when", r.finding->when.source}, {"hosts", ExprJson(r.finding->hosts)},
                                 {"summary", r.finding->summary.source}};
  return d;
}

}  // namespace

PlaybookSelection SelectPlaybooks(const playbook::Library& library, const EvaluationContext& ctx) {
  PlaybookSelection out;
  std::vector<std::string> classes;
  if (ctx.facts.contains("classes") && ctx.facts["classes"].is_array())
    for (const auto& c : ctx.facts["classes"])
      if (c.is_object() && c.contains("failure_class") && c["failure_class"].is_string())
        classes.push_back(c["failure_class"].get<std::string>());
  if (ctx.facts.contains("failure_class") && ctx.facts["failure_class"].is_string() &&
      !ctx.facts["failure_class"].get<std::string>().empty() && !Contains(classes, ctx.facts["failure_class"]))
    classes.push_back(ctx.facts["failure_class"].get<std::string>());
  std::string pattern = ctx.facts.contains("tgs") && ctx.facts["tgs"].is_object()
                            ? ctx.facts["tgs"].value("pattern", "") : "";
  std::string status = ctx.facts.value("status", "");
  bool has_baseline = !ctx.baseline_facts.is_null();
  bool has_tsdb = ctx.subject != nullptr || !ctx.discovery.is_null();
  for (const auto& pb : library.playbooks) {
    if (Contains(ctx.requested_playbooks, pb.id)) {
      out.selected.push_back({pb.id, "explicitly requested"});
      continue;
    }
    for (const auto& t : pb.triggers) {
      std::vector<std::string> why;
      bool match = true;
      if (!t.failure_class.empty()) {
        std::string hit;
        for (const auto& c : t.failure_class)
          if (Contains(classes, c)) hit = c;
        match &= !hit.empty();
        if (!hit.empty()) why.push_back("failure class " + hit);
      }
      if (!t.tgs_pattern.empty()) {
        match &= Contains(t.tgs_pattern, pattern);
        why.push_back("TGS pattern " + pattern);
      }
      if (!t.status.empty()) {
        match &= Contains(t.status, status);
        why.push_back("status " + status);
      }
      if (t.baseline) {
        match &= *t.baseline == has_baseline;
        why.push_back(has_baseline ? "baseline present" : "no baseline");
      }
      if (t.tsdb) {
        match &= *t.tsdb == has_tsdb;
        why.push_back(has_tsdb ? "TSDB available" : "no TSDB");
      }
      if (t.always) why.push_back("always");
      if (match && t.when.present()) {
        const ExpressionRoots roots{&ctx, &library.thresholds};
        auto v = playbook::EvalExpr(*t.when.ast, [&roots](const std::string& root) {
          return roots.Find(root).value_or(nullptr);
        });
        if (!v.ok()) {
          out.trigger_problems.push_back(pb.id + ": trigger " + t.when.pos.ToString() + ": " + v.status().message());
          match = false;
        } else {
          match &= playbook::Truthy(*v);
          why.push_back("when " + t.when.source);
        }
      }
      bool has_any_condition = !t.failure_class.empty() || !t.tgs_pattern.empty() || !t.status.empty() ||
                               t.baseline || t.tsdb || t.when.present() || t.always;
      if (match && has_any_condition) {
        std::string reason;
        for (const auto& w : why) reason += (reason.empty() ? "" : ", ") + w;
        out.selected.push_back({pb.id, reason});
        break;
      }
    }
  }
  return out;
}

StatusOr<CompiledGraph> CompiledGraph::Compile(const playbook::Library& library, const std::vector<std::string>& ids) {
  CompiledGraph g;
  g.library_ = &library;
  std::vector<std::string> unique;
  for (const auto& id : ids)
    if (!Contains(unique, id)) unique.push_back(id);
  for (const auto& id : unique) {
    const PlaybookSpec* pb = library.FindPlaybook(id);
    if (!pb) {
      std::string known;
      for (const auto& p : library.playbooks) known += (known.empty() ? "" : ", ") + p.id;
      return NotFoundError("unknown playbook '" + id + "' (known: " + known + ")");
    }
    g.playbooks_.push_back(pb);
  }
  // Nodes: every rule of the selected playbooks, then the shared rules they reach.
  auto add = [&](const RuleSpec* r, const PlaybookSpec* pb) {
    if (g.index_.count(r->qualified_id)) return;
    g.index_[r->qualified_id] = static_cast<int>(g.nodes_.size());
    g.nodes_.push_back({r->qualified_id, r, pb, 0, {}, {}});
  };
  for (const auto* pb : g.playbooks_)
    for (const auto& r : pb->rules) add(&r, pb);
  // A shared rule read only for ordering (an onset, an optional analysis input) is evaluated too.
  for (size_t i = 0; i < g.nodes_.size(); ++i) {
    for (const auto* list : {&g.nodes_[i].rule->needs, &g.nodes_[i].rule->after}) {
      for (const auto& dep : *list) {
        if (dep.rfind("common/", 0) != 0 || g.index_.count(dep)) continue;
        const RuleSpec* r = library.FindCommonRule(dep.substr(7));
        if (!r) return NotFoundError("rule '" + g.nodes_[i].id + "' needs unknown shared rule '" + dep + "'");
        add(r, nullptr);
      }
    }
  }
  g.graph_ = Graph(g.nodes_.size());
  for (size_t i = 0; i < g.nodes_.size(); ++i) {
    for (const auto& dep : g.nodes_[i].rule->needs) {
      auto it = g.index_.find(dep);
      if (it == g.index_.end()) return NotFoundError("rule '" + g.nodes_[i].id + "' needs unknown rule '" + dep + "'");
      g.nodes_[i].deps.push_back(it->second);
      boost::add_edge(it->second, i, g.graph_);   // dependency -> dependent
    }
    // Ordering without need: a fallback verdict runs after the verdicts it stands in for.
    for (const auto& first : g.nodes_[i].rule->after) {
      auto it = g.index_.find(first);
      if (it == g.index_.end()) continue;
      g.nodes_[i].after.push_back(it->second);
      boost::add_edge(it->second, i, g.graph_);
    }
    std::sort(g.nodes_[i].deps.begin(), g.nodes_[i].deps.end());
  }
  std::vector<Graph::vertex_descriptor> order;
  try {
    boost::topological_sort(g.graph_, std::back_inserter(order));
  } catch (const boost::not_a_dag&) {
    return InvalidArgumentError("the rule graph has a cycle (run `diagnose lint` for its path)");
  }
  std::reverse(order.begin(), order.end());
  int max_level = 0;
  for (auto v : order) {
    int level = 0;
    for (int d : g.nodes_[v].deps) level = std::max(level, g.nodes_[d].level + 1);
    for (int d : g.nodes_[v].after) level = std::max(level, g.nodes_[d].level + 1);
    g.nodes_[v].level = level;
    max_level = std::max(max_level, level);
  }
  g.levels_.assign(g.nodes_.empty() ? 0 : max_level + 1, {});
  for (size_t i = 0; i < g.nodes_.size(); ++i) g.levels_[g.nodes_[i].level].push_back(static_cast<int>(i));
  for (auto& level : g.levels_)
    std::sort(level.begin(), level.end(), [&](int a, int b) { return g.nodes_[a].id < g.nodes_[b].id; });
  return g;
}

int CompiledGraph::IndexOf(const std::string& id) const {
  auto it = index_.find(id);
  return it == index_.end() ? -1 : it->second;
}

std::vector<int> CompiledGraph::TopologicalOrder() const {
  std::vector<int> out;
  for (const auto& level : levels_) out.insert(out.end(), level.begin(), level.end());
  return out;
}

json ExplainJson(const CompiledGraph& graph, const EvaluationContext* ctx, const std::string& source_root) {
  auto relative = [&](std::string s) {
    std::string root = source_root;
    if (!root.empty() && root.back() != '/') root += '/';
    if (!root.empty() && s.rfind(root, 0) == 0) s = s.substr(root.size());
    return s;
  };
  json out;
  out["schema"] = "diagnose-explain/v1";
  json pbs = json::array();
  for (const auto* pb : graph.playbooks()) {
    json triggers = json::array();
    for (const auto& t : pb->triggers) {
      json tj = json::object();
      if (!t.failure_class.empty()) tj["failure_class"] = t.failure_class;
      if (!t.tgs_pattern.empty()) tj["tgs_pattern"] = t.tgs_pattern;
      if (!t.status.empty()) tj["status"] = t.status;
      if (t.baseline) tj["baseline"] = *t.baseline;
      if (t.tsdb) tj["tsdb"] = *t.tsdb;
      if (t.when.present()) tj["when"] = t.when.source;
      if (t.always) tj["always"] = true;
      triggers.push_back(tj);
    }
    json params = json::object();
    for (const auto& [k, p] : pb->params)
      params[k] = {{"type", playbook::ParamTypeName(p.type)},
                   {"default", p.expr.present() ? json({{"expr", p.expr.source}}) : p.literal}};
    json windows = json::object();
    for (const auto& [k, w] : pb->windows) windows[k] = {{"start", w.start.source}, {"end", w.end.source}};
    pbs.push_back({{"id", pb->id}, {"description", pb->description}, {"triggers", triggers}, {"file", relative(pb->file)},
                   {"params", params}, {"windows", windows}, {"precedence", pb->precedence}});
  }
  out["playbooks"] = pbs;
  std::vector<NodeOutcome> outcomes;
  if (ctx) {
    // Resolve without touching a TSDB: query nodes render their PromQL and window, then stop.
    EvaluationContext offline = *ctx;
    offline.subject = nullptr;
    offline.baseline = nullptr;
    outcomes = Evaluate(graph, offline).nodes;
  }
  json nodes = json::array();
  json edges = json::array();
  for (int idx : graph.TopologicalOrder()) {
    const auto& n = graph.nodes()[idx];
    json deps = json::array();
    for (int d : n.deps) {
      deps.push_back(graph.nodes()[d].id);
      edges.push_back({graph.nodes()[d].id, n.id});
    }
    json node = {{"id", n.id}, {"level", n.level}, {"needs", deps}, {"definition", RuleDefinition(*n.rule)},
                 {"description", n.rule->description}, {"source", relative(n.rule->pos.ToString())}};
    if (ctx && n.rule->kind == RuleKind::kQuery) {
      const auto& o = outcomes[idx];
      if (o.value.is_object() && o.value.contains("query")) {
        node["resolved"] = {{"query", o.value["query"]}, {"window", o.value["window"]}};
      } else {
        node["resolved"] = {{"unresolved", o.reason}};
      }
    }
    nodes.push_back(node);
  }
  std::sort(edges.begin(), edges.end());
  out["nodes"] = nodes;
  out["edges"] = edges;
  return out;
}

}  // namespace diagnose::dag
