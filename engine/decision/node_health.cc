#include "engine/decision/node_health.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "engine/core/text.h"
#include "engine/triage/hostlist.h"

namespace diagnose {

namespace {

std::optional<double> Median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

bool IsSubset(const std::vector<std::string>& small, const std::vector<std::string>& big) {
  for (const auto& h : small)
    if (std::find(big.begin(), big.end(), h) == big.end()) return false;
  return true;
}

std::vector<std::string> SortedHosts(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The model a job ran, from its log's header, else from its name ("JAX-llama2-70b" -> "llama2-70b"),
// so that jobs of different models are never held to one figure.
std::string ModelOf(const JobHeader& header) {
  if (!header.model_name.empty()) return header.model_name;
  std::string name = !header.job_name.empty() ? header.job_name : header.model_alias;
  if (name.starts_with("JAX-")) name = name.substr(4);
  return name;
}

std::vector<std::string> ModelsOf(const std::map<std::string, double>& by_model) {
  std::vector<std::string> models;
  for (const auto& [model, value] : by_model) models.push_back(model.empty() ? "(model unknown)" : model);
  return models;
}

std::string DifferentModelsNote(const std::map<std::string, double>& by_model, const std::string& compared) {
  return "the jobs ran different models (" + JoinStrings(ModelsOf(by_model), ", ") + "): each job is compared with " +
         compared + " of its own model only";
}

}  // namespace

NodeRun NodeRunFromFacts(const JobFacts& facts) {
  NodeRun run;
  run.job = facts.id;
  run.name = !facts.header.job_name.empty() ? facts.header.job_name : facts.header.model_alias;
  run.model = ModelOf(facts.header);
  run.hosts = facts.header.hosts;
  run.status = facts.status;
  run.soft_success = facts.soft_success;
  for (const auto& s : facts.steps) run.step_tgs.emplace_back(s.step, s.tokens_per_sec_per_device);
  if (facts.tgs.degradation_onset_step && facts.tgs.steady_tgs > 0 && facts.tgs.recent_tgs > 0) {
    run.steady_tgs = facts.tgs.steady_tgs;
    run.recent_tgs = facts.tgs.recent_tgs;
    run.degradation_onset_step = facts.tgs.degradation_onset_step;
  }
  if (HealthyTgs(facts.tgs) > 0) run.healthy_tgs = HealthyTgs(facts.tgs);
  if (!facts.steps.empty()) run.last_step = facts.steps.back().step;
  return run;
}

std::optional<double> SteadyTgs(const NodeRun& run, int first, int last, int min_steps) {
  double sum = 0;
  int n = 0;
  std::set<int64_t> seen;
  for (const auto& [step, tgs] : run.step_tgs) {
    if (step < first || step > last || !seen.insert(step).second) continue;
    sum += tgs;
    ++n;
  }
  if (n == 0 || n < min_steps) return std::nullopt;
  return sum / n;
}

bool RunFailed(const NodeRun& run) {
  if (run.soft_success) return false;
  return run.status == JobStatus::kFailed || run.status == JobStatus::kHanging || run.status == JobStatus::kCancelled ||
         run.status == JobStatus::kUnknownDeath;
}

NodeHealthTable BuildNodeHealthTable(const std::vector<NodeRun>& runs, const NodeHealthThresholds& t) {
  NodeHealthTable table;
  std::map<std::string, std::vector<double>> values;   // model -> steady TGS of its nodes
  for (const auto& run : runs) {
    NodeHealthRow row;
    row.job = run.job;
    row.model = run.model;
    row.node = run.hosts.empty() ? "(unknown host)" : run.hosts.front();
    if (run.hosts.size() > 1)
      table.notes.push_back("job " + run.job + " ran on " + std::to_string(run.hosts.size()) +
                            " nodes; a node perf sweep compares 1-node jobs (use the bisection view for groups)");
    if (RunFailed(run)) {
      row.status = NodeStatus::kUnhealthy;
      row.reason = "job " + std::string(ToString(run.status));
    } else {
      row.tgs = SteadyTgs(run, t.steady_first_step, t.steady_last_step, t.min_steady_steps);
      if (row.tgs) {
        values[row.model].push_back(*row.tgs);
      } else {
        row.status = NodeStatus::kInsufficientData;
        row.reason = "fewer than " + std::to_string(t.min_steady_steps) + " steps in " +
                     std::to_string(t.steady_first_step) + "-" + std::to_string(t.steady_last_step) +
                     (run.status == JobStatus::kRunning ? " yet (still running)" : "");
      }
    }
    table.rows.push_back(std::move(row));
  }
  for (const auto& [model, tgs] : values) table.median_by_model[model] = *Median(tgs);
  if (table.median_by_model.size() == 1) table.median_tgs = table.median_by_model.begin()->second;
  if (table.median_by_model.size() > 1) table.notes.push_back(DifferentModelsNote(table.median_by_model, "the median"));
  for (auto& row : table.rows) {
    const auto median = table.median_by_model.find(row.model);
    if (!row.tgs || median == table.median_by_model.end() || median->second <= 0) continue;
    const double delta = (*row.tgs - median->second) / median->second * 100.0;
    row.delta_pct = delta;
    if (delta <= -t.degraded_below_pct) {
      row.status = NodeStatus::kDegraded;
      row.reason = "steady TGS at least " + std::to_string(static_cast<int>(t.degraded_below_pct)) +
                   "% below the median: exclude from multi-node jobs";
    } else if (delta < -t.healthy_within_pct) {
      row.status = NodeStatus::kMarginal;
      row.reason = "between " + std::to_string(static_cast<int>(t.healthy_within_pct)) + "% and " +
                   std::to_string(static_cast<int>(t.degraded_below_pct)) + "% below the median: monitor, usable";
    } else {
      row.status = NodeStatus::kHealthy;
      if (delta > t.healthy_within_pct) row.reason = "faster than the median by more than the healthy band";
    }
  }
  for (const auto& [model, tgs] : values)
    if (tgs.size() < 3)
      table.notes.push_back("median of " + std::to_string(tgs.size()) + " node(s) only" +
                            (values.size() > 1 ? " for " + model : "") +
                            ": comparisons are weak with fewer than 3 measured nodes");
  if (values.empty())
    table.notes.push_back("median of 0 node(s) only: comparisons are weak with fewer than 3 measured nodes");
  for (const auto& row : table.rows) {
    if (std::find(t.exclude_statuses.begin(), t.exclude_statuses.end(), row.status) != t.exclude_statuses.end())
      table.exclude.push_back(row.node);
    else if (row.status == NodeStatus::kMarginal)
      table.monitor.push_back(row.node);
    if (row.status == NodeStatus::kHealthy || row.status == NodeStatus::kMarginal) table.healthy.push_back(row.node);
  }
  return table;
}

Decision DecisionFromNodeHealth(const NodeHealthTable& table) {
  Decision d;
  for (const auto& row : table.rows) {
    if (std::find(table.exclude.begin(), table.exclude.end(), row.node) == table.exclude.end()) continue;
    std::string why(ToString(row.status));
    if (row.delta_pct) why += " (" + std::to_string(static_cast<int>(std::lround(*row.delta_pct))) + "% vs median)";
    if (!row.reason.empty()) why += ": " + row.reason;
    d.exclude.push_back({row.node, row.status == NodeStatus::kUnhealthy ? 1 : 2, "node perf sweep job " + row.job + ": " + why});
  }
  std::stable_sort(d.exclude.begin(), d.exclude.end(),
                   [](const Exclusion& a, const Exclusion& b) { return a.priority < b.priority; });
  d.action = d.exclude.empty() ? DecisionAction::kNone : DecisionAction::kRetryExcludingNodes;
  if (!table.monitor.empty()) d.notes.push_back("marginal (monitor, usable): " + CompressHostlist(table.monitor));
  if (!table.healthy.empty()) d.notes.push_back("recommended nodelist: " + CompressHostlist(table.healthy));
  for (const auto& n : table.notes) d.notes.push_back(n);
  return d;
}

Decision DecisionFromBisection(const BisectionResult& result) {
  Decision d;
  for (const auto& h : result.bad_pair)
    d.exclude.push_back({h, 2, "network bisection isolated " + CompressHostlist(result.bad_pair)});
  d.action = d.exclude.empty() ? DecisionAction::kNone : DecisionAction::kRetryExcludingNodes;
  for (const auto& n : result.notes) d.notes.push_back(n);
  for (const auto& split : result.next_splits)
    d.notes.push_back("next: run a " + std::to_string(split.size()) + "N group on " + CompressHostlist(split));
  if (!result.conclusion.empty()) d.notes.push_back(result.conclusion);
  return d;
}

namespace {

bool IsBadGroup(const GroupRow& r) { return r.status != GroupStatus::kHealthy; }

// Tested groups strictly inside `outer`.
std::vector<const GroupRow*> ChildrenOf(const std::vector<GroupRow>& rows, const GroupRow& outer) {
  std::vector<const GroupRow*> kids;
  for (const auto& row : rows)
    if (row.hosts.size() < outer.hosts.size() && IsSubset(row.hosts, outer.hosts)) kids.push_back(&row);
  return kids;
}

bool WasTested(const std::vector<GroupRow>& rows, const std::vector<std::string>& hosts) {
  for (const auto& row : rows)
    if (SortedHosts(row.hosts) == SortedHosts(hosts)) return true;
  return false;
}

// One row per group job, largest groups first; returns the jobs that failed and fills each job's
// last measured step.
std::set<std::string> GroupRows(const std::vector<NodeRun>& groups, const BisectionThresholds& t,
                                BisectionResult* result, std::map<std::string, std::optional<int64_t>>* last_steps) {
  std::map<std::string, int> name_uses;
  for (const auto& run : groups) ++name_uses[run.name.empty() ? CompressHostlist(run.hosts) : run.name];
  std::set<std::string> failed_jobs;
  for (const auto& run : groups) {
    GroupRow row;
    row.job = run.job;
    row.model = run.model;
    row.hosts = run.hosts;
    row.nodelist = CompressHostlist(run.hosts);
    row.name = run.name.empty() ? row.nodelist : run.name;
    if (name_uses[row.name] > 1 && !run.job.empty()) row.name += " (job " + run.job + ")";
    // The job's healthy level, the figure `diagnose` reports; a job that failed keeps what it measured.
    row.tgs = run.healthy_tgs ? run.healthy_tgs : SteadyTgs(run, t.first_step, 1 << 30, 1);
    if (RunFailed(run)) failed_jobs.insert(run.job);
    (*last_steps)[run.job] = run.last_step;
    if (row.tgs && run.degradation_onset_step) {
      row.steady_tgs = run.steady_tgs;
      row.recent_tgs = run.recent_tgs;
      row.degraded_from_step = run.degradation_onset_step;
    }
    result->rows.push_back(std::move(row));
  }
  std::stable_sort(result->rows.begin(), result->rows.end(),
                   [](const GroupRow& a, const GroupRow& b) { return a.hosts.size() > b.hosts.size(); });
  return failed_jobs;
}

// Each model's expectation: the given one, else its best group that ran through. Returns how many
// groups of each model were measured.
std::map<std::string, int> SetExpectations(std::optional<double> expected_tgs, const std::set<std::string>& failed_jobs,
                                           BisectionResult* result) {
  const bool expected_given = expected_tgs.has_value();
  std::map<std::string, int> measured_per_model;
  for (const auto& row : result->rows) {
    if (!row.tgs || failed_jobs.count(row.job)) continue;
    ++measured_per_model[row.model];
    double& best = result->expected_by_model[row.model];
    best = expected_given ? *expected_tgs : std::max(best, *row.tgs);
  }
  if (result->expected_by_model.size() == 1) result->expected_tgs = result->expected_by_model.begin()->second;
  if (result->expected_by_model.size() > 1)
    result->notes.push_back(expected_given ? "the jobs ran different models (" +
                                                 JoinStrings(ModelsOf(result->expected_by_model), ", ") +
                                                 "): --expected-tgs " + WithThousands(*expected_tgs) +
                                                 " is held against every one of them"
                                           : DifferentModelsNote(result->expected_by_model, "the best group"));
  if (!expected_given && result->rows.size() > 1)
    for (const auto& [model, count] : measured_per_model)
      if (count == 1)
        result->notes.push_back("one measured group of " + (model.empty() ? "its model" : model) +
                                ": no other group to compare it with, it is judged against its own healthy level");
  return measured_per_model;
}

// Failed, degraded (against its model's expectation, or its own TGS falling during the run) or healthy.
void JudgeGroup(const BisectionThresholds& t, bool expected_given, const std::set<std::string>& failed_jobs,
                std::map<std::string, std::optional<int64_t>>& last_steps,
                std::map<std::string, int>& measured_per_model, const BisectionResult& result, GroupRow* row) {
  if (failed_jobs.count(row->job) || !row->tgs) {
    row->status = GroupStatus::kFailed;
    const auto& last = last_steps[row->job];
    row->reason = !row->tgs || !last ? "the job did not complete a measured step"
                                     : "the job failed after step " + std::to_string(*last) + " (TGS " +
                                           WithThousands(*row->tgs) + " until then): `diagnose " + row->job +
                                           "` names why";
    return;
  }
  row->status = GroupStatus::kHealthy;
  const auto expected = result.expected_by_model.find(row->model);
  // A group that is its model's only measurement is no comparison: it is judged against itself.
  const bool compared = expected != result.expected_by_model.end() && expected->second > 0 &&
                        (expected_given || measured_per_model[row->model] > 1);
  if (compared) {
    row->delta_pct = (*row->tgs - expected->second) / expected->second * 100.0;
    if (*row->delta_pct <= -t.degraded_below_pct) {
      row->status = GroupStatus::kDegraded;
      row->reason = FixedDecimal(-*row->delta_pct, 1) + "% below the expected " + WithThousands(expected->second) + " TGS";
    }
  }
  // The same effect size, measured against the group's own healthy level: the best group (and a
  // lone one) is the expectation, so only this shows a fabric that degraded mid-run.
  if (row->status == GroupStatus::kHealthy && row->steady_tgs && row->recent_tgs) {
    const double drop_pct = (*row->steady_tgs - *row->recent_tgs) / *row->steady_tgs * 100.0;
    if (drop_pct >= t.degraded_below_pct) {
      row->status = GroupStatus::kDegraded;
      row->reason = "its own TGS fell " + FixedDecimal(drop_pct, 1) + "% during the run (" +
                    WithThousands(*row->steady_tgs) + " -> " + WithThousands(*row->recent_tgs) + " from step " +
                    std::to_string(*row->degraded_from_step) + ")";
    }
  }
}

// A minimal degraded group (no degraded group inside it): a pair or one host is the answer; else
// bisect it, or, when every tested half is healthy, test groups mixing the halves.
std::string ConcludeOnMinimalGroup(const GroupRow& g, BisectionResult* result) {
  if (g.hosts.size() <= 2) {
    result->bad_pair = SortedHosts(g.hosts);
    return g.hosts.size() == 2
               ? "the problem is between " + g.hosts[0] + " and " + g.hosts[1] +
                     " (or one of them has a bad NIC); cross-check the 1N node sweep: both healthy "
                     "alone means the link between them"
               : "the problem is on " + g.hosts[0];
  }
  const auto kids = ChildrenOf(result->rows, g);
  std::vector<const GroupRow*> halves;
  for (const auto* kid : kids) {
    bool nested = false;   // keep only maximal children (the halves, not their own halves)
    for (const auto* other : kids)
      nested = nested || (other != kid && other->hosts.size() > kid->hosts.size() && IsSubset(kid->hosts, other->hosts));
    if (!nested) halves.push_back(kid);
  }
  std::vector<std::string> sorted = SortedHosts(g.hosts);
  if (halves.size() < 2) {
    const size_t half = sorted.size() / 2;
    std::vector<std::string> a(sorted.begin(), sorted.begin() + half), b(sorted.begin() + half, sorted.end());
    for (auto* split : {&a, &b})
      if (!WasTested(result->rows, *split)) result->next_splits.push_back(*split);
    return g.name + " is " + std::string(ToString(g.status)) + ": bisect it into " + CompressHostlist(a) + " and " +
           CompressHostlist(b);
  }
  // Every tested half of a degraded group is healthy: the fault is on a link across halves.
  const auto& a = SortedHosts(halves[0]->hosts);
  const auto& b = SortedHosts(halves[1]->hosts);
  const size_t ha = a.size() / 2, hb = b.size() / 2;
  std::vector<std::string> mix1(a.begin(), a.begin() + ha), mix2(a.begin() + ha, a.end());
  mix1.insert(mix1.end(), b.begin(), b.begin() + hb);
  mix2.insert(mix2.end(), b.begin() + hb, b.end());
  bool proposed = false;
  for (auto* split : {&mix1, &mix2})
    if (split->size() >= 2 && !WasTested(result->rows, *split)) {
      result->next_splits.push_back(*split);
      proposed = true;
    }
  return g.name + " is degraded but its halves " + halves[0]->name + " and " + halves[1]->name +
         " are healthy: the issue is cross-group (IB link between them)" +
         (proposed ? "; test mixed groups next" : "; mixed groups already tested, escalate");
}

// Where the fault lies: the smallest degraded groups carry the most information; both halves of a
// group degraded means several faults or shared infrastructure.
std::string LocaliseFaults(BisectionResult* result) {
  std::vector<const GroupRow*> minimal;
  for (const auto& row : result->rows) {
    if (!IsBadGroup(row)) continue;
    bool has_bad_child = false;
    for (const auto* kid : ChildrenOf(result->rows, row)) has_bad_child = has_bad_child || IsBadGroup(*kid);
    if (!has_bad_child) minimal.push_back(&row);
  }
  std::vector<std::string> conclusions;
  for (const GroupRow* g : minimal) conclusions.push_back(ConcludeOnMinimalGroup(*g, result));
  for (const auto& row : result->rows) {
    if (!IsBadGroup(row)) continue;
    const auto kids = ChildrenOf(result->rows, row);
    int bad_kids = 0, direct = 0;
    for (const auto* kid : kids)
      if (kid->hosts.size() * 2 == row.hosts.size()) {
        ++direct;
        bad_kids += IsBadGroup(*kid);
      }
    if (direct >= 2 && bad_kids >= 2)
      conclusions.push_back("both halves of " + row.name +
                            " are degraded: multiple issues or shared infrastructure, likely needs the HW team");
  }
  std::string conclusion;
  for (const auto& c : conclusions) conclusion += (conclusion.empty() ? "" : "; ") + c;
  return conclusion;
}

}  // namespace

BisectionResult AnalyzeBisection(const std::vector<NodeRun>& groups, const BisectionThresholds& t,
                                 std::optional<double> expected_tgs) {
  BisectionResult result;
  const bool expected_given = expected_tgs.has_value();
  std::map<std::string, std::optional<int64_t>> last_steps;   // job -> last measured step
  const std::set<std::string> failed_jobs = GroupRows(groups, t, &result, &last_steps);
  std::map<std::string, int> measured_per_model = SetExpectations(expected_tgs, failed_jobs, &result);
  for (auto& row : result.rows) JudgeGroup(t, expected_given, failed_jobs, last_steps, measured_per_model, result, &row);
  for (const auto& row : result.rows)
    if (IsBadGroup(row)) result.degraded_groups.push_back(row.name);
  if (result.degraded_groups.empty()) {
    result.conclusion = result.rows.empty() ? "no group jobs given"
                        : result.rows.size() == 1 && !expected_given
                            ? "one group and no --expected-tgs: nothing to compare it with; it kept its own TGS "
                              "through the run"
                            : "all groups healthy: no network issue found";
    return result;
  }
  result.conclusion = LocaliseFaults(&result);
  return result;
}

}  // namespace diagnose
