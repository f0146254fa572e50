#include "engine/report/report.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <utility>

#include "engine/core/utf8.h"

namespace diagnose {

namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 19> kRootCauseDomains{{
    {"none", "none"},
    {"rdma-link-degradation", "network"},
    // Extension: congestion notifications held on most hosts as TGS fell, no broken link.
    {"fabric-congestion", "network"},
    {"heartbeat-false-positive", "software"},
    {"rccl-hang", "network"},
    {"restore-thread-leak", "software"},
    {"moe-routing-shift", "training"},
    // Extension: loss divergence, non-finite loss or grad-norm spikes through clipping.
    {"training-instability", "training"},
    {"host-oom", "host"},
    {"gpu-oom", "gpu"},
    {"gpu-hardware-fault", "gpu"},
    {"thermal-throttle", "gpu"},
    {"checkpoint-io-stall", "host"},
    // Extension: CPU run-queue or I/O pressure on a few hosts that rose with the slowdown.
    {"host-contention", "host"},
    {"observability-gap", "observability"},
    {"config-error", "config"},
    {"infrastructure-failure", "infrastructure"},
    // Extension (issue 33): slower than the baseline with no system cause; the profile shows where.
    {"kernel-time-regression", "software"},
    {"unknown", "none"},
}};

template <size_t N>
bool OneOf(const std::string& v, const std::array<std::string_view, N>& set) {
  for (auto s : set)
    if (v == s) return true;
  return false;
}

}  // namespace

bool IsKnownRootCause(const std::string& id) {
  for (const auto& [cause, domain] : kRootCauseDomains)
    if (id == cause) return true;
  return false;
}

std::string DomainOfRootCause(const std::string& root_cause) {
  for (const auto& [cause, domain] : kRootCauseDomains)
    if (root_cause == cause) return std::string(domain);
  return "none";
}

bool IsKnownDomain(const std::string& id) {
  static constexpr std::array<std::string_view, 9> kDomains{
      "network", "gpu", "host", "software", "training", "observability", "infrastructure", "config", "none"};
  return OneOf(id, kDomains);
}

bool IsKnownConfidence(const std::string& id) { return ParseConfidence(id).has_value(); }

bool IsKnownJobStatus(const std::string& id) { return ParseJobStatus(id).has_value(); }

nlohmann::json ToJson(const Evidence& e) {
  nlohmann::json j{{"kind", e.kind}, {"query", e.query}};
  if (e.window) j["window"] = {{"start", e.window->start}, {"end", e.window->end}};
  j["value"] = e.value;
  j["text"] = e.text;
  if (e.role == JobRole::kBaseline) j["role"] = e.role;
  return j;
}

nlohmann::json ToJson(const Finding& f) {
  nlohmann::json evidence = nlohmann::json::array();
  for (const auto& e : f.evidence) evidence.push_back(ToJson(e));
  nlohmann::json j{{"id", f.id}, {"playbook", f.playbook}, {"status", f.status},
                   {"hosts", f.hosts}, {"evidence", std::move(evidence)}};
  if (!f.summary.empty()) j["summary"] = f.summary;
  if (f.onset) j["onset"] = *f.onset;
  return j;
}

std::string SlurmExcludeList(const Decision& decision) { return SlurmExcludeList(decision.exclude); }

namespace {

bool PlainHostName(const std::string& host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

}  // namespace

std::string SlurmExcludeList(const std::vector<Exclusion>& exclude) {
  std::string out;
  for (const auto& x : exclude) {
    if (!PlainHostName(x.host)) continue;
    if (!out.empty()) out += ',';
    out += x.host;
  }
  return out;
}

std::string SlurmExcludeOmissionNote(const std::vector<Exclusion>& exclude) {
  std::string left_out;
  for (const auto& x : exclude)
    if (!PlainHostName(x.host)) left_out += (left_out.empty() ? "'" : ", '") + OneLine(x.host) + "'";
  if (left_out.empty()) return "";
  return "excluded but left out of slurm_exclude: " + left_out +
         " (a host name with anything but letters, digits, '-', '_' and '.' would mean something else to "
         "sbatch --exclude or a shell; exclude it by hand once its real name is known)";
}

nlohmann::json TypedChanges(const std::map<std::string, std::string>& changes) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, text] : changes) {
    const char* begin = text.data();
    const char* end = begin + text.size();
    int64_t integer = 0;
    double real = 0;
    if (auto [at, ec] = std::from_chars(begin, end, integer); ec == std::errc() && at == end && !text.empty()) {
      out[key] = integer;
    } else if (auto [at2, ec2] = std::from_chars(begin, end, real); ec2 == std::errc() && at2 == end &&
               !text.empty() && std::isfinite(real)) {
      out[key] = real;
    } else if (text == "true" || text == "false") {
      out[key] = text == "true";
    } else {
      out[key] = text;
    }
  }
  return out;
}

