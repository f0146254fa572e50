#include "engine/decision/node_health.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "engine/core/text.h"

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

}  // namespace

NodeRun NodeRunFromFacts(const JobFacts& facts) {
  NodeRun run;
  run.job = facts.id;
  run.name = !facts.header.job_name.empty() ? facts.header.job_name : facts.header.model_alias;
  run.hosts = facts.header.hosts;
  run.status = facts.status;
  run.soft_success = facts.soft_success;
  for (const auto& s : facts.steps) run.step_tgs.emplace_back(s.step, s.tokens_per_sec_per_device);
  if (facts.tgs.degradation_onset_step && facts.tgs.steady_tgs > 0 && facts.tgs.recent_tgs > 0) {
    run.steady_tgs = facts.tgs.steady_tgs;
    run.recent_tgs = facts.tgs.recent_tgs;
    run.degradation_onset_step = facts.tgs.degradation_onset_step;
  }
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
  return run.status == "failed" || run.status == "hanging" || run.status == "cancelled" ||
         run.status == "unknown-death";
}

NodeHealthTable BuildNodeHealthTable(const std::vector<NodeRun>& runs, const NodeHealthThresholds& t) {
  NodeHealthTable table;
  std::vector<double> values;
  for (const auto& run : runs) {
    NodeHealthRow row;
    row.job = run.job;
    row.node = run.hosts.empty() ? "(unknown host)" : run.hosts.front();
    if (run.hosts.size() > 1)
      table.notes.push_back("job " + run.job + " ran on " + std::to_string(run.hosts.size()) +
                            " nodes; a node perf sweep compares 1-node jobs (use the bisection view for groups)");
    if (RunFailed(run)) {
      row.status = "unhealthy";
      row.reason = "job " + run.status;
    } else {
      row.tgs = SteadyTgs(run, t.steady_first_step, t.steady_last_step, t.min_steady_steps);
      if (row.tgs) {
        values.push_back(*row.tgs);
      } else {
        row.status = "insufficient-data";
        row.reason = "fewer than " + std::to_string(t.min_steady_steps) + " steps in " +
                     std::to_string(t.steady_first_step) + "-" + std::to_string(t.steady_last_step) +
                     (run.status == "running" ? " yet (still running)" : "");
      }
    }
    table.rows.push_back(std::move(row));
  }
  table.median_tgs = Median(values);
  for (auto& row : table.rows) {
    if (!row.tgs || !table.median_tgs || *table.median_tgs <= 0) continue;
    const double delta = (*row.tgs - *table.median_tgs) / *table.median_tgs * 100.0;
    row.delta_pct = delta;
    if (delta <= -t.degraded_below_pct) {
      row.status = "degraded";
      row.reason = "steady TGS at least " + std::to_string(static_cast<int>(t.degraded_below_pct)) +
                   "% below the median: exclude from multi-node jobs";
    } else if (delta < -t.healthy_within_pct) {
      row.status = "marginal";
      row.reason = "between " + std::to_string(static_cast<int>(t.healthy_within_pct)) + "% and " +
                   std::to_string(static_cast<int>(t.degraded_below_pct)) + "% below the median: monitor, usable";
    } else {
      row.status = "healthy";
      if (delta > t.healthy_within_pct) row.reason = "faster than the median by more than the healthy band";
    }
  }
  if (values.size() < 3)
    table.notes.push_back("median of " + std::to_string(values.size()) +
                          " node(s) only: comparisons are weak with fewer than 3 measured nodes");
  for (const auto& row : table.rows) {
    if (std::find(t.exclude_statuses.begin(), t.exclude_statuses.end(), row.status) != t.exclude_statuses.end())
      table.exclude.push_back(row.node);
    else if (row.status == "marginal")
      table.monitor.push_back(row.node);
    if (row.status == "healthy" || row.status == "marginal") table.healthy.push_back(row.node);
  }
  return table;
}

