// The exported rule file against Prometheus's own tools: `promtool check rules` on every playbook's
// export for both targets, and `promtool test rules` on tests generated from the playbooks' tests,
// which must pass with the shipped thresholds and fail when one of them is flipped.
#include "engine/alerting/rule_export.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/alerting/rule_tests.h"
#include "engine/core/subprocess.h"
#include "engine/playbook/loader.h"

namespace diagnose::alerting {
namespace {

namespace fs = std::filesystem;
namespace pb = diagnose::playbook;
using ::testing::HasSubstr;
using ::testing::Not;

struct Shipped {
  pb::Library library;
  AlertBook book;
};

Shipped LoadShipped() {
  Shipped s;
  pb::LoadResult result;
  s.library = pb::LoadLibraryDir(DIAGNOSE_SOURCE_DIR, &result);
  s.book = LoadAlertBook(DIAGNOSE_SOURCE_DIR, s.library, &result);
  EXPECT_TRUE(result.ok());
  return s;
}

// Lint's metric catalogue holds every series an alert or record reads; a record's own name counts.
TEST(AlertMetricNames, ShippedAlertsNameOnlyCataloguedMetricsOrRecords) {
  const Shipped s = LoadShipped();
  auto catalogue = pb::MetricCatalogue::Load(std::string(DIAGNOSE_SOURCE_DIR) + "/rules/metrics.yaml");
  ASSERT_TRUE(catalogue.ok()) << catalogue.status().ToString();
  ASSERT_FALSE(s.book.alerts.empty());
  for (const auto& d : CheckAlertMetricNames(s.book, *catalogue, "rules/metrics.yaml")) ADD_FAILURE() << d.ToString();
  AlertBook typo = s.book;
  typo.alerts.front().expr_template = "rate(hw_tcp_retransmit_total[5m]) > 0";
  const auto diags = CheckAlertMetricNames(typo, *catalogue, "rules/metrics.yaml");
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_TRUE(diags[0].warning());
  EXPECT_EQ(diags[0].pos.line, typo.alerts.front().expr_pos.line);
  EXPECT_EQ(diags[0].field, "expr");
  EXPECT_THAT(diags[0].message, HasSubstr("did you mean 'hw_tcp_retransmits_total'?"));
}

std::vector<std::string> PlaybookTests() {
  return pb::FindYamlFiles(std::string(DIAGNOSE_SOURCE_DIR) + "/playbooks/tests", true);
}

bool HavePromtool() { return !FindExecutable("promtool").empty(); }

// `promtool check rules` on the text; its output when it fails.
std::string CheckRules(const std::string& yaml) {
  fs::path dir = fs::temp_directory_path() / ("diagnose-export-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path file = dir / "rules.yml";
  std::ofstream(file) << yaml;
  auto run = RunCommand({"promtool", "check", "rules", file.string()}, std::chrono::seconds(60));
  fs::remove_all(dir);
  if (!run.ok()) return run.status().message();
  return run->exit_code == 0 ? "" : run->output;
}

TEST(RuleExport, EveryPlaybooksExportPassesPromtoolCheckRules) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed";
  Shipped s = LoadShipped();
  for (auto target : {RuleTarget::kPrometheus, RuleTarget::kVmalert}) {
    std::vector<std::vector<std::string>> selections = {{}};
    for (const auto& p : s.library.playbooks) selections.push_back({p.id});
    for (const auto& selection : selections) {
      ExportOptions options;
      options.target = target;
      options.playbooks = selection;
      auto exported = ExportRules(s.book, s.library, options);
      ASSERT_TRUE(exported.ok()) << exported.status().message();
      std::string name = selection.empty() ? "all" : selection[0];
      EXPECT_EQ(CheckRules(RuleFileYaml(*exported, "test")), "") << name;
    }
  }
}

TEST(RuleExport, AThresholdChangedInRulesCommonChangesTheExportedRule) {
  Shipped s = LoadShipped();
  auto before = ExportRules(s.book, s.library, {});
  ASSERT_TRUE(before.ok());
  s.library.thresholds["host_mem_exhausted_fraction"] = 0.875;
  s.library.thresholds["rdma_sustained_min_s"] = 420;
  auto after = ExportRules(s.book, s.library, {});
  ASSERT_TRUE(after.ok());
  std::string a = RuleFileYaml(*before, "t"), b = RuleFileYaml(*after, "t");
  EXPECT_THAT(a, Not(HasSubstr(">= 0.875")));
  EXPECT_THAT(b, HasSubstr("max by (instance, ip) (ray_node_mem_total) >= 0.875"));
  EXPECT_THAT(b, HasSubstr("for: 420s"));
}

TEST(RuleExport, AlertsCarryLabelsAnnotationsAndTheirFor) {
  Shipped s = LoadShipped();
  auto exported = ExportRules(s.book, s.library, {});
  ASSERT_TRUE(exported.ok());
  ASSERT_FALSE(exported->alerts.empty());
  for (const auto& a : exported->alerts) {
    EXPECT_EQ(a.labels.count("severity"), 1u) << a.alert;
    EXPECT_EQ(a.labels.at("playbook"), a.spec->playbook);
    EXPECT_EQ(a.labels.at("root_cause"), a.spec->root_cause);
    EXPECT_THAT(a.annotations.at("command"), HasSubstr("diagnose JOB --prometheus"));
    EXPECT_FALSE(a.annotations.at("runbook").empty());
    EXPECT_THAT(a.expr, Not(HasSubstr("{{")));   // every placeholder bound
  }
}

TEST(RuleExport, VmalertGetsTheRecordsInlined) {
  Shipped s = LoadShipped();
  ExportOptions options;
  options.target = RuleTarget::kVmalert;
  auto exported = ExportRules(s.book, s.library, options);
  ASSERT_TRUE(exported.ok());
  ASSERT_FALSE(exported->records.empty());
  for (const auto& a : exported->alerts)
    for (const auto& r : exported->records) EXPECT_THAT(a.expr, Not(HasSubstr(r.record))) << a.alert;
}

TEST(RuleExport, InlineRecordsReplacesWholeNamesOnly) {
  std::vector<RenderedRecord> records = {{"host:x:rate", "sum(rate(x[2m]))"}};
  EXPECT_EQ(InlineRecords("host:x:rate / host:x:rate2 + my_host:x:rate", records),
            "(sum(rate(x[2m]))) / host:x:rate2 + my_host:x:rate");
}

TEST(RuleExport, AJobLabelIsKeptByEveryGroupingAndMatch) {
  EXPECT_EQ(KeepLabelInGroupings("sum by (host, instance) (rate(x[2m]))", "job"),
            "sum by (host, instance, job) (rate(x[2m]))");
  EXPECT_EQ(KeepLabelInGroupings("a >= on () group_left () (0.02 * max(a)) unless on (host) b", "job"),
            "a >= on (job) group_left () (0.02 * max by (job) (a)) unless on (host, job) b");
  EXPECT_EQ(KeepLabelInGroupings("count(quantile by (host) (0.5, x)) / count(y)", "job"),
            "count by (job) (quantile by (host, job) (0.5, x)) / count by (job) (y)");
  // Already there, postfix grouping, label names inside matchers, strings and ranges: untouched.
  EXPECT_EQ(KeepLabelInGroupings("max by (job, host) (x)", "job"), "max by (job, host) (x)");
  EXPECT_EQ(KeepLabelInGroupings("sum(x) by (host)", "job"), "sum(x) by (host, job)");
  EXPECT_EQ(KeepLabelInGroupings("max_over_time(x{by=\"on (a)\", sum=\"max(\"}[5m])", "job"),
            "max_over_time(x{by=\"on (a)\", sum=\"max(\"}[5m])");
  EXPECT_EQ(KeepLabelInGroupings("label_replace(x, \"max\", \"sum(\", \"\", \"\")", "job"),
            "label_replace(x, \"max\", \"sum(\", \"\", \"\")");
  EXPECT_EQ(KeepLabelInGroupings("sum by (host) (x)", ""), "sum by (host) (x)");
}

// One store, two jobs whose hosts have the same names: the exported alerts, run by promtool, fire for
// the job whose host lost packets and carry its job label; without it the two jobs' counters summed.
TEST(RuleExport, WithAJobLabelTwoJobsOnSameNamedHostsStayApart) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed";
  Shipped s = LoadShipped();
  ExportOptions options;
  options.job_label = "slurm_job";
  options.query_url = "https://store.example/prometheus";
  for (auto target : {RuleTarget::kPrometheus, RuleTarget::kVmalert}) {
    options.target = target;
    auto exported = ExportRules(s.book, s.library, options);
    ASSERT_TRUE(exported.ok()) << exported.status().message();
    EXPECT_EQ(CheckRules(RuleFileYaml(*exported, "test")), "");
    for (const auto& a : exported->alerts)
      EXPECT_THAT(a.annotations.at("command"),
                  HasSubstr("diagnose {{ $labels.slurm_job }} --prometheus https://store.example/prometheus --job-label slurm_job"));
  }
  options.target = RuleTarget::kPrometheus;
  auto exported = ExportRules(s.book, s.library, options);
  ASSERT_TRUE(exported.ok());
  fs::path dir = fs::temp_directory_path() / ("diagnose-job-label-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "rules.yml") << RuleFileYaml(*exported, "test");
  std::ofstream(dir / "test.yml") << R"(rule_files: [rules.yml]
evaluation_interval: 30s
tests:
  - interval: 30s
    input_series:
      - series: 'hw_rdma_req_tx_retry_excd_err_total{host="n1", instance="n1:9400", slurm_job="8001"}'
        values: '0+1x40'
      - series: 'hw_rdma_req_tx_retry_excd_err_total{host="n1", instance="n1:9400", slurm_job="8002"}'
        values: '7x40'
    promql_expr_test:
      - expr: ALERTS{alertname="DiagnoseRdmaRetryExhausted", alertstate="firing"}
        eval_time: 15m
        exp_samples:
          - labels: 'ALERTS{alertname="DiagnoseRdmaRetryExhausted", alertstate="firing", host="n1", instance="n1:9400", slurm_job="8001", playbook="rdma-phase-correlation", root_cause="rdma-link-degradation", severity="critical"}'
            value: 1
)";
  auto run = RunCommand({"promtool", "test", "rules", (dir / "test.yml").string()}, std::chrono::seconds(60));
  fs::remove_all(dir);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->exit_code, 0) << run->output;
}

