// Suppression of findings and verdicts whose evidence lies only inside expected-disturbance windows
// (windows.checkpoints, README §3.6 and §5).
#include <cmath>

#include <gtest/gtest.h>

#include "engine/dag/evaluate.h"
#include "engine/playbook/loader.h"
#include "engine/report/job_facts.h"
#include "tests/support/table_query_client.h"

namespace diagnose::dag {
namespace {

using nlohmann::json;

// Serves one range series per host for any query.
class SeriesClient : public testing::QueryOnlyClient {
 public:
  std::vector<Series> series;
  StatusOr<QueryResult> Run(const Query&) override {
    QueryResult r;
    r.series = series;
    return r;
  }
};

const char* kSpikesPlaybook = R"YAML(playbook: spikes
description: memory jumps, expected at checkpoint saves
rules:
  - id: ckpt_windows
    fact: windows.checkpoints
  - id: jump
    query: 'max by (host) (mem_jump)'
    range: true
    window: job
    by: [host]
    reduce: max
  - id: jump_hosts
    fact: "keys(jump.values > 100)"
    finding:
      when: "len(jump_hosts.value) > 0"
      hosts: jump_hosts.value
      summary: "jump on {{ join(jump_hosts.value, ', ') }}"
      suppress:
        times: "times_above(jump.series, 100)"
        during: windows.checkpoints
        reason: "only at the saves of steps {{ join(pluck(windows.checkpoints, 'step'), ', ') }}"
  - id: jump_verdict
    verdict:
      when: "len(jump_hosts.value) > 0"
      root_cause: host-oom
      action: no-retry
      suppress:
        times: "times_above(jump.series, 100)"
        during: windows.checkpoints
)YAML";

// `text` with every `from` replaced by `to`.
std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

class SuppressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    library_ = Load(kSpikesPlaybook);
    JobFacts facts;
    facts.status = JobStatus::kCompleted;
    facts.checkpoint_saves = {10, 20};
    ctx_.facts = json(facts);
    // Step n ends at 1000 + 30 n, except that the step after each save takes 300 s longer.
    json times = json::array();
    double t = 1000;
    for (int step = 0; step <= 30; ++step) {
      t += 30 + (step == 11 || step == 21 ? 300 : 0);
      times.push_back({step, t});
    }
    ctx_.discovery = {{"range", {{"start", 1000}, {"end", t}}}, {"step_times", times}};
    ctx_.subject = &client_;
  }

  // A library of the shared thresholds and one playbook.
  static playbook::Library Load(const std::string& playbook_text) {
    playbook::Loader loader;
    loader.LoadCommonText("thresholds: {checkpoint_window_settle_seconds: 60}\n", "t.yaml");
    loader.LoadCommonFile(playbook::PlaybookDataDir() + "/rules/common/windows.yaml");   // windows.checkpoints
    loader.LoadPlaybookText(playbook_text, "p.yaml");
    EXPECT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
    return loader.TakeLibrary();
  }

  // A series of `host` that is 0 everywhere except `value` at each of `at`.
  void Jumps(const std::string& host, const std::vector<double>& at, double value = 500) {
    Series s;
    s.labels = {{"host", host}};
    for (double time = 1000; time <= 2500; time += 30) {
      double v = 0;
      for (double a : at)
        if (time == a) v = value;
      s.samples.push_back({time, v});
    }
    client_.series.push_back(std::move(s));
  }

  const Finding* Find(const EvaluationResult& r, const std::string& id) {
    for (const auto& f : r.findings)
      if (f.id == id) return &f;
    return nullptr;
  }

  // The sample time of Jumps()'s 30 s grid nearest to t.
  static double OnGrid(double t) { return 1000 + std::round((t - 1000) / 30) * 30; }

  double StepEnd(int step) {
    for (const auto& p : ctx_.discovery["step_times"])
      if (p[0] == step) return p[1].get<double>();
    return 0;
  }

  playbook::Library library_;
  EvaluationContext ctx_;
  SeriesClient client_;
};

