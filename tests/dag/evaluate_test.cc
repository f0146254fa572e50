#include "engine/dag/evaluate.h"
#include "engine/dag/query_result.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "engine/playbook/loader.h"
#include "engine/report/job_facts.h"
#include "tests/support/table_query_client.h"

namespace diagnose::dag {
namespace {

using nlohmann::json;

using FakeClient = testing::TableQueryClient;

Series Instant(Labels labels, double v) { return {std::move(labels), {{100, v}}}; }

const char* kPlaybook = R"(playbook: hb
description: heartbeat liveness
triggers:
  - failure_class: [heartbeat-timeout]
rules:
  - id: accused
    fact: facts.heartbeat.accused_hosts
    evidence: facts.heartbeat.evidence
  - id: power
    description: GPU power at heartbeat stop
    query: 'avg by (host) (hw_gpu_power_watts{host=~"{{ hosts }}"})'
    window: heartbeat_stop
    at: start
    by: [host]
    args:
      hosts: {type: hosts, value: accused.hosts}
  - id: util
    query: 'avg by (instance) (ray_node_gpus_utilization)'
    window: heartbeat_stop
    by: [host]
  - id: broken
    query: 'broken_metric'
    window: heartbeat_stop
  - id: after_broken
    fact: broken.count
  - id: alive
    verdict:
      when: "min(power.values) > thresholds.active_w and min(util.values) > 90"
      root_cause: heartbeat-false-positive
      confidence: [{level: confirmed, when: "len(accused.hosts) == 2"}, {level: likely}]
      summary: "accused {{ join(accused.hosts, ', ') }} were alive"
      hosts: accused.hosts
      onset: windows.heartbeat_stop.start
      explains: [heartbeat-timeout]
      action: retry-with-changes
      changes: {jax_distributed_heartbeat_timeout_seconds: "14400"}
  - id: uses_broken
    verdict:
      when: "after_broken.value > 0"
      root_cause: unknown
)";

class EvaluateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    playbook::Loader loader;
    loader.LoadCommonText("thresholds: {active_w: 800, checkpoint_window_settle_seconds: 60}\n", "t.yaml");
    loader.LoadCommonFile(playbook::PlaybookDataDir() + "/rules/common/windows.yaml");   // heartbeat_stop
    loader.LoadPlaybookText(kPlaybook, "hb.yaml");
    ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
    library_ = loader.TakeLibrary();
    JobFacts facts;
    facts.status = JobStatus::kFailed;
    facts.failure_class = "heartbeat-timeout";
    facts.heartbeat.present = true;
    facts.heartbeat.accused_hosts = {"gpu-a7", "gpu-b\"3"};
    facts.heartbeat.crash_time = LogTime{10000, "0224 19:21:00", "test"};
    facts.heartbeat.timeout_seconds = 900;
    facts.heartbeat.evidence = {LogRef{"job.log", 42, "The tasks have crashed"}};
    ctx_.facts = json(facts);
    ctx_.discovery = {{"instance_hosts", {{"10.0.0.7:55080", "gpu-a7"}}}, {"range", {{"start", 0}, {"end", 20000}}}};
  }
  playbook::Library library_;
  EvaluationContext ctx_;
  FakeClient client_;
};

