#include "engine/triage/signature_table.h"

#include <gtest/gtest.h>

#include "tests/triage/triage_support.h"

namespace diagnose {
namespace {

TEST(SignatureTableTest, ShippedTableLoadsAndCoversEveryClass) {
  auto t = LoadSignatureTable(testing::RulesDir() + "/triage/failure-signatures.yaml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  for (const char* id : {"prolog-kill-no-log", "container-pull-fail", "container-load-fail", "no-gpu", "nccl-nic-fail",
                         "port-fail", "model-not-found", "patch-branch-fail", "ray-start-fail", "preflight-timeout",
                         "pull-timeout", "ecc-timeout", "train-timeout", "hang", "heartbeat-timeout", "oom-host",
                         "oom-gpu", "nccl-timeout", "xla-compile-fail", "python-exception", "signal-kill",
                         "subprocess-fail", "actor-fail", "checkpoint-fs-error", "tgs-degradation", "cancelled",
                         "cancelled-after-hang", "node-fail", "unknown-death", "stage-fail", "soft-success"})
    EXPECT_NE(t->Find(id), nullptr) << id;
  EXPECT_EQ(t->Find("oom-gpu")->verdict->root_cause, "gpu-oom");
  EXPECT_EQ(t->Find("oom-gpu")->verdict->action, "no-retry");
  EXPECT_EQ(t->Find("container-pull-fail")->verdict->root_cause, "infrastructure-failure");
  EXPECT_EQ(t->Find("model-not-found")->verdict->root_cause, "config-error");
  EXPECT_FALSE(t->Find("heartbeat-timeout")->tsdb_questions.empty());
  EXPECT_FALSE(t->Find("ray-start-fail")->fatal);   // Ray falls back to non-Ray mode
  EXPECT_TRUE(t->Find("oom-gpu")->fatal);
  EXPECT_NE(t->Find("ecc-error"), nullptr);
}

TEST(SignatureTableTest, YamlErrorsNameLineAndColumn) {
  auto t = ParseSignatureTable("classes:\n  - id: a\n    stage: training\n    priority: {\n", "sig.yaml");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("sig.yaml:"), std::string::npos) << t.status().message();
  auto bad_regex = ParseSignatureTable(
      "classes:\n  - id: a\n    stage: training\n    priority: 1\n    patterns:\n      - regex: \"([\"\n        requires: x\n",
      "sig.yaml");
  ASSERT_FALSE(bad_regex.ok());
  EXPECT_NE(bad_regex.status().message().find("sig.yaml:6:"), std::string::npos) << bad_regex.status().message();
  auto bad_verdict = ParseSignatureTable(
      "classes:\n  - id: a\n    stage: training\n    priority: 1\n    patterns: [x]\n    verdict: {root_cause: nope, action: none, confidence: likely}\n",
      "sig.yaml");
  ASSERT_FALSE(bad_verdict.ok());
  EXPECT_NE(bad_verdict.status().message().find("nope"), std::string::npos);
}

TEST(SignatureTableTest, MatcherAppliesIgnoreHarmlessAndRegex) {
  auto t = ParseSignatureTable(R"(
harmless: ["totally fine"]
classes:
  - id: a
    stage: training
    priority: 1
    patterns: ["boom", {regex: "code [1-9]\\d*$", requires: "code "}]
    ignore: ["boom-ok"]
  - id: b
    stage: job
    priority: 2
    patterns: ["qq"]
)", "t.yaml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  SignatureMatcher m(*t);
  std::vector<int> hits;
  m.Match("a boom here", &hits);
  EXPECT_EQ(hits, (std::vector<int>{0}));
  m.Match("a boom-ok here", &hits);
  EXPECT_TRUE(hits.empty());
  m.Match("boom but totally fine", &hits);
  EXPECT_TRUE(hits.empty());
  m.Match("exit code 0", &hits);
  EXPECT_TRUE(hits.empty());
  m.Match("exit code 12", &hits);
  EXPECT_EQ(hits, (std::vector<int>{0}));
  m.Match("boom and qq", &hits);
  EXPECT_EQ(hits.size(), 2u);
  m.Match("nothing", &hits);
  EXPECT_TRUE(hits.empty());
}

}  // namespace
}  // namespace diagnose
