// Unit tests of the campaign planner: the seeds of the default and `--wide` campaigns keep planning
// the jobs they planned before `--wider` existed, and every `--wider` family is planned with a truth
// its own scenario supports (the faults named, the excluded hosts' costs visible in TGS, the root
// the earliest slowdown or the fault that ended the job).
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "tools/campaign/planner.h"
#include "tools/campaign/truth.h"
#include "tools/fixturegen/scenario.h"
#include "tools/fixturegen/timeline.h"

namespace diagnose::campaign {
namespace {

// The throttling point rules/common/gpu-models.yaml gives a model named as Ray names it ("AMD
// Instinct MI300X": its last word), sourced or estimated; 0 when the table has none.
double ThrottlePointOfModel(const std::string& gpu_name) {
  const std::string model = gpu_name.substr(gpu_name.rfind(' ') + 1);
  const YAML::Node table =
      YAML::LoadFile(std::string(DIAGNOSE_ENGINE_SOURCE_DIR) + "/../rules/common/gpu-models.yaml")["gpu_models"][model];
  for (const char* level : {"temperature_throttle_c", "temperature_throttle_estimate_c"})
    if (table && table[level]) return table[level].as<double>();
  ADD_FAILURE() << model << " has no throttling point in rules/common/gpu-models.yaml";
  return 0;
}

// FNV-1a over every job's scenario and the truth file: a change to any byte of a plan changes it.
uint64_t PlanDigest(const std::vector<PlannedJob>& plan) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const std::string& text) {
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  };
  std::vector<JobTruth> truths;
  for (const PlannedJob& job : plan) {
    mix(job.scenario_yaml);
    truths.push_back(job.truth);
  }
  mix(TruthToJson(truths));
  return h;
}

std::vector<PlannedJob> Plan(uint64_t seed, int jobs, bool wide, bool perf, bool wider, bool widest = false) {
  auto plan = PlanCampaign(seed, jobs, wide, perf, wider, widest);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? *plan : std::vector<PlannedJob>{};
}

// Recorded from the planner before `--wider` (the campaign binary at 25793c9, `generate
// --plan-only`, whose scenarios and truth.json were compared byte for byte with this one's): the CI
// gate's seed, a `--wide` development seed and a `--perf` one.
TEST(CampaignPlanner, DefaultWideAndPerfSeedsPlanWhatTheyPlannedBefore) {
  EXPECT_EQ(PlanDigest(Plan(4242, 40, false, false, false)), 15450769657292172454ull) << "the CI gate's jobs changed";
  EXPECT_EQ(PlanDigest(Plan(3535, 48, true, false, false)), 14050338215377488540ull) << "--wide seed 3535's jobs changed";
  EXPECT_EQ(PlanDigest(Plan(1, 16, false, true, false)), 395986751595041787ull) << "--perf seed 1's jobs changed";
}

TEST(CampaignPlanner, WiderPlansAreAPureFunctionOfTheSeed) {
  EXPECT_EQ(PlanDigest(Plan(77, 30, false, false, true)), PlanDigest(Plan(77, 30, false, false, true)));
  EXPECT_NE(PlanDigest(Plan(77, 30, false, false, true)), PlanDigest(Plan(77, 30, true, false, false)));
}

// The truth kinds each `--wider` family plans.
const std::map<std::string, std::set<std::string>> kWiderKinds = {
    {"mixed-overlap", {"thermal-then-rdma", "rdma-then-thermal"}},
    {"from-first-step", {"thermal-from-first-step", "rdma-from-first-step"}},
    {"many-hosts", {"many-hosts-throttle", "many-hosts-rdma"}},
    {"dip-extreme", {"rdma-single-step-dip", "rdma-dip-90pct"}},
    {"death-throttle", {"node-death-during-throttle"}},
    {"fatal-after-slowdown", {"gpu-fault-after-slowdown", "host-oom-after-slowdown"}},
};

std::string FamilyOf(const std::string& kind) {
  for (const auto& [family, kinds] : kWiderKinds)
    if (kinds.count(kind)) return family;
  return "";
}

// A block holds the 12 default families, the 5 wide ones and the 6 wider ones twice: 29 jobs.
TEST(CampaignPlanner, EveryWiderFamilyIsPlannedTwiceInEachBlock) {
  for (uint64_t seed : {5u, 6u}) {
    std::map<std::string, int> count;
    for (const PlannedJob& job : Plan(seed, 29, false, false, true))
      if (job.truth.scored) ++count[FamilyOf(job.truth.kind)];
    for (const auto& [family, kinds] : kWiderKinds) EXPECT_EQ(count[family], 2) << family << " at seed " << seed;
  }
}

struct Window {
  std::string kind;
  int64_t first = 0, last = 0;
};

// The slowdown windows a scenario injects per host (RDMA retransmits or throttling).
std::map<std::string, std::vector<Window>> SlowdownWindows(const fixturegen::Scenario& s) {
  std::map<std::string, std::vector<Window>> out;
  for (const auto& f : s.faults) {
    if ((f.kind != "rdma_retx" && f.kind != "thermal_throttle") || !f.window.steps) continue;
    // The background decoys' RDMA retransmits run the whole job (no window) or carry no ACK timeouts.
    if (f.kind == "rdma_retx") {
      const bool acked = std::any_of(s.faults.begin(), s.faults.end(), [&](const fixturegen::Fault& g) {
        return g.kind == "rdma_ack_timeout" && g.hosts == f.hosts && g.window.steps && g.window.steps->first == f.window.steps->first;
      });
      if (!acked) continue;
    }
    for (const auto& h : f.hosts) out[h].push_back({f.kind, f.window.steps->first, f.window.steps->last});
  }
  return out;
}

double TgsAt(const fixturegen::Scenario& s, int64_t step) {
  for (const auto& p : s.phases)
    if (p.steps.Contains(step)) return p.tgs;
  return 0;
}

double TopTgs(const fixturegen::Scenario& s) {
  double top = 0;
  for (const auto& p : s.phases) top = std::max(top, p.tgs);
  return top;
}

bool HasFault(const fixturegen::Scenario& s, const std::string& host, const std::set<std::string>& kinds) {
  return std::any_of(s.faults.begin(), s.faults.end(), [&](const fixturegen::Fault& f) {
    return kinds.count(f.kind) && std::find(f.hosts.begin(), f.hosts.end(), host) != f.hosts.end();
  });
}

// Every excluded host carries an injected fault, no host is both excluded and protected, and a
// slow host's own fault is on at some step TGS is down.
void ExpectExclusionsAreFaulty(const PlannedJob& job, const fixturegen::Scenario& s) {
  const auto slow = SlowdownWindows(s);
  std::set<std::string> protected_hosts(job.truth.must_not_exclude.begin(), job.truth.must_not_exclude.end());
  for (const auto& e : job.truth.exclude) {
    SCOPED_TRACE(e.host);
    EXPECT_TRUE(std::find(s.hosts.begin(), s.hosts.end(), e.host) != s.hosts.end());
    EXPECT_FALSE(protected_hosts.count(e.host));
    // Run-queue and I/O faults name a host only in the contention kinds (elsewhere they are decoys).
    const bool contention = job.truth.kind == "cpu-contention" || job.truth.kind == "io-contention";
    EXPECT_TRUE(contention ? HasFault(s, e.host, {"procs_running_offset", "io_pressure"})
                           : HasFault(s, e.host, {"rdma_retx", "thermal_throttle", "node_death", "ras_uncorrectable", "host_oom"}));
    auto it = slow.find(e.host);
    if (it == slow.end()) continue;
    for (const Window& w : it->second) {
      bool costs = false;
      for (int64_t step = w.first; step <= w.last && !costs; ++step) costs = TgsAt(s, step) < TopTgs(s);
      EXPECT_TRUE(costs) << w.kind << " over " << w.first << "-" << w.last << " never costs TGS";
    }
  }
}

// Of two slowdowns of different kinds, each is alone on for some steps that cost TGS, and the root
// cause is the kind of the earlier one.
void ExpectMixedOverlapTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  std::vector<Window> windows;
  for (const auto& [host, ws] : SlowdownWindows(s))
    for (const Window& w : ws) windows.push_back(w);
  ASSERT_EQ(windows.size(), 2u);
  std::sort(windows.begin(), windows.end(), [](const Window& a, const Window& b) { return a.first < b.first; });
  EXPECT_NE(windows[0].kind, windows[1].kind);
  EXPECT_LT(windows[0].first, windows[1].first);
  EXPECT_GE(windows[0].last, windows[1].first) << "the windows must overlap";
  EXPECT_EQ(job.truth.root_cause, windows[0].kind == "thermal_throttle" ? "thermal-throttle" : "rdma-link-degradation");
  for (int i = 0; i < 2; ++i) {
    const Window& own = windows[static_cast<size_t>(i)];
    const Window& other = windows[static_cast<size_t>(1 - i)];
    bool alone_and_costly = false;
    for (int64_t step = own.first; step <= own.last; ++step)
      alone_and_costly |= (step < other.first || step > other.last) && TgsAt(s, step) < TopTgs(s);
    EXPECT_TRUE(alone_and_costly) << own.kind << " is never alone on a slow step";
  }
}