TEST(RuleExport, AJobLabelMustBeALabelName) {
  Shipped s = LoadShipped();
  ExportOptions options;
  options.job_label = "job) or vector(1";
  EXPECT_FALSE(ExportRules(s.book, s.library, options).ok());
  options.job_label = "slurm_job";
  options.query_url = "http://x/{{ .Labels }}";
  EXPECT_FALSE(ExportRules(s.book, s.library, options).ok());
}

TEST(RuleExport, VerdictsPromqlCannotSayAreListedWithTheirReason) {
  Shipped s = LoadShipped();
  auto exported = ExportRules(s.book, s.library, {});
  ASSERT_TRUE(exported.ok());
  std::map<std::string, std::string> reasons;
  for (const auto& n : exported->not_exportable) reasons[n.playbook + " -> " + n.root_cause] = n.reason;
  EXPECT_THAT(reasons["restore-thread-leak -> restore-thread-leak"], HasSubstr("a baseline job's TSDB"));
  EXPECT_THAT(reasons["heartbeat-false-positive -> heartbeat-false-positive"], HasSubstr("facts.heartbeat"));
  EXPECT_THAT(reasons["moe-lb-loss-drift -> moe-routing-shift"], HasSubstr("analyses over the whole job (change_points"));
  for (const auto& a : exported->alerts) EXPECT_EQ(reasons.count(a.spec->playbook + " -> " + a.spec->root_cause), 0u);
  EXPECT_THAT(RuleFileYaml(*exported, "t"), HasSubstr("# Not exportable"));
}

