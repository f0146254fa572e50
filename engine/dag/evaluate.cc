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
#include "engine/playbook/promql_template.h"

namespace diagnose::dag {
namespace {

using nlohmann::json;
using playbook::CompiledExpr;
using playbook::RuleKind;
using playbook::RuleSpec;
using playbook::Value;

const json kNull;

std::string StripPort(const std::string& instance) {
  // "host:port" and "[v6]:port"; a bare value is returned as is.
  if (!instance.empty() && instance[0] == '[') {
    size_t close = instance.find(']');
    return close == std::string::npos ? instance : instance.substr(1, close - 1);
  }
  size_t colon = instance.rfind(':');
  if (colon == std::string::npos || instance.find(':') != colon) return instance;
  return instance.substr(0, colon);
}

std::string Lookup(const json& map, const std::string& key) {
  if (map.is_object()) {
    auto it = map.find(key);
    if (it != map.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

std::string KeyOf(const Labels& labels, const std::vector<std::string>& by, const json& instance_hosts) {
  std::string key;
  for (size_t i = 0; i < by.size(); ++i) {
    std::string part;
    if (by[i] == "host") {
      part = HostOfSeries(labels, instance_hosts);
    } else {
      auto it = labels.find(by[i]);
      part = it == labels.end() ? "" : it->second;
    }
    key += (i ? "/" : "") + part;
  }
  return key;
}

double Reduce(const std::vector<Sample>& samples, const std::string& how) {
  if (samples.empty()) return std::nan("");
  if (how == "last") return samples.back().v;
  if (how == "first") return samples.front().v;
  if (how == "count") return static_cast<double>(samples.size());
  double sum = 0, lo = samples[0].v, hi = samples[0].v;
  for (const auto& s : samples) {
    sum += s.v;
    lo = std::min(lo, s.v);
    hi = std::max(hi, s.v);
  }
  if (how == "sum") return sum;
  if (how == "min") return lo;
  if (how == "max") return hi;
  double mean = sum / samples.size();
  if (how == "avg") return mean;
  double var = 0;
  for (const auto& s : samples) var += (s.v - mean) * (s.v - mean);
  return samples.size() > 1 ? std::sqrt(var / (samples.size() - 1)) : 0;   // stddev
}

// Series with the same key are combined: summed for sum/count, minimum for min, maximum otherwise.
double Combine(double a, double b, const std::string& how) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (how == "sum" || how == "count") return a + b;
  if (how == "min") return std::min(a, b);
  return std::max(a, b);
}

json QueryResultJson(const RuleSpec& rule, const QueryResult& result, const json& instance_hosts,
                     const std::string& promql, double start, double end) {
  const auto& q = rule.query;
  json values = json::object();
  json reduced = json::object();
  std::map<std::string, std::map<double, double>> series;
  std::set<std::string> hosts;
  for (const auto& s : result.series) {
    std::string key = KeyOf(s.labels, q.by, instance_hosts);
    std::string host = HostOfSeries(s.labels, instance_hosts);
    if (!host.empty()) hosts.insert(host);
    if (q.range && q.reductions.size() > 1) {
      for (const auto& how : q.reductions) {
        double v = Reduce(s.samples, how);
        if (std::isnan(v)) continue;
        auto& slot = reduced[how];
        double prev = slot.contains(key) ? slot[key].get<double>() : std::nan("");
        slot[key] = Combine(prev, v, how);
      }
    }
    double v = q.range ? Reduce(s.samples, q.reduce) : (s.samples.empty() ? std::nan("") : s.samples.back().v);
    if (std::isnan(v)) continue;
    double prev = values.contains(key) ? values[key].get<double>() : std::nan("");
    values[key] = Combine(prev, v, q.range ? q.reduce : "max");
    if (q.range) {
      auto& pts = series[key];
      for (const auto& smp : s.samples) {
        if (std::isnan(smp.v)) continue;
        auto it = pts.find(smp.t);
        pts[smp.t] = it == pts.end() ? smp.v : Combine(it->second, smp.v, q.reduce);
      }
    }
  }
  json out;
  out["values"] = values;
  if (q.range && q.reductions.size() > 1) {
    for (const auto& how : q.reductions)
      if (!reduced.contains(how)) reduced[how] = json::object();
    out["reduced"] = std::move(reduced);
  }
  out["hosts"] = json(std::vector<std::string>(hosts.begin(), hosts.end()));
  out["count"] = values.size();
  out["query"] = promql;
  out["window"] = {{"start", start}, {"end", end}};
  if (!values.empty()) {
    double lo = 1e300, hi = -1e300, sum = 0;
    for (const auto& [k, v] : values.items()) {
      double x = v.get<double>();
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      sum += x;
    }
    out["max"] = hi;
    out["min"] = lo;
    out["sum"] = sum;
    out["avg"] = sum / values.size();
  }
  if (q.range) {
    json sj = json::object();
    for (const auto& [k, pts] : series) {
      json list = json::array();
      for (const auto& [t, v] : pts) list.push_back({t, v});
      sj[k] = std::move(list);
    }
    out["series"] = std::move(sj);
  }
  return out;
}

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

class Evaluator {
 public:
  Evaluator(const CompiledGraph& graph, const EvaluationContext& ctx) : graph_(graph), ctx_(ctx) {}

  EvaluationResult Run() {
    const auto& nodes = graph_.nodes();
    result_.nodes.resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) result_.nodes[i].id = nodes[i].id;
    thresholds_ = graph_.library().thresholds;
    for (const auto* pb : graph_.playbooks()) {
      std::map<std::string, std::string> problems;
      params_[pb->id] = ResolveParams(pb, ctx_, thresholds_, &problems);
      windows_[pb->id] = ResolveWindows(graph_.library(), pb, ctx_, params_[pb->id], thresholds_, &problems);
      window_problems_[pb->id] = problems;
    }
    std::map<std::string, std::string> problems;
    windows_[""] = ResolveWindows(graph_.library(), nullptr, ctx_, json::object(), thresholds_, &problems);
    window_problems_[""] = problems;
    params_[""] = json::object();

    for (const auto& level : graph_.levels()) {
      std::vector<int> batch_nodes;
      std::vector<Query> batch;
      std::vector<QueryClient*> clients;
      for (int idx : level) {
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
    }
    BuildFindings();
    for (const auto& n : result_.nodes)
      if (n.health != "ok") result_.not_evaluated.push_back(n.id + ": " + n.health + ": " + n.reason);
    return std::move(result_);
  }

 private:
  const std::string PlaybookOf(int idx) const {
    const auto* pb = graph_.nodes()[idx].playbook;
    return pb ? pb->id : "";
  }

  bool DepsOk(int idx) {
    auto& out = result_.nodes[idx];
    for (int d : graph_.nodes()[idx].deps) {
      const auto& dep = result_.nodes[d];
      if (dep.health != "ok") {
        out.health = "skipped";
        out.reason = "needs '" + dep.id + "' which " + (dep.health == "error" ? "failed" : "was skipped") + ": " + dep.reason;
        return false;
      }
    }
    return true;
  }

  // One expression's view of names: node `idx`, `host` inside exclusion reasons, and the values of
  // the bindings (let, macros) it has used so far. Bindings are evaluated on first use, in this
  // scope, so a macro that reads `host` sees the host being excused.
  struct NameScope {
    int idx = -1;
    const json* host = nullptr;
    std::map<std::string, json> bound;
    std::set<std::string> evaluating;
    std::string error;   // the first binding that failed: the expression using it fails too
  };

  const playbook::Binding* FindBinding(int idx, const std::string& name) const {
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

  const Value* Lookup(const std::shared_ptr<NameScope>& scope, const std::string& root) {
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
  std::pair<std::shared_ptr<NameScope>, playbook::NameResolver> Resolver(int idx, const json* host) {
    auto scope = std::make_shared<NameScope>();
    scope->idx = idx;
    scope->host = host;
    return {scope, [this, scope](const std::string& root) { return Lookup(scope, root); }};
  }

  const Value* RootValue(int idx, const json* host, const std::string& root) {
    {
      const std::string pb = idx >= 0 ? PlaybookOf(idx) : "";
      if (root == "facts") return &ctx_.facts;
      if (root == "baseline") return ctx_.baseline_facts.is_null() ? nullptr : &ctx_.baseline_facts;
      if (root == "discovery") return ctx_.discovery.is_null() ? nullptr : &ctx_.discovery;
      if (root == "baseline_discovery") return ctx_.baseline_discovery.is_null() ? nullptr : &ctx_.baseline_discovery;
      if (root == "params") return &params_[pb];
      if (root == "thresholds") return &thresholds_;
      if (root == "windows") return &windows_[pb];
      if (root == "host") return host;
      if (root == "common") return CommonView(idx);
      if (idx < 0) return nullptr;
      std::string qualified = (pb.empty() ? "common" : pb) + "/" + root;
      int target = graph_.IndexOf(qualified);
      if (target < 0 && pb.empty()) target = graph_.IndexOf("common/" + root);
      if (target < 0 || result_.nodes[target].health != "ok") return nullptr;
      return &result_.nodes[target].value;
    }
  }

  // `common.X` for node `idx`: the shared rules it depends on, built the first time one of its
  // expressions asks (its dependencies are final by then) and kept, because copying every shared
  // per-host series for each of a node's expressions cost more than all of its queries.
  const json* CommonView(int idx) {
    if (idx < 0) return nullptr;
    auto [view, inserted] = common_views_.try_emplace(idx, json::object());
    if (inserted) {
      for (int d : graph_.nodes()[idx].deps) {
        const auto& id = graph_.nodes()[d].id;
        if (id.rfind("common/", 0) == 0 && result_.nodes[d].health == "ok")
          view->second[id.substr(7)] = result_.nodes[d].value;
      }
    }
    return &view->second;
  }

  StatusOr<json> Eval(int idx, const CompiledExpr& e, const json* host = nullptr) {
    if (!e.ast) return json();
    auto [scope, resolve] = Resolver(idx, host);
    auto v = playbook::EvalExpr(*e.ast, resolve);
    if (!v.ok()) return InvalidArgumentError(e.pos.ToString() + ": " + v.status().message());
    if (!scope->error.empty()) return InvalidArgumentError(e.pos.ToString() + ": uses " + scope->error);
    return v;
  }

  StatusOr<std::string> Render(int idx, const playbook::Template& t, const json* host = nullptr) {
    if (!t.present()) return std::string();
    auto [scope, resolve] = Resolver(idx, host);
    auto s = playbook::RenderTemplate(t.pieces, resolve);
    if (!s.ok()) return InvalidArgumentError(t.pos.ToString() + ": " + s.status().message());
    if (!scope->error.empty()) return InvalidArgumentError(t.pos.ToString() + ": uses " + scope->error);
    return s;
  }

  void Fail(int idx, const std::string& health, const std::string& reason) {
    result_.nodes[idx].health = health;
    result_.nodes[idx].reason = reason;
  }

  bool PrepareQuery(int idx, Query* q, QueryClient** client) {
    const auto& node = graph_.nodes()[idx];
    const auto& spec = node.rule->query;
    const std::string pb = PlaybookOf(idx);
    auto& out = result_.nodes[idx];
    // Window.
    const json& windows = windows_[pb];
    if (!windows.contains(spec.window)) {
      auto it = window_problems_[pb].find(spec.window);
      Fail(idx, "skipped", "window '" + spec.window + "' unavailable" +
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
      Fail(idx, empty_list ? "skipped" : "error", node.rule->query.template_pos.ToString() + ": " + promql.status().message());
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
          Fail(idx, "error", v.status().message());
          return false;
        }
        if (!v->is_number()) {
          Fail(idx, "skipped", "evaluation time 'at' is " + (v->is_null() ? std::string("unknown") : v->dump()));
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
      Fail(idx, "skipped", spec.tsdb == "baseline" ? "no baseline TSDB" : "no TSDB");
      return false;
    }
    return true;
  }

  void RunBatches(const std::vector<int>& nodes, const std::vector<Query>& queries,
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
      // Rules asking the very same question (PromQL, kind and times) share one request.
      std::vector<Query> unique;
      std::vector<size_t> slot(batch.size());
      std::map<std::tuple<int, std::string, double, double, double, double>, size_t> seen;
      for (size_t i = 0; i < batch.size(); ++i) {
        const Query& q = batch[i];
        auto [it, fresh] = seen.emplace(std::make_tuple(static_cast<int>(q.kind), q.promql, q.time, q.start, q.end, q.step),
                                        unique.size());
        if (fresh) unique.push_back(q);
        slot[i] = it->second;
      }
      ++result_.batches;
      result_.queries_run += static_cast<int>(unique.size());
      auto results = client->RunBatch(unique);
      const json& ih = client == ctx_.baseline ? ctx_.baseline_discovery : ctx_.discovery;
      const json instance_hosts = ih.is_object() && ih.contains("instance_hosts") ? ih["instance_hosts"] : json::object();
      for (size_t i = 0; i < idxs.size(); ++i) {
        int idx = idxs[i];
        const auto& q = batch[i];
        const size_t r = slot[i];
        if (r >= results.size() || !results[r].ok()) {
          Fail(idx, "error", "query failed (" + client->Describe() + "): " +
                                 (r < results.size() ? results[r].status().message() : std::string("no result")) +
                                 " [" + q.promql + "]");
          continue;
        }
        double start = q.kind == Query::Kind::kRange ? q.start : q.time;
        double end = q.kind == Query::Kind::kRange ? q.end : q.time;
        auto& out = result_.nodes[idx];
        out.value = QueryResultJson(*graph_.nodes()[idx].rule, *results[r], instance_hosts, q.promql, start, end);
        out.health = "ok";
        Evidence e;
        e.kind = "promql";
        e.query = q.promql;
        e.window = TimeWindow{start, end};
        e.value = out.value["values"];
        e.text = graph_.nodes()[idx].rule->description;
        if (client == ctx_.baseline) e.role = "baseline";
        if (out.value.contains("series") && !out.value["series"].empty())
          e.series = std::make_shared<const json>(out.value["series"]);
        for (const auto& w : results[r]->warnings) e.text += (e.text.empty() ? "" : "; ") + std::string("warning: ") + w;
        out.evidence.push_back(std::move(e));
      }
    }
  }

  void EvaluateNonQuery(int idx) {
    const auto& node = graph_.nodes()[idx];
    const RuleSpec& rule = *node.rule;
    auto& out = result_.nodes[idx];
    switch (rule.kind) {
      case RuleKind::kFact: {
        auto v = Eval(idx, rule.fact.value);
        if (!v.ok()) return Fail(idx, "error", v.status().message());
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
        out.health = "ok";
        return;
      }
      case RuleKind::kAnalysis: {
        const auto* def = analysis::FindAnalysis(rule.analysis.name);
        if (!def) return Fail(idx, "error", "unknown analysis '" + rule.analysis.name + "'");
        analysis::AnalysisInput in;
        in.args = rule.analysis.args;
        in.step_times = ctx_.discovery.is_object() && ctx_.discovery.contains("step_times") ? ctx_.discovery["step_times"] : json();
        for (auto [expr, target] : {std::pair{&rule.analysis.input, &in.input}, std::pair{&rule.analysis.baseline_input, &in.baseline_input},
                                    std::pair{&rule.analysis.phases, &in.phases}, std::pair{&rule.analysis.windows, &in.windows}}) {
          auto v = Eval(idx, *expr);
          if (!v.ok()) return Fail(idx, "error", v.status().message());
          *target = std::move(*v);
        }
        for (const auto& req : def->required_inputs) {
          const json& v = req == "input" ? in.input : req == "baseline_input" ? in.baseline_input
                        : req == "phases" ? in.phases : in.windows;
          if (v.is_null()) return Fail(idx, "skipped", "analysis '" + def->name + "': '" + req + "' is not available");
        }
        auto r = def->run(in);
        if (!r.ok()) {
          bool precondition = r.status().code() == StatusCode::kFailedPrecondition;
          return Fail(idx, precondition ? "skipped" : "error", rule.pos.ToString() + ": analysis '" + def->name + "': " + r.status().message());
        }
        out.value = std::move(*r);
        Evidence e;
        e.kind = "derived";
        e.query = def->name + " " + rule.analysis.args.dump();
        e.value = Trimmed(out.value);
        e.text = rule.description.empty() ? def->description : rule.description;
        out.evidence.push_back(std::move(e));
        out.health = "ok";
        return;
      }
      case RuleKind::kVerdict:
        return EvaluateVerdict(idx);
      case RuleKind::kQuery:
        return;
    }
  }

  void EvaluateVerdict(int idx) {
    const auto& node = graph_.nodes()[idx];
    const auto& v = node.rule->verdict;
    auto& out = result_.nodes[idx];
    // A fallback stands in only for verdicts that could not be judged.
    for (const auto& primary : node.rule->after) {
      int p = graph_.IndexOf(primary);
      if (p >= 0 && result_.nodes[p].health == "ok") {
        out.health = "ok";
        out.value = {{"fired", false}, {"hosts", json::array()}, {"confidence", nullptr}, {"fallback_unused", primary}};
        return;
      }
    }
    auto when = Eval(idx, v.when);
    if (!when.ok()) return Fail(idx, "error", when.status().message());
    bool fired = playbook::Truthy(*when);
    json value = {{"fired", fired}, {"hosts", json::array()}, {"confidence", nullptr}};
    out.health = "ok";
    if (fired && v.suppress) {
      // A suppression that cannot be judged never hides a verdict that fired.
      auto sup = Suppressed(idx, *v.suppress);
      if (sup.ok() && sup->All()) {
        fired = false;
        value["fired"] = false;
        value["suppressed"] = sup->reason;
        suppressed_[idx] = sup->reason;
      }
    }
    if (!fired) {
      out.value = std::move(value);
      return;
    }
    verdict::Candidate c;
    c.playbook = node.playbook ? node.playbook->id : "common";
    c.rule = node.rule->id;
    c.root_cause = v.root_cause;
    c.action = v.action;
    c.explains = v.explains;
    c.yields = v.yields;
    for (const auto& level : v.confidence) {
      if (!level.when.present()) {
        c.confidence = level.level;
        break;
      }
      auto ok = Eval(idx, level.when);
      if (!ok.ok()) return Fail(idx, "error", ok.status().message());
      if (playbook::Truthy(*ok)) {
        c.confidence = level.level;
        break;
      }
      c.confidence = "possible";
    }
    auto summary = Render(idx, v.summary);
    if (!summary.ok()) return Fail(idx, "error", summary.status().message());
    c.summary = *summary;
    if (v.hosts.present()) {
      auto hosts = Eval(idx, v.hosts);
      if (!hosts.ok()) return Fail(idx, "error", hosts.status().message());
      for (const auto& h : *hosts)
        if (h.is_string()) c.hosts.push_back(h.get<std::string>());
    }
    if (v.onset.present()) {
      auto onset = Eval(idx, v.onset);
      if (!onset.ok()) return Fail(idx, "error", onset.status().message());
      if (onset->is_number()) c.onset = onset->get<double>();
    }
    std::map<std::string, Exclusion> exclude;
    for (const auto& ex : v.exclude) {
      auto hosts = Eval(idx, ex.hosts);
      if (!hosts.ok()) return Fail(idx, "error", hosts.status().message());
      json list = hosts->is_object() ? json(json::array()) : *hosts;
      if (hosts->is_object())
        for (const auto& [k, x] : hosts->items()) list.push_back(k);
      if (!list.is_array()) continue;
      for (const auto& h : list) {
        if (!h.is_string()) continue;
        std::string host = h.get<std::string>();
        auto reason = Render(idx, ex.reason, &h);
        if (!reason.ok()) return Fail(idx, "error", reason.status().message());
        auto it = exclude.find(host);
        // A host named by several entries keeps its highest priority (lowest number).
        if (it == exclude.end() || ex.priority < it->second.priority) exclude[host] = {host, ex.priority, *reason};
      }
    }
    for (auto& [h, e] : exclude) c.exclude.push_back(e);
    for (const auto& [k, t] : v.changes) {
      auto s = Render(idx, t);
      if (!s.ok()) return Fail(idx, "error", s.status().message());
      c.changes[k] = *s;
    }
    for (const auto& note : v.notes) {
      if (note.when.present()) {
        auto say = Eval(idx, note.when);
        if (!say.ok()) return Fail(idx, "error", say.status().message());
        if (!playbook::Truthy(*say)) continue;
      }
      auto s = Render(idx, note.text);
      if (!s.ok()) return Fail(idx, "error", s.status().message());
      if (!s->empty()) c.notes.push_back(*s);
    }
    value["hosts"] = c.hosts;
    value["confidence"] = c.confidence;
    out.value = std::move(value);
    fired_[idx] = std::move(c);
  }

  // Suppression (README §3.6): the keys of `times` (a map key -> time(s); a plain number or list is
  // one key "") whose evidence times all lie inside one of the `during` windows, and the reason.
  struct Suppression {
    std::set<std::string> keys;            // the keys whose evidence is inside the windows
    std::set<std::string> loud_keys;       // the keys with evidence outside them
    std::string reason;

    // Every key with evidence has all of it inside the windows.
    bool All() const { return !keys.empty() && loud_keys.empty(); }

    // Hosts (the part of a key before "/", e.g. host/gpu3) all of whose evidence is inside.
    std::set<std::string> QuietHosts() const {
      auto host_of = [](const std::string& k) { return k.substr(0, k.find('/')); };
      std::set<std::string> loud, quiet;
      for (const auto& k : loud_keys) loud.insert(host_of(k));
      for (const auto& k : keys)
        if (!loud.count(host_of(k))) quiet.insert(host_of(k));
      return quiet;
    }
  };
  StatusOr<Suppression> Suppressed(int idx, const playbook::SuppressSpec& spec) {
    Suppression out;
    auto times = Eval(idx, spec.times);
    if (!times.ok()) return times.status();
    auto during = Eval(idx, spec.during);
    if (!during.ok()) return during.status();
    if (!during->is_array() || during->empty()) return out;
    auto inside = [&](double t) {
      for (const auto& w : *during)
        if (w.is_object() && w.contains("start") && w.contains("end") && w["start"].is_number() &&
            w["end"].is_number() && t >= w["start"].get<double>() && t <= w["end"].get<double>())
          return true;
      return false;
    };
    std::function<void(const json&, bool*, bool*)> all_inside = [&](const json& v, bool* any, bool* ok) {
      if (v.is_number()) {
        *any = true;
        if (!inside(v.get<double>())) *ok = false;
      } else if (v.is_array() || v.is_object()) {
        for (const auto& x : v) all_inside(x, any, ok);
      }
    };
    auto classify = [&](const std::string& key, const json& evidence) {
      bool any = false, ok = true;
      all_inside(evidence, &any, &ok);
      if (any) (ok ? out.keys : out.loud_keys).insert(key);
    };
    if (times->is_object())
      for (const auto& [k, v] : times->items()) classify(k, v);
    else
      classify("", *times);
    if (out.keys.empty()) return out;
    auto reason = Render(idx, spec.reason);
    if (!reason.ok()) return reason.status();
    out.reason = reason->empty() ? "evidence lies only inside " + spec.during.source : *reason;
    return out;
  }

  // Evidence of a finding: its own, then that of the rules it directly references.
  // Two dependencies citing the same log line or query add nothing the second time.
  std::vector<Evidence> FindingEvidence(int idx) {
    std::vector<Evidence> ev;
    std::set<std::string> seen;
    auto add = [&](const Evidence& e) {
      std::string key = e.kind + '\x1f' + e.query + '\x1f' + e.text + '\x1f' + e.role;
      if (e.window) key += '\x1f' + std::to_string(e.window->start) + ':' + std::to_string(e.window->end);
      if (seen.insert(std::move(key)).second) ev.push_back(e);
    };
    for (const auto& e : result_.nodes[idx].evidence) add(e);
    for (int d : graph_.nodes()[idx].deps)
      for (const auto& e : result_.nodes[d].evidence) add(e);
    // The queries under an analysis a few rules down are what the conclusion rests on: cite them
    // too (a verdict over a threads-delta analysis names the threads query it compared).
    std::set<int> visited(graph_.nodes()[idx].deps.begin(), graph_.nodes()[idx].deps.end());
    std::vector<int> frontier(visited.begin(), visited.end());
    for (int depth = 0; depth < 3 && !frontier.empty(); ++depth) {
      std::vector<int> next;
      for (int n : frontier)
        for (int d : graph_.nodes()[n].deps)
          if (visited.insert(d).second) {
            next.push_back(d);
            for (const auto& e : result_.nodes[d].evidence)
              if (e.kind == "promql") add(e);
          }
      frontier = std::move(next);
    }
    return ev;
  }

  void BuildFindings() {
    const auto& nodes = graph_.nodes();
    for (int idx : graph_.TopologicalOrder()) {
      const auto& node = nodes[idx];
      const RuleSpec& rule = *node.rule;
      bool is_verdict = rule.kind == RuleKind::kVerdict;
      if (!is_verdict && !rule.finding) continue;
      auto& out = result_.nodes[idx];
      Finding f;
      f.id = node.id;
      f.playbook = node.playbook ? node.playbook->id : "common";
      if (out.health != "ok") {
        f.status = out.health;
        f.summary = (out.health == "skipped" ? "insufficient evidence: " : "could not evaluate: ") + out.reason;
        result_.findings.push_back(std::move(f));
        continue;
      }
      if (is_verdict) {
        bool fired = out.value.value("fired", false);
        f.status = fired ? "fired" : "clear";
        if (auto s = suppressed_.find(idx); s != suppressed_.end()) {
          f.status = "suppressed";
          f.summary = "suppressed: " + s->second;
          f.evidence = FindingEvidence(idx);
          result_.findings.push_back(std::move(f));
          continue;
        }
        auto it = fired_.find(idx);
        if (it != fired_.end()) {
          f.hosts = it->second.hosts;
          f.summary = it->second.summary;
          f.onset = it->second.onset;
        } else {
          f.summary = rule.description;
        }
        f.evidence = FindingEvidence(idx);
        result_.findings.push_back(std::move(f));
        continue;
      }
      auto when = Eval(idx, rule.finding->when);
      if (!when.ok()) {
        f.status = "error";
        f.summary = when.status().message();
        result_.findings.push_back(std::move(f));
        continue;
      }
      f.status = playbook::Truthy(*when) ? "fired" : "clear";
      if (rule.finding->hosts.present()) {
        auto hosts = Eval(idx, rule.finding->hosts);
        if (hosts.ok()) {
          if (hosts->is_object())
            for (const auto& [k, x] : hosts->items()) f.hosts.push_back(k);
          else if (hosts->is_array())
            for (const auto& h : *hosts)
              if (h.is_string()) f.hosts.push_back(h.get<std::string>());
        }
      }
      auto summary = Render(idx, rule.finding->summary);
      f.summary = summary.ok() ? *summary : summary.status().message();
      if (f.summary.empty()) f.summary = rule.description;
      if (f.status == "fired" && rule.finding->suppress) {
        auto sup = Suppressed(idx, *rule.finding->suppress);
        const std::set<std::string> quiet_hosts = sup.ok() ? sup->QuietHosts() : std::set<std::string>{};
        if (!sup.ok()) {
          // It still fired; say why it could not be checked against the windows.
          f.summary += " (suppression not judged: " + sup.status().message() + ")";
        } else if (sup->All()) {
          f.status = "suppressed";
          f.summary += " (suppressed: " + sup->reason + ")";
        } else if (!quiet_hosts.empty()) {
          // Only some hosts' evidence is explained by the windows: the finding fires for the others.
          std::vector<std::string> kept;
          for (const auto& h : f.hosts)
            if (!quiet_hosts.count(h.substr(0, h.find('/')))) kept.push_back(h);
          f.hosts = std::move(kept);
          std::string names;
          for (const auto& h : quiet_hosts) names += (names.empty() ? "" : ", ") + h;
          f.summary += " (not counted on " + names + ": " + sup->reason + ")";
        }
      }
      f.evidence = FindingEvidence(idx);
      result_.findings.push_back(std::move(f));
    }
    // One candidate per playbook: its first fired verdict in precedence order.
    int order = 0;
    for (const auto* pb : graph_.playbooks()) {
      for (const auto& rule_id : pb->precedence) {
        int idx = graph_.IndexOf(pb->id + "/" + rule_id);
        auto it = fired_.find(idx);
        if (it == fired_.end()) continue;
        it->second.playbook_order = order;
        result_.candidates.push_back(it->second);
        break;
      }
      ++order;
    }
  }

  const CompiledGraph& graph_;
  const EvaluationContext& ctx_;
  EvaluationResult result_;
  json thresholds_;
  std::map<std::string, json> params_;
  std::map<std::string, json> windows_;
  std::map<std::string, std::map<std::string, std::string>> window_problems_;
  std::map<int, verdict::Candidate> fired_;
  std::map<int, std::string> suppressed_;   // verdict node -> why it did not fire
  std::map<int, json> common_views_;
};

}  // namespace

std::string HostOfSeries(const Labels& labels, const json& instance_hosts) {
  auto get = [&](const char* k) {
    auto it = labels.find(k);
    return it == labels.end() ? std::string() : it->second;
  };
  std::string host = get("host");
  if (!host.empty()) return host;
  std::string instance = get("instance");
  if (!instance.empty()) {
    std::string mapped = Lookup(instance_hosts, instance);
    if (!mapped.empty()) return mapped;
    std::string bare = StripPort(instance);
    mapped = Lookup(instance_hosts, bare);
    if (!mapped.empty()) return mapped;
    if (!bare.empty() && bare != "localhost" && bare != "127.0.0.1") return bare;
  }
  std::string ip = get("ip");
  if (!ip.empty()) {
    std::string mapped = Lookup(instance_hosts, ip);
    return mapped.empty() ? ip : mapped;
  }
  return "";
}

json ResolveParams(const playbook::PlaybookSpec* pb, const EvaluationContext& ctx, const json& thresholds,
                   std::map<std::string, std::string>* problems) {
  json out = json::object();
  if (!pb) return out;
  for (const auto& [name, p] : pb->params) {
    if (!p.expr.present()) {
      out[name] = p.literal;
      continue;
    }
    auto v = playbook::EvalExpr(*p.expr.ast, [&](const std::string& root) -> const Value* {
      if (root == "facts") return &ctx.facts;
      if (root == "baseline") return ctx.baseline_facts.is_null() ? nullptr : &ctx.baseline_facts;
      if (root == "discovery") return ctx.discovery.is_null() ? nullptr : &ctx.discovery;
      if (root == "baseline_discovery") return ctx.baseline_discovery.is_null() ? nullptr : &ctx.baseline_discovery;
      if (root == "thresholds") return &thresholds;
      return nullptr;
    });
    if (v.ok()) out[name] = *v;
    else (*problems)["params." + name] = v.status().message();
  }
  return out;
}

json ResolveWindows(const playbook::Library& library, const playbook::PlaybookSpec* pb, const EvaluationContext& ctx,
                    const json& params,
                    const json& thresholds, std::map<std::string, std::string>* problems) {
  json out = json::object();
  auto range_of = [](const json& discovery) -> json {
    if (discovery.is_object() && discovery.contains("range") && discovery["range"].is_object()) {
      const json& r = discovery["range"];
      if (r.contains("start") && r.contains("end") && r["start"].is_number() && r["end"].is_number())
        return {{"start", r["start"]}, {"end", r["end"]}};
    }
    if (discovery.is_object() && discovery.contains("step_times") && discovery["step_times"].is_array() &&
        !discovery["step_times"].empty()) {
      double lo = 1e300, hi = -1e300;
      for (const auto& p : discovery["step_times"])
        if (p.is_array() && p.size() >= 2 && p[1].is_number()) {
          lo = std::min(lo, p[1].get<double>());
          hi = std::max(hi, p[1].get<double>());
        }
      if (lo <= hi) return {{"start", lo}, {"end", hi}};
    }
    return json();
  };
  json job = range_of(ctx.discovery);
  if (!job.is_null()) out["job"] = job;
  else (*problems)["job"] = "the TSDB time range is unknown (" +
                            (ctx.discovery_failure.empty() ? std::string("no discovery") : ctx.discovery_failure) + ")";
  json base = range_of(ctx.baseline_discovery);
  if (!base.is_null()) out["baseline_job"] = base;
  else (*problems)["baseline_job"] = "no baseline TSDB";
  auto resolve_in = [&](const json& params) {
    return [&ctx, &thresholds, &out, &params](const std::string& root) -> const Value* {
      if (root == "facts") return &ctx.facts;
      if (root == "baseline") return ctx.baseline_facts.is_null() ? nullptr : &ctx.baseline_facts;
      if (root == "discovery") return ctx.discovery.is_null() ? nullptr : &ctx.discovery;
      if (root == "baseline_discovery") return ctx.baseline_discovery.is_null() ? nullptr : &ctx.baseline_discovery;
      if (root == "params") return &params;
      if (root == "thresholds") return &thresholds;
      if (root == "windows") return &out;
      return nullptr;
    };
  };
  auto resolve_window = [&](const playbook::WindowSpec& w, const playbook::NameResolver& resolve) {
    auto missing = [&](const std::string& why) { (*problems)[w.name] = w.unavailable.empty() ? why : w.unavailable; };
    if (w.is_list()) {
      auto l = playbook::EvalExpr(*w.list.ast, resolve);
      if (!l.ok()) return missing(l.status().message());
      out[w.name] = l->is_array() ? *l : json::array();
      return;
    }
    auto s = w.start.present() ? playbook::EvalExpr(*w.start.ast, resolve) : StatusOr<json>(json());
    auto e = w.end.present() ? playbook::EvalExpr(*w.end.ast, resolve) : StatusOr<json>(json());
    if (!s.ok() || !e.ok()) return missing(!s.ok() ? s.status().message() : e.status().message());
    if (!s->is_number() || !e->is_number())
      return missing("start/end are not known for this job (" + w.start.source + " .. " + w.end.source + ")");
    if (s->get<double>() > e->get<double>()) return missing("start is after end");
    out[w.name] = {{"start", *s}, {"end", *e}};
  };
  const json no_params = json::object();
  for (const auto& w : library.shared_windows) resolve_window(w, resolve_in(no_params));
  if (!pb) return out;
  for (const auto& [name, w] : pb->windows) resolve_window(w, resolve_in(params));
  return out;
}

EvaluationResult Evaluate(const CompiledGraph& graph, const EvaluationContext& ctx) {
  Evaluator ev(graph, ctx);
  return ev.Run();
}

}  // namespace diagnose::dag