// The fault that ended the job is the root: the job failed, its host carries that fault, and a
// slowdown on another host came first.
void ExpectFatalTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  EXPECT_EQ(s.summary.status, "FAILED");
  const std::string fatal = job.truth.root_cause == "host-oom" ? "host_oom"
                            : job.truth.kind == "node-death-during-throttle" ? "node_death"
                                                                             : "ras_uncorrectable";
  int fatal_hosts = 0;
  for (const auto& e : job.truth.exclude) fatal_hosts += HasFault(s, e.host, {fatal});
  EXPECT_EQ(fatal_hosts, 1) << fatal;
  // The uncorrectable-error counter moves (at least two errors before the abort), not only the log.
  for (const auto& f : s.faults) {
    if (f.kind != "ras_uncorrectable") continue;
    auto timeline = fixturegen::BuildTimeline(s);
    ASSERT_TRUE(timeline.ok());
    ASSERT_TRUE(f.window.steps);
    const double seconds = timeline->FindStep(f.window.steps->last)->end - timeline->FindStep(f.window.steps->first)->begin;
    EXPECT_GE(seconds * f.rate, 2) << "uncorrectable errors over steps " << f.window.steps->first << "-" << f.window.steps->last;
  }
  EXPECT_EQ(SlowdownWindows(s).size(), 1u) << "one slow host besides the one that ended the job";
  EXPECT_EQ(job.truth.exclude.size(), 2u);
}

// Scrape gaps lie inside a faulty host's window and take at most a third of it; a node_hw naming
// without the host label never asks for an FQDN host label.
void ExpectTelemetryVariations(const fixturegen::Scenario& s) {
  if (s.node_hw_names != "host") {
    EXPECT_FALSE(s.host_label_fqdn);
  }
  // Any fault's step window counts (a fabric episode's retransmits without timeouts or its CNP
  // storm are no slowdown of one host, but a gap in them is still a gap inside a fault).
  std::map<std::string, std::vector<Window>> slow;
  for (const auto& f : s.faults)
    if (f.window.steps && f.kind != "missed_scrapes" && f.kind != "counter_reset")
      for (const auto& h : f.hosts) slow[h].push_back({f.kind, f.window.steps->first, f.window.steps->last});
  for (const auto& f : s.faults) {
    if (f.kind != "missed_scrapes") continue;
    ASSERT_TRUE(f.window.steps);
    ASSERT_EQ(f.hosts.size(), 1u);
    auto it = slow.find(f.hosts[0]);
    ASSERT_NE(it, slow.end()) << "a scrape gap on a host without a fault";
    // Inside one of the host's fault windows (a host may fail twice), at most a third of it.
    const auto inside = std::find_if(it->second.begin(), it->second.end(), [&](const Window& w) {
      return f.window.steps->first >= w.first && f.window.steps->last <= w.last;
    });
    ASSERT_NE(inside, it->second.end()) << "a scrape gap outside the host's fault windows";
    EXPECT_LE(3 * (f.window.steps->last - f.window.steps->first + 1), inside->last - inside->first + 1);
  }
}

TEST(CampaignPlanner, WiderTruthFollowsFromEachScenario) {
  std::map<std::string, int> kinds, node_names;
  int gaps = 0;
  for (uint64_t seed : {11u, 12u, 13u}) {
    for (const PlannedJob& job : Plan(seed, 58, false, false, true)) {
      const std::string family = FamilyOf(job.truth.kind);
      if (family.empty()) continue;
      SCOPED_TRACE("seed " + std::to_string(seed) + " job " + job.truth.job_id + " " + job.truth.kind);
      auto s = fixturegen::ParseScenario(job.scenario_yaml, job.truth.job_id);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      ++kinds[job.truth.kind];
      ++node_names[s->node_hw_names];
      gaps += static_cast<int>(std::count_if(s->faults.begin(), s->faults.end(), [](const auto& f) { return f.kind == "missed_scrapes"; }));
      EXPECT_EQ(job.truth.action, "retry-excluding-nodes");
      EXPECT_FALSE(job.truth.exclude.empty());
      ExpectExclusionsAreFaulty(job, *s);
      ExpectTelemetryVariations(*s);
      if (family == "mixed-overlap") ExpectMixedOverlapTruth(job, *s);
      if (family == "fatal-after-slowdown" || family == "death-throttle") ExpectFatalTruth(job, *s);
      if (family == "from-first-step") {
        for (const auto& [host, ws] : SlowdownWindows(*s)) EXPECT_EQ(ws.front().first, s->first_step) << host;
      }
      if (family == "many-hosts") {
        EXPECT_GE(s->hosts.size(), 64u);
        EXPECT_LE(s->hosts.size(), 512u);
        EXPECT_GE(job.truth.exclude.size(), 3u);
        EXPECT_LE(job.truth.exclude.size(), 6u);
      }
      if (job.truth.kind == "rdma-single-step-dip") {
        ASSERT_EQ(job.truth.exclude.size(), 1u);
        EXPECT_EQ(job.truth.exclude[0].priority, 1) << "retry exhaustion in the step: a permanent loss";
        EXPECT_TRUE(HasFault(*s, job.truth.exclude[0].host, {"rdma_retry_exceeded"}));
        // fixturegen samples a fault at the scrapes inside its window: one must land in the step.
        auto timeline = fixturegen::BuildTimeline(*s);
        ASSERT_TRUE(timeline.ok());
        const Window w = SlowdownWindows(*s).at(job.truth.exclude[0].host).front();
        const fixturegen::StepRecord* step = timeline->FindStep(w.first);
        ASSERT_NE(step, nullptr);
        EXPECT_LE(s->node_hw_interval, step->seconds) << "node_hw may never scrape inside the slow step";
      }
    }
  }
  for (const auto& [family, names] : kWiderKinds) {
    int planned = 0;
    for (const auto& k : names) planned += kinds[k];
    EXPECT_EQ(planned, 12) << family << ": twice in each of the two 29-job blocks of three seeds";
  }
  for (const char* names : {"host", "instance", "ip"}) EXPECT_GT(node_names[names], 0) << names;
  EXPECT_GT(gaps, 0);
}

TEST(CampaignPlanner, WiderImpliesWide) {
  EXPECT_EQ(PlanDigest(Plan(21, 12, true, false, true)), PlanDigest(Plan(21, 12, false, false, true)));
}

// --- `--widest` -------------------------------------------------------------------------------

// Recorded from the planner before `--widest` (scenarios and truth.json of `generate --plan-only
// --wider --seed 77 --jobs 30` compared byte for byte with this one's).
TEST(CampaignPlanner, WiderSeedsPlanWhatTheyPlannedBeforeWidest) {
  EXPECT_EQ(PlanDigest(Plan(77, 30, false, false, true)), 3825476624785710627ull) << "--wider seed 77's jobs changed";
}

TEST(CampaignPlanner, WidestImpliesWiderAndIsAPureFunctionOfTheSeed) {
  EXPECT_EQ(PlanDigest(Plan(78, 20, false, false, false, true)), PlanDigest(Plan(78, 20, true, false, true, true)));
  EXPECT_NE(PlanDigest(Plan(78, 20, false, false, false, true)), PlanDigest(Plan(78, 20, false, false, true)));
}

