// `promtool test rules` files generated from the playbooks' own tests (playbooks/tests/*.test.yaml,
// promtool's input-series notation): the same series, and expectations derived from each test's
// expected verdict, so an alert is held to the cases its playbook is:
//   - a test whose verdict is an alert's root cause: one of that root cause's alerts fires within
//     the test's span, and none fires on a host outside the expected exclusions;
//   - a near miss (verdict none, nothing excluded, no finding naming a host): no alert of the
//     test's playbooks fires.
// The firing state is read back from the ALERTS series the rule evaluation writes.
#pragma once

#include <string>
#include <vector>

#include "engine/alerting/rule_export.h"
#include "engine/core/status.h"

namespace diagnose::alerting {

struct GeneratedRuleTests {
  std::string yaml;       // the test file; its rule_files names `rule_file`
  int positive = 0;       // cases that must fire
  int negative = 0;       // near misses that must not
  std::vector<std::string> case_names;
};

struct RuleTestRun {
  bool passed = false;
  std::string output;   // promtool's report
  GeneratedRuleTests tests;
};

// Writes the rule file and the generated tests to `keep_dir` (or a temp dir removed on every exit
// path, signals included) and runs `promtool test rules` there (argv, no shell).
StatusOr<RuleTestRun> RunRuleTests(const RuleExport& rules, const std::vector<std::string>& playbook_test_files,
                                   const std::string& promtool = "promtool", const std::string& keep_dir = "");

StatusOr<GeneratedRuleTests> GenerateRuleTests(const RuleExport& rules, const std::vector<std::string>& playbook_test_files,
                                               const std::string& rule_file);

}  // namespace diagnose::alerting
