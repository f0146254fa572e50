// The alert book: the shipped rules/alerts load against the shipped playbooks, and every kind of
// mistake an author makes is reported with its file:line:col.
#include "engine/alerting/alert_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/playbook/loader.h"

namespace diagnose::alerting {
namespace {

namespace pb = diagnose::playbook;
using ::testing::HasSubstr;

const pb::Library& ShippedLibrary() {
  static const pb::Library library = [] {
    pb::LoadResult result;
    pb::Library lib = pb::LoadLibraryDir(DIAGNOSE_SOURCE_DIR, &result);
    EXPECT_TRUE(result.ok());
    return lib;
  }();
  return library;
}

// Diagnostics of one alerts file given as text, one string each.
std::vector<std::string> Problems(const std::string& text) {
  AlertBook book;
  pb::LoadResult result;
  LoadAlertText(text, "a.yaml", ShippedLibrary(), &book, &result);
  std::vector<std::string> out;
  for (const auto& d : result.diagnostics()) out.push_back(d.ToString());
  return out;
}

const char* kValidAlert = R"(alerts:
  - alert: TestAlert
    playbook: host-oom
    root_cause: host-oom
    evidence: [oom_hosts]
    severity: warning
    expr: 'sum by (host) (hw_oom_kills_total) >= {{ level }}'
    for: 1m
    args:
      level: {type: number, expr: thresholds.host_mem_exhausted_fraction}
    summary: "{{ $labels.host }}"
)";

TEST(AlertBook, TheShippedAlertsLoadWithoutProblems) {
  pb::LoadResult result;
  AlertBook book = LoadAlertBook(DIAGNOSE_SOURCE_DIR, ShippedLibrary(), &result);
  for (const auto& d : result.diagnostics()) ADD_FAILURE() << d.ToString();
  EXPECT_GE(book.alerts.size(), 6u);
  for (const auto& a : book.alerts) {
    EXPECT_FALSE(a.evidence.empty()) << a.alert;
    EXPECT_NE(ShippedLibrary().FindPlaybook(a.playbook), nullptr) << a.alert;
  }
}

TEST(AlertBook, AValidAlertHasNoProblems) { EXPECT_THAT(Problems(kValidAlert), ::testing::IsEmpty()); }

TEST(AlertBook, MistakesAreReportedWithTheirPosition) {
  struct Case {
    std::string from, to, message;
  };
  const std::vector<Case> cases = {
      {"    severity: warning", "    severity: warning\n    sevrity: x", "a.yaml:7:5: rule \"TestAlert\": unknown key 'sevrity'"},
      {"playbook: host-oom", "playbook: host-oomm", "a.yaml:3:15: rule \"TestAlert\": field 'playbook': unknown playbook 'host-oomm'"},
      {"root_cause: host-oom", "root_cause: rccl-hang", "no verdict with root cause 'rccl-hang'"},
      {"evidence: [oom_hosts]", "evidence: [oom_hostz]", "a.yaml:5:16: rule \"TestAlert\": field 'evidence': playbook 'host-oom' has no rule 'oom_hostz'"},
      {"severity: warning", "severity: loud", "'loud' is not one of critical, info, warning"},
      {"thresholds.host_mem_exhausted_fraction", "thresholds.no_such_threshold", "unknown name 'thresholds.no_such_threshold'"},
      {"thresholds.host_mem_exhausted_fraction", "windows.job.end", "'windows' is not in scope: an alert sees thresholds.* and params.* only"},
      {"{{ level }}'", "{{ levl }}'", "placeholder '{{ levl }}' has no arg"},
      {"{type: number, expr: thresholds.host_mem_exhausted_fraction}", "{type: duration, value: soon}", "must be a duration"},
      {"for: 1m", "for: {type: duration, expr: thresholds.gpu_power_idle_w + }", "could not parse expression"},
  };
  for (const auto& c : cases) {
    std::string text = kValidAlert;
    auto at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    auto problems = Problems(text);
    std::string all;
    for (const auto& p : problems) all += p + "\n";
    EXPECT_THAT(all, HasSubstr(c.message)) << "after replacing '" << c.from << "' with '" << c.to << "'";
  }
}

// A record named like a label (`host`) would be inlined into `by (host)` and `{host=...}`: names
// without ':' are refused, as Prometheus's naming rule for recorded series wants.
TEST(AlertBook, ARecordNameWithoutAColonIsRefused) {
  std::string all;
  for (const auto& p : Problems("records:\n  - record: host\n    expr: 'up'\nalerts: []\n")) all += p + "\n";
  EXPECT_THAT(all, HasSubstr("a.yaml:2:13: rule \"host\": field 'record': 'host' has no ':'"));
  EXPECT_THAT(Problems("records:\n  - record: host:up:sum\n    expr: 'up'\nalerts: []\n"), ::testing::IsEmpty());
}

TEST(AlertBook, SectionsOfTheWrongShapeAreReportedNotThrown) {
  auto problems = Problems("records: {a: 1}\nalerts: 5\n");
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_THAT(problems[0], HasSubstr("a.yaml:1:10: field 'records' must be a list"));
  EXPECT_THAT(problems[1], HasSubstr("a.yaml:2:9: field 'alerts' must be a list"));
}

// Reading goes on past a mistake: a bad record and a bad alert in one file are both reported,
// each at its own position and naming its own rule.
TEST(AlertBook, EveryMistakeOfAFileIsReportedWithItsPosition) {
  std::string text = std::string("records:\n  - record: host\n    expr: 'up'\n") + kValidAlert;
  const std::string from = "severity: warning";
  text.replace(text.find(from), from.size(), "severity: loud");
  std::string all;
  for (const auto& p : Problems(text)) all += p + "\n";
  EXPECT_THAT(all, HasSubstr("a.yaml:2:13: rule \"host\": field 'record': 'host' has no ':'"));
  EXPECT_THAT(all, HasSubstr("a.yaml:9:15: rule \"TestAlert\": field 'severity': 'loud' is not one of"));
}

TEST(AlertBook, ArgsReadThresholdsAndPlaybookParams) {
  pb::ParamSpec arg;
  arg.type = pb::ParamType::kNumber;
  pb::ExprSyntaxError error;
  arg.expr.source = "thresholds.a * params.b";
  arg.expr.ast = pb::ParseExpr(arg.expr.source, &error);
  auto value = ArgValue(arg, {{"a", 3}}, {{"b", 0.5}});
  ASSERT_TRUE(value.ok()) << value.status().message();
  EXPECT_DOUBLE_EQ(value->get<double>(), 1.5);
  EXPECT_FALSE(ArgValue(arg, {{"a", 3}}, nlohmann::json::object()).ok());
}

}  // namespace
}  // namespace diagnose::alerting
