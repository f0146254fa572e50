#include "tools/campaign/alert_score.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "tools/campaign/job_runs.h"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace diagnose::campaign {
namespace {

struct Firing {
  std::string alert, root_cause, host;
  double lead_seconds = 0;
};

struct Replayed {
  std::string error;
  std::set<std::string> covered_causes;   // root causes some alert warns of
  std::vector<Firing> firings;
};

Replayed Replay(const AlertScoreOptions& options, const JobTruth& truth, const fs::path& runs) {
  Replayed r;
  CommandRun run = RunJobCommand({options.diagnose_bin, "rules", "replay", truth.job_id, "--outputs",
                                  (fs::path(options.dir) / "outputs").string(), "--format", "json"},
                                 runs, truth.job_id, ".alerts.json", options.timeout_seconds);
  if (!run.status.ok()) {
    r.error = run.status.message();
    return r;
  }
  ordered_json j = ordered_json::parse(run.output, nullptr, false);
  try {
    for (const auto& a : j.at("alerts")) r.covered_causes.insert(a.at("root_cause").get<std::string>());
    for (const auto& f : j.at("firings")) {
      const auto& labels = f.at("labels");
      r.firings.push_back({f.at("alert").get<std::string>(), f.at("root_cause").get<std::string>(),
                           labels.value("host", labels.value("instance", "")), f.at("lead_seconds").get<double>()});
    }
  } catch (const nlohmann::json::exception& e) {
    r.error = std::string("replay output unreadable: ") + e.what();
  }
  return r;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

StatusOr<bool> ScoreAlerts(const AlertScoreOptions& options) {
  ASSIGN_OR_RETURN(ScoredJobs jobs, LoadScoredJobs(options.dir, "alerts"));
  const auto& truths = jobs.truths;
  std::vector<Replayed> replays(truths.size());
  ForEachParallel(truths.size(), options.parallel, [&](size_t i) { replays[i] = Replay(options, truths[i], jobs.runs); });

  struct KindRow {
    std::string class_name;   // warned-of | no-fault | not-covered
    int jobs = 0, alerted = 0, false_alarms = 0;
    std::vector<double> leads;
  };
  std::map<std::string, KindRow> kinds;
  std::vector<double> leads;
  int faulty = 0, faulty_alerted = 0, quiet_jobs = 0, quiet_alarmed = 0, errors = 0;
  ordered_json job_rows = ordered_json::array();
  std::vector<std::string> problems;
  for (size_t i = 0; i < truths.size(); ++i) {
    const JobTruth& t = truths[i];
    const Replayed& r = replays[i];
    KindRow& row = kinds[t.kind];
    ++row.jobs;
    ordered_json job = {{"job_id", t.job_id}, {"kind", t.kind}, {"root_cause", t.root_cause}};
    if (!r.error.empty()) {
      ++errors;
      problems.push_back(t.job_id + " (" + t.kind + "): " + r.error);
      job["error"] = r.error;
      job_rows.push_back(job);
      continue;
    }
    std::set<std::string> faulty_hosts;
    for (const auto& e : t.exclude) faulty_hosts.insert(e.host);
    if (t.root_cause == "none") {
      row.class_name = "no fault";
      ++quiet_jobs;
      if (!r.firings.empty()) {
        ++quiet_alarmed;
        ++row.false_alarms;
        problems.push_back(t.job_id + " (" + t.kind + ", no fault): " + r.firings[0].alert + " on " + r.firings[0].host);
      }
    } else if (std::any_of(r.covered_causes.begin(), r.covered_causes.end(),
                           [&](const std::string& cause) { return RootCauseMatches(t.root_cause, cause); })) {
      row.class_name = "warned of";
      ++faulty;
      std::optional<double> lead;
      for (const auto& f : r.firings)
        if (RootCauseMatches(t.root_cause, f.root_cause) && f.lead_seconds > 0) lead = std::max(lead.value_or(0), f.lead_seconds);
      if (lead) {
        ++faulty_alerted;
        ++row.alerted;
        row.leads.push_back(*lead);
        leads.push_back(*lead);
        job["lead_seconds"] = *lead;
      } else {
        problems.push_back(t.job_id + " (" + t.kind + "): no " + t.root_cause + " alert before the end");
      }
      // An alert on a host the truth keeps is a false alarm even on a faulty job.
      for (const auto& f : r.firings)
        if (!f.host.empty() && std::find(t.must_not_exclude.begin(), t.must_not_exclude.end(), f.host) != t.must_not_exclude.end()) {
          ++row.false_alarms;
          problems.push_back(t.job_id + " (" + t.kind + "): " + f.alert + " on " + f.host + ", a host to keep");
        }
    } else {
      row.class_name = "no alert for it";
      if (!r.firings.empty()) row.alerted++;
    }
    ordered_json fired = ordered_json::array();
    for (const auto& f : r.firings) fired.push_back({{"alert", f.alert}, {"host", f.host}, {"lead_seconds", f.lead_seconds}});
    job["firings"] = fired;
    job_rows.push_back(job);
  }

  std::printf("%-28s %-16s %5s %8s %12s %12s\n", "kind", "class", "jobs", "alerted", "median lead", "false alarms");
  ordered_json kind_rows = ordered_json::array();
  for (const auto& [kind, row] : kinds) {
    std::string lead = row.leads.empty() ? "-" : std::to_string(static_cast<int>(Median(row.leads) / 60 + 0.5)) + " min";
    std::printf("%-28s %-16s %5d %8d %12s %12d\n", kind.c_str(), row.class_name.c_str(), row.jobs, row.alerted,
                lead.c_str(), row.false_alarms);
    kind_rows.push_back({{"kind", kind}, {"class", row.class_name}, {"jobs", row.jobs}, {"alerted", row.alerted},
                         {"median_lead_seconds", Median(row.leads)}, {"false_alarms", row.false_alarms}});
  }
  std::printf("\nfaulty jobs with an alert for their cause: %d of %d alerted before the end, median lead %.0f min\n",
              faulty_alerted, faulty, Median(leads) / 60);
  std::printf("jobs without a fault: %d of %d raised no alert\n", quiet_jobs - quiet_alarmed, quiet_jobs);
  if (errors) std::printf("replay errors: %d\n", errors);
  for (const auto& p : problems) std::printf("  %s\n", p.c_str());

  if (!options.json_out.empty()) {
    ordered_json out = {{"schema", "campaign-alerts/v1"},
                        {"faulty", faulty},
                        {"faulty_alerted", faulty_alerted},
                        {"median_lead_seconds", Median(leads)},
                        {"quiet_jobs", quiet_jobs},
                        {"quiet_jobs_alarmed", quiet_alarmed},
                        {"errors", errors},
                        {"kinds", kind_rows},
                        {"jobs", job_rows}};
    std::ofstream(options.json_out) << out.dump(2) << "\n";
  }
  return quiet_alarmed == 0 && errors == 0;
}

}  // namespace diagnose::campaign