Decision DecisionFromNodeHealth(const NodeHealthTable& table) {
  Decision d;
  for (const auto& row : table.rows) {
    if (std::find(table.exclude.begin(), table.exclude.end(), row.node) == table.exclude.end()) continue;
    std::string why = row.status;
    if (row.delta_pct) why += " (" + std::to_string(static_cast<int>(std::lround(*row.delta_pct))) + "% vs median)";
    if (!row.reason.empty()) why += ": " + row.reason;
    d.exclude.push_back({row.node, row.status == "unhealthy" ? 1 : 2, "node perf sweep job " + row.job + ": " + why});
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
  for (const auto& split : result.next_splits)
    d.notes.push_back("next: run a " + std::to_string(split.size()) + "N group on " + CompressHostlist(split));
  if (!result.conclusion.empty()) d.notes.push_back(result.conclusion);
  return d;
}

std::string CompressHostlist(const std::vector<std::string>& hosts) {
  // prefix -> (digit width, numbers); hosts without digits are kept verbatim.
  std::map<std::pair<std::string, size_t>, std::vector<long>> groups;
  std::vector<std::pair<std::string, size_t>> order;
  std::vector<std::string> plain;
  for (const auto& h : hosts) {
    size_t i = h.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(h[i - 1]))) --i;
    if (i == h.size() || h.size() - i > 12) {
      plain.push_back(h);
      continue;
    }
    const auto key = std::make_pair(h.substr(0, i), h.size() - i);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(std::stol(h.substr(i)));
  }
  std::vector<std::string> parts;
  for (const auto& key : order) {
    auto nums = groups[key];
    std::sort(nums.begin(), nums.end());
    nums.erase(std::unique(nums.begin(), nums.end()), nums.end());
    auto pad = [&](long n) {
      std::string s = std::to_string(n);
      return std::string(s.size() < key.second ? key.second - s.size() : 0, '0') + s;
    };
    if (nums.size() == 1) {
      parts.push_back(key.first + pad(nums[0]));
      continue;
    }
    std::string ranges;
    for (size_t a = 0; a < nums.size();) {
      size_t b = a;
      while (b + 1 < nums.size() && nums[b + 1] == nums[b] + 1) ++b;
      ranges += (ranges.empty() ? "" : ",") + pad(nums[a]) + (b > a ? "-" + pad(nums[b]) : "");
      a = b + 1;
    }
    parts.push_back(key.first + "[" + ranges + "]");
  }
  for (const auto& p : plain) parts.push_back(p);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