const std::map<std::string, std::set<std::string>> kWidestKinds = {
    {"init-fault", {"thermal-from-init", "thermal-from-init-to-end", "rdma-from-init", "gpu-fault-in-compile"}},
    {"fatal-on-slow-host", {"death-on-slow-host", "gpu-fault-on-slow-host", "host-oom-on-slow-host"}},
    {"addresses-in-log", {"thermal-addresses-only", "rdma-addresses-only"}},
    {"two-episodes", {"thermal-two-episodes", "rdma-two-episodes"}},
    {"huge-many-hosts", {"huge-hosts-throttle", "huge-hosts-rdma"}},
    {"late-fault", {"rdma-late", "thermal-late"}},
    {"blind-host",
     {"rdma-on-blind-host", "thermal-on-blind-host", "rdma-beside-blind-host", "thermal-beside-blind-host"}},
    {"truncated-tsdb",
     {"rdma-after-tsdb-end", "thermal-after-tsdb-end", "rdma-before-tsdb-end", "thermal-before-tsdb-end"}},
    {"peerless-thermal", {"thermal-one-host", "thermal-fleet-wide", "thermal-one-host-from-start"}},
    {"fleet-rdma", {"rdma-fleet-wide", "rdma-fleet-wide-dead-link", "rdma-fleet-wide-standout"}},
    {"other-launcher", {"k8s-rdma", "k8s-throttle", "local-throttle"}},
    {"still-running", {"running-rdma", "running-throttle"}},
    {"unusual-evidence", {"rdma-retx-without-timeouts", "cpu-contention", "io-contention", "unexplained-drop"}},
    {"few-nodes", {"few-nodes-healthy", "few-nodes-gpu-hardware-fault", "few-nodes-gpu-correctable-only",
                   "few-nodes-thermal-throttle", "few-nodes-thermal-hot-not-throttled", "few-nodes-node-death",
                   "few-nodes-node-death-after-link-fault", "few-nodes-rdma-degradation"}},
    {"fabric-rdma", {"rdma-fabric-retx-only", "rdma-fabric-bare-majority-standout", "rdma-fabric-far-dead-port",
                     "rdma-fabric-cnp-storm"}},
    {"gpu-model-levels", {"rated-thermal-one-node-from-start", "rccl-hang-light-workload", "light-workload-healthy"}},
    {"coverage-gaps", {"gpu-abort-after-scrape-gap", "rdma-standout-scrape-gap"}},
    {"one-gpu-throttle", {"one-gpu-throttle", "one-gpu-throttle-of-16"}},
    {"simultaneous-kinds", {"simultaneous-kinds"}},
    {"death-at-checkpoint", {"death-in-checkpoint-save", "death-after-restore"}},
    {"reset-mid-fault", {"counter-reset-mid-fault"}},
    {"noisy-dip", {"rdma-noisy-dip", "thermal-noisy-dip"}},
    {"transient-early", {"rdma-transient-early", "thermal-transient-early"}},
    {"half-the-hosts", {"half-hosts-throttle", "half-hosts-rdma"}},
    {"fast-steps", {"rdma-fast-steps", "thermal-fast-steps"}},
    {"late-exporter", {"rdma-beside-late-exporter", "thermal-beside-late-exporter"}},
    {"log-gap", {"rdma-log-gap-over-onset", "thermal-log-gap-over-onset", "rdma-inside-log-gap"}},
    {"small-dip", {"rdma-small-dip-recovered", "rdma-small-dip-to-end"}},
    {"comes-and-goes", {"thermal-comes-and-goes", "rdma-comes-and-goes"}},
    {"warmest-host",
     {"thermal-on-warmest-host", "rdma-on-warmest-host", "thermal-beside-warmest-host", "rdma-beside-warmest-host"}},
};
// The families the sixteenth session's probes added, once per block each.
const std::vector<std::string> kProbedShapeFamilies = {"one-gpu-throttle", "simultaneous-kinds", "death-at-checkpoint",
                                                       "reset-mid-fault",  "noisy-dip",          "transient-early",
                                                       "half-the-hosts",   "fast-steps",         "late-exporter",
                                                       "log-gap",          "comes-and-goes",     "warmest-host"};
// Families a `--widest` block plans once (the others three times).
const std::set<std::string> kOncePerBlock = {"huge-many-hosts",   "gpu-model-levels",    "coverage-gaps",
                                             "late-fault",        "blind-host",          "truncated-tsdb",
                                             "one-gpu-throttle",  "simultaneous-kinds",  "death-at-checkpoint",
                                             "reset-mid-fault",   "noisy-dip",           "transient-early",
                                             "half-the-hosts",    "fast-steps",          "late-exporter",
                                             "log-gap",           "comes-and-goes",      "warmest-host"};
// A `--widest` block's jobs, and how many of them each widest family plans: once, twice (the small
// mid-job dips) or three times.
constexpr int kWidestBlock = 76;
int PlannedPerBlock(const std::string& family) {
  if (kOncePerBlock.count(family)) return 1;
  return family == "small-dip" ? 2 : 3;
}

// Kinds a family may plan in some blocks and not in others (18 draws among eight; the few-node
// kinds' coverage is pinned over more seeds in WidestDrawsTheNodesHardware).
const std::set<std::string> kRareWidestKinds = {
    "few-nodes-healthy", "few-nodes-gpu-hardware-fault", "few-nodes-gpu-correctable-only",
    "few-nodes-thermal-throttle", "few-nodes-thermal-hot-not-throttled", "few-nodes-node-death",
    "few-nodes-node-death-after-link-fault", "few-nodes-rdma-degradation",
    // the shape families' variants: one draw per block among two to four (pinned below)
    "rdma-late", "thermal-late", "rdma-on-blind-host", "thermal-on-blind-host", "rdma-beside-blind-host",
    "thermal-beside-blind-host", "rdma-after-tsdb-end", "thermal-after-tsdb-end", "rdma-before-tsdb-end",
    "thermal-before-tsdb-end",
    // the probed shape families' variants (one draw per block among two)
    "one-gpu-throttle", "one-gpu-throttle-of-16", "death-in-checkpoint-save", "death-after-restore", "rdma-noisy-dip",
    "thermal-noisy-dip", "rdma-transient-early", "thermal-transient-early", "half-hosts-throttle", "half-hosts-rdma",
    "rdma-fast-steps", "thermal-fast-steps", "rdma-beside-late-exporter", "thermal-beside-late-exporter",
    "rdma-log-gap-over-onset", "thermal-log-gap-over-onset", "rdma-inside-log-gap",
    // a throttle from init that never lifts: a third of the thermal draws of init-fault (pinned below)
    "thermal-from-init-to-end",
    // the seventeenth session's shape families' variants (pinned below)
    "thermal-comes-and-goes",
    "rdma-comes-and-goes", "thermal-on-warmest-host", "rdma-on-warmest-host", "thermal-beside-warmest-host",
    "rdma-beside-warmest-host"};

std::string WidestFamilyOf(const std::string& kind) {
  for (const auto& [family, kinds] : kWidestKinds)
    if (kinds.count(kind)) return family;
  return "";
}

// A block holds the 12 default families, the 5 wide ones, the 6 wider ones once, the eleven widest
// ones three times, the huge one, the GPU-model one, the coverage one, the three shape families and
// the twelve probed shape families once, and the small mid-job dips twice: 76 jobs.
TEST(CampaignPlanner, EveryWidestFamilyIsPlannedThreeTimesInEachBlock) {
  for (uint64_t seed : {5u, 6u}) {
    std::map<std::string, int> count, wider;
    for (const PlannedJob& job : Plan(seed, kWidestBlock, false, false, false, true)) {
      if (!job.truth.scored) continue;
      ++count[WidestFamilyOf(job.truth.kind)];
      ++wider[FamilyOf(job.truth.kind)];
    }
    for (const auto& [family, kinds] : kWidestKinds)
      EXPECT_EQ(count[family], PlannedPerBlock(family)) << family << " at seed " << seed;
    for (const auto& [family, kinds] : kWiderKinds) EXPECT_EQ(wider[family], 1) << family << " at seed " << seed;
  }
}

// A fault before the first step's line: its window opens during init or step 0's compile (a time,
// before step 0 ends), and a slowdown's cost shows when it ends; a GPU abort in compile logs no step.
void ExpectInitFaultTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  auto timeline = fixturegen::BuildTimeline(s);
  ASSERT_TRUE(timeline.ok());
  bool opened_before_step0 = false;
  for (const auto& f : s.faults) {
    if (f.kind != "rdma_retx" && f.kind != "thermal_throttle" && f.kind != "ras_uncorrectable") continue;
    if (!f.window.from_time) continue;
    EXPECT_GE(*f.window.from_time, timeline->prometheus_start);
    if (timeline->steps.empty()) {
      EXPECT_LT(*f.window.from_time, timeline->memstats_time);
    } else {
      EXPECT_LT(*f.window.from_time, timeline->steps.front().end) << "opens after step 0's line";
      ASSERT_TRUE(f.window.to_time);
      const double to = *f.window.to_time;
      if (job.truth.kind == "thermal-from-init-to-end") {
        // Never lifts: past the last step, and TGS one level from the first step to the last.
        EXPECT_GT(to, timeline->steps.back().end);
        EXPECT_EQ(s.phases.size(), 1u);
        opened_before_step0 = true;
        continue;
      }
      // Ends with some step (scenario times are whole seconds); TGS after it is higher than during it.
      const auto ended = std::find_if(timeline->steps.begin(), timeline->steps.end(),
                                      [&](const fixturegen::StepRecord& r) { return r.end >= to && r.end < to + 1; });
      ASSERT_NE(ended, timeline->steps.end());
      EXPECT_LT(TgsAt(s, ended->step), TgsAt(s, s.last_step));
    }
    opened_before_step0 = true;
  }
  EXPECT_TRUE(opened_before_step0);
  if (job.truth.kind == "gpu-fault-in-compile") {
    EXPECT_EQ(s.stop_phase, "before_step0");
    EXPECT_EQ(s.summary.status, "FAILED");
    ASSERT_EQ(job.truth.exclude.size(), 1u);
    EXPECT_EQ(job.truth.exclude[0].priority, 1);
    const fixturegen::Fault& ue = s.faults.front();
    EXPECT_GE((timeline->memstats_time - *ue.window.from_time) * ue.rate, 6) << "the UE counter must move";
  }
}