TEST_F(EvaluateTest, RulesAskingTheSameQuestionShareOneRequest) {
  playbook::Loader loader;
  loader.LoadPlaybookText(R"YAML(playbook: mem
description: two reductions of one range query
rules:
  - id: last
    query: 'max by (host) (mem_used)'
    range: true
    window: job
    step: 60s
    by: [host]
    reduce: last
  - id: peak
    query: 'max by (host) (mem_used)'
    range: true
    window: job
    step: 60s
    by: [host]
    reduce: max
)YAML", "mem.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  playbook::Library library = loader.TakeLibrary();
  client_.answers["mem_used"] = {Series{{{"host", "h1"}}, {{100, 5}, {160, 9}, {220, 7}}}};
  ctx_.subject = &client_;
  auto graph = CompiledGraph::Compile(library, {"mem"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx_);
  ASSERT_EQ(client_.batches.size(), 1u);
  EXPECT_EQ(client_.batches[0].size(), 1u) << "one request for both rules";
  EXPECT_EQ(r.queries_run, 1);
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/last")].value["values"], json({{"h1", 7.0}}));
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/peak")].value["values"], json({{"h1", 9.0}}));
}

TEST_F(EvaluateTest, ALaterWaveAskingAnEarlierQuestionSharesItsRequest) {
  playbook::Loader loader;
  loader.LoadPlaybookText(R"YAML(playbook: mem
description: one question asked twice, the second time after an answer it needs
rules:
  - id: early
    query: 'max by (host) (mem_used) > {{ floor }}'
    window: job
    by: [host]
    args:
      floor: {type: number, value: 3}
  - id: floor
    fact: len(early.values) + 1
  - id: late
    query: 'max by (host) (mem_used) > {{ floor }}'
    window: job
    by: [host]
    args:
      floor: {type: number, expr: floor.value}
  - id: other
    query: 'max by (host) (mem_total) > {{ floor }}'
    window: job
    by: [host]
    args:
      floor: {type: number, expr: floor.value + 1}
)YAML", "mem.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  playbook::Library library = loader.TakeLibrary();
  client_.answers["mem_used"] = {Instant({{"host", "h1"}}, 9), Instant({{"host", "h2"}}, 4)};
  client_.answers["mem_total"] = {Instant({{"host", "h1"}}, 16)};
  ctx_.subject = &client_;
  auto graph = CompiledGraph::Compile(library, {"mem"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  ASSERT_LT(graph->nodes()[graph->IndexOf("mem/early")].level, graph->nodes()[graph->IndexOf("mem/late")].level);
  auto r = Evaluate(*graph, ctx_);
  // The second round sends only the question the first did not ask.
  ASSERT_EQ(client_.batches.size(), 2u);
  ASSERT_EQ(client_.batches[1].size(), 1u);
  EXPECT_EQ(client_.batches[1][0].promql, "max by (host) (mem_total) > 4");
  EXPECT_EQ(r.queries_run, 2);
  EXPECT_EQ(r.queries_shared, 1);
  EXPECT_EQ(r.points_returned, 3) << "two series of one point, then one";
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/late")].health, NodeHealth::kOk);
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/late")].value["values"], json({{"h1", 9.0}, {"h2", 4.0}}));
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/late")].value, r.nodes[graph->IndexOf("mem/early")].value);
}

// A client that counts what is asked of it once its owner has closed it.
class ClosableClient : public testing::TableQueryClient {
 public:
  bool closed = false;
  mutable int touched_after_close = 0;
  bool EvaluatesPromql() const override {
    if (closed) ++touched_after_close;
    return false;
  }
  std::vector<StatusOr<QueryResult>> RunBatch(const std::vector<Query>& qs) override {
    if (closed) ++touched_after_close;
    return TableQueryClient::RunBatch(qs);
  }
};

// The caller hears once that nothing is left to ask, when the last wave's answers are in and
// before the rules reading them are judged, and the client is not touched afterwards: the
// pipeline closes the private server then, while those rules are judged.
TEST_F(EvaluateTest, TheLastAnswerIsToldOnceBeforeTheRulesReadingItAreJudged) {
  playbook::Loader loader;
  loader.LoadPlaybookText(R"YAML(playbook: mem
description: two waves, then rules on the second wave's answer
rules:
  - id: early
    query: 'max by (host) (mem_used)'
    window: job
    by: [host]
  - id: floor
    fact: len(early.values)
  - id: late
    query: 'max by (host) (mem_total) > {{ floor }}'
    window: job
    by: [host]
    args:
      floor: {type: number, expr: floor.value}
  - id: hosts_over
    fact: len(late.values)
)YAML", "mem.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  playbook::Library library = loader.TakeLibrary();
  ClosableClient client;
  client.answers["mem_used"] = {Instant({{"host", "h1"}}, 9)};
  client.answers["mem_total"] = {Instant({{"host", "h1"}}, 16), Instant({{"host", "h2"}}, 8)};
  ctx_.subject = &client;
  int told = 0;
  size_t batches_when_told = 0;
  ctx_.on_last_query_answered = [&] {
    ++told;
    batches_when_told = client.batches.size();
    client.closed = true;
  };
  auto graph = CompiledGraph::Compile(library, {"mem"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx_);
  EXPECT_EQ(told, 1);
  EXPECT_EQ(batches_when_told, 2u) << "told before the second wave was answered";
  EXPECT_EQ(client.touched_after_close, 0);
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/hosts_over")].health, NodeHealth::kOk);
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/hosts_over")].value["value"], 2);
}

// A fake standing for a PromQL engine: instant answers are vectors, range answers matrices, and the
// evaluator may compute one question's answer from another's.
class PromqlFakeClient : public testing::TableQueryClient {
 public:
  bool EvaluatesPromql() const override { return true; }
  StatusOr<QueryResult> Run(const Query& q) override {
    auto r = TableQueryClient::Run(q);
    if (r.ok()) r->result_type = q.kind == Query::Kind::kRange ? "matrix" : "vector";
    return r;
  }
};

TEST_F(EvaluateTest, ThresholdsAndAggregatesOfAnAnswerAreComputedFromIt) {
  playbook::Loader loader;
  loader.LoadPlaybookText(R"YAML(playbook: mem
description: one question, a threshold of it and an aggregate of it
rules:
  - id: all
    query: 'max by (host) (mem_used)'
    window: job
    by: [host]
  - id: hot
    query: 'max by (host) (mem_used) > 5'
    window: job
    by: [host]
  - id: peak
    query: 'max(max by (host) (mem_used))'
    window: job
  - id: zeros
    query: 'signed_zero'
    window: job
  - id: zero_peak
    query: 'max(signed_zero)'
    window: job
)YAML", "mem.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  playbook::Library library = loader.TakeLibrary();
  auto graph = CompiledGraph::Compile(library, {"mem"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const auto mem_used = std::vector<Series>{Instant({{"host", "h1"}}, 9), Instant({{"host", "h2"}}, 4)};
  const auto signed_zero = std::vector<Series>{Instant({{"host", "h1"}}, 0.0), Instant({{"host", "h2"}}, -0.0)};

  PromqlFakeClient promql;
  promql.answers["mem_used"] = mem_used;
  promql.answers["signed_zero"] = signed_zero;
  ctx_.subject = &promql;
  auto r = Evaluate(*graph, ctx_);
  ASSERT_EQ(promql.batches.size(), 2u);
  ASSERT_EQ(promql.batches[0].size(), 2u) << "the threshold and the aggregates are not sent";
  EXPECT_EQ(promql.batches[0][0].promql, "max by (host) (mem_used)");
  EXPECT_EQ(promql.batches[0][1].promql, "signed_zero");
  // max of +0 and -0 depends on the order Prometheus meets them in: asked, after the wave.
  ASSERT_EQ(promql.batches[1].size(), 1u);
  EXPECT_EQ(promql.batches[1][0].promql, "max(signed_zero)");
  EXPECT_EQ(r.queries_run, 3);
  EXPECT_EQ(r.queries_derived, 2);
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/hot")].health, NodeHealth::kOk);
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/hot")].value["values"], json({{"h1", 9.0}}));
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/hot")].value["query"], "max by (host) (mem_used) > 5");
  EXPECT_EQ(r.nodes[graph->IndexOf("mem/peak")].value["values"], json({{"", 9.0}}));
  EXPECT_EQ(r.points_returned, 2 + 2 + 2) << "derived answers are not returned by the TSDB";

  // A client that only matches the question's text cannot have answers derived from it.
  ctx_.subject = &client_;
  client_.answers["mem_used"] = mem_used;
  client_.answers["signed_zero"] = signed_zero;
  r = Evaluate(*graph, ctx_);
  ASSERT_EQ(client_.batches.size(), 1u);
  EXPECT_EQ(client_.batches[0].size(), 5u);
  EXPECT_EQ(r.queries_derived, 0);
}

TEST_F(EvaluateTest, AUnionOfCounterIncreasesIsComputedFromEachWindowAskedOnce) {
  playbook::Loader loader;
  loader.LoadPlaybookText(R"YAML(playbook: ras
description: a counter's increase per GPU and its sum per host, from the same two windows
rules:
  - id: per_gpu
    query: '(max_over_time(c[60s]) - min_over_time(c[60s] offset 60s)) >= 0 or max_over_time(c[60s]) < min_over_time(c[60s] offset 60s)'
    window: job
    by: [host, gpu]
  - id: per_host
    query: 'sum by (host) (label_replace((max_over_time(c[60s]) - min_over_time(c[60s] offset 60s)) >= 0 or max_over_time(c[60s]) < min_over_time(c[60s] offset 60s), "counter", "c", "", ""))'
    window: job
    by: [host]
)YAML", "ras.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  playbook::Library library = loader.TakeLibrary();
  auto graph = CompiledGraph::Compile(library, {"ras"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();

  PromqlFakeClient promql;
  promql.answers["max_over_time(c[60s])"] = {Instant({{"host", "h1"}, {"gpu", "0"}}, 5), Instant({{"host", "h1"}, {"gpu", "1"}}, 1),
                                             Instant({{"host", "h2"}, {"gpu", "0"}}, 4)};
  promql.answers["min_over_time(c[60s] offset 60s)"] = {Instant({{"host", "h1"}, {"gpu", "0"}}, 3),
                                                        Instant({{"host", "h1"}, {"gpu", "1"}}, 3),
                                                        Instant({{"host", "h2"}, {"gpu", "0"}}, 4)};
  ctx_.subject = &promql;
  auto r = Evaluate(*graph, ctx_);
  ASSERT_EQ(promql.batches.size(), 1u);
  ASSERT_EQ(promql.batches[0].size(), 2u) << "each window once, for both rules";
  EXPECT_EQ(promql.batches[0][0].promql, "max_over_time(c[60s])");
  EXPECT_EQ(promql.batches[0][1].promql, "min_over_time(c[60s] offset 60s)");
  EXPECT_EQ(r.queries_run, 2);
  EXPECT_EQ(r.queries_derived, 2);
  const auto& per_gpu = r.nodes[graph->IndexOf("ras/per_gpu")];
  ASSERT_EQ(per_gpu.health, NodeHealth::kOk) << per_gpu.reason;
  EXPECT_EQ(per_gpu.value["query"], library.playbooks.at(0).rules.at(0).query.promql_template);
  EXPECT_EQ(per_gpu.value["values"], json({{"h1/0", 2.0}, {"h1/1", 1.0}, {"h2/0", 0.0}}));
  const auto& per_host = r.nodes[graph->IndexOf("ras/per_host")];
  ASSERT_EQ(per_host.health, NodeHealth::kOk) << per_host.reason;
  EXPECT_EQ(per_host.value["values"], json({{"h1", 3.0}, {"h2", 0.0}}));

  // A store that may speak another dialect is asked the questions as written.
  ctx_.subject = &client_;
  client_.answers = promql.answers;
  r = Evaluate(*graph, ctx_);
  ASSERT_EQ(client_.batches.size(), 1u);
  ASSERT_EQ(client_.batches[0].size(), 2u);
  EXPECT_EQ(client_.batches[0][1].promql, library.playbooks.at(0).rules.at(1).query.promql_template);
  EXPECT_EQ(r.queries_derived, 0);
}

// Two quantile subqueries of one aggregation over different windows (a baseline's median and the
// fleet's): the aggregation's range is asked once, over the union of their minute grids, and each
// question reads its own minutes of it.
TEST_F(EvaluateTest, QuantileSubqueriesOfOneAggregationShareOneRangeOverTheUnionOfTheirGrids) {
  playbook::Loader loader;
  loader.LoadPlaybookText(R"YAML(playbook: power
description: per-host medians over the last 10 minutes, and the fleet median of 20-minute medians
rules:
  - id: recent
    query: 'quantile_over_time(0.5, (avg by (host) (p))[600s:60s])'
    window: job
    by: [host]
  - id: fleet
    query: 'quantile(0.5, quantile_over_time(0.5, (avg by (host) (p))[1200s:60s]))'
    window: job
  - id: alone
    query: 'quantile_over_time(0.5, (avg by (host) (q))[600s:60s])'
    window: job
    by: [host]
)YAML", "power.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  playbook::Library library = loader.TakeLibrary();
  auto graph = CompiledGraph::Compile(library, {"power"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  // At 20,000 s: the 10-minute grid is 19,440..19,980 s, the 20-minute one 18,840..19,980 s.
  std::vector<Sample> rising, flat;
  for (double t = 18840; t <= 19980; t += 60) {
    rising.push_back({t, t / 60});
    flat.push_back({t, 5});
  }
  PromqlFakeClient promql;
  promql.answers["avg by (host) (p)"] = {Series{{{"host", "a"}}, rising}, Series{{{"host", "b"}}, flat}};
  promql.answers["(avg by (host) (q))"] = {Instant({{"host", "a"}}, 7)};
  ctx_.subject = &promql;
  auto r = Evaluate(*graph, ctx_);
  ASSERT_EQ(promql.batches.size(), 1u);
  ASSERT_EQ(promql.batches[0].size(), 2u);
  std::vector<Query> sent = promql.batches[0];
  std::sort(sent.begin(), sent.end(), [](const Query& x, const Query& y) { return x.promql < y.promql; });
  EXPECT_EQ(sent[0].promql, "avg by (host) (p)");
  EXPECT_EQ(sent[0].kind, Query::Kind::kRange);
  EXPECT_EQ(sent[0].start, 18840);
  EXPECT_EQ(sent[0].end, 19980);
  EXPECT_EQ(sent[0].step, 60);
  EXPECT_EQ(sent[1].promql, library.playbooks.at(0).rules.at(2).query.promql_template) << "no other question reads q";
  EXPECT_EQ(r.queries_derived, 2);
  const auto& recent = r.nodes[graph->IndexOf("power/recent")];
  ASSERT_EQ(recent.health, NodeHealth::kOk) << recent.reason;
  // a: the minutes 324..333, median 328.5; b: 5.
  EXPECT_EQ(recent.value["values"], json({{"a", 328.5}, {"b", 5.0}}));
  const auto& fleet = r.nodes[graph->IndexOf("power/fleet")];
  ASSERT_EQ(fleet.health, NodeHealth::kOk) << fleet.reason;
  // a: the minutes 314..333, median 323.5; the median of 323.5 and 5.
  EXPECT_EQ(fleet.value["values"], json({{"", 164.25}}));
}

// Many composed questions in one round: each family's rule gets its own windows' difference, and the
// round goes out costliest first (its windows before the count).
TEST_F(EvaluateTest, EveryComposedQuestionOfARoundIsAnsweredFromItsOwnPartsSentCostliestFirst) {
  constexpr int kFamilies = 7;
  std::string yaml = "playbook: ras\ndescription: seven counters' increases per GPU\nrules:\n";
  for (int f = 0; f < kFamilies; ++f) {
    const std::string c = "c" + std::to_string(f);
    yaml += "  - id: increase_" + c + "\n    query: '(max_over_time(" + c + "[10m]) - min_over_time(" + c +
            "[10m] offset 10m)) >= 0 or max_over_time(" + c + "[10m]) < min_over_time(" + c + "[10m] offset 10m)'\n" +
            "    window: job\n    by: [host, gpu]\n";
  }
  yaml += "  - id: count\n    query: 'count by (host) (up)'\n    window: job\n    by: [host]\n";
  playbook::Loader loader;
  loader.LoadPlaybookText(yaml, "ras.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  playbook::Library library = loader.TakeLibrary();
  auto graph = CompiledGraph::Compile(library, {"ras"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();

  PromqlFakeClient promql;
  promql.answers["count by (host) (up)"] = {Instant({{"host", "h1"}}, 1)};
  for (int f = 0; f < kFamilies; ++f) {
    const std::string c = "c" + std::to_string(f);
    promql.answers["max_over_time(" + c + "[10m])"] = {Instant({{"host", "h1"}, {"gpu", "0"}}, 10.0 * f + 5),
                                                       Instant({{"host", "h2"}, {"gpu", "0"}}, 1)};
    promql.answers["min_over_time(" + c + "[10m] offset 10m)"] = {Instant({{"host", "h1"}, {"gpu", "0"}}, 3),
                                                                  Instant({{"host", "h2"}, {"gpu", "0"}}, 4)};
  }
  ctx_.subject = &promql;
  auto r = Evaluate(*graph, ctx_);
  ASSERT_EQ(promql.batches.size(), 1u);
  ASSERT_EQ(promql.batches[0].size(), 2u * kFamilies + 1);
  EXPECT_EQ(promql.batches[0].back().promql, "count by (host) (up)") << "asked first, it reads least: sent last";
  EXPECT_EQ(r.queries_derived, kFamilies);
  for (int f = 0; f < kFamilies; ++f) {
    const auto& rule = r.nodes[graph->IndexOf("ras/increase_c" + std::to_string(f))];
    ASSERT_EQ(rule.health, NodeHealth::kOk) << rule.reason;
    // h2's counter went down (a reset): its newest value stands for the increase.
    EXPECT_EQ(rule.value["values"], json({{"h1/0", 10.0 * f + 2}, {"h2/0", 1.0}})) << "family c" << f;
  }
  EXPECT_EQ(r.nodes[graph->IndexOf("ras/count")].value["values"], json({{"h1", 1.0}}));
}

// A host list names a node's exporters as the TSDB the query goes to reported them: the baseline's
// discovery for a baseline query, never the subject's aliases.
TEST_F(EvaluateTest, ABaselineQueryNamesHostsByTheBaselinesOwnDiscovery) {
  playbook::Loader loader;
  loader.LoadCommonText("thresholds: {checkpoint_window_settle_seconds: 60}\n", "t.yaml");
  loader.LoadCommonFile(playbook::PlaybookDataDir() + "/rules/common/windows.yaml");
  loader.LoadPlaybookText(R"YAML(playbook: both
description: the same hosts asked of the subject and of the baseline
rules:
  - id: accused
    fact: facts.heartbeat.accused_hosts
  - id: subject_power
    query: 'max by (host) (hw_gpu_power_watts{host=~"{{ hosts }}"})'
    window: job
    by: [host]
    args:
      hosts: {type: hosts, value: accused.hosts}
  - id: baseline_power
    query: 'min by (host) (hw_gpu_power_watts{host=~"{{ hosts }}"})'
    tsdb: baseline
    window: job
    by: [host]
    args:
      hosts: {type: hosts, value: accused.hosts}
  - id: both_seen
    verdict:
      when: "len(subject_power.values) > 0 and len(baseline_power.values) > 0"
      root_cause: unknown
)YAML", "both.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  playbook::Library library = loader.TakeLibrary();
  auto graph = CompiledGraph::Compile(library, {"both"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  FakeClient baseline;
  ctx_.subject = &client_;
  ctx_.baseline = &baseline;
  ctx_.baseline_discovery = {{"instance_hosts", {{"10.9.0.3:9400", "gpu-a7"}}}, {"range", {{"start", 0}, {"end", 20000}}}};
  Evaluate(*graph, ctx_);
  ASSERT_EQ(client_.batches.size(), 1u);
  ASSERT_EQ(baseline.batches.size(), 1u);
  EXPECT_EQ(client_.batches[0][0].promql, R"(max by (host) (hw_gpu_power_watts{host=~"gpu-a7|gpu-b\"3|10\\.0\\.0\\.7"}))");
  EXPECT_EQ(baseline.batches[0][0].promql, R"(min by (host) (hw_gpu_power_watts{host=~"gpu-a7|gpu-b\"3|10\\.9\\.0\\.3"}))");
}

TEST_F(EvaluateTest, SendsQueriesByReadinessAndIsolatesFailures) {
  client_.answers["hw_gpu_power_watts"] = {Instant({{"host", "gpu-a7"}}, 910), Instant({{"host", "gpu-b\"3"}}, 905)};
  // Ray series carry instance/ip, not host: the host key maps them.
  client_.answers["ray_node_gpus_utilization"] = {Instant({{"instance", "10.0.0.7:55080"}}, 100),
                                                  Instant({{"instance", "gpu-b\"3:55080"}}, 99)};
  client_.errors["broken_metric"] = "bad_data: parse error";
  ctx_.subject = &client_;
  auto graph = CompiledGraph::Compile(library_, {"hb"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx_);
  auto node = [&](const std::string& id) { return r.nodes[graph->IndexOf(id)]; };
  // Readiness, not levels: power needs only a fact, judged before the first wave is sent, so all
  // three queries go together.
  ASSERT_EQ(client_.batches.size(), 1u);
  ASSERT_EQ(client_.batches[0].size(), 3u);
  auto power = std::find_if(client_.batches[0].begin(), client_.batches[0].end(),
                            [](const Query& q) { return q.promql.find("hw_gpu_power_watts") != std::string::npos; });
  ASSERT_NE(power, client_.batches[0].end());
  // Values entering PromQL are escaped as regex literals; a host list also names the address
  // discovery mapped to gpu-a7 (its Ray instance 10.0.0.7:55080).
  EXPECT_EQ(power->promql, R"(avg by (host) (hw_gpu_power_watts{host=~"gpu-a7|gpu-b\"3|10\\.0\\.0\\.7"}))");
  EXPECT_EQ(power->time, 10000 - 900);
  EXPECT_EQ(node("hb/util").value["values"], json({{"gpu-a7", 100.0}, {"gpu-b\"3", 99.0}}));
  EXPECT_EQ(node("hb/broken").health, NodeHealth::kError);
  EXPECT_NE(node("hb/broken").reason.find("bad_data"), std::string::npos);
  EXPECT_EQ(node("hb/after_broken").health, NodeHealth::kSkipped);
  EXPECT_EQ(node("hb/uses_broken").health, NodeHealth::kSkipped);
  EXPECT_EQ(node("hb/alive").health, NodeHealth::kOk);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].root_cause, "heartbeat-false-positive");
  EXPECT_EQ(r.candidates[0].confidence, Confidence::kConfirmed);
  EXPECT_EQ(r.candidates[0].changes.at("jax_distributed_heartbeat_timeout_seconds"), "14400");
  EXPECT_EQ(r.candidates[0].onset, 9100);
  EXPECT_EQ(r.candidates[0].summary, "accused gpu-a7, gpu-b\"3 were alive");
  // The verdict cites the PromQL it rests on and the log line.
  const Finding* alive = nullptr;
  for (const auto& f : r.findings)
    if (f.id == "hb/alive") alive = &f;
  ASSERT_NE(alive, nullptr);
  EXPECT_EQ(alive->status, FindingStatus::kFired);
  bool promql = false, log = false;
  for (const auto& e : alive->evidence) {
    promql |= e.kind == EvidenceKind::kPromql && e.query.find("hw_gpu_power_watts") != std::string::npos && e.window->start == 9100;
    log |= e.kind == EvidenceKind::kLog && e.query == "job.log:42";
  }
  EXPECT_TRUE(promql);
  EXPECT_TRUE(log);
  EXPECT_EQ(r.not_evaluated.size(), 3u);
}

// A host list that came out empty (no host has holes, none is accused) asks about nothing: the
// query is answered with no series and never sent, and the rules reading it run on that answer
// rather than being skipped. The same list with a host is sent as usual; without a TSDB the query
// is skipped for that, not answered empty.
TEST_F(EvaluateTest, AnEmptyHostListIsAnsweredWithNoSeriesWithoutARequest) {
  playbook::Loader loader;
  loader.LoadPlaybookText(R"YAML(playbook: holes
description: counters of the hosts another rule found
rules:
  - id: found
    fact: facts.found
  - id: counters
    description: counters of the hosts found
    query: 'last_over_time(retx_total{host=~"{{ hosts }}", device=~"{{ devices }}"}[30s])'
    range: true
    window: job
    by: [host, device]
    args:
      hosts: {type: hosts, value: found.value}
      devices: {type: strings, value: '["ionic_0"]'}
  - id: counted
    fact: len(counters.series)
)YAML", "holes.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  playbook::Library library = loader.TakeLibrary();
  auto graph = CompiledGraph::Compile(library, {"holes"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  client_.answers["retx_total"] = {Series{{{"host", "h1"}, {"device", "ionic_0"}}, {{100, 5}, {130, 9}}}};
  ctx_.subject = &client_;
  ctx_.facts["found"] = json::array();
  auto r = Evaluate(*graph, ctx_);
  const auto& counters = r.nodes[graph->IndexOf("holes/counters")];
  EXPECT_EQ(counters.health, NodeHealth::kOk) << counters.reason;
  EXPECT_TRUE(client_.batches.empty()) << "nothing to ask, nothing sent";
  EXPECT_EQ(r.queries_run, 0);
  EXPECT_EQ(counters.value["series"], json::object());
  EXPECT_EQ(counters.value["count"], 0);
  EXPECT_FALSE(counters.value.contains("max"));
  ASSERT_FALSE(counters.evidence.empty());
  EXPECT_NE(counters.evidence[0].text.find("'hosts' list is empty"), std::string::npos) << counters.evidence[0].text;
  EXPECT_EQ(r.nodes[graph->IndexOf("holes/counted")].health, NodeHealth::kOk);
  EXPECT_EQ(r.nodes[graph->IndexOf("holes/counted")].value["value"], 0.0);

  ctx_.facts["found"] = json::array({"h1"});
  r = Evaluate(*graph, ctx_);
  ASSERT_EQ(client_.batches.size(), 1u);
  EXPECT_EQ(r.nodes[graph->IndexOf("holes/counted")].value["value"], 1.0);

  ctx_.facts["found"] = json::array();
  ctx_.subject = nullptr;
  r = Evaluate(*graph, ctx_);
  EXPECT_EQ(r.nodes[graph->IndexOf("holes/counters")].health, NodeHealth::kSkipped);
  EXPECT_EQ(r.nodes[graph->IndexOf("holes/counters")].reason, "no TSDB");
}

TEST_F(EvaluateTest, WithoutATsdbQueriesAreSkippedAndVerdictsSayInsufficientEvidence) {
  auto graph = CompiledGraph::Compile(library_, {"hb"});
  ASSERT_TRUE(graph.ok());
  auto r = Evaluate(*graph, ctx_);
  EXPECT_EQ(r.nodes[graph->IndexOf("hb/power")].health, NodeHealth::kSkipped);
  EXPECT_EQ(r.nodes[graph->IndexOf("hb/power")].reason, "no TSDB");
  EXPECT_EQ(r.nodes[graph->IndexOf("hb/accused")].health, NodeHealth::kOk);
  EXPECT_TRUE(r.candidates.empty());
  for (const auto& f : r.findings)
    if (f.id == "hb/alive") {
      EXPECT_EQ(f.status, FindingStatus::kSkipped);
      EXPECT_NE(f.summary.find("insufficient evidence"), std::string::npos);
    }
}

TEST_F(EvaluateTest, MissingWindowSkipsWithReason) {
  ctx_.facts["heartbeat"]["crash_time"] = nullptr;
  ctx_.subject = &client_;
  auto graph = CompiledGraph::Compile(library_, {"hb"});
  ASSERT_TRUE(graph.ok());
  auto r = Evaluate(*graph, ctx_);
  EXPECT_EQ(r.nodes[graph->IndexOf("hb/util")].health, NodeHealth::kSkipped);
  EXPECT_NE(r.nodes[graph->IndexOf("hb/util")].reason.find("heartbeat_stop"), std::string::npos);
}

TEST_F(EvaluateTest, TriggersSelectPlaybooks) {
  auto sel = SelectPlaybooks(library_, ctx_).selected;
  ASSERT_EQ(sel.size(), 1u);
  EXPECT_EQ(sel[0].reason, "failure class heartbeat-timeout");
  ctx_.facts["failure_class"] = "oom-host";
  EXPECT_TRUE(SelectPlaybooks(library_, ctx_).selected.empty());
  ctx_.requested_playbooks = {"hb"};
  EXPECT_EQ(SelectPlaybooks(library_, ctx_).selected.size(), 1u);
}

TEST(HostKeyTest, MapsEveryLabelShape) {
  json ih = {{"node7:55080", "node7"}, {"10.1.0.9", "node9"}};
  EXPECT_EQ(HostOfSeries({{"host", "a"}, {"instance", "b:9400"}}, ih), "a");
  EXPECT_EQ(HostOfSeries({{"instance", "node7:55080"}}, ih), "node7");
  EXPECT_EQ(HostOfSeries({{"instance", "node8:55080"}}, ih), "node8");
  EXPECT_EQ(HostOfSeries({{"ip", "10.1.0.9"}}, ih), "node9");
  EXPECT_EQ(HostOfSeries({{"instance", "10.1.0.9:55080"}, {"ip", "10.1.0.9"}}, ih), "node9");
  EXPECT_EQ(HostOfSeries({{"job", "x"}}, ih), "");
}

TEST(HostKeyTest, AHostListAlsoNamesTheAddressesAndFqdnsItsExportersReported) {
  json ih = {{"node7:9400", "node7"},           // the host's own target: adds nothing
             {"10.1.0.7:9400", "node7"},        // scraped by address
             {"node8.hpc.example", "node8"},    // an FQDN host label
             {"10.1.0.9:9400", "node9"}};       // not in the list
  EXPECT_EQ(WithReportedNames(json::array({"node7", "node8"}), ih),
            json::array({"node7", "node8", "10.1.0.7", "node8.hpc.example"}));
  // A loopback target or a name two nodes reported names no one node.
  EXPECT_EQ(WithReportedNames(json::array({"node1"}), json::object({{"localhost:9400", "node1"},
                                                                    {"10.1.0.1:9400", "node1"},
                                                                    {"10.1.0.1:55080", "node2"}})),
            json::array({"node1"}));
  // An IPv6 target is bracketed in `instance`: both spellings are names of the node.
  EXPECT_EQ(WithReportedNames(json::array({"node1"}), json::object({{"[fe80::1]:9400", "node1"}})),
            json::array({"node1", "fe80::1", "[fe80::1]"}));
  // Nothing mapped: the list as it was (the query text of such a job does not change).
  EXPECT_EQ(WithReportedNames(json::array({"node1"}), json::object({{"node1:9400", "node1"}})), json::array({"node1"}));
  EXPECT_EQ(WithReportedNames(json::array({"node1"}), json()), json::array({"node1"}));
}

TEST(CompileTest, SharedRulesAreOneNodeAndLevelsAreTopological) {
  playbook::Loader loader;
  loader.LoadCommonText("rules:\n  - id: steps\n    fact: facts.steps\n", "c.yaml");
  for (const char* id : {"p1", "p2"}) {
    loader.LoadPlaybookText(std::string("playbook: ") + id + R"(
description: d
rules:
  - id: phases
    analysis: change_points
    input: common.steps.value
    args: {x: step, y: tokens_per_sec_per_device}
  - id: v
    verdict: {when: "phases.count > 0", root_cause: rdma-link-degradation}
)", std::string(id) + ".yaml");
  }
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  auto lib = loader.TakeLibrary();
  auto g = CompiledGraph::Compile(lib, {"p1", "p2"});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->nodes().size(), 5u);
  ASSERT_EQ(g->levels().size(), 3u);
  EXPECT_EQ(g->levels()[0].size(), 1u);
  EXPECT_EQ(g->nodes()[g->levels()[0][0]].id, "common/steps");
  EXPECT_FALSE(CompiledGraph::Compile(lib, {"nope"}).ok());
}

}  // namespace
}  // namespace diagnose::dag