TEST(RuleExport, AnUnknownPlaybookIsNotFound) {
  Shipped s = LoadShipped();
  ExportOptions options;
  options.playbooks = {"no-such-playbook"};
  auto exported = ExportRules(s.book, s.library, options);
  ASSERT_FALSE(exported.ok());
  EXPECT_EQ(exported.status().code(), StatusCode::kNotFound);
}

TEST(RuleTests, GeneratedFromThePlaybookTestsTheyPassWithTheShippedThresholds) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed";
  Shipped s = LoadShipped();
  for (auto target : {RuleTarget::kPrometheus, RuleTarget::kVmalert}) {
    ExportOptions options;
    options.target = target;
    auto exported = ExportRules(s.book, s.library, options);
    ASSERT_TRUE(exported.ok());
    auto run = RunRuleTests(*exported, PlaybookTests());
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_TRUE(run->passed) << run->output;
    EXPECT_GE(run->tests.positive, 10);
    EXPECT_GE(run->tests.negative, 5);
    // Every alert is held to at least one case that must fire it.
    for (const auto& a : exported->alerts) EXPECT_THAT(run->tests.yaml, HasSubstr(a.alert)) << a.alert;
  }
}

// Each flip makes a positive case miss its alert, or a near miss fire one: the generated tests
// see thresholds, not only syntax. One ctest process per flip (each runs promtool over every
// generated test), so that no process nears its time limit and two run at once.
struct ThresholdFlip {
  std::string name;
  double value;
};