// The host that slowed down is the one that ended the job, and the only one to exclude.
void ExpectFatalOnSlowHostTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  EXPECT_EQ(s.summary.status, "FAILED");
  ASSERT_EQ(job.truth.exclude.size(), 1u);
  const std::string& host = job.truth.exclude[0].host;
  EXPECT_TRUE(HasFault(s, host, {"rdma_retx", "thermal_throttle"}));
  EXPECT_TRUE(HasFault(s, host, {"node_death", "ras_uncorrectable", "host_oom"}));
  EXPECT_EQ(job.truth.root_cause, HasFault(s, host, {"host_oom"}) ? "host-oom" : "gpu-hardware-fault");
  if (HasFault(s, host, {"node_death"})) EXPECT_NE(host, s.hosts.front()) << "task 0 hosts the coordinator";
}

// Every host of the job throttles over the same steps, costing TGS: a one-node job excludes its
// node; a room of 4+ nodes excludes nothing (the cooling, not a host, is the cause).
void ExpectPeerlessThermalTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  EXPECT_EQ(job.truth.root_cause, "thermal-throttle");
  const auto slow = SlowdownWindows(s);
  std::optional<Window> shared;
  for (const auto& host : s.hosts) {
    SCOPED_TRACE(host);
    ASSERT_TRUE(slow.count(host));
    ASSERT_EQ(slow.at(host).size(), 1u);
    const Window& w = slow.at(host).front();
    EXPECT_EQ(w.kind, "thermal_throttle");
    if (shared) EXPECT_TRUE(w.first == shared->first && w.last == shared->last) << "all hosts throttle together";
    shared = w;
  }
  ASSERT_TRUE(shared);
  if (job.truth.kind == "thermal-one-host-from-start") {
    // Hot over every step, one TGS level: nothing to compare with, nothing excluded on a guess.
    ASSERT_EQ(s.hosts.size(), 1u);
    EXPECT_EQ(shared->first, s.first_step);
    EXPECT_EQ(shared->last, s.last_step);
    EXPECT_EQ(TgsAt(s, s.first_step), TgsAt(s, s.last_step));
    EXPECT_EQ(job.truth.action, "none");
    EXPECT_TRUE(job.truth.exclude.empty());
    return;
  }
  EXPECT_LT(TgsAt(s, shared->first), TopTgs(s));
  if (job.truth.kind == "thermal-one-host") {
    ASSERT_EQ(s.hosts.size(), 1u);
    EXPECT_EQ(job.truth.action, "retry-excluding-nodes");
    ASSERT_EQ(job.truth.exclude.size(), 1u);
    EXPECT_EQ(job.truth.exclude[0].host, s.hosts.front());
  } else {
    EXPECT_GE(s.hosts.size(), 4u);
    EXPECT_EQ(job.truth.action, "none");
    EXPECT_TRUE(job.truth.exclude.empty());
  }
}

// A fabric episode: more than half of at least 4 hosts retransmit RDMA with ACK timeouts over the
// same steps, costing TGS; nobody is excluded (retried on the same nodes) but a host with retry
// exhaustion (priority 1) or one retransmitting several times the rest (priority 2), and every
// other host of the episode must not be excluded.
void ExpectFleetRdmaTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  EXPECT_EQ(job.truth.root_cause, "rdma-link-degradation");
  EXPECT_GE(s.hosts.size(), 4u);
  EXPECT_LE(s.hosts.size(), 64u);
  std::set<std::string> retransmitting;
  std::optional<Window> shared;
  for (const auto& [host, windows] : SlowdownWindows(s)) {
    for (const Window& w : windows) {
      if (w.kind != "rdma_retx") continue;
      if (shared) EXPECT_TRUE(w.first == shared->first && w.last == shared->last) << host << ": the episode starts together";
      shared = w;
      retransmitting.insert(host);
    }
  }
  ASSERT_TRUE(shared);
  EXPECT_GT(retransmitting.size() * 2, s.hosts.size()) << "more than half the hosts";
  EXPECT_LT(TgsAt(s, shared->first), TopTgs(s));
  size_t spared = 0;
  for (const auto& h : retransmitting)
    spared += std::count(job.truth.must_not_exclude.begin(), job.truth.must_not_exclude.end(), h);
  if (job.truth.kind == "rdma-fleet-wide") {
    EXPECT_EQ(job.truth.action, "retry-same-nodes");
    EXPECT_TRUE(job.truth.exclude.empty());
    EXPECT_EQ(spared, retransmitting.size());
  } else {
    EXPECT_EQ(job.truth.action, "retry-excluding-nodes");
    ASSERT_EQ(job.truth.exclude.size(), 1u);
    const bool dead = job.truth.kind == "rdma-fleet-wide-dead-link";
    EXPECT_EQ(job.truth.exclude[0].priority, dead ? 1 : 2);
    EXPECT_EQ(HasFault(s, job.truth.exclude[0].host, {"rdma_retry_exceeded"}), dead);
    EXPECT_EQ(spared, retransmitting.size() - 1);
    if (!dead) {
      // Its own retransmit fault, several times the others' rate.
      double own = 0, others = 0;
      for (const auto& f : s.faults) {
        if (f.kind != "rdma_retx" || !f.window.steps) continue;
        if (f.hosts == std::vector<std::string>{job.truth.exclude[0].host}) own = f.rate;
        if (f.hosts.size() > 1) others = f.rate;   // the episode's shared fault (a decoy burst names one host)
      }
      EXPECT_GT(others, 0);
      EXPECT_GE(own, 5.9 * others);
    }
  }
}

// The hosts a fault kind names over one shared step window (a fault naming one host is a standout's
// or a decoy's), and that window.
std::set<std::string> SharedFaultHosts(const fixturegen::Scenario& s, const std::string& kind, std::optional<Window>* window) {
  std::set<std::string> hosts;
  for (const auto& f : s.faults) {
    if (f.kind != kind || !f.window.steps || f.hosts.size() < 2) continue;
    EXPECT_FALSE(*window) << "one shared " << kind << " fault";
    *window = Window{kind, f.window.steps->first, f.window.steps->last};
    hosts.insert(f.hosts.begin(), f.hosts.end());
  }
  return hosts;
}

