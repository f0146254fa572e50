// The playbook language's reuse and control features (playbooks/README.md §3.1, §3.4, §5, §6.1):
// let bindings, macros, notes with a condition, fallbacks between verdicts, several reductions of
// one query and shared windows, each loaded from YAML and evaluated against a table of answers.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "engine/dag/evaluate.h"
#include "engine/playbook/loader.h"
#include "engine/report/job_facts.h"
#include "tests/support/table_query_client.h"

namespace diagnose::dag {
namespace {

using nlohmann::json;

class LanguageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JobFacts facts;
    facts.status = JobStatus::kFailed;
    facts.checkpoint_saves = {10};
    ctx_.facts = json(facts);
    json times = json::array();
    for (int step = 0; step <= 20; ++step) times.push_back({step, 1000 + 30 * step});
    ctx_.discovery = {{"range", {{"start", 1000}, {"end", 1600}}}, {"step_times", times}};
    ctx_.subject = &client_;
  }

  // Loads shared text and one playbook; fails the test with the diagnostics when expected to load.
  playbook::LoadResult Load(const std::string& playbook_text, const std::string& common = "") {
    playbook::Loader loader;
    loader.LoadCommonText("thresholds: {checkpoint_window_settle_seconds: 60, big: 5}\n", "t.yaml");
    loader.LoadCommonFile(playbook::PlaybookDataDir() + "/rules/common/windows.yaml");
    if (!common.empty()) loader.LoadCommonText(common, "shared.yaml");
    loader.LoadPlaybookText(playbook_text, "p.yaml");
    library_ = loader.TakeLibrary();
    return loader.result();
  }

  EvaluationResult Run(const std::string& id) {
    auto graph = CompiledGraph::Compile(library_, {id});
    EXPECT_TRUE(graph.ok()) << graph.status().message();
    graph_ = std::make_unique<CompiledGraph>(std::move(*graph));
    return Evaluate(*graph_, ctx_);
  }

  const json& Value(const EvaluationResult& r, const std::string& id) { return r.nodes[graph_->IndexOf(id)].value; }
  const NodeOutcome& Node(const EvaluationResult& r, const std::string& id) { return r.nodes[graph_->IndexOf(id)]; }

  playbook::Library library_;
  std::unique_ptr<CompiledGraph> graph_;
  EvaluationContext ctx_;
  testing::TableQueryClient client_;
};

TEST_F(LanguageTest, LetAndMacrosNameAnExpressionEvaluatedInTheUsersScope) {
  auto loaded = Load(R"Y(playbook: mem
description: x
macros:
  worst: "first(keys(used.values > thresholds.big))"
rules:
  - id: used
    query: 'max by (host) (mem_used)'
    by: [host]
  - id: full
    let:
      hosts: "keys(used.values > thresholds.big)"
      n: "len(hosts)"
    verdict:
      when: "n > 0"
      root_cause: host-oom
      summary: "{{ n }} hosts full, worst {{ worst }}"
      hosts: hosts
      action: retry-excluding-nodes
      exclude:
        - {hosts: hosts, priority: 2, reason: "{{ host }} at {{ used.values[host] }}{{ shout }}"}
      notes: ["{{ join(hosts, '+') }}"]
)Y", "macros:\n  shout: \"if(host == 'b', '!', '')\"\n");
  ASSERT_TRUE(loaded.ok()) << loaded.AsJson().dump(2);
  client_.answers["mem_used"] = {Series{{{"host", "a"}}, {{1600, 9}}}, Series{{{"host", "b"}}, {{1600, 7}}},
                                 Series{{{"host", "c"}}, {{1600, 1}}}};
  auto r = Run("mem");
  ASSERT_EQ(r.candidates.size(), 1u) << json(r.not_evaluated).dump();
  const auto& c = r.candidates[0];
  EXPECT_EQ(c.summary, "2 hosts full, worst a");
  EXPECT_EQ(c.hosts, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(c.exclude.size(), 2u);
  EXPECT_EQ(c.exclude[0].reason, "a at 9");
  EXPECT_EQ(c.exclude[1].reason, "b at 7!") << "a macro reading `host` sees the host being excused";
  EXPECT_EQ(c.notes, (std::vector<std::string>{"a+b"}));
  // The rule the let reads is a dependency of the verdict, found through the binding.
  EXPECT_NE(std::find(library_.playbooks[0].rules[1].needs.begin(), library_.playbooks[0].rules[1].needs.end(), "mem/used"),
            library_.playbooks[0].rules[1].needs.end());
}