TEST_F(SuppressTest, CheckpointWindowsRunFromTheSavedStepToTheNextStepPlusSettle) {
  Jumps("h1", {});
  auto graph = CompiledGraph::Compile(library_, {"spikes"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx_);
  json windows = r.nodes[graph->IndexOf("spikes/ckpt_windows")].value["value"];
  ASSERT_EQ(windows.size(), 2u) << windows;
  EXPECT_EQ(windows[0]["step"], 10);
  EXPECT_EQ(windows[0]["start"], StepEnd(10));
  EXPECT_EQ(windows[0]["end"], StepEnd(11) + 60);
  EXPECT_EQ(windows[1]["start"], StepEnd(20));
  EXPECT_EQ(windows[1]["end"], StepEnd(21) + 60);
  // No jump: nothing fires, nothing is suppressed.
  ASSERT_NE(Find(r, "spikes/jump_hosts"), nullptr);
  EXPECT_EQ(Find(r, "spikes/jump_hosts")->status, FindingStatus::kClear);
  EXPECT_TRUE(r.candidates.empty());
}

TEST_F(SuppressTest, JumpsOnlyInsideCheckpointWindowsAreSuppressedWithTheReason) {
  // Inside the save windows of steps 10 and 20: [end(10), end(11) + 60].
  double in10 = OnGrid(StepEnd(10) + 120), in20 = OnGrid(StepEnd(21) + 30);
  ASSERT_LE(in10, StepEnd(11) + 60);
  ASSERT_LE(in20, StepEnd(21) + 60);
  Jumps("h1", {in10, in20});
  auto graph = CompiledGraph::Compile(library_, {"spikes"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx_);
  const Finding* f = Find(r, "spikes/jump_hosts");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, FindingStatus::kSuppressed);
  EXPECT_NE(f->summary.find("jump on h1"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("only at the saves of steps 10, 20"), std::string::npos) << f->summary;
  const Finding* v = Find(r, "spikes/jump_verdict");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->status, FindingStatus::kSuppressed);
  EXPECT_NE(v->summary.find("windows.checkpoints"), std::string::npos) << "default reason names the windows";
  EXPECT_TRUE(r.candidates.empty()) << "a suppressed verdict is never a candidate";
  EXPECT_EQ(r.nodes[graph->IndexOf("spikes/jump_verdict")].value["fired"], false);
}

TEST_F(SuppressTest, OneJumpOutsideTheWindowsFires) {
  double in10 = OnGrid(StepEnd(10) + 120);
  double outside = OnGrid(StepEnd(15));
  Jumps("h1", {in10});
  Jumps("h2", {outside});
  auto graph = CompiledGraph::Compile(library_, {"spikes"});
  ASSERT_TRUE(graph.ok());
  auto r = Evaluate(*graph, ctx_);
  const Finding* f = Find(r, "spikes/jump_hosts");
  EXPECT_EQ(f->status, FindingStatus::kFired);
  // Per key: h1's jump is explained by the save of step 10, so the finding names h2 only.
  EXPECT_EQ(f->hosts, std::vector<std::string>({"h2"}));
  EXPECT_NE(f->summary.find("not counted on h1: only at the saves of steps 10, 20"), std::string::npos) << f->summary;
  EXPECT_EQ(Find(r, "spikes/jump_verdict")->status, FindingStatus::kFired);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].root_cause, "host-oom");
}

TEST_F(SuppressTest, WithoutLoggedSavesThereAreNoWindowsAndNothingIsSuppressed) {
  ctx_.facts["checkpoint_saves"] = json::array();
  Jumps("h1", {OnGrid(StepEnd(10) + 120)});
  auto graph = CompiledGraph::Compile(library_, {"spikes"});
  ASSERT_TRUE(graph.ok());
  auto r = Evaluate(*graph, ctx_);
  EXPECT_EQ(Find(r, "spikes/jump_hosts")->status, FindingStatus::kFired);
  EXPECT_EQ(r.candidates.size(), 1u);
}