// The fabric shapes: a majority shares one episode window that costs TGS; retransmits without
// timeouts and CNP storms exclude nobody; a bare majority's standout (6+ times the rest) and a
// port that left (retry exhaustion) half an hour or more before the episode are excluded alone.
void ExpectFabricRdmaTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  const bool storm = job.truth.kind == "rdma-fabric-cnp-storm";
  EXPECT_EQ(job.truth.root_cause, storm ? "fabric-congestion" : "rdma-link-degradation");
  EXPECT_GE(s.hosts.size(), 4u);
  std::optional<Window> window;
  std::set<std::string> episode = SharedFaultHosts(s, storm ? "rdma_cnp" : "rdma_retx", &window);
  ASSERT_TRUE(window);
  const bool standout = job.truth.kind == "rdma-fabric-bare-majority-standout";
  if (standout) {
    ASSERT_EQ(job.truth.exclude.size(), 1u);
    EXPECT_EQ(job.truth.exclude[0].priority, std::optional<int>(2));
    episode.insert(job.truth.exclude[0].host);
    EXPECT_EQ(episode.size(), s.hosts.size() / 2 + 1) << "a bare majority";
  }
  EXPECT_GT(episode.size() * 2, s.hosts.size()) << "more than half the hosts";
  EXPECT_LT(TgsAt(s, window->first), TopTgs(s));
  for (const auto& h : episode) {
    const bool excluded = standout && h == job.truth.exclude[0].host;
    EXPECT_NE(std::count(job.truth.must_not_exclude.begin(), job.truth.must_not_exclude.end(), h), excluded) << h;
  }
  if (job.truth.kind == "rdma-fabric-far-dead-port") {
    ASSERT_EQ(job.truth.exclude.size(), 1u);
    const std::string& dead = job.truth.exclude[0].host;
    EXPECT_EQ(job.truth.exclude[0].priority, std::optional<int>(1));
    EXPECT_FALSE(episode.count(dead));
    EXPECT_TRUE(HasFault(s, dead, {"rdma_retry_exceeded"}));
    const auto own = SlowdownWindows(s).at(dead);
    ASSERT_EQ(own.size(), 1u);
    auto timeline = fixturegen::BuildTimeline(s);
    ASSERT_TRUE(timeline.ok());
    const auto* left = timeline->FindStep(own[0].last);
    const auto* began = timeline->FindStep(window->first);
    ASSERT_TRUE(left && began);
    EXPECT_GE(began->begin - left->end, 1800) << "half an hour or more apart";
  } else if (!standout) {
    EXPECT_EQ(job.truth.action, "retry-same-nodes");
    EXPECT_TRUE(job.truth.exclude.empty());
    for (const auto& f : s.faults) {
      const bool in_episode = std::any_of(f.hosts.begin(), f.hosts.end(), [&](const auto& h) { return episode.count(h) > 0; });
      if (in_episode && f.kind == "rdma_ack_timeout") ADD_FAILURE() << "ACK timeouts on an episode host";
      if (storm && in_episode && f.kind == "rdma_retx" && f.rate >= 1) ADD_FAILURE() << "material retransmits in a CNP storm";
    }
  }
}

// Two separate episodes on the one excluded host, each costing TGS, healthy steps between them.
void ExpectTwoEpisodesTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  ASSERT_EQ(job.truth.exclude.size(), 1u);
  const auto windows = SlowdownWindows(s).at(job.truth.exclude[0].host);
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_LT(windows[0].last + 1, windows[1].first);
  bool healthy_between = false;
  for (int64_t step = windows[0].last + 1; step < windows[1].first; ++step) healthy_between |= TgsAt(s, step) == TopTgs(s);
  EXPECT_TRUE(healthy_between);
}

// A link retransmitting without a single ACK timeout over the slow steps: that host alone, priority
// 2. Contention (run queue or I/O pressure) on one or two hosts, at most a quarter of the job, from
// the step TGS fell: those hosts, priority 2. A drop with no fault at all (the decoys aside: background retransmits under 1/s, TCP, which
// explain no loss): unknown, nothing to do or exclude.
void ExpectUnusualEvidenceTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  double slowest = TopTgs(s);
  for (int64_t step = s.first_step; step <= s.last_step; ++step) slowest = std::min(slowest, TgsAt(s, step));
  EXPECT_LT(slowest, TopTgs(s)) << "the job slows down";
  std::vector<const fixturegen::Fault*> links, contention;
  const auto& decoys = job.truth.must_not_exclude;
  for (const auto& f : s.faults) {
    static const std::set<std::string> kCauses = {"rdma_ack_timeout", "rdma_retry_exceeded", "rdma_port_down", "thermal_throttle",
                                                  "node_death", "gpu_hang", "host_oom"};
    EXPECT_FALSE(kCauses.count(f.kind)) << f.kind;
    if (f.kind == "io_pressure" || f.kind == "procs_running_offset") {
      contention.push_back(&f);
      continue;
    }
    if (f.kind == "rdma_retx" && f.rate >= 1 && std::find(decoys.begin(), decoys.end(), f.hosts.at(0)) == decoys.end())
      links.push_back(&f);
  }
  if (!contention.empty()) {
    ASSERT_EQ(contention.size(), 1u);
    const fixturegen::Fault& f = *contention.front();
    EXPECT_EQ(job.truth.kind, f.kind == "io_pressure" ? "io-contention" : "cpu-contention");
    ASSERT_TRUE(f.window.steps);
    EXPECT_LT(TgsAt(s, f.window.steps->first), TopTgs(s)) << "the contention starts with the slowdown";
    EXPECT_LE(f.hosts.size() * 4, s.hosts.size());
    EXPECT_TRUE(links.empty());
    EXPECT_EQ(job.truth.root_cause, "host-contention");
    EXPECT_EQ(job.truth.exclude.size(), f.hosts.size());
    for (const auto& e : job.truth.exclude) EXPECT_EQ(std::count(f.hosts.begin(), f.hosts.end(), e.host), 1);
    return;
  }
  if (job.truth.kind == "unexplained-drop") {
    EXPECT_TRUE(links.empty());
    EXPECT_EQ(job.truth.root_cause, "unknown");
    EXPECT_EQ(job.truth.action, "none");
    EXPECT_TRUE(job.truth.exclude.empty());
    return;
  }
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(job.truth.root_cause, "rdma-link-degradation");
  EXPECT_EQ(job.truth.action, "retry-excluding-nodes");
  ASSERT_EQ(job.truth.exclude.size(), 1u);
  EXPECT_EQ(job.truth.exclude[0].host, links[0]->hosts.at(0));
  EXPECT_EQ(job.truth.exclude[0].priority, std::optional<int>(2));
}

// 2-3 nodes: no majority to lean on. Only one host of an RDMA job retransmits (two of two or three
// would be the fleet-wide question), and the faulty host's own fault names it.
void ExpectFewNodesTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  EXPECT_GE(s.hosts.size(), 2u);
  EXPECT_LE(s.hosts.size(), 3u);
  if (job.truth.kind == "few-nodes-healthy" || job.truth.kind == "few-nodes-gpu-correctable-only" ||
      job.truth.kind == "few-nodes-thermal-hot-not-throttled") {
    EXPECT_EQ(job.truth.action, "none");
    EXPECT_TRUE(job.truth.exclude.empty());
    return;
  }
  EXPECT_EQ(job.truth.action, "retry-excluding-nodes");
  EXPECT_FALSE(job.truth.exclude.empty());
  EXPECT_LT(job.truth.exclude.size(), s.hosts.size()) << "a healthy host is left on every few-node job";
  if (job.truth.kind == "few-nodes-rdma-degradation") {
    std::set<std::string> links;
    for (const auto& f : s.faults)
      if (f.kind == "rdma_ack_timeout") links.insert(f.hosts.begin(), f.hosts.end());
    EXPECT_EQ(links.size(), 1u);
  }
}

// The GPU model's levels decide these: a one-node job on a cooler model hot over every step (named,
// nothing excluded on a guess), or an MI355X whose workload trains well below the model's ~900 W
// (hung: retried on the same nodes; healthy: nothing to do).
void ExpectGpuModelLevelsTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  EXPECT_TRUE(job.truth.exclude.empty());
  if (job.truth.kind == "rated-thermal-one-node-from-start") {
    ASSERT_EQ(s.hosts.size(), 1u);
    EXPECT_NE(s.gpu_name, "AMD Instinct MI355X");
    EXPECT_LT(s.gpu_power_w, 914);
    const auto heat = std::find_if(s.faults.begin(), s.faults.end(), [](const fixturegen::Fault& f) { return f.kind == "thermal_throttle"; });
    ASSERT_NE(heat, s.faults.end());
    ASSERT_TRUE(heat->window.steps);
    EXPECT_EQ(heat->window.steps->first, s.first_step);
    EXPECT_EQ(heat->window.steps->last, s.last_step);
    ASSERT_TRUE(s.gpu_temperature_c);
    // Past the model's own throttling point and under the MI355X's 100 C, the fallback without a
    // model: only the model's level can name the job.
    const double peak = *s.gpu_temperature_c + heat->rate;
    EXPECT_GT(peak, ThrottlePointOfModel(s.gpu_name)) << s.gpu_name;
    EXPECT_LT(peak, 100) << s.gpu_name;
    EXPECT_EQ(job.truth.root_cause, "thermal-throttle");
    EXPECT_EQ(job.truth.action, "none");
    return;
  }
  EXPECT_EQ(s.gpu_name, "AMD Instinct MI355X");
  ASSERT_TRUE(s.training_power_w);
  EXPECT_GE(*s.training_power_w, 620);
  EXPECT_LE(*s.training_power_w, 760);
  if (job.truth.kind == "rccl-hang-light-workload") {
    EXPECT_GT(s.hang_seconds, 0);
    EXPECT_EQ(job.truth.root_cause, "rccl-hang");
    EXPECT_EQ(job.truth.action, "retry-same-nodes");
  } else {
    EXPECT_EQ(job.truth.kind, "light-workload-healthy");
    EXPECT_EQ(job.truth.root_cause, "none");
    EXPECT_EQ(job.truth.action, "none");
  }
}

