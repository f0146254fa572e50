// Node health from sweep jobs: the per-node TGS table of a node perf sweep (1N jobs), and the
// network bisection analysis over group jobs (2N/4N/8N subsets). Pure functions over per-job
// measurements; the CLI builds NodeRun values from triage facts.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/json.h"
#include "engine/decision/decision_rules.h"
#include "engine/report/report.h"
#include "engine/report/job_facts.h"

namespace diagnose {

struct NodeRun {
  std::string job;
  std::string name;                    // job name / alias (group label in a bisection)
  // What ran: jobs of different models run at different TGS and are never compared with each other.
  std::string model;
  std::vector<std::string> hosts;
  JobStatus status = JobStatus::kUnknownDeath;   // triage's
  bool soft_success = false;
  std::vector<std::pair<int64_t, double>> step_tgs;   // (step, Tokens/s/device) of task 0
  // Triage's healthy and last-10-step TGS, set when throughput left its healthy level during the
  // run (facts.tgs.degradation_onset_step): a group can be slow against itself with no other
  // group to compare with.
  std::optional<double> steady_tgs;
  std::optional<double> recent_tgs;
  std::optional<int64_t> degradation_onset_step;
  // The level the job ran at when nothing slowed it (HealthyTgs of its facts, the figure `diagnose`
  // reports), and the last step it measured: a failed job's throughput until it failed is shown too.
  std::optional<double> healthy_tgs;
  std::optional<int64_t> last_step;
};

// From triage facts of one job.
NodeRun NodeRunFromFacts(const JobFacts& facts);

// Mean TGS over steps [first, last]; nullopt when fewer than `min_steps` of them are present.
std::optional<double> SteadyTgs(const NodeRun& run, int first, int last, int min_steps);

bool RunFailed(const NodeRun& run);   // failed/hung/cancelled/unknown-death, not soft success

struct NodeHealthRow {
  std::string node;
  std::string job;
  std::string model;
  std::optional<double> tgs;
  std::optional<double> delta_pct;     // vs the median of the nodes that ran the same model
  NodeStatus status = NodeStatus::kUnjudged;
  std::string reason;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NodeHealthRow, node, job, model, tgs, delta_pct, status, reason)

struct NodeHealthTable {
  std::vector<NodeHealthRow> rows;     // input order
  std::optional<double> median_tgs;    // when every measured node ran one model
  std::map<std::string, double> median_by_model;
  std::vector<std::string> exclude;    // degraded + unhealthy
  std::vector<std::string> monitor;    // marginal
  std::vector<std::string> healthy;    // recommended nodelist
  std::vector<std::string> notes;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NodeHealthTable, rows, median_tgs, median_by_model, exclude, monitor,
                                                healthy, notes)

NodeHealthTable BuildNodeHealthTable(const std::vector<NodeRun>& runs, const NodeHealthThresholds& thresholds);

struct GroupRow {
  std::string name;                    // unique: a name shared by several jobs carries the job id
  std::string job;
  std::string model;
  std::vector<std::string> hosts;
  std::string nodelist;                // compressed
  std::optional<double> tgs;           // its healthy level (a failed job's: until it failed)
  // vs the expectation for its model; absent when the group is that expectation's only source
  std::optional<double> delta_pct;
  GroupStatus status = GroupStatus::kHealthy;
  // Degraded during its own run: healthy TGS -> last-10-step TGS from this step (additive fields).
  std::optional<double> steady_tgs;
  std::optional<double> recent_tgs;
  std::optional<int64_t> degraded_from_step;
  std::string reason;                  // why degraded, in words
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GroupRow, name, job, model, hosts, nodelist, tgs, delta_pct, status,
                                                steady_tgs, recent_tgs, degraded_from_step, reason)

struct BisectionResult {
  std::vector<GroupRow> rows;                      // largest groups first
  std::optional<double> expected_tgs;              // when every group ran one model
  std::map<std::string, double> expected_by_model;
  std::vector<std::string> degraded_groups;        // names
  std::vector<std::vector<std::string>> next_splits;   // host sets to submit next
  std::vector<std::string> bad_pair;               // isolated pair (or single node)
  std::string conclusion;
  std::vector<std::string> notes;                  // caveats: models that differ, a lone group
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BisectionResult, rows, expected_tgs, expected_by_model, degraded_groups,
                                                next_splits, bad_pair, conclusion, notes)

// `expected_tgs` unset: the best group's TGS of each model is taken as that model's healthy expectation.
BisectionResult AnalyzeBisection(const std::vector<NodeRun>& groups, const BisectionThresholds& thresholds,
                                 std::optional<double> expected_tgs);

// The contract decision a sweep driver acts on: exclude unhealthy nodes (failed/hung, priority 1)
// and degraded ones (priority 2), else none. Notes carry the monitor list and the healthy nodelist.
Decision DecisionFromNodeHealth(const NodeHealthTable& table);
// Exclude the isolated pair/node (priority 2) when bisection has narrowed it down; otherwise none,
// with the next split (or the escalation) in the notes.
Decision DecisionFromBisection(const BisectionResult& result);

}  // namespace diagnose
