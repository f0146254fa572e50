// The shipped shared rules (rules/common) evaluated through a playbook that uses them.
#include <algorithm>

#include <gtest/gtest.h>

#include "engine/dag/evaluate.h"
#include "engine/playbook/loader.h"
#include "engine/report/job_facts.h"
#include "tests/support/table_query_client.h"

namespace diagnose::dag {
namespace {

TEST(SharedRulesTest, TgsPhasesFromLogFactsDriveAVerdict) {
  playbook::Loader loader;
  loader.LoadCommonFiles(playbook::FindYamlFiles(std::string(DIAGNOSE_SOURCE_DIR) + "/rules/common", false));
  loader.LoadPlaybookText(R"(playbook: drop
description: a TGS drop larger than the threshold
triggers: [{tgs_pattern: [constant-drop]}]
rules:
  - id: drop_pct
    fact: "(first(common.tgs_phases.segments).mean - last(common.tgs_phases.segments).mean) / first(common.tgs_phases.segments).mean * 100"
  - id: v
    verdict:
      when: "drop_pct.value > thresholds.tgs_degradation_pct"
      root_cause: unknown
      summary: "TGS fell {{ fmt(drop_pct.value, 1) }}% at step {{ common.tgs_phases.first_change }}"
)", "drop.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  auto lib = loader.TakeLibrary();
  JobFacts facts;
  facts.status = JobStatus::kCompleted;
  facts.tgs.pattern = "constant-drop";
  for (int s = 0; s < 120; ++s) {
    StepRecord r;
    r.step = s;
    r.tokens_per_sec_per_device = (s < 60 ? 3000 : 2400) + (s % 3) * 5;
    r.seconds = 30;
    facts.steps.push_back(r);
  }
  EvaluationContext ctx;
  ctx.facts = nlohmann::json(facts);
  auto sel = SelectPlaybooks(lib, ctx).selected;
  ASSERT_EQ(sel.size(), 1u);
  auto graph = CompiledGraph::Compile(lib, {sel[0].playbook});
  ASSERT_TRUE(graph.ok());
  auto r = Evaluate(*graph, ctx);
  ASSERT_EQ(r.candidates.size(), 1u) << nlohmann::json(r.not_evaluated).dump();
  EXPECT_EQ(r.candidates[0].summary, "TGS fell 20.0% at step 60");
  // The shared rules are nodes of their own, evaluated once.
  EXPECT_GE(graph->IndexOf("common/tgs_phases"), 0);
  EXPECT_GE(graph->IndexOf("common/tgs_steps"), 0);
  EXPECT_LT(graph->IndexOf("common/rdma_retx_rate"), 0);   // not used, not compiled
}

// An optional analysis input (tgs_attribution's other faults) read from a shared rule whose query
// failed: the analysis runs without it instead of being skipped, after the shared rule.
TEST(SharedRulesTest, AnOptionalAnalysisInputThatFailedIsAbsentNotASkip) {
  playbook::Loader loader;
  loader.LoadCommonText(R"(rules:
  - id: other_faults
    query: 'broken_clock_metric'
    range: true
    window: job
    step: 60s
    by: [host]
)", "c.yaml");
  loader.LoadPlaybookText(R"YAML(playbook: p
description: d
rules:
  - id: attribution
    analysis: tgs_attribution
    input: "{hostA: [{start: 1200, end: 2400}]}"
    baseline_input: facts.steps
    windows: "default(common.other_faults.series, {})"
)YAML", "p.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  auto lib = loader.TakeLibrary();
  JobFacts facts;
  nlohmann::json step_times = nlohmann::json::array();
  for (int s = 0; s < 120; ++s) {
    StepRecord r;
    r.step = s;
    r.tokens_per_sec_per_device = (s >= 40 && s < 80 ? 2400 : 3000) + (s % 3) * 5;
    r.seconds = 30;
    facts.steps.push_back(r);
    step_times.push_back({s, 30.0 * s});
  }
  EvaluationContext ctx;
  ctx.facts = nlohmann::json(facts);
  ctx.discovery = {{"range", {{"start", 0}, {"end", 3600}}}, {"step_times", step_times}};
  testing::TableQueryClient client;
  client.errors["broken_clock_metric"] = "bad_data: parse error";
  ctx.subject = &client;
  auto graph = CompiledGraph::Compile(lib, {"p"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  ASSERT_GE(graph->IndexOf("common/other_faults"), 0);   // compiled although only read optionally
  auto r = Evaluate(*graph, ctx);
  const auto& shared = r.nodes[graph->IndexOf("common/other_faults")];
  const auto& attribution = r.nodes[graph->IndexOf("p/attribution")];
  EXPECT_EQ(shared.health, NodeHealth::kError);
  EXPECT_EQ(attribution.health, NodeHealth::kOk) << attribution.reason;
  EXPECT_EQ(attribution.value["explains"], nlohmann::json::array({"hostA"})) << attribution.value.dump();
}

// `common.X.field` reads the shared rule's own value (no copy of every shared rule the node needs),
// and a range rule's series reaches the evidence of the rule and of the findings citing it, one
// copy shared by all of them.
TEST(SharedRulesTest, SharedRangeValuesAreReadInPlaceAndTheirSeriesSharedWithEvidence) {
  playbook::Loader loader;
  loader.LoadCommonText(R"YAML(rules:
  - id: power
    description: GPU power per host
    query: 'max by (host) (hw_gpu_power_watts)'
    range: true
    window: job
    by: [host]
    reduce: max
)YAML", "power.yaml");
  loader.LoadPlaybookText(R"YAML(playbook: hot
description: a host drawing more power than the rest
rules:
  - id: peak
    fact: "common.power.max"
  - id: hot_hosts
    fact: "keys(common.power.values > 300)"
  - id: series_hosts
    fact: "keys(common.power.series)"
  - id: v
    verdict:
      when: "len(hot_hosts.value) > 0"
      root_cause: unknown
      hosts: hot_hosts.value
      summary: "peak {{ common.power.max }} W on {{ join(hot_hosts.value, ', ') }} of {{ len(series_hosts.value) }}"
)YAML", "hot.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  auto lib = loader.TakeLibrary();
  testing::TableQueryClient client;
  for (const auto& [host, watts] : {std::pair{"n1", 200.0}, std::pair{"n2", 450.0}, std::pair{"n3", 250.0}}) {
    Series s;
    s.labels = {{"host", host}};
    for (double t = 1000; t <= 1060; t += 30) s.samples.push_back({t, watts + (t - 1000) / 30});
    client.answers["hw_gpu_power_watts"].push_back(std::move(s));
  }
  EvaluationContext ctx;
  ctx.facts = nlohmann::json(JobFacts{});
  ctx.discovery = {{"range", {{"start", 1000}, {"end", 1060}}}};
  ctx.subject = &client;
  auto graph = CompiledGraph::Compile(lib, {"hot"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx);
  ASSERT_EQ(r.candidates.size(), 1u) << nlohmann::json(r.not_evaluated).dump();
  EXPECT_EQ(r.candidates[0].summary, "peak 452 W on n2 of 3");
  EXPECT_EQ(r.nodes[graph->IndexOf("hot/peak")].value["value"], 452.0);

  const auto& own = r.nodes[graph->IndexOf("common/power")].evidence;
  ASSERT_EQ(own.size(), 1u);
  ASSERT_TRUE(own[0].series);
  const nlohmann::json expected = {{"n1", {{1000.0, 200.0}, {1030.0, 201.0}, {1060.0, 202.0}}},
                                   {"n2", {{1000.0, 450.0}, {1030.0, 451.0}, {1060.0, 452.0}}},
                                   {"n3", {{1000.0, 250.0}, {1030.0, 251.0}, {1060.0, 252.0}}}};
  EXPECT_EQ(*own[0].series, expected);
  const Finding* verdict = nullptr;
  for (const auto& f : r.findings)
    if (f.id == "hot/v") verdict = &f;
  ASSERT_NE(verdict, nullptr);
  auto cited = std::find_if(verdict->evidence.begin(), verdict->evidence.end(),
                            [](const Evidence& e) { return e.kind == EvidenceKind::kPromql; });
  ASSERT_NE(cited, verdict->evidence.end());
  EXPECT_EQ(cited->series.get(), own[0].series.get());
}

}  // namespace
}  // namespace diagnose::dag