// Evidence keyed per device (host/gpu): a host is left out only when every one of its devices'
// evidence is inside the windows.
TEST_F(SuppressTest, AHostStaysWhenAnyOfItsDevicesJumpedOutsideTheWindows) {
  // The same playbook keyed per GPU.
  playbook::Library library = Load(Replaced(Replaced(Replaced(kSpikesPlaybook, "playbook: spikes", "playbook: devices"),
                                                     "max by (host) (mem_jump)", "max by (host, gpu) (mem_jump)"),
                                            "by: [host]", "by: [host, gpu]"));
  const double in10 = OnGrid(StepEnd(10) + 120), outside = OnGrid(StepEnd(15));
  auto add = [&](const std::string& host, const std::string& gpu, double at) {
    Series s;
    s.labels = {{"host", host}, {"gpu", gpu}};
    for (double time = 1000; time <= 2500; time += 30) s.samples.push_back({time, time == at ? 500.0 : 0.0});
    client_.series.push_back(std::move(s));
  };
  add("h1", "0", in10);      // h1: one GPU inside a save window, the other outside
  add("h1", "1", outside);
  add("h2", "0", in10);      // h2: inside only
  auto graph = CompiledGraph::Compile(library, {"devices"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx_);
  const Finding* f = Find(r, "devices/jump_hosts");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status, FindingStatus::kFired);
  EXPECT_EQ(f->hosts, std::vector<std::string>({"h1/0", "h1/1"})) << f->summary;
  EXPECT_NE(f->summary.find("not counted on h2"), std::string::npos) << f->summary;
}

TEST_F(SuppressTest, ASuppressionThatCannotBeJudgedNeverHidesAFiring) {
  // The same playbook with suppress.times that fails at run time (abs() of a map).
  playbook::Library library = Load(Replaced(Replaced(kSpikesPlaybook, "playbook: spikes", "playbook: broken"),
                                            "times_above(jump.series, 100)", "abs(jump.series)"));
  Jumps("h1", {OnGrid(StepEnd(10) + 120)});
  auto graph = CompiledGraph::Compile(library, {"broken"});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto r = Evaluate(*graph, ctx_);
  EXPECT_EQ(Find(r, "broken/jump_hosts")->status, FindingStatus::kFired);
  EXPECT_NE(Find(r, "broken/jump_hosts")->summary.find("suppression not judged"), std::string::npos);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].root_cause, "host-oom");
}

TEST(SuppressLoadTest, SuppressNeedsTimesAndDuringAndRejectsUnknownKeys) {
  playbook::Loader loader;
  loader.LoadPlaybookText(R"(playbook: bad
description: x
rules:
  - id: a
    fact: "1"
    finding:
      when: "true"
      suppress: {during: windows.checkpoints, because: "x"}
)", "bad.yaml");
  std::string errors = loader.result().AsJson().dump();
  EXPECT_FALSE(loader.result().ok());
  EXPECT_NE(errors.find("finding.suppress.times"), std::string::npos) << errors;
  EXPECT_NE(errors.find("because"), std::string::npos) << errors;
}

TEST(SuppressLoadTest, CheckpointsIsAnExpressionWindowNotAQueryWindow) {
  playbook::Loader loader;
  loader.LoadCommonText("thresholds: {checkpoint_window_settle_seconds: 60}\n", "t.yaml");
  loader.LoadCommonFile(playbook::PlaybookDataDir() + "/rules/common/windows.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump();
  loader.LoadPlaybookText(R"(playbook: q
description: x
rules:
  - id: a
    query: 'up'
    window: checkpoints
)", "q.yaml");
  EXPECT_FALSE(loader.result().ok());
  EXPECT_NE(loader.result().AsJson().dump().find("unknown window 'checkpoints'"), std::string::npos) << loader.result().AsJson().dump();
}

}  // namespace
}  // namespace diagnose::dag
