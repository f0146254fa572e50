#include "engine/fleet/fleet_record.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/core/iso_time.h"
#include "engine/tsdb/job_scoped_client.h"
#include "engine/tsdb/promql_escape.h"

namespace diagnose {

namespace {

// Label values are for people reading a record, and a store indexes every distinct one.
std::string Bounded(std::string text, size_t max_bytes = 240) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;   // not inside a UTF-8 sequence
  return text.substr(0, cut) + "…";
}

std::string Get(const Labels& labels, const std::string& key) {
  auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

}  // namespace

std::vector<Series> VerdictRecordSeries(const Report& report, double at) {
  std::vector<Series> out;
  const JobEntry* subject = nullptr;
  for (const auto& job : report.jobs)
    if (job.role == JobRole::kSubject) subject = &job;
  if (!subject) return out;
  // The value is the job's end too, so last_over_time() gives it back on any PromQL engine.
  const Sample sample{at, at};
  Series job_series;
  job_series.labels = {{"__name__", kJobVerdictMetric},
                       {"status", std::string(ToString(subject->status))},
                       {"failure_class", subject->failure_class},
                       {"root_cause", ActedOnRootCause(report)},
                       {"confidence", std::string(ToString(report.verdict.confidence))},
                       {"action", std::string(ToString(report.decision.action))}};
  job_series.samples = {sample};
  out.push_back(std::move(job_series));

  std::map<std::string, std::set<std::string>> named_by;
  for (const auto& f : report.findings)
    if (f.status == FindingStatus::kFired)
      for (const auto& h : f.hosts) named_by[h].insert(f.id);
  std::set<std::string> hosts(subject->hosts.begin(), subject->hosts.end());
  for (const auto& x : report.decision.exclude) hosts.insert(x.host);
  for (const auto& host : hosts) {
    Series s;
    s.labels = {{"__name__", kHostVerdictMetric}, {"host", host}, {"root_cause", ActedOnRootCause(report)}};
    auto excluded = std::find_if(report.decision.exclude.begin(), report.decision.exclude.end(),
                                 [&](const Exclusion& x) { return x.host == host; });
    std::string findings;
    for (const auto& id : named_by[host]) findings += (findings.empty() ? "" : ",") + id;
    if (excluded != report.decision.exclude.end()) {
      s.labels["state"] = "excluded";
      s.labels["priority"] = std::to_string(excluded->priority);
      s.labels["reason"] = Bounded(excluded->reason);
    } else {
      s.labels["state"] = findings.empty() ? "clean" : "named";
    }
    if (!findings.empty()) s.labels["findings"] = Bounded(findings);
    s.samples = {sample};
    out.push_back(std::move(s));
  }
  return out;
}

FleetNodes BuildFleetNodes(const std::vector<Series>& host_records, const std::string& job_label,
                           int repeat_threshold) {
  FleetNodes table;
  table.job_label = job_label;
  table.repeat_threshold = std::max(1, repeat_threshold);
  std::map<std::string, FleetHost> by_host;
  std::set<std::string> jobs;
  for (const auto& s : host_records) {
    const std::string host = Get(s.labels, "host"), job = Get(s.labels, job_label);
    if (host.empty() || job.empty()) continue;
    HostJobRecord r;
    r.job = job;
    r.state = Get(s.labels, "state");
    r.reason = Get(s.labels, "reason");
    r.findings = Get(s.labels, "findings");
    r.root_cause = Get(s.labels, "root_cause");
    const std::string priority = Get(s.labels, "priority");
    r.priority = priority.empty() ? 0 : std::atoi(priority.c_str());
    if (!s.samples.empty() && std::isfinite(s.samples.back().v)) r.time = s.samples.back().v;
    jobs.insert(job);
    FleetHost& h = by_host[host];
    h.host = host;
    // One record per (host, job): a re-import writes the same series again.
    if (std::any_of(h.records.begin(), h.records.end(), [&](const HostJobRecord& x) { return x.job == job; })) continue;
    ++h.jobs;
    if (r.state == "excluded") ++h.excluded;
    if (r.state == "named") ++h.named;
    h.records.push_back(std::move(r));
  }
  table.jobs = static_cast<int>(jobs.size());
  for (auto& [name, h] : by_host) {
    std::sort(h.records.begin(), h.records.end(), [](const HostJobRecord& a, const HostJobRecord& b) {
      return a.time != b.time ? a.time > b.time : a.job > b.job;
    });
    table.hosts.push_back(std::move(h));
  }
  std::stable_sort(table.hosts.begin(), table.hosts.end(), [](const FleetHost& a, const FleetHost& b) {
    if (a.excluded != b.excluded) return a.excluded > b.excluded;
    return a.named > b.named;
  });
  for (const auto& h : table.hosts)
    if (h.excluded >= table.repeat_threshold) table.repeat_offenders.push_back(h.host);
  return table;
}

StatusOr<FleetNodes> ReadFleetNodes(QueryClient& store, const std::string& job_label, TimeRange window,
                                    int repeat_threshold) {
  auto result = store.Run(Query::Instant("last_over_time(" + std::string(kHostVerdictMetric) + "[" +
                                             PromqlSeconds(window.end - window.start) + "])",
                                         window.end, "fleet:host-records"));
  if (!result.ok()) return result.status().WithContext("reading host records from " + store.Describe());
  FleetNodes table = BuildFleetNodes(result->series, job_label, repeat_threshold);
  table.store = store.Describe();
  table.window = window;
  if (table.jobs == 0) {
    return NotFoundError("no " + std::string(kHostVerdictMetric) + " records with a " + job_label + " label on " +
                         store.Describe() + " between " + IsoUtc(window.start) + " and " +
                         IsoUtc(window.end) +
                         ": records are written by `diagnose fleet import` (widen --since if the jobs are older)");
  }
  return table;
}

StatusOr<std::vector<std::string>> FleetRecordNotes(QueryClient& store, const std::string& job_label,
                                                    const std::string& job_id, const std::vector<std::string>& hosts,
                                                    const std::vector<std::string>& excluded, double at,
                                                    double lookback_seconds, int repeat_threshold) {
  std::vector<std::string> notes;
  std::set<std::string> all(hosts.begin(), hosts.end());
  all.insert(excluded.begin(), excluded.end());
  if (all.empty() || !(at > 0)) return notes;
  ASSIGN_OR_RETURN(std::string other_jobs, JobMatcher(job_label, job_id));
  other_jobs.replace(other_jobs.find('='), 1, "!=");
  const std::string selector = std::string(kHostVerdictMetric) + "{state=\"excluded\"," + other_jobs + ",host=~\"" +
                               PromqlAlternation(std::vector<std::string>(all.begin(), all.end())) + "\"}";
  auto result = store.Run(Query::Instant("last_over_time(" + selector + "[" + PromqlSeconds(lookback_seconds) + "])", at,
                                         "fleet:earlier-exclusions"));
  if (!result.ok()) return result.status().WithContext("reading earlier jobs' records on " + store.Describe());
  const FleetNodes table = BuildFleetNodes(result->series, job_label, repeat_threshold);
  const std::set<std::string> now_excluded(excluded.begin(), excluded.end());
  const std::string days = std::to_string(static_cast<int64_t>(std::lround(lookback_seconds / 86400)));
  for (const auto& h : table.hosts) {
    if (h.excluded == 0) continue;
    std::string jobs;
    for (const auto& r : h.records)
      jobs += (jobs.empty() ? "" : ", ") + r.job + " (" + r.root_cause + ")";
    const std::string record = std::to_string(h.excluded) + " earlier job(s) in this store within " + days +
                               " days: " + jobs + " [" + std::string(kHostVerdictMetric) + "]";
    if (now_excluded.count(h.host)) {
      notes.push_back("fleet record: " + h.host + " was also excluded in " + record);
    } else if (h.excluded >= table.repeat_threshold) {
      notes.push_back("fleet record: " + h.host + " is not excluded by this job's evidence but was excluded in " +
                      record + "; consider taking it out of the pool");
    }
  }
  return notes;
}

}  // namespace diagnose