const ActionOverride* DecidingLimit(const Decision& decision) {
  if (decision.overrides.empty()) return nullptr;
  const ActionOverride& last = decision.overrides.back();
  return !last.limit.empty() && last.to == decision.action ? &last : nullptr;
}

std::string PolicyStepText(const ActionOverride& step) {
  return step.limit.empty() ? step.reason : step.reason + " [" + step.limit + "]";
}

std::string PolicyLine(const Decision& decision) {
  if (decision.in_sweep)
    return "in a sweep this would be " + std::string(ToString(decision.in_sweep->to)) + ": " +
           PolicyStepText(*decision.in_sweep);
  if (const ActionOverride* limit = DecidingLimit(decision))
    return std::string(ToString(limit->to)) + " by the sweep policy (the diagnosis alone: " +
           std::string(ToString(limit->from)) + "): " + PolicyStepText(*limit);
  return "";
}

namespace {

nlohmann::json OverrideJson(const ActionOverride& o) {
  nlohmann::json entry{{"from", ToString(o.from)}, {"to", ToString(o.to)}, {"reason", o.reason}};
  if (!o.rule.empty()) entry["rule"] = o.rule;
  if (!o.limit.empty()) entry["limit"] = o.limit;
  return entry;
}

}  // namespace

nlohmann::json ToJson(const Decision& d) {
  nlohmann::json overrides = nlohmann::json::array();
  for (const auto& o : d.overrides) overrides.push_back(OverrideJson(o));
  nlohmann::json out{{"action", ToString(d.action)},
                     {"exclude", d.exclude},
                     {"slurm_exclude", SlurmExcludeList(d)},
                     {"changes", d.changes},
                     {"changes_typed", TypedChanges(d.changes)},
                     {"notes", d.notes},
                     {"overrides", overrides}};
  if (!d.root_cause.empty()) out["root_cause"] = d.root_cause;
  if (d.in_sweep) out["in_sweep"] = OverrideJson(*d.in_sweep);
  return out;
}

nlohmann::json ToJson(const Report& r) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& job : r.jobs) {
    nlohmann::json steps{{"first", job.first_step}, {"last", job.last_step}, {"total", job.total_steps}};
    jobs.push_back({{"id", job.id}, {"role", job.role}, {"dir", job.dir}, {"status", job.status},
                    {"failure_class", job.failure_class}, {"hosts", job.hosts}, {"steps", steps}});
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : r.findings) findings.push_back(ToJson(f));
  nlohmann::json tsdb = nlohmann::json::array();
  for (const auto& t : r.tsdb) {
    nlohmann::json entry{{"mode", ToString(t.mode)}, {"source", t.source}, {"state", ToString(t.state)},
                         {"reason", t.reason},       {"discovery", t.discovery}, {"gaps", t.gaps}};
    if (!t.window.empty()) entry["window"] = t.window;
    if (!t.scope.empty()) entry["scope"] = t.scope;
    if (t.clock_skew_seconds > 0) {
      entry["clock_skew_seconds"] = t.clock_skew_seconds;
      entry["notes"] = t.notes;
    }
    tsdb.push_back(std::move(entry));
  }
  nlohmann::json out{
      {"schema", "diagnose/v1"},
      {"jobs", std::move(jobs)},
      {"verdict",
       {{"root_cause", r.verdict.root_cause}, {"domain", r.verdict.domain},
        {"confidence", r.verdict.confidence}, {"summary", r.verdict.summary},
        {"source", r.verdict.source}}},
      {"findings", std::move(findings)},
      {"decision", ToJson(r.decision)},
      {"tsdb", std::move(tsdb)},
      {"causal_chain", r.causal_chain},
      {"not_evaluated", r.not_evaluated},
  };
  if (!r.verdict.refuted.empty()) out["verdict"]["refuted"] = r.verdict.refuted;
  if (!r.verdict.runner_up.empty()) out["verdict"]["runner_up"] = r.verdict.runner_up;
  if (!r.verdict.finding.empty()) out["verdict"]["finding"] = r.verdict.finding;
  if (!r.facts.empty()) out["facts"] = r.facts;
  if (!r.timings.is_null()) out["timings"] = r.timings;
  if (!r.profile.is_null()) out["profile"] = r.profile;
  if (r.incomplete) out["incomplete"] = *r.incomplete;
  return out;
}

const std::string& ActedOnRootCause(const Report& report) {
  return report.decision.root_cause.empty() ? report.verdict.root_cause : report.decision.root_cause;
}

const JobFacts* FactsOf(const Report& report, const std::string& id) {
  auto it = report.facts.find(id);
  return it == report.facts.end() ? nullptr : &it->second;
}

const JobFacts* SubjectFacts(const Report& report) {
  if (report.jobs.empty()) return nullptr;
  std::string id = report.jobs.front().id;
  for (const auto& job : report.jobs)
    if (job.role == JobRole::kSubject) id = job.id;
  return FactsOf(report, id);
}

}  // namespace diagnose
