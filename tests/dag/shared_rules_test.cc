// The shipped shared rules (rules/common) evaluated through a playbook that uses them.
#include <gtest/gtest.h>

#include "engine/dag/evaluate.h"
#include "engine/playbook/loader.h"
#include "engine/report/job_facts.h"

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

}  // namespace
}  // namespace diagnose::dag
