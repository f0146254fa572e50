#include "engine/dag/evaluate.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <optional>
#include <map>
#include <set>
#include <tuple>

#include "engine/analysis/analysis.h"
#include "engine/dag/evaluator.h"
#include "engine/dag/expression_roots.h"
#include "engine/dag/query_result.h"
#include "engine/playbook/promql_template.h"

namespace diagnose::dag {
namespace internal {
namespace {

void CollectLogRefs(const json& v, std::vector<Evidence>* out, int depth = 0) {
  if (out->size() >= 20 || depth > 6) return;
  if (v.is_object()) {
    auto file = v.find("file");
    auto line = v.find("line");
    if (file != v.end() && line != v.end() && file->is_string() && line->is_number() && !file->get<std::string>().empty()) {
      Evidence e;
      e.kind = "log";
      e.query = file->get<std::string>() + ":" + std::to_string(line->get<int64_t>());
      auto text = v.find("text");
      if (text != v.end() && text->is_string()) e.text = text->get<std::string>();
      out->push_back(std::move(e));
      return;
    }
    for (const auto& [k, x] : v.items()) CollectLogRefs(x, out, depth + 1);
  } else if (v.is_array()) {
    for (const auto& x : v) CollectLogRefs(x, out, depth + 1);
  }
}

// Derived evidence keeps small fields only (large series stay in the node's value).
json Trimmed(const json& v) {
  if (!v.is_object()) return v;
  json out = json::object();
  for (const auto& [k, x] : v.items()) {
    if (k == "series" || k == "bursts" || k == "scores") continue;
    if (x.dump().size() > 4000) continue;
    out[k] = x;
  }
  return out;
}

}  // namespace

EvaluationResult Evaluator::Run() {
  const auto& nodes = graph_.nodes();
  result_.nodes.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) result_.nodes[i].id = nodes[i].id;
  thresholds_ = graph_.library().thresholds;
  // The shared windows depend only on the context: resolved once, copied into each playbook's.
  const Resolved shared = ResolveSharedWindows(graph_.library(), ctx_, thresholds_);
  windows_[""] = shared.values;
  window_problems_[""] = shared.missing;
  params_[""] = json::object();
  for (const auto* pb : graph_.playbooks()) {
    Resolved params = ResolveParams(*pb, ctx_, thresholds_);
    Resolved windows = ResolvePlaybookWindows(*pb, ctx_, params.values, thresholds_, shared);
    // Param and window names cannot collide ("params." prefix), so the merge order is immaterial.
    windows.missing.merge(params.missing);
    params_[pb->id] = std::move(params.values);
    windows_[pb->id] = std::move(windows.values);
    window_problems_[pb->id] = std::move(windows.missing);
  }

  for (size_t l = 0; l < graph_.levels().size(); ++l)
    for (int idx : graph_.levels()[l])
      if (nodes[idx].rule->kind == RuleKind::kQuery) last_level_of_template_[TemplateOf(idx)] = l;

