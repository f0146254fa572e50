#include "engine/report/first_screen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string_view>

#include "engine/core/iso_time.h"
#include "engine/core/text.h"
#include "engine/core/utf8.h"

namespace diagnose {

namespace {

constexpr size_t kLineChars = 160;   // one terminal line on a wide screen; the rest is in --verbose

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, std::fabs(v) >= 100 ? "%.0f" : "%.3g", v);
  return buf;
}

// "2026-02-24T19:21:00Z (log 0224 19:21:00.000000)": UTC for comparing, the stamp for grepping.
std::string LogTimeText(const LogTime& t) {
  const std::string iso = IsoOf(t);
  if (iso.empty()) return t.text;
  return t.text.empty() || t.text == iso ? iso : iso + " (log " + t.text + ")";
}

std::string JobHeadline(const JobEntry& job, const JobFacts* facts) {
  std::string line = "job " + job.id + (job.role == JobRole::kBaseline ? " (baseline)" : "");
  if (facts != nullptr && !facts->header.model_name.empty()) line += ", " + facts->header.model_name;
  if (!job.hosts.empty()) line += ", " + std::to_string(job.hosts.size()) + (job.hosts.size() == 1 ? " host" : " hosts");
  line += ": " + std::string(ToString(job.status));
  if (!job.failure_class.empty()) line += " (" + job.failure_class + ")";
  line += ", steps " + OptionalInt(job.first_step) + ".." + OptionalInt(job.last_step);
  if (job.total_steps) line += " of " + std::to_string(*job.total_steps);
  return line;
}

void JobDetails(const JobEntry& job, const JobFacts* facts, std::vector<std::string>* out) {
  if (facts == nullptr) return;
  const std::string who = "job " + job.id + " ";
  const TgsAnalysis& tgs = facts->tgs;
  if (!tgs.pattern.empty() && tgs.pattern != "insufficient-data") {
    std::string line = who + "TGS " + tgs.pattern;
    if (HealthyTgs(tgs) > 0)
      // Each figure names its window: a playbook comparing other steps (a median over the steps two
      // jobs share) then reads as another statistic, not as a disagreement.
      line += ": healthy " + FixedDecimal(HealthyTgs(tgs), 0) + (tgs.steady_tgs > 0 ? " (steps 5-14)" : " (best phase)") +
              ", last " + FixedDecimal(tgs.recent_tgs, 0) + " (last 10 steps) tokens/s/device";
    if (std::fabs(tgs.degradation_pct) >= 0.5) line += " (" + FixedDecimal(tgs.degradation_pct, 1) + "% lower)";
    if (tgs.degradation_onset_step) line += ", down from step " + std::to_string(*tgs.degradation_onset_step);
    if (tgs.phases.size() > 1) {
      std::vector<std::string> parts;
      for (const auto& ph : tgs.phases) {
        if (parts.size() == 6) {
          parts.push_back("+" + std::to_string(tgs.phases.size() - 6));
          break;
        }
        parts.push_back(std::to_string(ph.first_step) + "-" + std::to_string(ph.last_step) + " " +
                        FixedDecimal(ph.mean_tgs, 0));
      }
      line += "; phases " + JoinStrings(parts, " | ");
    }
    out->push_back(line);
  }
  const HeartbeatFacts& hb = facts->heartbeat;
  if (hb.present) {
    std::string line = who + "heartbeat timeout accused " + nlohmann::json(hb.accused_hosts).dump();
    if (hb.crash_time) line += ", killed at " + LogTimeText(*hb.crash_time);
    if (hb.heartbeat_stop_time) line += ", heartbeats stopped ~" + IsoOf(*hb.heartbeat_stop_time);
    out->push_back(line);
  }
}

// "chi2822 1876, chi2831 1540 (of 24)": the largest values first, the blamed hosts' among them.
std::string TopValues(const nlohmann::json& value, const std::vector<std::string>& hosts) {
  if (value.is_number()) return Number(value.get<double>());
  if (!value.is_object() || value.empty()) return "";
  std::vector<std::pair<double, std::string>> all;
  for (const auto& [k, v] : value.items())
    if (v.is_number()) all.emplace_back(v.get<double>(), k);
  std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
    auto blamed = [&](const std::string& key) {
      return std::find(hosts.begin(), hosts.end(), key.substr(0, key.find('/'))) != hosts.end();
    };
    if (blamed(a.second) != blamed(b.second)) return blamed(a.second);
    return a.first > b.first;
  });
  std::vector<std::string> parts;
  for (size_t i = 0; i < all.size() && i < 4; ++i) parts.push_back(all[i].second + " " + Number(all[i].first));
  std::string out = JoinStrings(parts, ", ");
  if (all.size() > parts.size()) out += " (of " + std::to_string(all.size()) + ")";
  return out;
}

bool NamesHosts(const Evidence& e, const std::vector<std::string>& hosts) {
  if (!e.value.is_object() || hosts.empty()) return false;
  for (const auto& [k, v] : e.value.items())
    if (std::find(hosts.begin(), hosts.end(), k.substr(0, k.find('/'))) != hosts.end()) return true;
  return false;
}