// A series without a host label (a scalar answer read as series, or an endpoint's odd answer) made
// a verdict exclude a host named "", which no scheduler can exclude: it is dropped, with a note.
TEST_F(LanguageTest, AnExclusionNamingAnEmptyHostIsDroppedWithANote) {
  auto loaded = Load(R"Y(playbook: mem
description: x
rules:
  - id: used
    query: 'max by (host) (mem_used)'
    by: [host]
  - id: full
    let:
      hosts: "keys(used.values > 5)"
    verdict:
      when: "len(hosts) > 0"
      root_cause: host-oom
      summary: "{{ len(hosts) }} hosts full"
      hosts: hosts
      action: retry-excluding-nodes
      exclude:
        - {hosts: hosts, priority: 2, reason: "{{ host }} full"}
)Y");
  ASSERT_TRUE(loaded.ok()) << loaded.AsJson().dump(2);
  client_.answers["mem_used"] = {Series{{{"host", ""}}, {{1600, 9}}}, Series{{{"host", "b"}}, {{1600, 7}}}};
  auto r = Run("mem");
  ASSERT_EQ(r.candidates.size(), 1u) << json(r.not_evaluated).dump();
  const auto& c = r.candidates[0];
  ASSERT_EQ(c.exclude.size(), 1u);
  EXPECT_EQ(c.exclude[0].host, "b");
  EXPECT_EQ(c.notes, (std::vector<std::string>{
                         "dropped 1 exclusion(s) naming an empty host: the series behind them carry no host label"}));
}

// A client whose answers arrive only after `delay`, as a slow endpoint's do.
class SlowTableClient : public testing::TableQueryClient {
 public:
  std::chrono::milliseconds delay{0};
  std::vector<StatusOr<QueryResult>> RunBatch(const std::vector<Query>& qs) override {
    std::this_thread::sleep_for(delay);
    return TableQueryClient::RunBatch(qs);
  }
};

// Answers read into the rules after the deadline kept a run going 12 s past --deadline 10 (150,000
// series per answer): an answer arriving after the deadline is not read, and its rule says why.
TEST_F(LanguageTest, AnAnswerArrivingAfterTheDeadlineIsNotRead) {
  auto loaded = Load(R"Y(playbook: mem
description: x
rules:
  - id: used
    query: 'max by (host) (mem_used)'
    by: [host]
  - id: full
    let:
      hosts: "keys(used.values > 5)"
    verdict:
      when: "len(hosts) > 0"
      root_cause: host-oom
      summary: "{{ len(hosts) }} hosts full"
      hosts: hosts
      action: retry-excluding-nodes
      exclude:
        - {hosts: hosts, priority: 2, reason: "{{ host }} full"}
)Y");
  ASSERT_TRUE(loaded.ok()) << loaded.AsJson().dump(2);
  SlowTableClient slow;
  slow.answers["mem_used"] = {Series{{{"host", "a"}}, {{1600, 9}}}};
  slow.delay = std::chrono::milliseconds(300);
  ctx_.subject = &slow;
  ctx_.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  auto r = Run("mem");
  const NodeOutcome& used = Node(r, "mem/used");
  EXPECT_EQ(used.health, NodeHealth::kSkipped) << used.reason;
  EXPECT_EQ(used.reason, "the run's deadline (--deadline) passed before its answer was read");
}

