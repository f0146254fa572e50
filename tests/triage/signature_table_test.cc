#include "engine/triage/signature_table.h"

#include <gtest/gtest.h>

#include <algorithm>

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
                         "cancelled-after-hang", "node-fail", "unknown-death", "stage-fail", "soft-success", "log-step-gap"})
    EXPECT_NE(t->Find(id), nullptr) << id;
  EXPECT_EQ(t->Find("oom-gpu")->verdict->root_cause, "gpu-oom");
  EXPECT_EQ(t->Find("oom-gpu")->verdict->action, DecisionAction::kNoRetry);
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

TEST(SignatureTableTest, EveryBrokenClassIsReportedAtItsOwnLine) {
  // Class a has a priority that is not a number (a yaml-cpp conversion error, caught in the
  // reader), class b is fine, class c has no stage: both mistakes named, in file order.
  auto t = ParseSignatureTable(
      "classes:\n"
      "  - {id: a, stage: training, priority: high, patterns: [x]}\n"
      "  - {id: b, stage: training, priority: 1, patterns: [y]}\n"
      "  - {id: c, priority: 1, patterns: [z]}\n",
      "sig.yaml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kParse);
  const std::string& message = t.status().message();
  const size_t bad_priority = message.find("sig.yaml:2:");
  const size_t no_stage = message.find("sig.yaml:4:");
  ASSERT_NE(bad_priority, std::string::npos) << message;
  ASSERT_NE(no_stage, std::string::npos) << message;
  EXPECT_LT(bad_priority, no_stage);
  EXPECT_NE(message.find("class c: stage must be"), std::string::npos) << message;
  EXPECT_EQ(message.find("sig.yaml:3:"), std::string::npos) << message;
}

// libstdc++'s std::regex recursed per character on the `.*` of these patterns: a 40 KB line took
// ~97,000 frames and overflowed the stack. Each regex now reads a window around its literal.
TEST(SignatureTableTest, RegexesOnLinesUpToTheLineLimitStayNearTheirLiteral) {
  auto t = LoadSignatureTable(testing::RulesDir() + "/triage/failure-signatures.yaml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const auto index_of = [&](const std::string& id) {
    for (size_t i = 0; i < t->classes.size(); ++i)
      if (t->classes[i].id == id) return static_cast<int>(i);
    return -1;
  };
  const int pull = index_of("container-pull-fail"), nic = index_of("nccl-nic-fail");
  ASSERT_GE(pull, 0);
  ASSERT_GE(nic, 0);
  const SignatureMatcher m(*t);
  std::vector<int> hits;
  const auto has = [&](int c) { return std::find(hits.begin(), hits.end(), c) != hits.end(); };
  for (size_t length : {size_t{40000}, size_t{65536 - 100}}) {
    const std::string filler(length, 'a');
    m.Match("[ERROR] Login to " + filler, &hits);   // the repro: no " failed" anywhere
    EXPECT_FALSE(has(pull)) << length;
    m.Match("[ERROR] Login to registry.example failed " + filler, &hits);
    EXPECT_TRUE(has(pull)) << length;
    m.Match("NCCL FATAL " + filler + " Failed to auto-detect NCCL_SOCKET_IFNAME", &hits);
    EXPECT_FALSE(has(nic)) << length << ": the match would need text " << length << " bytes from its literal";
    m.Match(filler + " NCCL FATAL bootstrap: Failed to auto-detect NCCL_SOCKET_IFNAME", &hits);
    EXPECT_TRUE(has(nic)) << length;
  }
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

// What Match() must report, by brute force: classes whose pattern occurs unless an ignore of
// theirs or a harmless pattern occurs; trigger bits for every trigger that occurs.
std::vector<int> NaiveMatch(const SignatureTable& t, const std::vector<std::string>& triggers,
                            std::string_view line, uint32_t* trigger_bits) {
  auto occurs = [&](const std::vector<SignaturePattern>& list) {
    for (const auto& p : list)
      if (line.find(p.literal) != std::string_view::npos) return true;
    return false;
  };
  *trigger_bits = 0;
  for (size_t i = 0; i < triggers.size(); ++i)
    if (line.find(triggers[i]) != std::string_view::npos) *trigger_bits |= 1u << i;
  std::vector<int> out;
  if (occurs(t.harmless)) return out;
  for (size_t ci = 0; ci < t.classes.size(); ++ci)
    if (occurs(t.classes[ci].patterns) && !occurs(t.classes[ci].ignore)) out.push_back(static_cast<int>(ci));
  return out;
}

// Overlapping literals, literals at either end of a line and (second table) a one-byte literal,
// which turns the root skip off, against random lines over the literals' own alphabet.
TEST(SignatureTableTest, MatcherAgreesWithBruteForceOnRandomLines) {
  for (const char* one_byte_class : {"", "  - id: c\n    stage: job\n    priority: 3\n    patterns: [q]\n"}) {
    auto t = ParseSignatureTable(std::string(R"(
harmless: ["zzq"]
classes:
  - id: a
    stage: training
    priority: 1
    patterns: ["abc", "cd", "xab"]
    ignore: ["bcdx"]
  - id: b
    stage: job
    priority: 2
    patterns: ["abcd", "ba", "dd a"]
)") + one_byte_class, "t.yaml");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    const std::vector<std::string> triggers{"ca", "d d", "bb"};
    SignatureMatcher m(*t, triggers);
    const std::string alphabet = "abcdxzq ";
    unsigned rng = 7;
    std::vector<int> hits;
    for (int n = 0; n < 20000; ++n) {
      std::string line;
      rng = rng * 1103515245u + 12345u;
      for (int len = (rng >> 16) % 24; len > 0; --len) {
        rng = rng * 1103515245u + 12345u;
        line += alphabet[(rng >> 16) % alphabet.size()];
      }
      uint32_t bits = 0, expected_bits = 0;
      m.Match(line, &hits, &bits);
      std::vector<int> expected = NaiveMatch(*t, triggers, line, &expected_bits);
      std::sort(hits.begin(), hits.end());
      ASSERT_EQ(hits, expected) << "line '" << line << "'";
      ASSERT_EQ(bits, expected_bits) << "line '" << line << "'";
    }
  }
}

TEST(SignatureExamples, OwnClassMustReadItAndAnOutrankingClassIsNamed) {
  auto t = ParseSignatureTable(R"(classes:
  - id: disk-full
    stage: training
    priority: 85
    patterns: ["No space left on device"]
    examples:
      - "ResourceExhaustedError: /ckpt/1/x.tmp; No space left on device"
      - "ENOSPC while writing /ckpt/2"
  - id: gpu-oom
    stage: training
    priority: 90
    patterns: ["ResourceExhausted"]
  - id: python-exception
    stage: training
    priority: 30
    patterns: ["Error:"]
)", "sig.yaml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const auto findings = CheckSignatureExamples(*t);
  ASSERT_EQ(findings.size(), 2u);
  // gpu-oom outranks disk-full on the first example: named, with its position.
  EXPECT_FALSE(findings[0].error);
  EXPECT_EQ(findings[0].line, 7);
  EXPECT_EQ(findings[0].file, "sig.yaml");
  EXPECT_NE(findings[0].message.find("gpu-oom (priority 90)"), std::string::npos) << findings[0].message;
  EXPECT_NE(findings[0].message.find("outranks it"), std::string::npos) << findings[0].message;
  // python-exception (lower priority) also matches it and is not named; the second example is
  // read by no pattern of its own class: an error.
  EXPECT_TRUE(findings[1].error);
  EXPECT_EQ(findings[1].line, 8);
  EXPECT_NE(findings[1].message.find("does not read its own example"), std::string::npos);

  auto not_a_list = ParseSignatureTable("classes:\n  - id: a\n    stage: job\n    priority: 1\n    patterns: [x]\n    examples: x\n",
                                        "sig.yaml");
  EXPECT_FALSE(not_a_list.ok());
}

TEST(SignatureExamples, TheShippedTableReadsEveryExampleAsItsOwnClass) {
  auto t = LoadSignatureTable(std::string(DIAGNOSE_SOURCE_DIR) + "/rules/triage/failure-signatures.yaml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  int examples = 0;
  for (const auto& c : t->classes) examples += static_cast<int>(c.examples.size());
  EXPECT_GE(examples, 5);
  for (const auto& f : CheckSignatureExamples(*t)) EXPECT_FALSE(f.error) << f.file << ":" << f.line << ": " << f.message;
}

}  // namespace
}  // namespace diagnose