// The excluded host's scrapes are missed where its evidence is: from before a GPU's uncorrectable
// errors to the end of the data (priority 1 on the log's abort alone), or over 45-90 % of a link's
// fault, in its middle (the samples around the hole still show it).
void ExpectCoverageGapsTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  ASSERT_FALSE(job.truth.exclude.empty());
  const std::string& host = job.truth.exclude.front().host;
  const fixturegen::Fault* gap = nullptr;
  const fixturegen::Fault* fault = nullptr;
  for (const auto& f : s.faults) {
    if (std::find(f.hosts.begin(), f.hosts.end(), host) == f.hosts.end()) continue;
    if (f.kind == "missed_scrapes") gap = &f;
    if (f.kind == "ras_uncorrectable" || (f.kind == "rdma_retx" && !fault)) fault = &f;
  }
  ASSERT_TRUE(gap && fault);
  ASSERT_TRUE(fault->window.steps);
  const fixturegen::StepRange f = *fault->window.steps;
  if (job.truth.kind == "gpu-abort-after-scrape-gap") {
    EXPECT_EQ(job.truth.exclude.size(), 1u);
    EXPECT_EQ(job.truth.exclude[0].priority, 1);
    ASSERT_TRUE(gap->window.after_step);
    EXPECT_LT(*gap->window.after_step, f.first) << "the scrapes stop before the errors begin";
    EXPECT_FALSE(gap->window.to_time) << "and never come back";
    EXPECT_EQ(job.truth.root_cause, "gpu-hardware-fault");
    return;
  }
  ASSERT_TRUE(gap->window.steps);
  const fixturegen::StepRange g = *gap->window.steps;
  EXPECT_EQ(job.truth.kind, "rdma-standout-scrape-gap");
  EXPECT_EQ(job.truth.root_cause, "rdma-link-degradation");
  EXPECT_GT(g.first, f.first) << "inside the fault window";
  EXPECT_LT(g.last, f.last);
  const double share = static_cast<double>(g.last - g.first + 1) / static_cast<double>(f.last - f.first + 1);
  EXPECT_GE(share, 0.4);
  EXPECT_LE(share, 0.9);
}

// The five kinds of the two once-a-block families all come up within a few blocks.
TEST(CampaignPlanner, WidestPlansTheModelLevelAndCoverageKinds) {
  std::map<std::string, int> kinds;
  for (uint64_t seed : {11u, 12u, 13u, 21u, 22u})
    for (const PlannedJob& job : Plan(seed, 144, false, false, false, true)) ++kinds[job.truth.kind];
  for (const char* family : {"gpu-model-levels", "coverage-gaps"})
    for (const auto& k : kWidestKinds.at(family)) EXPECT_GT(kinds[k], 0) << k << " never planned";
}

// A fault in the job's last 2-5 % (at least four steps): one host's, from its onset to the last step,
// TGS down from that step on; the host is the one excluded, at priority 2 for an RDMA link.
void ExpectLateFaultTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  const int64_t steps = s.last_step + 1;
  std::set<std::string> faulty;
  int64_t onset = -1;
  for (const auto& f : s.faults) {
    if (f.kind != "rdma_retx" && f.kind != "thermal_throttle") continue;
    if (!f.window.steps || f.window.steps->last != s.last_step) continue;   // a decoy burst elsewhere
    faulty.insert(f.hosts.begin(), f.hosts.end());
    onset = f.window.steps->first;
  }
  ASSERT_EQ(faulty.size(), 1u);
  const int64_t tail = steps - onset;
  EXPECT_GE(tail, 4);
  EXPECT_LE(tail, std::max<int64_t>(4, static_cast<int64_t>(std::ceil(0.05 * static_cast<double>(steps))) + 1));
  ASSERT_EQ(s.phases.size(), 2u);
  EXPECT_EQ(s.phases[1].steps.first, onset);
  EXPECT_LT(s.phases[1].tgs, s.phases[0].tgs * 0.93);
  ASSERT_EQ(job.truth.exclude.size(), 1u);
  EXPECT_EQ(job.truth.exclude[0].host, *faulty.begin());
  EXPECT_EQ(job.truth.exclude[0].priority, job.truth.kind == "rdma-late" ? std::optional<int>(2) : std::nullopt);
}

// A small mid-job dip: 2-5 % of TGS after the steady window, visible against the job's jitter (ten
// standard errors of the mean over the dip, or the quietest jitter drawn), ending before the last
// step when it recovers, on the one host excluded at priority 2 for its retransmits.
void ExpectSmallDipTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  ASSERT_EQ(s.phases.size(), job.truth.kind == "rdma-small-dip-recovered" ? 3u : 2u);
  const auto& dip = s.phases[1];
  const double drop = 1 - dip.tgs / s.phases[0].tgs;
  EXPECT_GE(drop, 0.0195);
  EXPECT_LE(drop, 0.0505);
  EXPECT_GE(dip.steps.first, 15) << "after the steady window";
  const double len = static_cast<double>(dip.steps.last - dip.steps.first + 1);
  EXPECT_TRUE(s.step_jitter * 100 <= 0.2 + 1e-9 || 10 * s.step_jitter / std::sqrt(len) <= drop + 1e-3)
      << "jitter " << s.step_jitter * 100 << " % hides a " << drop * 100 << " % dip over " << len << " steps";
  if (job.truth.kind == "rdma-small-dip-recovered") {
    EXPECT_LT(dip.steps.last, s.last_step);
    EXPECT_EQ(s.phases[2].tgs, s.phases[0].tgs);
  }
  ASSERT_EQ(job.truth.exclude.size(), 1u);
  EXPECT_EQ(job.truth.exclude[0].priority, std::optional<int>(2));
  bool on_dip = false;
  for (const auto& f : s.faults)
    on_dip |= f.kind == "rdma_retx" && f.window.steps && f.window.steps->first == dip.steps.first &&
              f.window.steps->last == dip.steps.last && f.hosts == std::vector<std::string>{job.truth.exclude[0].host};
  EXPECT_TRUE(on_dip) << "the excluded host retransmits over exactly the dip's steps";
}

// The hosts a slowdown fault (RDMA retransmits or a throttling GPU) runs on, and its first step.
std::pair<std::set<std::string>, int64_t> SlowdownHosts(const fixturegen::Scenario& s) {
  std::set<std::string> hosts;
  int64_t onset = -1;
  for (const auto& f : s.faults) {
    if (f.kind != "rdma_ack_timeout" && f.kind != "thermal_throttle") continue;   // not a decoy's retransmits
    hosts.insert(f.hosts.begin(), f.hosts.end());
    if (f.window.steps) onset = f.window.steps->first;
  }
  return {hosts, onset};
}

// One host's node_hw down for the whole job: a fault on it leaves nothing to judge (observability-
// gap, nobody excluded); a fault on another host is that fault's verdict, the blind host kept.
void ExpectBlindHostTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  std::set<std::string> blind;
  for (const auto& f : s.faults)
    if (f.kind == "exporter_down") {
      EXPECT_FALSE(f.window.steps || f.window.from_time) << "down for the whole job";
      blind.insert(f.hosts.begin(), f.hosts.end());
    }
  ASSERT_EQ(blind.size(), 1u);
  const auto [faulty, onset] = SlowdownHosts(s);
  ASSERT_EQ(faulty.size(), 1u);
  if (job.truth.kind.find("-on-blind-host") != std::string::npos) {
    EXPECT_EQ(faulty, blind);
    EXPECT_EQ(job.truth.root_cause, "observability-gap");
    EXPECT_EQ(job.truth.action, "none");
    EXPECT_TRUE(job.truth.exclude.empty());
  } else {
    EXPECT_NE(faulty, blind);
    EXPECT_EQ(job.truth.action, "retry-excluding-nodes");
    ASSERT_EQ(job.truth.exclude.size(), 1u);
    EXPECT_EQ(job.truth.exclude[0].host, *faulty.begin());
    EXPECT_NE(std::find(job.truth.must_not_exclude.begin(), job.truth.must_not_exclude.end(), *blind.begin()),
              job.truth.must_not_exclude.end());
  }
}

