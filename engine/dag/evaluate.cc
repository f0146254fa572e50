#include "engine/dag/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <future>
#include <optional>
#include <map>
#include <set>
#include <tuple>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "engine/analysis/analysis.h"
#include "engine/core/logging.h"
#include "engine/dag/evaluator.h"
#include "engine/dag/expression_roots.h"
#include "engine/dag/query_result.h"
#include "engine/dag/range_split.h"
#include "engine/dag/send_order.h"
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
      e.kind = EvidenceKind::kLog;
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

// Discovery's map of the names exporters reported to nodes, read where it is: a copy per query
// rule was a map of every node's names for each of them.
const json& InstanceHostsOf(const json& discovery) {
  static const json kNone = json::object();
  return discovery.is_object() && discovery.contains("instance_hosts") ? discovery["instance_hosts"] : kNone;
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

// Whether a query template's questions are composite (composite_answer.h), its placeholders read as
// a number (`[{{ w }}]`, `offset {{ lead }}`, `> {{ t }}`). Only decides how long parts are kept.
bool IsCompositeTemplate(const std::string& promql_template, Query::Kind kind) {
  std::string text;
  for (size_t i = 0; i < promql_template.size();) {
    if (promql_template.compare(i, 2, "{{") == 0) {
      const size_t close = promql_template.find("}}", i + 2);
      if (close == std::string::npos) return false;
      text += "0";
      i = close + 2;
    } else {
      text += promql_template[i++];
    }
  }
  auto composite = CompositeOf(text, kind);
  return composite && composite->RepeatsAPart();
}

}  // namespace

EvaluationResult Evaluator::Run() {
  const auto& nodes = graph_.nodes();
  result_.nodes.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) result_.nodes[i].id = nodes[i].id;
  ResolveWindowsAndParams();
  EvaluateByReadiness();
  result_.queries_run += extra_requests_.load();
  BuildFindings();
  HandSeriesToEvidence();
  for (const auto& n : result_.nodes)
    if (n.health != NodeHealth::kOk) result_.not_evaluated.push_back(n.id + ": " + std::string(ToString(n.health)) + ": " + n.reason);
  return std::move(result_);
}

void Evaluator::HandSeriesToEvidence() {
  for (auto& [idx, series] : evidence_series_) {
    json& value = result_.nodes[idx].value;
    auto it = value.find("series");
    if (it == value.end()) continue;
    *series = std::move(*it);
    value.erase(it);
  }
  evidence_series_.clear();
}

void Evaluator::ResolveWindowsAndParams() {
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

}

