#include "engine/dag/expression_roots.h"

#include <algorithm>

#include "engine/playbook/expr.h"

namespace diagnose::dag {
namespace {

using nlohmann::json;

const json* OrNull(const json& v) { return v.is_null() ? nullptr : &v; }

json RangeOf(const json& discovery) {
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
}

// Windows are resolved in order, each seeing those before it through `roots.windows` (== out).
void ResolveWindow(const playbook::WindowSpec& w, const ExpressionRoots& roots, Resolved* resolved) {
  json* out = &resolved->values;
  auto resolve = [&roots](const std::string& root) -> const json* { return roots.Find(root).value_or(nullptr); };
  auto missing = [&](const std::string& why) { resolved->missing[w.name] = w.unavailable.empty() ? why : w.unavailable; };
  if (w.is_list()) {
    auto l = playbook::EvalExpr(*w.list.ast, resolve);
    if (!l.ok()) return missing(l.status().message());
    (*out)[w.name] = l->is_array() ? *l : json::array();
    return;
  }
  auto s = w.start.present() ? playbook::EvalExpr(*w.start.ast, resolve) : StatusOr<json>(json());
  auto e = w.end.present() ? playbook::EvalExpr(*w.end.ast, resolve) : StatusOr<json>(json());
  if (!s.ok() || !e.ok()) return missing(!s.ok() ? s.status().message() : e.status().message());
  if (!s->is_number() || !e->is_number())
    return missing("start/end are not known for this job (" + w.start.source + " .. " + w.end.source + ")");
  if (s->get<double>() > e->get<double>()) return missing("start is after end");
  (*out)[w.name] = {{"start", *s}, {"end", *e}};
}

}  // namespace

std::optional<const json*> ExpressionRoots::Find(const std::string& root) const {
  if (root == "facts") return context ? &context->facts : nullptr;
  if (root == "baseline") return context ? OrNull(context->baseline_facts) : nullptr;
  if (root == "discovery") return context ? OrNull(context->discovery) : nullptr;
  if (root == "baseline_discovery") return context ? OrNull(context->baseline_discovery) : nullptr;
  if (root == "thresholds") return thresholds;
  if (root == "params") return params;
  if (root == "windows") return windows;
  if (root == "host") return host;
  return std::nullopt;
}

Resolved ResolveParams(const playbook::PlaybookSpec& pb, const EvaluationContext& ctx, const json& thresholds) {
  Resolved out;
  const ExpressionRoots roots{&ctx, &thresholds};
  for (const auto& [name, p] : pb.params) {
    if (!p.expr.present()) {
      out.values[name] = p.literal;
      continue;
    }
    auto v = playbook::EvalExpr(*p.expr.ast,
                                [&roots](const std::string& root) { return roots.Find(root).value_or(nullptr); });
    if (v.ok()) out.values[name] = *v;
    else out.missing["params." + name] = v.status().message();
  }
  return out;
}

Resolved ResolveSharedWindows(const playbook::Library& library, const EvaluationContext& ctx, const json& thresholds) {
  Resolved out;
  json job = RangeOf(ctx.discovery);
  if (!job.is_null()) out.values["job"] = job;
  else out.missing["job"] = "the TSDB time range is unknown (" +
                            (ctx.discovery_failure.empty() ? std::string("no discovery") : ctx.discovery_failure) + ")";
  json base = RangeOf(ctx.baseline_discovery);
  if (!base.is_null()) out.values["baseline_job"] = base;
  else out.missing["baseline_job"] = "no baseline TSDB";
  const json no_params = json::object();
  const ExpressionRoots roots{&ctx, &thresholds, &no_params, &out.values};
  for (const auto& w : library.shared_windows) ResolveWindow(w, roots, &out);
  return out;
}

Resolved ResolvePlaybookWindows(const playbook::PlaybookSpec& pb, const EvaluationContext& ctx, const json& params,
                                const json& thresholds, const Resolved& shared_windows) {
  Resolved out = shared_windows;
  const ExpressionRoots roots{&ctx, &thresholds, &params, &out.values};
  for (const auto& [name, w] : pb.windows) ResolveWindow(w, roots, &out);
  return out;
}

}  // namespace diagnose::dag