BisectionResult AnalyzeBisection(const std::vector<NodeRun>& groups, const BisectionThresholds& t,
                                 std::optional<double> expected_tgs) {
  BisectionResult result;
  const bool expected_given = expected_tgs.has_value();
  for (const auto& run : groups) {
    GroupRow row;
    row.job = run.job;
    row.hosts = run.hosts;
    row.nodelist = CompressHostlist(run.hosts);
    row.name = run.name.empty() ? row.nodelist : run.name;
    if (!RunFailed(run)) row.tgs = SteadyTgs(run, t.first_step, 1 << 30, 1);
    if (row.tgs && run.degradation_onset_step) {
      row.steady_tgs = run.steady_tgs;
      row.recent_tgs = run.recent_tgs;
      row.degraded_from_step = run.degradation_onset_step;
    }
    result.rows.push_back(std::move(row));
  }
  std::stable_sort(result.rows.begin(), result.rows.end(),
                   [](const GroupRow& a, const GroupRow& b) { return a.hosts.size() > b.hosts.size(); });
  if (!expected_tgs) {
    for (const auto& row : result.rows)
      if (row.tgs && (!expected_tgs || *row.tgs > *expected_tgs)) expected_tgs = row.tgs;
  }
  result.expected_tgs = expected_tgs;
  for (auto& row : result.rows) {
    if (!row.tgs) {
      row.status = "failed";
      row.reason = "the job did not complete a measured step";
      continue;
    }
    row.status = "healthy";
    if (expected_tgs && *expected_tgs > 0) {
      row.delta_pct = (*row.tgs - *expected_tgs) / *expected_tgs * 100.0;
      if (*row.delta_pct <= -t.degraded_below_pct) {
        row.status = "degraded";
        row.reason = FixedDecimal(-*row.delta_pct, 1) + "% below the expected " + WithThousands(*expected_tgs) + " TGS";
      }
    }
    // The same effect size, measured against the group's own healthy level: the best group (and a
    // lone one) is the expectation, so only this shows a fabric that degraded mid-run.
    if (row.status == "healthy" && row.steady_tgs && row.recent_tgs) {
      const double drop_pct = (*row.steady_tgs - *row.recent_tgs) / *row.steady_tgs * 100.0;
      if (drop_pct >= t.degraded_below_pct) {
        row.status = "degraded";
        row.reason = "its own TGS fell " + FixedDecimal(drop_pct, 1) + "% during the run (" +
                     WithThousands(*row.steady_tgs) + " -> " + WithThousands(*row.recent_tgs) + " from step " +
                     std::to_string(*row.degraded_from_step) + ")";
      }
    }
  }
  auto bad = [](const GroupRow& r) { return r.status != "healthy"; };
  for (const auto& row : result.rows)
    if (bad(row)) result.degraded_groups.push_back(row.name);
  if (result.degraded_groups.empty()) {
    result.conclusion = result.rows.empty() ? "no group jobs given"
                        : result.rows.size() == 1 && !expected_given
                            ? "one group and no --expected-tgs: nothing to compare it with; it kept its own TGS "
                              "through the run"
                            : "all groups healthy: no network issue found";
    return result;
  }

  // Tested groups strictly inside `outer`.
  auto children_of = [&](const GroupRow& outer) {
    std::vector<const GroupRow*> kids;
    for (const auto& row : result.rows)
      if (row.hosts.size() < outer.hosts.size() && IsSubset(row.hosts, outer.hosts)) kids.push_back(&row);
    return kids;
  };
  auto tested = [&](const std::vector<std::string>& hosts) {
    for (const auto& row : result.rows)
      if (SortedHosts(row.hosts) == SortedHosts(hosts)) return true;
    return false;
  };
  // The smallest degraded groups carry the most information.
  std::vector<const GroupRow*> minimal;
  for (const auto& row : result.rows) {
    if (!bad(row)) continue;
    bool has_bad_child = false;
    for (const auto* kid : children_of(row)) has_bad_child = has_bad_child || bad(*kid);
    if (!has_bad_child) minimal.push_back(&row);
  }
  std::vector<std::string> conclusions;
  for (const GroupRow* g : minimal) {
    if (g->hosts.size() <= 2) {
      result.bad_pair = SortedHosts(g->hosts);
      conclusions.push_back(g->hosts.size() == 2
                                ? "the problem is between " + g->hosts[0] + " and " + g->hosts[1] +
                                      " (or one of them has a bad NIC); cross-check the 1N node sweep: both healthy "
                                      "alone means the link between them"
                                : "the problem is on " + g->hosts[0]);
      continue;
    }
    const auto kids = children_of(*g);
    std::vector<const GroupRow*> halves;
    for (const auto* kid : kids) {
      bool nested = false;   // keep only maximal children (the halves, not their own halves)
      for (const auto* other : kids)
        nested = nested || (other != kid && other->hosts.size() > kid->hosts.size() && IsSubset(kid->hosts, other->hosts));
      if (!nested) halves.push_back(kid);
    }
    std::vector<std::string> sorted = SortedHosts(g->hosts);
    if (halves.size() < 2) {
      const size_t half = sorted.size() / 2;
      std::vector<std::string> a(sorted.begin(), sorted.begin() + half), b(sorted.begin() + half, sorted.end());
      for (auto* split : {&a, &b})
        if (!tested(*split)) result.next_splits.push_back(*split);
      conclusions.push_back(g->name + " is degraded: bisect it into " + CompressHostlist(a) + " and " +
                            CompressHostlist(b));
      continue;
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
      if (split->size() >= 2 && !tested(*split)) {
        result.next_splits.push_back(*split);
        proposed = true;
      }
    conclusions.push_back(g->name + " is degraded but its halves " + halves[0]->name + " and " + halves[1]->name +
                          " are healthy: the issue is cross-group (IB link between them)" +
                          (proposed ? "; test mixed groups next" : "; mixed groups already tested, escalate"));
  }
  // Both halves of a group degraded: several faults or shared infrastructure.
  for (const auto& row : result.rows) {
    if (!bad(row)) continue;
    const auto kids = children_of(row);
    int bad_kids = 0, direct = 0;
    for (const auto* kid : kids)
      if (kid->hosts.size() * 2 == row.hosts.size()) {
        ++direct;
        bad_kids += bad(*kid);
      }
    if (direct >= 2 && bad_kids >= 2)
      conclusions.push_back("both halves of " + row.name +
                            " are degraded: multiple issues or shared infrastructure, likely needs the HW team");
  }
  for (const auto& c : conclusions) result.conclusion += (result.conclusion.empty() ? "" : "; ") + c;
  return result;
}

}  // namespace diagnose