// An analysis reads its inputs where they are: a rule's value it names, a binding that names one,
// and a binding's computed value (held by the expression's scope, which must outlive the run).
TEST_F(LanguageTest, AnAnalysisReadsRuleValuesAndBindingsInPlace) {
  auto loaded = Load(R"Y(playbook: peers
description: x
rules:
  - id: used
    query: 'max by (host) (mem_used)'
    by: [host]
  - id: named
    analysis: peer_outliers
    input: used.values
  - id: bound
    let: {vals: "used.values"}
    analysis: peer_outliers
    input: vals
  - id: computed
    let: {vals: "used.values * 2"}
    analysis: peer_outliers
    input: vals
  - id: v
    verdict:
      when: "len(named.hosts) + len(bound.hosts) + len(computed.hosts) > 0"
      root_cause: unknown
      summary: "{{ join(named.hosts, ',') }} {{ join(bound.hosts, ',') }} {{ join(computed.hosts, ',') }}"
)Y");
  ASSERT_TRUE(loaded.ok()) << loaded.AsJson().dump(2);
  client_.answers["mem_used"] = {Series{{{"host", "a"}}, {{1600, 10}}}, Series{{{"host", "b"}}, {{1600, 11}}},
                                 Series{{{"host", "c"}}, {{1600, 10.5}}}, Series{{{"host", "d"}}, {{1600, 90}}}};
  auto r = Run("peers");
  for (const char* id : {"peers/named", "peers/bound", "peers/computed"}) {
    ASSERT_EQ(Node(r, id).health, NodeHealth::kOk) << id << ": " << Node(r, id).reason;
    EXPECT_EQ(Value(r, id)["hosts"], json({"d"})) << id;
  }
  EXPECT_EQ(Value(r, "peers/computed")["median"].get<double>(), 2 * Value(r, "peers/named")["median"].get<double>());
  EXPECT_EQ(Value(r, "peers/used")["values"]["d"], 90.0) << "the rule's own value is read, never changed";
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].summary, "d d d");
}

TEST_F(LanguageTest, ABindingMayNotShadowARuleOrAContextNameAndSeesOnlyEarlierBindings) {
  auto loaded = Load(R"Y(playbook: bad
description: x
rules:
  - id: a
    fact: "1"
    let:
      a: "2"
      facts: "3"
      early: "late + 1"
      late: "4"
    finding: {when: "early > 0", summary: "x"}
)Y");
  std::string errors = loaded.AsJson().dump();
  EXPECT_FALSE(loaded.ok());
  EXPECT_NE(errors.find("let.a"), std::string::npos) << errors;
  EXPECT_NE(errors.find("let.facts"), std::string::npos) << errors;
  EXPECT_NE(errors.find("unknown rule 'late'"), std::string::npos) << errors;
  EXPECT_NE(errors.find(R"("field":"let.facts","file":"p.yaml","line":8)"), std::string::npos)
      << "the offending binding's position: " << errors;
  EXPECT_NE(errors.find("would hide the rule of that id"), std::string::npos) << errors;
}

TEST_F(LanguageTest, ANoteIsSaidOnlyWhenItsConditionHolds) {
  ASSERT_TRUE(Load(R"Y(playbook: n
description: x
rules:
  - id: v
    verdict:
      when: "true"
      root_cause: unknown
      notes:
        - "always"
        - {when: "len(facts.checkpoint_saves) > 0", text: "saved at {{ join(facts.checkpoint_saves, ', ') }}"}
        - {when: "len(facts.checkpoint_saves) > 5", text: "many saves"}
)Y").ok());
  auto r = Run("n");
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].notes, (std::vector<std::string>{"always", "saved at 10"}));
}

const char* kFallbackPlaybook = R"Y(playbook: fb
description: x
rules:
  - id: aligned_input
    query: 'aligned_metric'
  - id: aligned
    verdict:
      when: "len(aligned_input.values) > 0"
      root_cause: rdma-link-degradation
      summary: aligned
  - id: unaligned
    verdict:
      fallback_for: [aligned]
      when: "true"
      root_cause: rdma-link-degradation
      confidence: possible
      summary: unaligned
precedence: [aligned, unaligned]
)Y";

TEST_F(LanguageTest, AFallbackStandsInOnlyForAVerdictThatCouldNotBeJudged) {
  ASSERT_TRUE(Load(kFallbackPlaybook).ok());
  client_.errors["aligned_metric"] = "bad_data";
  auto skipped = Run("fb");
  ASSERT_EQ(skipped.candidates.size(), 1u);
  EXPECT_EQ(skipped.candidates[0].summary, "unaligned");

  client_.errors.clear();   // judged, and false: the fallback must not fire
  auto judged = Run("fb");
  EXPECT_TRUE(judged.candidates.empty());
  EXPECT_EQ(Value(judged, "fb/unaligned")["fallback_unused"], "fb/aligned");
}

