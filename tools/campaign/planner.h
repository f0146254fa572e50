// Plans a randomized fault-injection campaign: for each job, a complete fixturegen scenario (YAML
// text, `expect:` filled from the truth) and the truth itself. A pure function of (seed, jobs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "tools/campaign/truth.h"

namespace diagnose::campaign {

struct PlannedJob {
  std::string scenario_yaml;
  JobTruth truth;
  double cost = 0;   // rough generation cost (samples), to start the heavy jobs first
};

// `jobs` scored jobs; a restore case adds its baseline job (truth.scored = false) before it.
// `wide` (issue 35) draws every job from the widened shapes (20-3,000 steps, 4-512 nodes, 5-60 s
// scrapes) and adds four families: overlapping faults, dips short or long against the job,
// dips under checkpoint spikes, throttling with a modest TGS cost. Without it a seed plans exactly
// the jobs it planned before, so earlier campaigns stay reproducible. `perf` (issue 33) adds the
// performance regressions judged against a baseline run, each with a profiler window: a main-stream
// blocker, overlap lost, one slow GPU, and a slowdown within noise. `wider` implies `wide` and adds
// the shapes those families never draw, twice in every block: an RDMA fault and a throttling GPU
// overlapping in either order, a fault on from the first step, 3-6 faulty hosts among 64-512, a
// one-step dip and a dip over ~90 % of the job, a node dying while another host throttles, a GPU
// fault or host OOM ending a job after or during a slowdown elsewhere; their jobs also name nodes
// only by instance or IP (no host label) and miss scrapes inside fault windows. `wide` and the
// default plan exactly what they planned before it existed. `widest` implies `wider` and adds what
// that still never draws: a fault starting in init or compile (a slowdown, or a GPU abort before
// any step), a fatal fault on the slow host itself, node_hw scraped by address with no Ray series
// (only the log's bind= lines name the addresses), two episodes of one fault on one host, 7-12
// faulty hosts among 430-512, throttling no peer shows, a fabric episode on most of a job's hosts,
// a k8s or local launcher and a job still running, and once a block the shapes real clusters
// produce that those still never drew: a fault in the job's last 2-5 %, node_hw down on one host
// for the whole job, a TSDB snapshot that ends before the job; `wider`, `wide` and the default plan
// what they planned before it.
StatusOr<std::vector<PlannedJob>> PlanCampaign(uint64_t seed, int jobs, bool wide = false, bool perf = false,
                                               bool wider = false, bool widest = false);

}  // namespace diagnose::campaign