std::string FindingLine(const Finding& f) {
  std::string line = f.id;
  if (!f.hosts.empty()) {
    std::vector<std::string> shown(f.hosts.begin(), f.hosts.begin() + std::min<size_t>(f.hosts.size(), 4));
    line += " [" + JoinStrings(shown, ", ") + (f.hosts.size() > 4 ? ", +" + std::to_string(f.hosts.size() - 4) : "") + "]";
  }
  if (!f.summary.empty()) line += ": " + f.summary;
  return ValidUtf8(line, kLineChars, true);
}

}  // namespace

std::string IsoWindow(const TimeWindow& w) {
  const std::string a = IsoUtc(w.start), b = IsoUtc(w.end);
  if (a.empty() || b.empty()) return "";
  if (w.start == w.end) return "at " + a;
  return "over " + a + ".." + (a.substr(0, 11) == b.substr(0, 11) ? b.substr(11) : b);
}

namespace {

// Epoch seconds under a key that names an instant ("crash_time", "onset", "window_start").
bool IsInstant(const std::string& key, double value) {
  static constexpr std::string_view kTimeWords[] = {"time", "onset", "start", "end", "epoch", "_at"};
  const bool plausible = value >= 946684800.0 && value < 4102444800.0;   // 2000..2100
  if (!plausible) return false;
  for (std::string_view word : kTimeWords)
    if (key.find(word) != std::string::npos) return true;
  return false;
}

std::string FormatNumber(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (v == std::trunc(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  if (std::fabs(v) >= 100) return WithThousands(v);
  return FixedDecimal(v, std::fabs(v) >= 1 ? 1 : 3);
}

std::string FormatValueUnder(const std::string& key, const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number()) {
    const double v = value.get<double>();
    return IsInstant(key, v) ? IsoUtc(v) : FormatNumber(v);
  }
  std::vector<std::string> parts;
  if (value.is_object()) {
    for (const auto& [k, v] : value.items()) parts.push_back(k + " " + FormatValueUnder(k, v));
  } else {
    for (const auto& v : value) parts.push_back(FormatValueUnder(key, v));
  }
  return JoinStrings(parts, ", ");
}

}  // namespace

std::string FormatEvidenceValue(const nlohmann::json& value) { return FormatValueUnder("", value); }

std::optional<ScreenEvidence> StrongestEvidence(const Finding& f) {
  const Evidence* best = nullptr;
  auto pick = [&](auto&& pred) {
    if (best) return;
    for (const auto& e : f.evidence)
      if (pred(e)) {
        best = &e;
        return;
      }
  };
  auto answered = [](const Evidence& e) { return e.kind == EvidenceKind::kPromql && e.window && !e.value.is_null() && !e.value.empty(); };
  pick([&](const Evidence& e) { return e.kind == EvidenceKind::kPromql && NamesHosts(e, f.hosts); });
  // A series over a window shows the change; an instant lookup (the step at a time) only places it.
  pick([&](const Evidence& e) { return answered(e) && e.window->end > e.window->start && e.series; });
  pick(answered);
  pick([&](const Evidence& e) { return e.kind == EvidenceKind::kLog; });
  pick([&](const Evidence& e) { return e.kind == EvidenceKind::kPromql; });
  pick([&](const Evidence& e) { return e.kind == EvidenceKind::kDerived && !e.value.is_null(); });
  if (!best) return std::nullopt;
  ScreenEvidence out;
  if (best->kind == EvidenceKind::kPromql) {
    out.where = "promql " + ValidUtf8(best->query, 110, true);
    if (best->window) out.where += " " + IsoWindow(*best->window);
    out.detail = TopValues(best->value, f.hosts);
    if (out.detail.empty()) out.detail = "no series";
  } else if (best->kind == EvidenceKind::kLog) {
    out.where = "log " + best->query;
    out.detail = ValidUtf8(best->text, 140, true);
  } else {
    out.where = ValidUtf8(best->text.empty() ? best->query : best->text, 110, true);
    out.detail = ValidUtf8(FormatEvidenceValue(best->value), 120, true);
  }
  if (best->role == JobRole::kBaseline) out.where = "baseline " + out.where;
  return out;
}

FirstScreen BuildFirstScreen(const Report& r, size_t max_lines) {
  FirstScreen s;
  for (const auto& job : r.jobs) {
    s.jobs.push_back(JobHeadline(job, FactsOf(r, job.id)));
    JobDetails(job, FactsOf(r, job.id), &s.job_details);
  }
  for (const auto& line : r.profile_lines) s.job_details.push_back(ValidUtf8(line, kLineChars, true));
  // Caveats about the evidence itself (clocks that disagree, a TSDB that could not be read) stand
  // with the job, above the answer they qualify, whatever the note budget.
  std::set<std::string> caveats;
  for (const auto& t : r.tsdb)
    for (const auto& n : t.notes)
      if (caveats.insert(n).second) s.job_details.push_back("caveat: " + ValidUtf8(n, kLineChars, true));
  if (r.incomplete) s.incomplete = ValidUtf8(*r.incomplete, std::string::npos, true);   // an endpoint's words
  s.verdict = r.verdict.root_cause + " (" + r.verdict.domain + ", " + std::string(ToString(r.verdict.confidence)) + ")";
  s.summary = ValidUtf8(r.verdict.summary, 600, true);
  if (r.causal_chain.size() > 1) s.causal_chain = JoinStrings(r.causal_chain, " -> ");
  s.runner_up = ValidUtf8(r.verdict.runner_up, kLineChars, true);
  if (!r.verdict.refuted.empty()) s.refuted = JoinStrings(r.verdict.refuted, ", ");
  s.action = ToString(r.decision.action);
  s.policy = ValidUtf8(PolicyLine(r.decision), 2 * kLineChars, true);
  s.exclude = r.decision.exclude;
  s.slurm_exclude = SlurmExcludeList(r.decision);
  for (const auto& [k, v] : r.decision.changes) s.changes.push_back(k + "=" + v);

  // Why: the deciding finding, then the fired findings that justify each exclusion.
  std::set<std::string> excluded;
  for (const auto& x : r.decision.exclude) excluded.insert(x.host);
  std::vector<const Finding*> why;
  for (const auto& f : r.findings)
    if (f.id == r.verdict.finding && f.status == FindingStatus::kFired) why.push_back(&f);
  // A verdict the logs decided: the fired finding of the subject's failure class says why.
  if (why.empty() && !r.jobs.empty() && !r.jobs.front().failure_class.empty())
    for (const auto& f : r.findings)
      if (f.status == FindingStatus::kFired && f.id.size() > r.jobs.front().failure_class.size() &&
          f.id.ends_with("/" + r.jobs.front().failure_class)) {
        why.push_back(&f);
        break;
      }
  for (const auto& f : r.findings) {
    if (why.size() >= 3) break;
    if (f.status != FindingStatus::kFired || f.id == r.verdict.finding) continue;
    if (std::any_of(f.hosts.begin(), f.hosts.end(), [&](const std::string& h) { return excluded.count(h.substr(0, h.find('/'))) > 0; }))
      why.push_back(&f);
  }
  for (const auto* f : why)
    s.why.push_back({f->id, ValidUtf8(f->summary, 400, true), f->hosts, StrongestEvidence(*f)});

  for (const auto& f : r.findings) {
    if (f.status == FindingStatus::kClear) ++s.clear;
    else if (f.status == FindingStatus::kSkipped) ++s.skipped;
    else if (f.status == FindingStatus::kError) ++s.errors;
    else if (f.status == FindingStatus::kSuppressed) ++s.suppressed;
  }

  // Fit the lists into the line budget: the answer first, then notes, then the fired findings.
  size_t used = 2 + s.jobs.size() + s.job_details.size() + (s.incomplete ? 1 : 0);   // title, blank
  used += 3 + (s.causal_chain.empty() ? 0 : 1) + (s.runner_up.empty() ? 0 : 1) + (s.refuted.empty() ? 0 : 1);
  used += 3 + (s.policy.empty() ? 0 : 1) + s.exclude.size() + (s.slurm_exclude.empty() ? 0 : 1) + s.changes.size();
  for (const auto& w : s.why) used += 1 + (w.evidence ? 2 : 0);
  used += s.why.empty() ? 0 : 2;
  used += 4;   // findings header, blank, closing hint
  const size_t budget = used < max_lines ? max_lines - used : 0;
  const size_t note_budget = std::min<size_t>(budget / 2, 4);
  for (const auto& n : r.decision.notes) {
    if (caveats.count(n)) continue;
    if (s.notes.size() < note_budget) s.notes.push_back(ValidUtf8(n, kLineChars, true));
    else ++s.notes_hidden;
  }
  const size_t fired_budget = budget - s.notes.size() - (s.notes_hidden ? 1 : 0);
  std::vector<const Finding*> fired;
  for (const auto& f : r.findings)
    if (f.status == FindingStatus::kFired) fired.push_back(&f);
  s.fired_total = fired.size();
  std::set<const Finding*> explained(why.begin(), why.end());
  std::erase_if(fired, [&](const Finding* f) { return explained.count(f) > 0; });
  for (const auto* f : fired) {
    if (s.fired.size() + 1 < fired_budget || (s.fired.size() + 1 == fired_budget && fired.size() == fired_budget))
      s.fired.push_back(FindingLine(*f));
    else
      ++s.fired_hidden;
  }
  return s;
}

std::string FindingTally(const FirstScreen& s) {
  std::string out = std::to_string(s.fired_total) + " fired, " + std::to_string(s.clear) + " clear";
  if (s.suppressed) out += ", " + std::to_string(s.suppressed) + " suppressed";
  if (s.skipped) out += ", " + std::to_string(s.skipped) + " skipped (insufficient evidence)";
  if (s.errors) out += ", " + std::to_string(s.errors) + " could not be evaluated";
  return out;
}

}  // namespace diagnose