TEST_F(LanguageTest, AFallbackMustNameAnotherVerdictOfItsPlaybook) {
  auto loaded = Load(R"Y(playbook: fb
description: x
rules:
  - id: f
    fact: "1"
  - id: v
    verdict: {when: "f.value", root_cause: unknown, fallback_for: [f, v, nothing]}
)Y");
  std::string errors = loaded.AsJson().dump();
  EXPECT_FALSE(loaded.ok());
  for (const char* id : {"'f ", "'v ", "'nothing "})
    EXPECT_NE(errors.find(std::string("verdict.fallback_for': unknown rule ") + id), std::string::npos) << id << errors;
}

TEST_F(LanguageTest, OneRangeQueryGivesSeveralReductions) {
  ASSERT_TRUE(Load(R"Y(playbook: r
description: x
rules:
  - id: mem
    query: 'max by (host) (mem_used)'
    range: true
    by: [host]
    reduce: [last, max, first]
    finding: {when: "mem.reduced.max['a'] > mem.reduced.last['a']", summary: "{{ mem.values['a'] }} {{ mem.reduced.max['a'] }} {{ mem.reduced.first['a'] }}"}
)Y").ok());
  client_.answers["mem_used"] = {Series{{{"host", "a"}}, {{1000, 3}, {1300, 8}, {1600, 5}}}};
  auto r = Run("r");
  EXPECT_EQ(client_.batches.size(), 1u);
  EXPECT_EQ(Value(r, "r/mem")["values"], json({{"a", 5.0}}));
  EXPECT_EQ(Value(r, "r/mem")["reduced"], json({{"last", {{"a", 5.0}}}, {"max", {{"a", 8.0}}}, {"first", {{"a", 3.0}}}}));
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].summary, "5 8 3");
}

TEST_F(LanguageTest, ReductionListsAreCheckedAtLoad) {
  auto loaded = Load(R"Y(playbook: r
description: x
rules:
  - id: a
    query: 'up'
    reduce: [last, max]
  - id: b
    query: 'up'
    range: true
    reduce: [max, max, median]
  - id: d
    query: 'up'
    range: true
    reduce: max
  - id: c
    fact: "d.reduced"
    finding: {when: "b.values", summary: "x"}
)Y");
  std::string errors = loaded.AsJson().dump();
  EXPECT_FALSE(loaded.ok());
  EXPECT_NE(errors.find("one reduction"), std::string::npos) << errors;
  EXPECT_NE(errors.find("max (listed twice)"), std::string::npos) << errors;
  EXPECT_NE(errors.find("'median'"), std::string::npos) << errors;
  EXPECT_NE(errors.find("reduced"), std::string::npos) << "a single reduction has no `reduced` field: " << errors;
}

TEST_F(LanguageTest, SharedWindowsComeFromDataAndSayWhyTheyAreMissing) {
  ASSERT_TRUE(Load(R"Y(playbook: w
description: x
rules:
  - id: saves
    fact: "windows.checkpoints"
    finding: {when: "len(saves.value) > 0", summary: "{{ saves.value[0].start }}-{{ saves.value[0].end }}"}
  - id: stop
    query: 'up'
    window: heartbeat_stop
)Y").ok());
  auto r = Run("w");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].summary, "1300-1390") << "end of step 10 to end of step 11, plus 60 s settle";
  EXPECT_EQ(Node(r, "w/stop").health, NodeHealth::kSkipped);
  EXPECT_NE(Node(r, "w/stop").reason.find("no heartbeat crash time and timeout"), std::string::npos) << Node(r, "w/stop").reason;
}

TEST_F(LanguageTest, ASharedWindowNameIsNotRedefinedByAPlaybook) {
  auto loaded = Load(R"Y(playbook: w
description: x
windows:
  checkpoints: {start: "1", end: "2"}
  job: {start: "1", end: "2"}
rules:
  - id: a
    fact: "1"
    finding: {when: "true", summary: "x"}
)Y");
  std::string errors = loaded.AsJson().dump();
  EXPECT_FALSE(loaded.ok());
  EXPECT_NE(errors.find("duplicate"), std::string::npos) << errors;
  EXPECT_NE(errors.find("job, baseline_job"), std::string::npos) << errors;
}