  for (const auto& level : graph_.levels()) {
    std::vector<int> batch_nodes;
    std::vector<Query> batch;
    std::vector<QueryClient*> clients;
    for (int idx : level) {
      if (DeadlinePassed()) {
        Fail(idx, NodeHealth::kSkipped, "the run's deadline (--deadline) passed before it was evaluated");
        continue;
      }
      if (!DepsOk(idx)) continue;
      const auto& node = nodes[idx];
      if (node.rule->kind == RuleKind::kQuery) {
        Query q;
        QueryClient* client = nullptr;
        if (PrepareQuery(idx, &q, &client)) {
          batch_nodes.push_back(idx);
          batch.push_back(q);
          clients.push_back(client);
        }
      } else {
        EvaluateNonQuery(idx);
      }
    }
    RunBatches(batch_nodes, batch, clients);
    std::erase_if(answers_, [&](const auto& entry) { return entry.second.last_level <= level_; });
    ++level_;
  }
  BuildFindings();
  for (const auto& n : result_.nodes)
    if (n.health != NodeHealth::kOk) result_.not_evaluated.push_back(n.id + ": " + std::string(ToString(n.health)) + ": " + n.reason);
  return std::move(result_);
}

const std::string Evaluator::PlaybookOf(int idx) const {
  const auto* pb = graph_.nodes()[idx].playbook;
  return pb ? pb->id : "";
}

std::string Evaluator::TemplateOf(int idx) const {
  const auto& spec = graph_.nodes()[idx].rule->query;
  return spec.tsdb + "\n" + spec.promql_template;
}

bool Evaluator::DepsOk(int idx) {
  auto& out = result_.nodes[idx];
  for (int d : graph_.nodes()[idx].deps) {
    const auto& dep = result_.nodes[d];
    if (dep.health != NodeHealth::kOk) {
      out.health = NodeHealth::kSkipped;
      out.reason = "needs '" + dep.id + "' which " + (dep.health == NodeHealth::kError ? "failed" : "was skipped") + ": " + dep.reason;
      return false;
    }
  }
  return true;
}

const playbook::Binding* Evaluator::FindBinding(int idx, const std::string& name) const {
  if (idx < 0) return nullptr;
  const auto& node = graph_.nodes()[idx];
  auto find = [&](const std::vector<playbook::Binding>& list) -> const playbook::Binding* {
    for (const auto& b : list)
      if (b.name == name) return &b;
    return nullptr;
  };
  if (const auto* b = find(node.rule->lets)) return b;
  if (node.playbook)
    if (const auto* b = find(node.playbook->macros)) return b;
  return find(graph_.library().common_macros);
}

const Value* Evaluator::Lookup(const std::shared_ptr<NameScope>& scope, const std::string& root) {
  const int idx = scope->idx;
  if (auto it = scope->bound.find(root); it != scope->bound.end()) return it->second.is_null() ? nullptr : &it->second;
  if (const auto* b = FindBinding(idx, root); b && b->expr.ast && !scope->evaluating.count(root)) {
    scope->evaluating.insert(root);
    auto v = playbook::EvalExpr(*b->expr.ast, [this, scope](const std::string& r) { return Lookup(scope, r); });
    scope->evaluating.erase(root);
    if (!v.ok() && scope->error.empty()) scope->error = b->expr.pos.ToString() + ": " + root + ": " + v.status().message();
    auto& slot = scope->bound[root];
    slot = v.ok() ? std::move(*v) : json();
    return slot.is_null() ? nullptr : &slot;
  }
  return RootValue(idx, scope->host, root);
}

// Name resolution for one expression of node `idx` (and `host` inside exclusion reasons).
std::pair<std::shared_ptr<Evaluator::NameScope>, playbook::NameResolver> Evaluator::Resolver(int idx, const json* host) {
  auto scope = std::make_shared<NameScope>();
  scope->idx = idx;
  scope->host = host;
  return {scope, [this, scope](const std::string& root) { return Lookup(scope, root); }};
}

const Value* Evaluator::RootValue(int idx, const json* host, const std::string& root) {
  const std::string pb = idx >= 0 ? PlaybookOf(idx) : "";
  const ExpressionRoots roots{&ctx_, &thresholds_, &params_[pb], &windows_[pb], host};
  if (auto found = roots.Find(root)) return *found;
  if (root == "common") return CommonView(idx);
  if (idx < 0) return nullptr;
  int target = graph_.IndexOf((pb.empty() ? "common" : pb) + "/" + root);
  if (target < 0 || result_.nodes[target].health != NodeHealth::kOk) return nullptr;
  return &result_.nodes[target].value;
}

// `common.X` for node `idx`: the shared rules it depends on, built the first time one of its
// expressions asks (its dependencies are final by then) and kept, because copying every shared
// per-host series for each of a node's expressions cost more than all of its queries.
const json* Evaluator::CommonView(int idx) {
  if (idx < 0) return nullptr;
  auto [view, inserted] = common_views_.try_emplace(idx, json::object());
  if (inserted) {
    for (int d : graph_.nodes()[idx].deps) {
      const auto& id = graph_.nodes()[d].id;
      if (id.rfind("common/", 0) == 0 && result_.nodes[d].health == NodeHealth::kOk)
        view->second[id.substr(7)] = result_.nodes[d].value;
    }
  }
  return &view->second;
}

StatusOr<json> Evaluator::Eval(int idx, const CompiledExpr& e, const json* host) {
  if (!e.ast) return json();
  auto [scope, resolve] = Resolver(idx, host);
  auto v = playbook::EvalExpr(*e.ast, resolve);
  if (!v.ok()) return InvalidArgumentError(e.pos.ToString() + ": " + v.status().message());
  if (!scope->error.empty()) return InvalidArgumentError(e.pos.ToString() + ": uses " + scope->error);
  return v;
}

std::string Evaluator::DescriptionOf(int idx, const playbook::RuleSpec& rule) {
  if (!rule.description_text.present()) return rule.description;
  StatusOr<std::string> text = Render(idx, rule.description_text);
  return text.ok() ? *text : rule.description;
}

StatusOr<std::string> Evaluator::Render(int idx, const playbook::Template& t, const json* host, bool* rendered_empty) {
  if (!t.present()) return std::string();
  auto [scope, resolve] = Resolver(idx, host);
  auto s = playbook::RenderTemplate(t.pieces, resolve, rendered_empty);
  if (!s.ok()) return InvalidArgumentError(t.pos.ToString() + ": " + s.status().message());
  if (!scope->error.empty()) return InvalidArgumentError(t.pos.ToString() + ": uses " + scope->error);
  return s;
}

bool Evaluator::DeadlinePassed() const {
  return ctx_.deadline && std::chrono::steady_clock::now() >= *ctx_.deadline;
}

void Evaluator::Fail(int idx, NodeHealth health, const std::string& reason) {
  result_.nodes[idx].health = health;
  result_.nodes[idx].reason = reason;
}

bool Evaluator::PrepareQuery(int idx, Query* q, QueryClient** client) {
  const auto& node = graph_.nodes()[idx];
  const auto& spec = node.rule->query;
  const std::string pb = PlaybookOf(idx);
  auto& out = result_.nodes[idx];
  // Window.
  const json& windows = windows_[pb];
  if (!windows.contains(spec.window)) {
    auto it = window_problems_[pb].find(spec.window);
    Fail(idx, NodeHealth::kSkipped, "window '" + spec.window + "' unavailable" +
                             (it != window_problems_[pb].end() ? ": " + it->second : ""));
    return false;
  }
  double start = windows[spec.window]["start"].get<double>();
  double end = windows[spec.window]["end"].get<double>();
  // Template values.
  auto value_of = [&](const std::string& name) -> StatusOr<json> {
    auto a = spec.args.find(name);
    if (a != spec.args.end()) {
      if (a->second.expr.present()) return Eval(idx, a->second.expr);
      return a->second.literal;
    }
    const json& params = params_[pb];
    if (params.contains(name)) return params[name];
    return InvalidArgumentError("unknown template parameter '" + name + "'");
  };
  auto type_of = [&](const std::string& name) {
    auto a = spec.args.find(name);
    if (a != spec.args.end()) return a->second.type;
    auto p = node.playbook ? node.playbook->params.find(name) : decltype(node.playbook->params.end())();
    if (node.playbook && p != node.playbook->params.end()) return p->second.type;
    return playbook::ParamType::kString;
  };
  auto promql = playbook::RenderPromql(*node.rule, value_of, type_of);
  if (!promql.ok()) {
    bool empty_list = promql.status().code() == StatusCode::kFailedPrecondition;
    Fail(idx, empty_list ? NodeHealth::kSkipped : NodeHealth::kError, node.rule->query.template_pos.ToString() + ": " + promql.status().message());
    return false;
  }
  if (spec.range) {
    *q = Query::Range(*promql, start, end, spec.step_seconds, node.id);
  } else {
    double t = end;
    if (spec.at == "start") {
      t = start;
    } else if (spec.at_expr.present()) {
      auto v = Eval(idx, spec.at_expr);
      if (!v.ok()) {
        Fail(idx, NodeHealth::kError, v.status().message());
        return false;
      }
      if (!v->is_number()) {
        Fail(idx, NodeHealth::kSkipped, "evaluation time 'at' is " + (v->is_null() ? std::string("unknown") : v->dump()));
        return false;
      }
      t = v->get<double>();
    }
    *q = Query::Instant(*promql, t, node.id);
    start = end = t;
  }
  out.value = {{"query", *promql}, {"window", {{"start", start}, {"end", end}}}};
  *client = spec.tsdb == "baseline" ? ctx_.baseline : ctx_.subject;
  if (*client == nullptr) {
    Fail(idx, NodeHealth::kSkipped, spec.tsdb == "baseline" ? "no baseline TSDB" : "no TSDB");
    return false;
  }
  return true;
}

void Evaluator::RunBatches(const std::vector<int>& nodes, const std::vector<Query>& queries,
                const std::vector<QueryClient*>& clients) {
  // One RunBatch per client (subject, baseline), preserving order.
  for (QueryClient* client : {ctx_.subject, ctx_.baseline}) {
    if (client == nullptr) continue;
    std::vector<int> idxs;
    std::vector<Query> batch;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (clients[i] == client) {
        idxs.push_back(nodes[i]);
        batch.push_back(queries[i]);
      }
    if (batch.empty()) continue;
    // Rules asking the very same question (PromQL, kind and times) share one request, within this
    // level and with every earlier level of the run.
    std::vector<Query> unique;
    std::vector<QuestionKey> keys;
    for (size_t i = 0; i < batch.size(); ++i) {
      const Query& q = batch[i];
      QuestionKey key{client, static_cast<int>(q.kind), q.promql, q.time, q.start, q.end, q.step};
      auto [it, fresh] = answers_.try_emplace(key);
      if (fresh) unique.push_back(q);
      else ++result_.queries_shared;
      it->second.last_level = std::max(it->second.last_level, last_level_of_template_[TemplateOf(idxs[i])]);
      keys.push_back(std::move(key));
    }
    if (!unique.empty()) {
      ++result_.batches;
      result_.queries_run += static_cast<int>(unique.size());
      auto fetched = client->RunBatch(unique);
      for (size_t u = 0; u < unique.size(); ++u) {
        const Query& q = unique[u];
        StatusOr<QueryResult> answer = u < fetched.size() ? std::move(fetched[u]) : StatusOr<QueryResult>(InternalError("no result"));
        if (answer.ok())
          for (const auto& series : answer->series) result_.points_returned += static_cast<int64_t>(series.samples.size());
        QuestionKey key{client, static_cast<int>(q.kind), q.promql, q.time, q.start, q.end, q.step};
        answers_[key].result = std::make_shared<const StatusOr<QueryResult>>(std::move(answer));
      }
    }
    const json& ih = client == ctx_.baseline ? ctx_.baseline_discovery : ctx_.discovery;
    const json instance_hosts = ih.is_object() && ih.contains("instance_hosts") ? ih["instance_hosts"] : json::object();
    for (size_t i = 0; i < idxs.size(); ++i) {
      int idx = idxs[i];
      const auto& q = batch[i];
      const StatusOr<QueryResult>& answer = *answers_.at(keys[i]).result;
      if (!answer.ok()) {
        Fail(idx, NodeHealth::kError, "query failed (" + client->Describe() + "): " + answer.status().message() + " [" + q.promql + "]");
        continue;
      }
      double start = q.kind == Query::Kind::kRange ? q.start : q.time;
      double end = q.kind == Query::Kind::kRange ? q.end : q.time;
      auto& out = result_.nodes[idx];
      out.value = QueryResultJson(*graph_.nodes()[idx].rule, *answer, instance_hosts, q.promql, start, end);
      out.health = NodeHealth::kOk;
      Evidence e;
      e.kind = "promql";
      e.query = q.promql;
      e.window = TimeWindow{start, end};
      e.value = out.value["values"];
      e.text = graph_.nodes()[idx].rule->description;
      if (client == ctx_.baseline) e.role = "baseline";
      if (out.value.contains("series") && !out.value["series"].empty())
        e.series = std::make_shared<const json>(out.value["series"]);
      for (const auto& w : answer->warnings) e.text += (e.text.empty() ? "" : "; ") + std::string("warning: ") + w;
      out.evidence.push_back(std::move(e));
    }
  }
}

void Evaluator::EvaluateNonQuery(int idx) {
  const auto& node = graph_.nodes()[idx];
  const RuleSpec& rule = *node.rule;
  auto& out = result_.nodes[idx];
  switch (rule.kind) {
    case RuleKind::kFact: {
      auto v = Eval(idx, rule.fact.value);
      if (!v.ok()) return Fail(idx, NodeHealth::kError, v.status().message());
      json value = {{"value", *v}};
      if (v->is_array() && std::all_of(v->begin(), v->end(), [](const json& x) { return x.is_string(); }))
        value["hosts"] = *v;
      out.value = std::move(value);
      json cite = *v;
      if (rule.fact.evidence.present()) {
        auto ev = Eval(idx, rule.fact.evidence);
        if (ev.ok()) cite = *ev;
      }
      CollectLogRefs(cite, &out.evidence);
      Evidence derived;
      derived.kind = "derived";
      derived.query = rule.fact.value.source;
      derived.value = *v;
      derived.text = rule.description;
      if (derived.value.dump().size() <= 4000) out.evidence.insert(out.evidence.begin(), std::move(derived));
      out.health = NodeHealth::kOk;
      return;
    }
    case RuleKind::kAnalysis: {
      const auto* def = analysis::FindAnalysis(rule.analysis.name);
      if (!def) return Fail(idx, NodeHealth::kError, "unknown analysis '" + rule.analysis.name + "'");
      analysis::AnalysisInput in;
      in.args = rule.analysis.args;
      in.step_times = ctx_.discovery.is_object() && ctx_.discovery.contains("step_times") ? ctx_.discovery["step_times"] : json();
      for (auto [expr, target] : {std::pair{&rule.analysis.input, &in.input}, std::pair{&rule.analysis.baseline_input, &in.baseline_input},
                                  std::pair{&rule.analysis.phases, &in.phases}, std::pair{&rule.analysis.windows, &in.windows}}) {
        auto v = Eval(idx, *expr);
        if (!v.ok()) return Fail(idx, NodeHealth::kError, v.status().message());
        *target = std::move(*v);
      }
      for (const auto& req : def->required_inputs) {
        const json& v = req == "input" ? in.input : req == "baseline_input" ? in.baseline_input
                      : req == "phases" ? in.phases : in.windows;
        if (v.is_null()) return Fail(idx, NodeHealth::kSkipped, "analysis '" + def->name + "': '" + req + "' is not available");
      }
      auto r = def->run(in);
      if (!r.ok()) {
        bool precondition = r.status().code() == StatusCode::kFailedPrecondition;
        return Fail(idx, precondition ? NodeHealth::kSkipped : NodeHealth::kError, rule.pos.ToString() + ": analysis '" + def->name + "': " + r.status().message());
      }
      out.value = std::move(*r);
      Evidence e;
      e.kind = "derived";
      e.query = def->name + " " + rule.analysis.args.dump();
      e.value = Trimmed(out.value);
      e.text = rule.description.empty() ? def->description : rule.description;
      out.evidence.push_back(std::move(e));
      out.health = NodeHealth::kOk;
      return;
    }
    case RuleKind::kVerdict:
      return EvaluateVerdict(idx);
    case RuleKind::kQuery:
      return;
  }
}

}  // namespace internal

std::string_view ToString(NodeHealth health) {
  switch (health) {
    case NodeHealth::kOk: return "ok";
    case NodeHealth::kError: return "error";
    case NodeHealth::kSkipped: return "skipped";
  }
  return "skipped";
}

EvaluationResult Evaluate(const CompiledGraph& graph, const EvaluationContext& ctx) {
  internal::Evaluator ev(graph, ctx);
  return ev.Run();
}

}  // namespace diagnose::dag