void Evaluator::EvaluateByReadiness() {
  const auto& nodes = graph_.nodes();
  const std::vector<int> order = graph_.TopologicalOrder();
  std::vector<std::vector<int>> before(nodes.size());   // what must be final before a node is evaluated
  for (size_t i = 0; i < nodes.size(); ++i) {
    before[i] = nodes[i].deps;
    before[i].insert(before[i].end(), nodes[i].after.begin(), nodes[i].after.end());
  }
  // Rules some query waits for (through any chain of rules) are judged before a wave is sent; the
  // others while it is in flight.
  std::vector<bool> feeds_query(nodes.size(), false);
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (nodes[*it].rule->kind == RuleKind::kQuery || feeds_query[*it])
      for (int d : before[*it]) feeds_query[d] = true;
  composite_template_.assign(nodes.size(), false);
  for (int idx : order) {
    if (nodes[idx].rule->kind != RuleKind::kQuery) continue;
    ++unstarted_queries_of_template_[TemplateOf(idx)];
    const auto& spec = nodes[idx].rule->query;
    if ((composite_template_[idx] = IsCompositeTemplate(spec.promql_template, spec.range ? Query::Kind::kRange : Query::Kind::kInstant)))
      ++unstarted_queries_of_template_[kCompositePartTemplate];
  }

  enum class State { kWaiting, kInFlight, kDone };
  std::vector<State> state(nodes.size(), State::kWaiting);
  auto ready = [&](int idx) {
    if (state[idx] != State::kWaiting) return false;
    for (int d : before[idx])
      if (state[d] != State::kDone) return false;
    return true;
  };
  size_t done = 0;
  bool told_last_query = false;
  while (done < nodes.size()) {
    // In topological order, so a chain of rules feeding a query is judged in one pass.
    const auto round_start = std::chrono::steady_clock::now();
    Wave wave;
    size_t progressed = 0;
    for (int idx : order) {
      if (!ready(idx)) continue;
      if (nodes[idx].rule->kind == RuleKind::kQuery) {
        state[idx] = StartQuery(idx, &wave) ? State::kInFlight : State::kDone;
      } else if (feeds_query[idx]) {
        Judge(idx);
        state[idx] = State::kDone;
      } else {
        continue;
      }
      ++progressed;
    }
    const auto sent_at = std::chrono::steady_clock::now();
    auto answers = SendInBackground(&wave);
    for (int idx : order) {
      if (!ready(idx) || nodes[idx].rule->kind == RuleKind::kQuery || feeds_query[idx]) continue;
      Judge(idx);
      state[idx] = State::kDone;
      ++progressed;
    }
    const auto judged_at = std::chrono::steady_clock::now();
    WaveAnswers fetched = answers.get();
    const auto answered_at = std::chrono::steady_clock::now();
    ApplyAnswers(wave, std::move(fetched));
    // Where a round's time goes on the critical path (-vv): the rules judged while it was in flight,
    // waiting for its answers, then reading them into the rules' values (composed, counted, derived).
    if (!wave.nodes.empty())
      Log().debug("playbook round: {} query rules; prepared in {:.3f} s, judged beside it {:.3f} s, answers after {:.3f} s, read in {:.3f} s",
                  wave.nodes.size(), std::chrono::duration<double>(sent_at - round_start).count(),
                  std::chrono::duration<double>(judged_at - sent_at).count(), std::chrono::duration<double>(answered_at - sent_at).count(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - answered_at).count());
    for (int idx : wave.nodes) state[idx] = State::kDone;
    if (ctx_.on_last_query_answered && !told_last_query) {
      told_last_query = std::none_of(order.begin(), order.end(), [&](int idx) {
        return nodes[idx].rule->kind == RuleKind::kQuery && state[idx] != State::kDone;
      });
      if (told_last_query) ctx_.on_last_query_answered();
    }
    done = static_cast<size_t>(std::count(state.begin(), state.end(), State::kDone));
    if (progressed == 0) break;   // cannot happen in a DAG; never spin
  }
}

bool Evaluator::StartQuery(int idx, Wave* wave) {
  --unstarted_queries_of_template_[TemplateOf(idx)];
  if (composite_template_[idx]) --unstarted_queries_of_template_[kCompositePartTemplate];
  if (DeadlinePassed()) {
    Fail(idx, NodeHealth::kSkipped, "the run's deadline (--deadline) passed before it was evaluated");
    return false;
  }
  if (!DepsOk(idx)) return false;
  Query q;
  QueryClient* client = nullptr;
  if (!PrepareQuery(idx, &q, &client)) return false;
  wave->nodes.push_back(idx);
  wave->queries.push_back(std::move(q));
  wave->clients.push_back(client);
  return true;
}

void Evaluator::Judge(int idx) {
  if (DeadlinePassed()) return Fail(idx, NodeHealth::kSkipped, "the run's deadline (--deadline) passed before it was evaluated");
  if (DepsOk(idx)) EvaluateNonQuery(idx);
}

const std::string Evaluator::PlaybookOf(int idx) const {
  const auto* pb = graph_.nodes()[idx].playbook;
  return pb ? pb->id : "";
}

