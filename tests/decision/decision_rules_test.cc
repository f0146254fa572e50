// Loading rules/sweep/decisions.yaml: the real file loads; mistakes are errors with positions.
#include <algorithm>

#include <gtest/gtest.h>

#include "engine/decision/decision_rules.h"
#include "tests/decision/decision_test_support.h"

namespace diagnose {
namespace {

TEST(DecisionRulesLoad, ProjectFileLoads) {
  const DecisionRules& rules = testing::SweepRules();
  EXPECT_EQ(rules.limits.max_retries_per_job, 2);
  EXPECT_EQ(rules.limits.max_excluded_nodes_per_sweep, 2);
  EXPECT_GE(rules.rules.size(), 15u);
  EXPECT_EQ(rules.node_health.steady_first_step, 5);
  EXPECT_EQ(rules.node_health.steady_last_step, 14);
}

std::string Minimal(const std::string& rule_body) {
  return "signals:\n  s: {classes: [x]}\nrules:\n" + rule_body;
}

TEST(DecisionRulesLoad, ActionOutsideTheContractIsRejectedWithPosition) {
  auto r = ParseDecisionRules(Minimal("  - id: a\n    when: {signal: s}\n    decision: {action: reboot}\n"), "t.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.yaml:6:"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("reboot"), std::string::npos);
}

TEST(DecisionRulesLoad, UnknownSignalKeyAndRootCauseAreErrors) {
  EXPECT_FALSE(ParseDecisionRules(Minimal("  - id: a\n    when: {signal: nope}\n    decision: {action: none}\n"), "t")
                   .ok());
  EXPECT_FALSE(ParseDecisionRules(Minimal("  - id: a\n    when: {signall: s}\n    decision: {action: none}\n"), "t")
                   .ok());
  EXPECT_FALSE(ParseDecisionRules(
                   Minimal("  - id: a\n    when: {signal: s}\n    decision: {action: none, root_cause: gremlins}\n"), "t")
                   .ok());
}

TEST(DecisionRulesLoad, ExcludingWithoutHostsIsAnError) {
  auto r = ParseDecisionRules(Minimal("  - id: a\n    when: {signal: s}\n    decision: {action: retry-excluding-nodes}\n"),
                              "t");
  EXPECT_FALSE(r.ok());
}

TEST(DecisionRulesLoad, BadRegexIsAnError) {
  auto r = ParseDecisionRules("signals:\n  s: {text: ['(unclosed']}\n", "t.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.yaml:2:"), std::string::npos) << r.status().message();
}

TEST(DecisionRulesLoad, YamlSyntaxErrorHasPosition) {
  auto r = ParseDecisionRules("rules: [\n", "t.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.yaml:"), std::string::npos);
}

// The ids the engine used to hard-code are data now; a rename on one side is an error, not a skip.
TEST(DecisionRulesLoad, HangSuspectSignalsAndNonMechanismCausesMustExist) {
  const DecisionRules& rules = testing::SweepRules();
  EXPECT_EQ(rules.hang_suspect_signals.size(), 4u);
  EXPECT_EQ(rules.not_a_mechanism, (std::vector<std::string>{"none", "unknown", "observability-gap"}));
  auto renamed = ParseDecisionRules("signals:\n  s: {classes: [x]}\nhang_suspect_signals: [s, rccl-trubble]\n", "t.yaml");
  ASSERT_FALSE(renamed.ok());
  EXPECT_NE(renamed.status().message().find("t.yaml:3:"), std::string::npos) << renamed.status().message();
  EXPECT_NE(renamed.status().message().find("'rccl-trubble' is not a signal defined here"), std::string::npos);
  auto cause = ParseDecisionRules("not_a_mechanism: [none, telemetry-ghosts]\n", "t.yaml");
  ASSERT_FALSE(cause.ok());
  EXPECT_NE(cause.status().message().find("'telemetry-ghosts' is not a root cause"), std::string::npos);
}

TEST(DecisionRulesLoad, EveryMistakeOfTheFileIsReportedWithItsPosition) {
  // Two broken rules, a broken section after them and a key that is not a string: each reported,
  // at its own line, in file order; the good rule between them does not hide them.
  auto r = ParseDecisionRules(Minimal("  - id: a\n    when: {signal: s}\n    decision: {action: reboot}\n"
                                      "  - id: fine\n    when: {signal: s}\n    decision: {action: none}\n"
                                      "  - id: b\n    when: {signal: nope}\n    decision: {action: none}\n") +
                                  "bisection: {first_step: many}\n",
                              "t.yaml");
  ASSERT_FALSE(r.ok());
  const std::string& message = r.status().message();
  const size_t reboot = message.find("t.yaml:6:");
  const size_t unknown_signal = message.find("t.yaml:11:");
  const size_t first_step = message.find("t.yaml:13:");
  ASSERT_NE(reboot, std::string::npos) << message;
  ASSERT_NE(unknown_signal, std::string::npos) << message;
  ASSERT_NE(first_step, std::string::npos) << message;
  EXPECT_LT(reboot, unknown_signal);
  EXPECT_LT(unknown_signal, first_step);
  EXPECT_NE(message.find("unknown signal 'nope'"), std::string::npos) << message;
  EXPECT_NE(message.find("first_step must be an integer"), std::string::npos) << message;
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 2) << message;
}

TEST(DecisionRulesLoad, ANonStringKeyIsAPositionedErrorNotAnException) {
  auto r = ParseDecisionRules("signals:\n  [a, b]: {classes: [x]}\n  s: {classes: []}\n", "t.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.yaml:2:"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("t.yaml:3:"), std::string::npos) << r.status().message();
}

TEST(DecisionRulesLoad, UnknownHangPhaseIsAnError) {
  EXPECT_FALSE(ParseDecisionRules("hang_phases: [during-lunch]\n", "t").ok());
}

}  // namespace
}  // namespace diagnose