void PrintTo(const ThresholdFlip& flip, std::ostream* os) { *os << flip.name << " = " << flip.value; }

class RuleTestsFlipped : public ::testing::TestWithParam<ThresholdFlip> {};

TEST_P(RuleTestsFlipped, TheyFailWhenAThresholdIsFlipped) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed";
  const ThresholdFlip& flip = GetParam();
  Shipped s = LoadShipped();
  ASSERT_TRUE(s.library.thresholds.contains(flip.name)) << flip.name;
  s.library.thresholds[flip.name] = flip.value;
  auto exported = ExportRules(s.book, s.library, {});
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  auto run = RunRuleTests(*exported, PlaybookTests());
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_FALSE(run->passed) << flip.name << " = " << flip.value << " still passes";
}

INSTANTIATE_TEST_SUITE_P(
    Flips, RuleTestsFlipped,
    ::testing::Values(ThresholdFlip{"rdma_error_rate_min_per_s", 1e9}, ThresholdFlip{"host_mem_exhausted_fraction", 1.5},
                      ThresholdFlip{"host_mem_exhausted_fraction", 0.01}, ThresholdFlip{"gpu_sclk_drop_fraction", 0.95},
                      ThresholdFlip{"gpu_power_busy_wait_max_w", 10}, ThresholdFlip{"gpu_util_busy_pct", 101},
                      ThresholdFlip{"counter_edge_s", 1}),
    [](const ::testing::TestParamInfo<ThresholdFlip>& info) {
      std::ostringstream value;
      value << info.param.value;
      std::string name = info.param.name + "_" + value.str();   // e.g. counter_edge_s_1, gpu_sclk_drop_fraction_0_95
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

}  // namespace
}  // namespace diagnose::alerting

namespace diagnose::alerting {
namespace {

TEST(RuleLint, PromtoolErrorsComeBackAtTheAlertsExpression) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed";
  Shipped s = LoadShipped();
  AlertBook book;
  pb::LoadResult result;
  LoadAlertText(R"(alerts:
  - alert: Broken
    playbook: host-oom
    root_cause: host-oom
    evidence: [oom_hosts]
    severity: warning
    expr: 'sum by host (increse(hw_oom_kills_total[5m])) > 0'
    for: 0s
    summary: "{{ $labels.host }}"
)",
                "broken.yaml", s.library, &book, &result);
  ASSERT_TRUE(result.ok());
  auto diagnostics = CheckExportedRules(book, s.library);
  ASSERT_TRUE(diagnostics.ok()) << diagnostics.status().message();
  ASSERT_EQ(diagnostics->size(), 1u);
  EXPECT_EQ((*diagnostics)[0].pos.ToString(), "broken.yaml:7:11");
  EXPECT_THAT((*diagnostics)[0].message, HasSubstr("Prometheus rejects the rule"));
  // The shipped book passes.
  auto shipped = CheckExportedRules(s.book, s.library);
  ASSERT_TRUE(shipped.ok());
  EXPECT_TRUE(shipped->empty());
}

}  // namespace
}  // namespace diagnose::alerting