// The snapshot ends 15+ minutes of training before the job: a fault that began after its end is an
// observability-gap (nobody excluded); one that began 15+ minutes before it keeps its verdict.
void ExpectTruncatedTsdbTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  ASSERT_TRUE(s.tsdb_end_step.has_value());
  EXPECT_LT(*s.tsdb_end_step, s.last_step - 19);
  const auto [faulty, onset] = SlowdownHosts(s);
  ASSERT_EQ(faulty.size(), 1u);
  if (job.truth.kind.find("-after-tsdb-end") != std::string::npos) {
    EXPECT_GT(onset, *s.tsdb_end_step);
    EXPECT_EQ(job.truth.root_cause, "observability-gap");
    EXPECT_EQ(job.truth.action, "none");
    EXPECT_TRUE(job.truth.exclude.empty());
  } else {
    EXPECT_LT(onset, *s.tsdb_end_step - 19);
    EXPECT_EQ(job.truth.action, "retry-excluding-nodes");
    ASSERT_EQ(job.truth.exclude.size(), 1u);
    EXPECT_EQ(job.truth.exclude[0].host, *faulty.begin());
  }
}

// Each shape family is drawn once per block: over sixteen seeds' two blocks, every variant of each
// (RDMA or thermal, the fault seen or hidden from the TSDB) shows up, and so does init-fault's rare
// throttle that never lifts.
TEST(CampaignPlanner, ShapeFamiliesDrawEveryVariant) {
  std::set<std::string> planned;
  for (uint64_t seed = 11; seed < 27; ++seed)
    for (const PlannedJob& job : Plan(seed, 144, false, false, false, true)) planned.insert(job.truth.kind);
  for (const std::string family : {"late-fault", "blind-host", "truncated-tsdb", "init-fault"})
    for (const auto& kind : kWidestKinds.at(family)) EXPECT_TRUE(planned.count(kind)) << kind << " never planned";
  for (const std::string& family : kProbedShapeFamilies)
    for (const auto& kind : kWidestKinds.at(family)) EXPECT_TRUE(planned.count(kind)) << kind << " never planned";
}

// Every `--widest` job draws its hardware (GPU model, GPUs and NICs per node) from its own stream,
// and a kind's device indices land on devices the node has.
TEST(CampaignPlanner, WidestDrawsTheNodesHardware) {
  std::set<int> gpus, nics;
  std::set<std::string> models;
  std::set<size_t> few_node_counts;
  int ipv6 = 0, interval_changes = 0;
  for (const PlannedJob& job : Plan(16, kWidestBlock, false, false, false, true)) {
    if (!job.truth.scored) continue;
    auto s = fixturegen::ParseScenario(job.scenario_yaml, job.truth.job_id);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    gpus.insert(s->gpus_per_node);
    nics.insert(s->rdma_devices);
    models.insert(s->gpu_name);
    ipv6 += s->ipv6;
    if (s->node_hw_interval_from) {
      ++interval_changes;
      EXPECT_GT(s->node_hw_interval_from->second, s->node_hw_interval) << "only ever coarser";
      EXPECT_GT(s->node_hw_interval_from->first, s->first_step);
      EXPECT_LT(s->node_hw_interval_from->first, s->last_step);
    }
    if (job.truth.kind.rfind("few-nodes-", 0) == 0) few_node_counts.insert(s->hosts.size());
    if (s->gpu_name == "AMD Instinct MI300A") {
      EXPECT_EQ(s->gpus_per_node, 4);
    }
    if (s->gpu_name != "AMD Instinct MI355X") {
      EXPECT_LT(s->gpu_power_w, 914) << s->gpu_name << " draws less than an MI355X";
    }
    for (const auto& f : s->faults) {
      const int count = f.kind.rfind("rdma_", 0) == 0 ? s->rdma_devices : s->gpus_per_node;
      for (int d : f.devices) EXPECT_LT(d, count) << job.truth.job_id << " " << f.kind;
      if (f.kind == "gpu_idle") {
        EXPECT_FALSE(f.devices.empty()) << "a partial hang leaves some GPUs busy";
      }
    }
  }
  EXPECT_GT(gpus.size(), 1u) << "one GPU count per node in a block";
  EXPECT_EQ(nics, (std::set<int>{1, 2, 4, 8}));
  EXPECT_GT(models.size(), 2u);
  EXPECT_GT(ipv6, 0) << "some fleets address their nodes by IPv6";
  EXPECT_LT(ipv6, 30);
  EXPECT_GT(interval_changes, 0) << "some jobs' node_hw interval changes mid-job";
  EXPECT_LT(interval_changes, 30);
  EXPECT_EQ(few_node_counts, (std::set<size_t>{2, 3}));
  // Each of the five kinds FewNodes() draws shows up within 30 such jobs (the other three few-node
  // kinds are the same draws' variants: correctable-only, hot-not-throttled, death after a link).
  std::set<std::string> few_node_kinds;
  for (uint64_t seed : {11u, 12u, 13u, 21u, 22u})
    for (const PlannedJob& job : Plan(seed, 144, false, false, false, true))
      if (job.truth.kind.rfind("few-nodes-", 0) == 0) few_node_kinds.insert(job.truth.kind);
  for (const char* kind : {"few-nodes-healthy", "few-nodes-gpu-hardware-fault", "few-nodes-thermal-throttle",
                           "few-nodes-node-death", "few-nodes-rdma-degradation"})
    EXPECT_TRUE(few_node_kinds.count(kind)) << kind << " never planned";
  // Without --widest the node stays an 8-GPU, 8-NIC MI355X: the plans pinned above are unchanged.
  for (const PlannedJob& job : Plan(14, 30, false, false, true))
    EXPECT_EQ(job.scenario_yaml.find("gpus_per_node"), std::string::npos) << job.truth.job_id;
}

// The hosts a job's truth excludes.
std::set<std::string> ExcludedHosts(const PlannedJob& job) {
  std::set<std::string> hosts;
  for (const auto& e : job.truth.exclude) hosts.insert(e.host);
  return hosts;
}

// The one fault of `kind` in a scenario (fails the test when there is not exactly one).
const fixturegen::Fault* OnlyFault(const fixturegen::Scenario& s, const std::string& kind) {
  const fixturegen::Fault* found = nullptr;
  int count = 0;
  for (const auto& f : s.faults)
    if (f.kind == kind && f.window.steps && (kind != "rdma_retx" || f.rate >= 300)) found = &f, ++count;
  EXPECT_EQ(count, 1) << kind;
  return count == 1 ? found : nullptr;
}