TEST_F(LanguageTest, ForEachWritesOneRuleForSeveralItems) {
  auto loaded = Load(R"Y(playbook: fe
description: x
rules:
  - id: missing
    for_each:
      gpu: {family: gpu_power, label: host}
      net: {family: rdma_bytes, label: host}
    description: "hosts without ${family} (${key})"
    query: 'count by (${label}) (up) unless on (${label}) count by (${label}) (${family}[{{ window_length }}])'
    window: job
    by: [host]
  - id: any_missing
    fact: "union(missing_gpu.hosts, missing_net.hosts)"
    finding: {when: "len(any_missing.value) > 0", summary: "{{ join(any_missing.value, ',') }}"}
)Y");
  ASSERT_TRUE(loaded.ok()) << loaded.AsJson().dump(2);
  ASSERT_EQ(library_.playbooks[0].rules.size(), 3u);
  EXPECT_EQ(library_.playbooks[0].rules[0].id, "missing_gpu");
  EXPECT_EQ(library_.playbooks[0].rules[1].description, "hosts without rdma_bytes (net)");
  client_.answers["gpu_power[600s]"] = {Series{{{"host", "a"}}, {{1600, 1}}}};
  client_.answers["rdma_bytes[600s]"] = {Series{{{"host", "b"}}, {{1600, 1}}}};
  auto r = Run("fe");
  EXPECT_EQ(Value(r, "fe/missing_gpu")["query"],
            "count by (host) (up) unless on (host) count by (host) (gpu_power[600s])")
      << "the window's length (1000..1600) fills {{ window_length }}";
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].summary, "a,b");
}

TEST_F(LanguageTest, ForEachReportsAFieldSomeItemLacksAtTheRuleWritten) {
  auto loaded = Load(R"Y(playbook: fe
description: x
rules:
  - id: ok
    fact: "1"
    finding: {when: "true", summary: "x"}
  - id: missing
    for_each:
      gpu: {family: gpu_power}
      net: {metric: rdma_bytes}
    fact: "'${family}'"
    finding: {when: "true", summary: "x"}
)Y");
  std::string errors = loaded.AsJson().dump();
  EXPECT_FALSE(loaded.ok());
  EXPECT_NE(errors.find("${family}"), std::string::npos) << errors;
  EXPECT_NE(errors.find(R"("line":7)"), std::string::npos) << "points at the rule written: " << errors;
}

TEST_F(LanguageTest, ANameMeansOneThingWhereverItIsRead) {
  // A let over a playbook macro, a playbook macro over a shared one, a rule named like a shared
  // macro, and a shared macro naming a shared rule without `common.`: each is a load error.
  playbook::Loader loader;
  loader.LoadCommonText("rules:\n  - id: shared_rule\n    fact: \"1\"\nmacros:\n  shared_m: \"1\"\n  shared_n: \"1\"\n  bare: \"shared_rule.value\"\n", "s.yaml");
  loader.LoadPlaybookText(R"Y(playbook: h
description: x
macros:
  m: "1"
  shared_n: "2"
rules:
  - id: a
    let: {m: "3"}
    fact: "m"
    finding: {when: "true", summary: "x"}
  - id: shared_m
    fact: "1"
    finding: {when: "true", summary: "x"}
)Y", "h.yaml");
  std::string errors = loader.result().AsJson().dump();
  EXPECT_NE(errors.find("'let.m': 'm' would hide the binding of that name at h.yaml:4"), std::string::npos) << errors;
  EXPECT_NE(errors.find("'macros.shared_n': 'shared_n' would hide the binding of that name at s.yaml"), std::string::npos) << errors;
  EXPECT_NE(errors.find("field 'id': 'shared_m' would hide the shared macro"), std::string::npos) << errors;
  EXPECT_NE(errors.find("field 'macros.bare': unknown name 'shared_rule'"), std::string::npos) << errors;
}

TEST_F(LanguageTest, ForEachRenamesOnlyTheRuleItself) {
  ASSERT_TRUE(Load(R"Y(playbook: fe
description: x
rules:
  - id: r
    for_each: {a: one, b: two}
    let: {id: "'${item}'"}
    fact: "id"
    finding: {when: "true", summary: "{{ r_a.value }}"}
)Y").ok());
  EXPECT_EQ(library_.playbooks[0].rules[0].lets[0].name, "id") << "a nested `id` key is not the rule's";
  auto r = Run("fe");
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].summary, "one");
}

}  // namespace
}  // namespace diagnose::dag
