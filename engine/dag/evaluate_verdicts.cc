// Verdicts (when, confidence, exclusions, suppression, fallbacks) and the findings the report lists.
#include <functional>

#include "engine/dag/evaluator.h"

namespace diagnose::dag::internal {

void Evaluator::EvaluateVerdict(int idx) {
  const auto& node = graph_.nodes()[idx];
  const auto& v = node.rule->verdict;
  auto& out = result_.nodes[idx];
  // A fallback stands in only for verdicts that could not be judged.
  for (const auto& primary : node.rule->fallback_primaries) {
    int p = graph_.IndexOf(primary);
    if (p >= 0 && result_.nodes[p].health == NodeHealth::kOk) {
      out.health = NodeHealth::kOk;
      out.value = {{"fired", false}, {"hosts", json::array()}, {"confidence", nullptr}, {"fallback_unused", primary}};
      return;
    }
  }
  auto when = Eval(idx, v.when);
  if (!when.ok()) return Fail(idx, NodeHealth::kError, when.status().message());
  bool fired = playbook::Truthy(*when);
  json value = {{"fired", fired}, {"hosts", json::array()}, {"confidence", nullptr}};
  out.health = NodeHealth::kOk;
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
    if (!ok.ok()) return Fail(idx, NodeHealth::kError, ok.status().message());
    if (playbook::Truthy(*ok)) {
      c.confidence = level.level;
      break;
    }
    c.confidence = Confidence::kPossible;
  }
  auto summary = Render(idx, v.summary);
  if (!summary.ok()) return Fail(idx, NodeHealth::kError, summary.status().message());
  c.summary = *summary;
  if (v.hosts.present()) {
    auto hosts = Eval(idx, v.hosts);
    if (!hosts.ok()) return Fail(idx, NodeHealth::kError, hosts.status().message());
    for (const auto& h : *hosts)
      if (h.is_string()) c.hosts.push_back(h.get<std::string>());
  }
  if (v.onset.present()) {
    // An onset that cannot be placed (what it reads was skipped) leaves the cause unordered in
    // time; the verdict itself stands on its other rules.
    auto onset = Eval(idx, v.onset);
    if (onset.ok() && onset->is_number()) c.onset = onset->get<double>();
  }
  std::map<std::string, Exclusion> exclude;
  // A host named "" comes from series without a host label (or an endpoint's odd answer): no
  // scheduler can exclude it, so it is dropped and the report says so instead.
  int unnamed_exclusions = 0;
  for (const auto& ex : v.exclude) {
    auto hosts = Eval(idx, ex.hosts);
    if (!hosts.ok()) return Fail(idx, NodeHealth::kError, hosts.status().message());
    json list = hosts->is_object() ? json(json::array()) : *hosts;
    if (hosts->is_object())
      for (const auto& [k, x] : hosts->items()) list.push_back(k);
    if (!list.is_array()) continue;
    for (const auto& h : list) {
      if (!h.is_string()) continue;
      std::string host = h.get<std::string>();
      if (host.empty()) {
        ++unnamed_exclusions;
        continue;
      }
      auto reason = Render(idx, ex.reason, &h);
      if (!reason.ok()) return Fail(idx, NodeHealth::kError, reason.status().message());
      auto it = exclude.find(host);
      // A host named by several entries keeps its highest priority (lowest number).
      if (it == exclude.end() || ex.priority < it->second.priority) exclude[host] = {host, ex.priority, *reason};
    }
  }
  for (auto& [h, e] : exclude) c.exclude.push_back(e);
  if (unnamed_exclusions > 0) {
    c.notes.push_back("dropped " + std::to_string(unnamed_exclusions) +
                      " exclusion(s) naming an empty host: the series behind them carry no host label");
  }
  for (const auto& [k, t] : v.changes) {
    auto s = Render(idx, t);
    if (!s.ok()) return Fail(idx, NodeHealth::kError, s.status().message());
    c.changes[k] = *s;
  }
  for (const auto& note : v.notes) {
    if (note.when.present()) {
      auto say = Eval(idx, note.when);
      if (!say.ok()) return Fail(idx, NodeHealth::kError, say.status().message());
      if (!playbook::Truthy(*say)) continue;
    }
    auto s = Render(idx, note.text);
    if (!s.ok()) return Fail(idx, NodeHealth::kError, s.status().message());
    if (!s->empty()) c.notes.push_back(*s);
  }
  value["hosts"] = c.hosts;
  value["confidence"] = c.confidence;
  out.value = std::move(value);
  fired_[idx] = std::move(c);
}

StatusOr<Evaluator::Suppression> Evaluator::Suppressed(int idx, const playbook::SuppressSpec& spec) {
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
std::vector<Evidence> Evaluator::FindingEvidence(int idx) {
  std::vector<Evidence> ev;
  std::set<std::string> seen;
  auto add = [&](const Evidence& e) {
    std::string key = std::string(ToString(e.kind)) + '\x1f' + e.query + '\x1f' + e.text + '\x1f' + std::string(ToString(e.role));
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
            if (e.kind == EvidenceKind::kPromql) add(e);
        }
    frontier = std::move(next);
  }
  return ev;
}

void Evaluator::BuildFindings() {
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
    if (out.health == NodeHealth::kOk && DeadlinePassed())
      Fail(idx, NodeHealth::kSkipped, "the run's deadline (--deadline) passed before its finding was judged");
    if (out.health != NodeHealth::kOk) {
      f.status = out.health == NodeHealth::kSkipped ? FindingStatus::kSkipped : FindingStatus::kError;
      f.summary = (out.health == NodeHealth::kSkipped ? "insufficient evidence: " : "could not evaluate: ") + out.reason;
      result_.findings.push_back(std::move(f));
      continue;
    }
    if (is_verdict) {
      bool fired = out.value.value("fired", false);
      f.status = fired ? FindingStatus::kFired : FindingStatus::kClear;
      if (auto s = suppressed_.find(idx); s != suppressed_.end()) {
        f.status = FindingStatus::kSuppressed;
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
        f.summary = DescriptionOf(idx, rule);
      }
      f.evidence = FindingEvidence(idx);
      result_.findings.push_back(std::move(f));
      continue;
    }
    auto when = Eval(idx, rule.finding->when);
    if (!when.ok()) {
      f.status = FindingStatus::kError;
      f.summary = when.status().message();
      result_.findings.push_back(std::move(f));
      continue;
    }
    f.status = playbook::Truthy(*when) ? FindingStatus::kFired : FindingStatus::kClear;
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
    // A summary is written for the finding firing; clear, with a hole where its hosts would be,
    // it would be a false sentence ("OOM killer fired on  during the job"): say what was checked.
    bool hole = false;
    auto summary = Render(idx, rule.finding->summary, nullptr, &hole);
    f.summary = summary.ok() ? *summary : summary.status().message();
    if (f.summary.empty() || (f.status == FindingStatus::kClear && hole)) f.summary = DescriptionOf(idx, rule);
    if (f.status == FindingStatus::kFired && rule.finding->suppress) {
      auto sup = Suppressed(idx, *rule.finding->suppress);
      const std::set<std::string> quiet_hosts = sup.ok() ? sup->QuietHosts() : std::set<std::string>{};
      if (!sup.ok()) {
        // It still fired; say why it could not be checked against the windows.
        f.summary += " (suppression not judged: " + sup.status().message() + ")";
      } else if (sup->All()) {
        f.status = FindingStatus::kSuppressed;
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

}  // namespace diagnose::dag::internal