// What each probed shape promises: one GPU throttles; two kinds start on the same step on two
// hosts, both excluded; a node dies right after a checkpoint step or a restore; a counter reset
// lands inside the excluded host's fault; steps 5-8 % noisy; a fault that ends long before the
// job; exactly half the hosts faulty; 1-2 s steps; a late exporter on a kept host.
void ExpectProbedShapeTruth(const PlannedJob& job, const fixturegen::Scenario& s, const std::string& family) {
  const std::set<std::string> excluded = ExcludedHosts(job);
  if (family == "one-gpu-throttle") {
    const fixturegen::Fault* f = OnlyFault(s, "thermal_throttle");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->devices.size(), 1u);
    EXPECT_EQ(job.truth.kind == "one-gpu-throttle-of-16", s.gpus_per_node == 16);
  } else if (family == "simultaneous-kinds") {
    const fixturegen::Fault* hot = OnlyFault(s, "thermal_throttle");
    const fixturegen::Fault* link = OnlyFault(s, "rdma_ack_timeout");
    ASSERT_TRUE(hot && link);
    EXPECT_EQ(hot->window.steps->first, link->window.steps->first);
    EXPECT_EQ(excluded, (std::set<std::string>{hot->hosts[0], link->hosts[0]}));
    EXPECT_TRUE(RootCauseMatches(job.truth.root_cause, "thermal-throttle"));
    EXPECT_TRUE(RootCauseMatches(job.truth.root_cause, "rdma-link-degradation"));
    EXPECT_FALSE(RootCauseMatches(job.truth.root_cause, "thermal"));
  } else if (family == "death-at-checkpoint") {
    ASSERT_TRUE(s.checkpoint_period > 0 || s.first_step > 0);
    if (job.truth.kind == "death-after-restore") {
      EXPECT_GT(s.first_step, 0);
      EXPECT_LE(s.last_step - s.first_step, 8);
    } else {
      EXPECT_EQ(s.last_step % s.checkpoint_period, 0) << "dies just after a checkpoint step";
    }
    EXPECT_EQ(job.truth.root_cause, "gpu-hardware-fault");
  } else if (family == "reset-mid-fault") {
    ASSERT_EQ(excluded.size(), 1u);
    const fixturegen::Fault* link = OnlyFault(s, "rdma_ack_timeout");
    ASSERT_TRUE(link);
    bool inside = false;
    for (const auto& f : s.faults)
      inside |= f.kind == "counter_reset" && f.hosts == link->hosts && link->window.steps->Contains(f.window.steps->first);
    EXPECT_TRUE(inside) << "the reset lands inside the fault";
  } else if (family == "noisy-dip") {
    EXPECT_GE(s.step_jitter, 0.05);
    EXPECT_LE(s.step_jitter, 0.08);
  } else if (family == "transient-early") {
    const auto windows = SlowdownWindows(s).at(*excluded.begin());
    EXPECT_GE(s.last_step - windows.front().last, 3 * (windows.front().last - windows.front().first + 1));
  } else if (family == "half-the-hosts") {
    EXPECT_EQ(2 * excluded.size(), s.hosts.size());
  } else if (family == "fast-steps") {
    const double seconds = s.seq_len * s.per_device_batch_size / s.phases.front().tgs;
    EXPECT_GE(seconds, 0.95);
    EXPECT_LE(seconds, 2.05);
    EXPECT_EQ(s.ray_interval, 5);
  } else if (family == "log-gap") {
    ASSERT_TRUE(s.log_gap);
    const auto windows = SlowdownWindows(s);
    ASSERT_EQ(windows.size(), 1u);
    const Window& w = windows.begin()->second.front();
    EXPECT_LT(s.log_gap->first, w.first) << "the gap covers the onset";
    const bool hidden = s.log_gap->last > w.last;
    EXPECT_EQ(hidden, job.truth.kind == "rdma-inside-log-gap");
    EXPECT_EQ(job.truth.root_cause, hidden ? "unknown" : w.kind == "thermal_throttle" ? "thermal-throttle" : "rdma-link-degradation");
    EXPECT_EQ(excluded.empty(), hidden);
  } else if (family == "comes-and-goes") {
    // One host, 3-5 episodes, each costing TGS, with healthy steps between them.
    ASSERT_EQ(excluded.size(), 1u);
    const auto windows = SlowdownWindows(s).at(*excluded.begin());
    EXPECT_GE(windows.size(), 3u);
    EXPECT_LE(windows.size(), 5u);
    for (size_t k = 1; k < windows.size(); ++k) {
      EXPECT_GT(windows[k].first, windows[k - 1].last + 1) << "episodes apart";
      EXPECT_EQ(TgsAt(s, windows[k].first - 1), TopTgs(s)) << "healthy between episodes";
    }
  } else if (family == "warmest-host") {
    // The warm host runs hot the whole job at full clock; the fault is on it or beside it (then kept).
    ASSERT_EQ(excluded.size(), 1u);
    std::string warm;
    for (const auto& f : s.faults)
      if (f.kind == "gpu_hot") warm = f.hosts.at(0);
    ASSERT_FALSE(warm.empty());
    EXPECT_EQ(excluded.count(warm) == 1, job.truth.kind.find("-on-warmest-host") != std::string::npos);
    if (!excluded.count(warm)) {
      EXPECT_NE(std::find(job.truth.must_not_exclude.begin(), job.truth.must_not_exclude.end(), warm),
                job.truth.must_not_exclude.end());
    }
  } else if (family == "late-exporter") {
    const fixturegen::Fault* late = OnlyFault(s, "exporter_down");
    ASSERT_TRUE(late);
    EXPECT_EQ(late->window.steps->first, 0);
    EXPECT_FALSE(excluded.count(late->hosts[0]));
  }
}

// A log gap's truth: the usual verdict when the fault outlasts the gap, `unknown` when it hides in it.
void ExpectLogGapTruth(const PlannedJob& job, const fixturegen::Scenario& s) {
  ExpectProbedShapeTruth(job, s, "log-gap");
  EXPECT_EQ(job.truth.action, job.truth.exclude.empty() ? "none" : "retry-excluding-nodes");
}

TEST(CampaignPlanner, WidestTruthFollowsFromEachScenario) {
  std::map<std::string, int> kinds;
  for (uint64_t seed : {11u, 12u, 13u}) {
    for (const PlannedJob& job : Plan(seed, 2 * kWidestBlock, false, false, false, true)) {
      const std::string family = WidestFamilyOf(job.truth.kind);
      if (family.empty()) continue;
      SCOPED_TRACE("seed " + std::to_string(seed) + " job " + job.truth.job_id + " " + job.truth.kind);
      auto s = fixturegen::ParseScenario(job.scenario_yaml, job.truth.job_id);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      ++kinds[job.truth.kind];
      ExpectExclusionsAreFaulty(job, *s);
      // A coverage-gaps job misses more of a fault's scrapes than the telemetry variations may.
      if (family != "coverage-gaps") ExpectTelemetryVariations(*s);
      // Families whose truth is not "exclude the faulty hosts and retry" have a check of their own.
      static const std::map<std::string, void (*)(const PlannedJob&, const fixturegen::Scenario&)> kOwnTruth = {
          {"peerless-thermal", ExpectPeerlessThermalTruth}, {"fleet-rdma", ExpectFleetRdmaTruth},
          {"unusual-evidence", ExpectUnusualEvidenceTruth}, {"few-nodes", ExpectFewNodesTruth},
          {"fabric-rdma", ExpectFabricRdmaTruth}, {"gpu-model-levels", ExpectGpuModelLevelsTruth},
          {"blind-host", ExpectBlindHostTruth}, {"truncated-tsdb", ExpectTruncatedTsdbTruth},
          {"log-gap", ExpectLogGapTruth}};
      if (auto own = kOwnTruth.find(family); own != kOwnTruth.end()) {
        own->second(job, *s);
        continue;
      }
      EXPECT_EQ(job.truth.action, "retry-excluding-nodes");
      EXPECT_FALSE(job.truth.exclude.empty());
      if (family == "init-fault") ExpectInitFaultTruth(job, *s);
      if (family == "fatal-on-slow-host") ExpectFatalOnSlowHostTruth(job, *s);
      if (family == "two-episodes") ExpectTwoEpisodesTruth(job, *s);
      if (family == "other-launcher") {
        // Named as those launchers name their runs; the Slurm nodelist order does not apply.
        const std::string launcher = job.truth.kind.substr(0, job.truth.kind.find('-'));
        EXPECT_EQ(job.truth.job_id.rfind(launcher + (launcher == "k8s" ? "-" : "_"), 0), 0u) << job.truth.job_id;
        EXPECT_NE(job.scenario_yaml.find("launcher: " + launcher + "\n"), std::string::npos);
        if (launcher == "local") EXPECT_EQ(s->hosts.size(), 1u);
      }
      if (family == "still-running") {
        EXPECT_TRUE(s->running);
        EXPECT_FALSE(s->summary.present) << "a running job has no end-of-job line";
        ASSERT_TRUE(job.truth.now);
        EXPECT_EQ(job.scenario_yaml.find("summary:"), std::string::npos);
        EXPECT_EQ(s->tsdb_format, "blocks") << "a WAL-only TSDB of a running job is live: it cannot be copied";
      }
      if (family == "addresses-in-log") {
        EXPECT_EQ(s->node_hw_names, "ip");
        EXPECT_FALSE(s->ray_metrics) << "no Ray series may name the addresses";
      }
      if (family == "late-fault") ExpectLateFaultTruth(job, *s);
      if (family == "huge-many-hosts") {
        EXPECT_GT(s->hosts.size(), 429u);
        EXPECT_GE(job.truth.exclude.size(), 7u);
      }
      if (family == "coverage-gaps") ExpectCoverageGapsTruth(job, *s);
      if (std::find(kProbedShapeFamilies.begin(), kProbedShapeFamilies.end(), family) != kProbedShapeFamilies.end())
        ExpectProbedShapeTruth(job, *s, family);
      if (family == "small-dip") ExpectSmallDipTruth(job, *s);
    }
  }
  for (const auto& [family, names] : kWidestKinds) {
    int planned = 0;
    for (const auto& k : names) planned += kinds[k];
    EXPECT_EQ(planned, 6 * PlannedPerBlock(family))
        << family << ": in each of the two " << kWidestBlock << "-job blocks of three seeds";
  }
  for (const auto& [family, names] : kWidestKinds)
    for (const auto& k : names)
      if (!kRareWidestKinds.count(k) && !kOncePerBlock.count(family)) {
        EXPECT_GT(kinds[k], 0) << k << " never planned";
      }
}

}  // namespace
}  // namespace diagnose::campaign