std::string Evaluator::TemplateOf(int idx) const {
  const auto& spec = graph_.nodes()[idx].rule->query;
  return std::string(ToString(spec.tsdb)) + "\n" + spec.promql_template;
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
  // A dotted name is a member asked apart from its root (playbook::NameResolver): only shared rules are.
  if (root.find('.') != std::string::npos) return SharedRuleValue(scope, root);
  if (auto it = scope->bound.find(root); it != scope->bound.end()) return it->second.at->is_null() ? nullptr : it->second.at;
  if (const auto* b = FindBinding(idx, root); b && b->expr.ast && !scope->evaluating.count(root)) {
    scope->evaluating.insert(root);
    json held;
    auto v = playbook::EvalExprInPlace(*b->expr.ast, [this, scope](const std::string& r) { return Lookup(scope, r); }, &held);
    scope->evaluating.erase(root);
    if (!v.ok() && scope->error.empty()) scope->error = b->expr.pos.ToString() + ": " + root + ": " + v.status().message();
    // Bound only now: inside its own expression the name is the rule or root it shadows.
    auto& slot = scope->bound[root];
    if (v.ok() && *v != &held) {
      slot.at = *v;
    } else {
      slot.held = v.ok() ? std::move(held) : json();
      slot.at = &slot.held;
    }
    return slot.at->is_null() ? nullptr : slot.at;
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

const Value* Evaluator::SharedRuleValue(const std::shared_ptr<NameScope>& scope, const std::string& dotted) {
  static constexpr std::string_view kCommon = "common.";
  const int idx = scope->idx;
  if (idx < 0 || dotted.compare(0, kCommon.size(), kCommon) != 0) return nullptr;
  if (scope->bound.count("common") || FindBinding(idx, "common")) return nullptr;
  const std::string id = "common/" + dotted.substr(kCommon.size());
  for (const auto* list : {&graph_.nodes()[idx].deps, &graph_.nodes()[idx].after}) {
    for (int d : *list) {
      const auto& dep = result_.nodes[d];
      if (graph_.nodes()[d].id == id && dep.health == NodeHealth::kOk) return dep.value.is_null() ? nullptr : &dep.value;
    }
  }
  return nullptr;
}

// `common.X` for node `idx`: the shared rules it depends on, built the first time one of its
// expressions asks (its dependencies are final by then) and kept, because copying every shared
// per-host series for each of a node's expressions cost more than all of its queries. Nodes that
// need the same shared rules share one view: one per node held a copy of the same per-host series
// for every rule reading them (217 MB of 443 MB at 1,024 nodes).
const json* Evaluator::CommonView(int idx) {
  if (idx < 0) return nullptr;
  if (auto known = common_view_of_node_.find(idx); known != common_view_of_node_.end()) return known->second;
  std::vector<int> shared_deps;
  for (const auto* list : {&graph_.nodes()[idx].deps, &graph_.nodes()[idx].after})
    for (int d : *list)
      if (graph_.nodes()[d].id.rfind("common/", 0) == 0 && result_.nodes[d].health == NodeHealth::kOk) shared_deps.push_back(d);
  std::sort(shared_deps.begin(), shared_deps.end());
  shared_deps.erase(std::unique(shared_deps.begin(), shared_deps.end()), shared_deps.end());
  auto [view, inserted] = common_views_.try_emplace(shared_deps, json::object());
  if (inserted)
    for (int d : shared_deps) view->second[graph_.nodes()[d].id.substr(7)] = result_.nodes[d].value;
  return common_view_of_node_[idx] = &view->second;
}

StatusOr<json> Evaluator::Eval(int idx, const CompiledExpr& e, const json* host) {
  json held;
  std::shared_ptr<NameScope> scope;
  ASSIGN_OR_RETURN(const json* v, EvalInPlace(idx, e, &held, &scope, host));
  // Two statements, not `?:`: a conditional of `json&&` and `const json&` is a const prvalue, which
  // StatusOr would take by copy.
  if (v == &held) return std::move(held);
  return *v;
}

StatusOr<const json*> Evaluator::EvalInPlace(int idx, const CompiledExpr& e, json* held, std::shared_ptr<NameScope>* scope,
                                             const json* host) {
  *held = json();
  if (!e.ast) return held;
  auto [expr_scope, resolve] = Resolver(idx, host);
  *scope = expr_scope;
  auto v = playbook::EvalExprInPlace(*e.ast, resolve, held);
  if (!v.ok()) return InvalidArgumentError(e.pos.ToString() + ": " + v.status().message());
  if (!expr_scope->error.empty()) return InvalidArgumentError(e.pos.ToString() + ": uses " + expr_scope->error);
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
  // A host list selects series by every name the exporters gave that host (an address, an FQDN), as
  // the discovery of the TSDB the query goes to found them: a baseline's nodes have their own.
  // A host or string list with no item asks about nothing (no regex can select none of the series
  // without a label), so the query is not rendered nor sent: its answer is known to hold no series.
  std::string empty_list;
  auto value_with_names = [&](const std::string& name) -> StatusOr<json> {
    auto v = value_of(name);
    const playbook::ParamType type = type_of(name);
    if (!v.ok() || (type != playbook::ParamType::kHosts && type != playbook::ParamType::kStrings)) return v;
    if (v->is_array() && v->empty() && empty_list.empty()) empty_list = name;
    if (type != playbook::ParamType::kHosts) return v;
    const json& d = spec.tsdb == JobRole::kBaseline ? ctx_.baseline_discovery : ctx_.discovery;
    return WithReportedNames(*v, InstanceHostsOf(d));
  };
  auto promql = playbook::RenderPromql(*node.rule, value_with_names, type_of);
  if (!promql.ok() && empty_list.empty()) {
    Fail(idx, NodeHealth::kError, node.rule->query.template_pos.ToString() + ": " + promql.status().message());
    return false;
  }
  const std::string promql_text = promql.ok() ? *promql : spec.promql_template;
  if (spec.range) {
    *q = Query::Range(promql_text, start, end, spec.step_seconds, node.id);
  } else {
    double t = end;
    if (spec.at == QueryAt::kStart) {
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
    *q = Query::Instant(promql_text, t, node.id);
    start = end = t;
  }
  out.value = {{"query", promql_text}, {"window", {{"start", start}, {"end", end}}}};
  *client = spec.tsdb == JobRole::kBaseline ? ctx_.baseline : ctx_.subject;
  if (*client == nullptr) {
    Fail(idx, NodeHealth::kSkipped, spec.tsdb == JobRole::kBaseline ? "no baseline TSDB" : "no TSDB");
    return false;
  }
  if (!empty_list.empty()) {
    AnswerWithoutAsking(idx, promql_text, start, end, "its '" + empty_list + "' list is empty");
    return false;
  }
  return true;
}

void Evaluator::AnswerWithoutAsking(int idx, const std::string& promql_template, double start, double end,
                                    const std::string& why) {
  const RuleSpec& rule = *graph_.nodes()[idx].rule;
  auto& out = result_.nodes[idx];
  out.value = QueryResultJson(rule, QueryResult{}, json::object(), promql_template, start, end);
  out.health = NodeHealth::kOk;
  Evidence e;
  e.kind = EvidenceKind::kDerived;
  e.query = promql_template;
  e.window = TimeWindow{start, end};
  e.value = out.value["values"];
  e.text = (rule.description.empty() ? "" : rule.description + ": ") + "no series (not asked: " + why + ")";
  out.evidence.push_back(std::move(e));
}

Evaluator::QuestionKey Evaluator::KeyOf(const QueryClient* client, const Query& q) {
  return {client, static_cast<int>(q.kind), q.promql, q.time, q.start, q.end, q.step};
}

std::future<Evaluator::WaveAnswers> Evaluator::SendInBackground(Wave* wave) {
  // Rules asking the very same question (PromQL, kind and times) share one request, within the
  // wave and with every earlier wave of the run; one RunBatch per client (subject, baseline).
  std::vector<std::pair<QueryClient*, std::vector<Query>>> requests;
  for (QueryClient* client : {ctx_.subject, ctx_.baseline == ctx_.subject ? nullptr : ctx_.baseline}) {
    // A wave without a query touches no client: after the last answer the caller may have closed
    // them (EvaluationContext::on_last_query_answered).
    if (client == nullptr || wave->nodes.empty()) continue;
    std::vector<Query> unique;
    for (size_t i = 0; i < wave->nodes.size(); ++i) {
      if (wave->clients[i] != client) continue;
      const Query& q = wave->queries[i];
      auto [it, fresh] = answers_.try_emplace(KeyOf(client, q));
      if (fresh) unique.push_back(q);
      else ++result_.queries_shared;
      it->second.templates.push_back(TemplateOf(wave->nodes[i]));
    }
    if (client->EvaluatesPromql()) {
      SetComposedAside(client, &unique, wave);
      SetDerivedAside(client, &unique, wave);
      SetCountedAside(client, &unique, wave);
    }
    if (unique.empty()) continue;
    ++result_.batches;
    result_.queries_run += static_cast<int>(unique.size());
    SortCostliestFirst(&unique);
    requests.emplace_back(client, std::move(unique));
  }
  // Only the clients are touched off this thread; the evaluator's state stays here. Where no thread
  // can be started (or nothing is to be sent) the wave is sent when its answers are asked for.
  const auto policy = requests.empty() ? std::launch::deferred : std::launch::async | std::launch::deferred;
  // A Prometheus' range questions too large for one request go in pieces (range_split.h): each piece
  // and each series look-up of the estimate counts as a request sent.
  return std::async(policy, [requests = std::move(requests), extra_requests = &extra_requests_] {
    WaveAnswers answers;
    for (const auto& [client, queries] : requests) {
      std::vector<StatusOr<QueryResult>> fetched;
      if (client->EvaluatesPromql()) {
        SplitBatchAnswers split = RunBatchSplittingRanges(*client, queries);
        *extra_requests += split.requests - static_cast<int>(queries.size());
        fetched = std::move(split.answers);
      } else {
        fetched = client->RunBatch(queries);
      }
      for (size_t u = 0; u < queries.size(); ++u) {
        const Query& q = queries[u];
        answers.emplace_back(KeyOf(client, q),
                             u < fetched.size() ? std::move(fetched[u]) : StatusOr<QueryResult>(InternalError("no result")));
      }
    }
    return answers;
  });
}

void Evaluator::SetDerivedAside(QueryClient* client, std::vector<Query>* unique, Wave* wave) {
  auto source_of = [client](const Query& q, const Derivation& d) {
    Query source = q;
    source.promql = d.source;
    return KeyOf(client, source);
  };
  // A question derivable in this wave is not a source in it: it has no answer until the sent ones do.
  const std::set<QuestionKey> composed_parts = PartsOfComposed(*wave);
  std::vector<std::optional<Derivation>> derivations;
  std::set<QuestionKey> derivable;
  for (const Query& q : *unique) {
    derivations.push_back(DerivationOf(q.promql));
    if (derivations.back() && answers_.count(source_of(q, *derivations.back())) && !composed_parts.count(KeyOf(client, q)))
      derivable.insert(KeyOf(client, q));
  }
  std::vector<Query> sent;
  for (size_t u = 0; u < unique->size(); ++u) {
    Query& q = (*unique)[u];
    if (!derivable.count(KeyOf(client, q))) {
      sent.push_back(std::move(q));
      continue;
    }
    const QuestionKey source = source_of(q, *derivations[u]);
    if (derivable.count(source)) {
      sent.push_back(std::move(q));
      continue;
    }
    ++result_.queries_derived;
    wave->derived.push_back({client, std::move(q), source, std::move(*derivations[u])});
  }
  *unique = std::move(sent);
}

std::set<Evaluator::QuestionKey> Evaluator::PartsOfComposed(const Wave& wave) {
  std::set<QuestionKey> out;
  for (const auto& c : wave.composed) out.insert(c.parts.begin(), c.parts.end());
  return out;
}

namespace {

// The range every chain question of a round reading `part` on one step grid asks: the union of
// their innermost grids (aligned to the step from epoch 0, so one grid holds them all), when it is
// read by more than one of them and fits in one range answer.
struct SharedChainRange {
  int64_t first_ms = 0;
  int64_t last_ms = 0;
  int questions = 0;
};
using ChainRangeKey = std::pair<std::string, int64_t>;   // part, step

constexpr int64_t kMaxRangeAnswerPoints = 11000;   // Prometheus' limit per series of a range answer

std::map<ChainRangeKey, SharedChainRange> SharedChainRanges(const std::vector<Query>& questions,
                                                            const std::vector<std::optional<CompositeQuestion>>& composites) {
  std::map<ChainRangeKey, SharedChainRange> ranges;
  for (size_t u = 0; u < questions.size(); ++u) {
    if (!composites[u] || !composites[u]->chain) continue;
    const ChainGrid grid = InnerGrid(*composites[u]->chain, PrometheusMillis(questions[u].time));
    for (const std::string& part : composites[u]->parts) {
      auto [it, fresh] = ranges.try_emplace({part, grid.step_ms}, SharedChainRange{grid.first_ms, grid.last_ms, 0});
      it->second.first_ms = std::min(it->second.first_ms, grid.first_ms);
      it->second.last_ms = std::max(it->second.last_ms, grid.last_ms);
      ++it->second.questions;
    }
  }
  std::erase_if(ranges, [](const auto& entry) {
    const SharedChainRange& r = entry.second;
    return r.questions < 2 || (r.last_ms - r.first_ms) / entry.first.second + 1 > kMaxRangeAnswerPoints;
  });
  return ranges;
}

}  // namespace

void Evaluator::SetComposedAside(QueryClient* client, std::vector<Query>* unique, Wave* wave) {
  std::vector<std::optional<CompositeQuestion>> composites;
  for (const Query& q : *unique) {
    std::optional<CompositeQuestion> composite = CompositeOf(q.promql, q.kind);
    // A range of counts is count_answer.h's, which reads each window once.
    if (composite && q.kind == Query::Kind::kRange && CountExpressionOf(q.promql)) composite.reset();
    // `X > 3` or `max by (host) (X)` with X asked already is derived_answer.h's.
    if (auto d = composite ? DerivationOf(q.promql) : std::nullopt) {
      Query source = q;
      source.promql = d->source;
      if (answers_.count(KeyOf(client, source))) composite.reset();
    }
    composites.push_back(std::move(composite));
  }
  const std::map<ChainRangeKey, SharedChainRange> shared_ranges = SharedChainRanges(*unique, composites);
  std::vector<Query> sent, parts;
  for (size_t u = 0; u < unique->size(); ++u) {
    Query& q = (*unique)[u];
    std::optional<CompositeQuestion>& composite = composites[u];
    if (!composite) {
      sent.push_back(std::move(q));
      continue;
    }
    const bool range = q.kind == Query::Kind::kRange;
    std::vector<Query> part_queries;
    bool shares_a_range = false;
    for (size_t i = 0; i < composite->parts.size(); ++i) {
      part_queries.push_back(composite->PartQuery(q, i));
      const Query& part = part_queries.back();
      auto it = composite->chain ? shared_ranges.find({part.promql, PrometheusMillis(part.step)}) : shared_ranges.end();
      if (it == shared_ranges.end()) continue;
      part_queries.back() = Query::Range(part.promql, static_cast<double>(it->second.first_ms) / 1000,
                                         static_cast<double>(it->second.last_ms) / 1000, part.step, part.id);
      shares_a_range = true;
    }
    auto asked = [&](const Query& part) { return answers_.count(KeyOf(client, part)) > 0; };
    // A range's binary operation costs Prometheus several times its sides: one side asked anyway is enough.
    const bool parts_asked = range || composite->chain ? std::any_of(part_queries.begin(), part_queries.end(), asked)
                                                       : std::all_of(part_queries.begin(), part_queries.end(), asked);
    if (!composite->RepeatsAPart() && !parts_asked && !shares_a_range) {
      sent.push_back(std::move(q));
      continue;
    }
    ComposedQuestion composed{client, q, {}, std::move(*composite)};
    const std::vector<std::string> templates = answers_.at(KeyOf(client, q)).templates;
    for (Query& pq : part_queries) {
      const QuestionKey key = KeyOf(client, pq);
      auto [it, fresh] = answers_.try_emplace(key);
      auto& kept_for = it->second.templates;
      kept_for.insert(kept_for.end(), templates.begin(), templates.end());
      kept_for.push_back(kCompositePartTemplate);
      if (fresh) parts.push_back(std::move(pq));
      composed.parts.push_back(key);
    }
    ++result_.queries_derived;
    wave->composed.push_back(std::move(composed));
  }
  sent.insert(sent.end(), std::make_move_iterator(parts.begin()), std::make_move_iterator(parts.end()));
  *unique = std::move(sent);
}

void Evaluator::AskInstead(const std::map<QueryClient*, std::vector<Query>>& ask) {
  for (const auto& [client, queries] : ask) {
    ++result_.batches;
    result_.queries_run += static_cast<int>(queries.size());
    result_.queries_derived -= static_cast<int>(queries.size());
    std::vector<StatusOr<QueryResult>> fetched = client->RunBatch(queries);
    for (size_t u = 0; u < queries.size(); ++u)
      KeepAnswer(KeyOf(client, queries[u]), u < fetched.size() ? std::move(fetched[u]) : StatusOr<QueryResult>(InternalError("no result")));
  }
}

void Evaluator::AnswerComposed(const Wave& wave) {
  std::map<QueryClient*, std::vector<Query>> ask;
  for (const auto& c : wave.composed) {
    std::vector<const QueryResult*> parts;
    for (const auto& key : c.parts) {
      const auto& part = answers_.at(key).result;
      parts.push_back(part && part->ok() ? &**part : nullptr);
    }
    std::optional<QueryResult> answer;
    if (std::find(parts.begin(), parts.end(), nullptr) == parts.end()) answer = AnswerComposite(c.composite, parts, c.query.time);
    if (answer) answers_[KeyOf(c.client, c.query)].result = std::make_shared<const StatusOr<QueryResult>>(std::move(*answer));
    else ask[c.client].push_back(c.query);
  }
  AskInstead(ask);
}

void Evaluator::AnswerDerived(const Wave& wave) {
  std::map<QueryClient*, std::vector<Query>> ask;
  for (const auto& d : wave.derived) {
    const auto& source = answers_.at(d.source).result;
    std::optional<QueryResult> answer;
    if (source && source->ok()) answer = DeriveAnswer(d.derivation, **source, d.query.kind);
    if (answer) answers_[KeyOf(d.client, d.query)].result = std::make_shared<const StatusOr<QueryResult>>(std::move(*answer));
    else ask[d.client].push_back(d.query);
  }
  AskInstead(ask);
}

void Evaluator::KeepAnswer(const QuestionKey& key, StatusOr<QueryResult> answer) {
  if (answer.ok())
    for (const auto& series : answer->series) result_.points_returned += static_cast<int64_t>(series.samples.size());
  answers_[key].result = std::make_shared<const StatusOr<QueryResult>>(std::move(answer));
}

void Evaluator::ApplyAnswers(const Wave& wave, WaveAnswers fetched) {
  for (auto& [key, answer] : fetched) KeepAnswer(key, std::move(answer));
  // Reading answers into the rules costs time of its own (an endpoint sending 150,000 series per
  // answer took a run with --deadline 10 to 22 s): the deadline is checked between the steps and
  // before each rule's answer, and the rules not reached by then are skipped, saying so.
  // Composed first: a derived or counted question may ask what a composed one answers, never a
  // composed one's part.
  if (!DeadlinePassed()) AnswerComposed(wave);
  if (!DeadlinePassed()) AnswerCounted(wave);
  if (!DeadlinePassed()) AnswerDerived(wave);
  for (size_t i = 0; i < wave.nodes.size(); ++i) {
    const int idx = wave.nodes[i];
    const Query& q = wave.queries[i];
    QueryClient* client = wave.clients[i];
    // Before the answer is looked up: past the deadline a composed one may never have been computed.
    if (DeadlinePassed()) {
      Fail(idx, NodeHealth::kSkipped, "the run's deadline (--deadline) passed before its answer was read");
      continue;
    }
    const StatusOr<QueryResult>& answer = *answers_.at(KeyOf(client, q)).result;
    if (!answer.ok()) {
      Fail(idx, NodeHealth::kError, "query failed (" + client->Describe() + "): " + answer.status().message() + " [" + q.promql + "]");
      continue;
    }
    const json& ih = client == ctx_.baseline ? ctx_.baseline_discovery : ctx_.discovery;
    const json& instance_hosts = InstanceHostsOf(ih);
    double start = q.kind == Query::Kind::kRange ? q.start : q.time;
    double end = q.kind == Query::Kind::kRange ? q.end : q.time;
    auto& out = result_.nodes[idx];
    out.value = QueryResultJson(*graph_.nodes()[idx].rule, *answer, instance_hosts, q.promql, start, end);
    out.health = NodeHealth::kOk;
    Evidence e;
    e.kind = EvidenceKind::kPromql;
    e.query = q.promql;
    e.window = TimeWindow{start, end};
    e.value = out.value["values"];
    e.text = graph_.nodes()[idx].rule->description;
    if (client == ctx_.baseline) e.role = JobRole::kBaseline;
    if (out.value.contains("series") && !out.value["series"].empty()) {
      auto series = std::make_shared<json>();
      e.series = series;
      evidence_series_.emplace_back(idx, std::move(series));
    }
    AppendWarnings(answer->warnings, &e.text);
    out.evidence.push_back(std::move(e));
  }
  // An answer is kept only while a query rule that could ask its question again (same template)
  // has not been started, so large range answers do not outlive their use.
  const size_t dropped = std::erase_if(answers_, [&](const auto& entry) {
    return std::none_of(entry.second.templates.begin(), entry.second.templates.end(),
                        [&](const std::string& t) { return unstarted_queries_of_template_[t] > 0; });
  });
  // The answers were parsed off this thread (SendInBackground), so their memory returns to that
  // thread's malloc arena, which the JSON values built on this thread cannot reuse: without handing
  // the free pages back, diagnose's peak RSS at 1,024 nodes was the sum of both arenas' peaks
  // (MALLOC_ARENA_MAX=2 alone took it from 782 to 588 MB).
#if defined(__GLIBC__)
  if (dropped > 0) malloc_trim(0);
#endif
}

void Evaluator::AppendWarnings(const std::vector<std::string>& warnings, std::string* text) {
  size_t left_out = 0;
  for (const auto& w : warnings) {
    if (warnings_in_evidence_ >= kMaxWarningsInReport) {
      ++left_out;
      continue;
    }
    ++warnings_in_evidence_;
    *text += (text->empty() ? "" : "; ") + std::string("warning: ") + w;
  }
  if (left_out > 0) {
    *text += (text->empty() ? "" : "; ") + std::string("warning: ") + std::to_string(left_out) +
             " more left out (the report holds the first " + std::to_string(kMaxWarningsInReport) + " of the endpoint's warnings)";
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
      derived.kind = EvidenceKind::kDerived;
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
      // The inputs in place: computed ones held here, named ones where they are (a binding's in
      // its scope, kept alive with it).
      const CompiledExpr* exprs[] = {&rule.analysis.input, &rule.analysis.baseline_input, &rule.analysis.phases, &rule.analysis.windows};
      json held[4];
      const json* inputs[4] = {};
      std::shared_ptr<NameScope> scopes[4];
      for (int i = 0; i < 4; ++i) {
        auto v = EvalInPlace(idx, *exprs[i], &held[i], &scopes[i]);
        if (!v.ok()) return Fail(idx, NodeHealth::kError, v.status().message());
        inputs[i] = *v;
      }
      static const json kNoStepTimes;
      const json& step_times = ctx_.discovery.is_object() && ctx_.discovery.contains("step_times") ? ctx_.discovery["step_times"] : kNoStepTimes;
      const analysis::AnalysisView in{*inputs[0], *inputs[1], *inputs[2], *inputs[3], rule.analysis.args, step_times};
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
      e.kind = EvidenceKind::kDerived;
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
