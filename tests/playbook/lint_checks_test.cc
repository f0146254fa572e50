// The lint checks that go past what the loader must reject: metric names against the catalogue
// (rules/metrics.yaml) and list placeholders that can leave a hole in a sentence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/playbook/loader.h"
#include "engine/playbook/metric_catalogue.h"
#include "engine/playbook/promql_lint.h"

namespace diagnose::playbook {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names(const std::string& promql) {
  std::vector<std::string> out;
  for (const auto& ref : ExtractMetricNames(promql)) out.push_back(ref.name);
  return out;
}

MetricCatalogue Shipped() {
  auto c = MetricCatalogue::Load(std::string(DIAGNOSE_SOURCE_DIR) + "/rules/metrics.yaml");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : MetricCatalogue();
}

std::string Dump(const std::vector<LoadDiagnostic>& diags) {
  std::string s;
  for (const auto& d : diags) s += d.ToString() + "\n";
  return s;
}

TEST(LintMetricNames, SelectorsOnlyNotFunctionsKeywordsLabelsOrPlaceholders) {
  EXPECT_THAT(Names(R"(sum by (host, instance) (rate(hw_rdma_tx_retx_pkts_total{host=~"{{ hosts }}", device!="x"}[{{ window }}])))"),
              ElementsAre("hw_rdma_tx_retx_pkts_total"));
  EXPECT_THAT(Names("max without(gpu) (hw_gpu_temperature_celsius) > bool 90 and on(host) group_left(device) up offset 5m"),
              ElementsAre("hw_gpu_temperature_celsius", "up"));
  EXPECT_THAT(Names(R"(count({__name__="tb_step", host="a"}) or {__name__=~"hw_gpu_.+"} unless vector(1))"),
              ElementsAre("tb_step"));
  EXPECT_THAT(Names("max_over_time(hw_procs_blocked[30m:1m]) / 1e3 * Inf + 0x1f - .5 # hw_not_a_name\n"),
              ElementsAre("hw_procs_blocked"));
  EXPECT_THAT(Names(R"(label_replace(up, "host", "$1", "instance", "(.*):9400") @ start())"), ElementsAre("up"));
  // Built from a placeholder: not judged.
  EXPECT_THAT(Names("increase(hw_gpu_ras_{{ block }}_ue_total[5m])"), ElementsAre());
}

TEST(LintMetricNames, MisspeltMetricWarnsAtItsPositionWithTheClosestName) {
  Loader loader;
  loader.LoadPlaybookText(R"yaml(playbook: p
description: d
triggers:
  - failure_class: [tgs-degradation]
rules:
  - id: retx
    query: >-
      sum by (host) (rate(hw_rdma_tx_retx_pkt_total[5m]))
      + on(host) tb_stepp
    finding:
      when: "len(retx.hosts) > 0"
      summary: "retransmits on {{ retx.hosts }}"
)yaml", "pb.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  auto diags = CheckMetricNames(loader.library(), Shipped(), "rules/metrics.yaml");
  ASSERT_EQ(diags.size(), 2u) << Dump(diags);
  EXPECT_TRUE(diags[0].warning());
  EXPECT_EQ(diags[0].code, LoadCode::kUnknownMetric);
  EXPECT_EQ(diags[0].pos.file, "pb.yaml");
  EXPECT_EQ(diags[0].pos.line, 8);
  EXPECT_EQ(diags[0].pos.col, 27);
  EXPECT_EQ(diags[0].rule, "retx");
  EXPECT_EQ(diags[0].message,
            "unknown metric 'hw_rdma_tx_retx_pkt_total' (not in rules/metrics.yaml; did you mean 'hw_rdma_tx_retx_pkts_total'?)");
  EXPECT_EQ(diags[0].ToString(), "pb.yaml:8:27: playbook \"p\", rule \"retx\": warning: " + diags[0].message);
  EXPECT_EQ(diags[1].pos.line, 9);
  EXPECT_EQ(diags[1].pos.col, 18);
  EXPECT_THAT(diags[1].message, HasSubstr("did you mean 'tb_step'?"));
}

TEST(LintMetricNames, EveryShippedQueryNamesACataloguedMetric) {
  LoadResult result;
  Library library = LoadLibraryDir(DIAGNOSE_SOURCE_DIR, &result);
  ASSERT_TRUE(result.ok()) << result.AsJson().dump(2);
  const auto diags = CheckMetricNames(library, Shipped(), "rules/metrics.yaml");
  EXPECT_TRUE(diags.empty()) << Dump(diags);
  // The check saw the queries: a catalogue without one of their names would warn.
  MetricCatalogue partial = *MetricCatalogue::Parse(
      "metrics:\n  - {name: up, meaning: scrape succeeded}\n", "partial.yaml");
  EXPECT_FALSE(CheckMetricNames(library, partial, "partial.yaml").empty());
}

TEST(LintMetricNames, CatalogueEntriesAreWellFormed) {
  const MetricCatalogue c = Shipped();
  EXPECT_TRUE(c.Contains("hw_rdma_tx_retx_pkts_total"));
  EXPECT_TRUE(c.Contains("ray_node_disk_usage"));   // by pattern
  EXPECT_FALSE(c.Contains("hw_rdma_retrans"));
  for (const auto& m : c.metrics()) EXPECT_FALSE(m.node_labels.empty()) << m.name << m.pattern;
  EXPECT_FALSE(MetricCatalogue::Parse("metrics:\n  - {name: a, pattern: b, meaning: c}\n", "x").ok());
  EXPECT_FALSE(MetricCatalogue::Parse("metrics:\n  - {name: a}\n", "x").ok());
  EXPECT_FALSE(MetricCatalogue::Parse("metrics:\n  - {pattern: '(', meaning: m}\n", "x").ok());
}

TEST(LintMetricNames, EveryMistakeOfACatalogueIsReportedWithItsPosition) {
  auto c = MetricCatalogue::Parse(
      "metrics:\n  - {name: a}\n  - {name: up, meaning: scrape succeeded}\n  - {pattern: '(', meaning: m}\n", "x.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), ::testing::HasSubstr("x.yaml:2:5: metric 'a' needs a 'meaning'"));
  EXPECT_THAT(c.status().message(), ::testing::HasSubstr("x.yaml:4:15: pattern '('"));
}

std::vector<LoadDiagnostic> EmptyListWarnings(const LoadResult& r) {
  std::vector<LoadDiagnostic> out;
  for (const auto& d : r.diagnostics())
    if (d.code == LoadCode::kEmptyListSentence) out.push_back(d);
  return out;
}

// A playbook whose first rule is the query `oom` (lines 1-7), `rest` continuing it from line 8.
std::vector<LoadDiagnostic> EmptyListWarningsOf(const std::string& rest) {
  Loader loader;
  loader.LoadPlaybookText(std::string("playbook: p\ndescription: d\ntriggers:\n  - failure_class: [oom-host]\nrules:\n") +
                              "  - id: oom\n    query: 'increase(hw_oom_kills_total[5m]) > 0'\n" + rest,
                          "pb.yaml");
  EXPECT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  return EmptyListWarnings(loader.result());
}

TEST(LintEmptyListSentence, UnguardedListPlaceholderWarnsWhereItIsWritten) {
  const auto diags = EmptyListWarningsOf(R"yaml(    finding:
      when: "oom.count >= 0"
      summary: "OOM killer fired on {{ oom.hosts }} during the job"
  - id: folded
    fact: oom.hosts
    finding:
      when: "true"
      summary: >-
        killed on
        {{ if(oom.count > 0, oom.hosts, []) }}
  - id: v
    verdict:
      when: "oom.count > 0"
      root_cause: host-oom
      action: no-retry
      summary: "OOM on {{ oom.hosts }}"
      notes:
        - text: "see {{ keys(oom.values) }}"
)yaml");
  ASSERT_EQ(diags.size(), 5u) << Dump(diags);
  EXPECT_TRUE(diags[0].warning());
  EXPECT_EQ(diags[0].pos.line, 10);
  EXPECT_EQ(diags[0].pos.col, 40);
  EXPECT_EQ(diags[0].field, "finding.summary");
  EXPECT_THAT(diags[0].message, HasSubstr("'{{ oom.hosts }}' renders a list that may be empty"));
  EXPECT_THAT(diags[0].message, HasSubstr("finding.when"));
  // Inside if(): both branches, as its condition says nothing of the list; in a folded scalar.
  EXPECT_EQ(diags[1].pos.line, 17);
  EXPECT_EQ(diags[1].pos.col, 30);
  EXPECT_THAT(diags[1].message, HasSubstr("finding.when"));
  EXPECT_EQ(diags[2].pos.col, 41);   // the empty list literal: a hole too
  EXPECT_EQ(diags[3].field, "verdict.summary");
  EXPECT_EQ(diags[4].field, "verdict.notes");
}

TEST(LintEmptyListSentence, GuardedFormsDoNotWarn) {
  const auto diags = EmptyListWarningsOf(R"yaml(    finding:
      when: "len(oom.hosts) > 0 and count(oom.values) > 0"
      summary: "OOM killer fired on {{ oom.hosts }} ({{ keys(oom.values) }})"
  - id: second
    fact: oom.hosts
    finding:
      when: "true"
      summary: >-
        {{ phrases(oom.hosts) }}; {{ if(len(oom.hosts) >= 1, oom.hosts, ["nowhere"]) }}
  - id: v
    verdict:
      when: "oom.hosts"
      root_cause: host-oom
      action: no-retry
      summary: "OOM on {{ oom.hosts }}"
      notes:
        - text: "see {{ keys(oom.values) }}"
          when: "0 < len(keys(oom.values))"
)yaml");
  EXPECT_TRUE(diags.empty()) << Dump(diags);
}

TEST(LintEmptyListSentence, ShippedPlaybooksHaveNone) {
  LoadResult result;
  LoadLibraryDir(DIAGNOSE_SOURCE_DIR, &result);
  ASSERT_TRUE(result.ok()) << result.AsJson().dump(2);
  EXPECT_TRUE(EmptyListWarnings(result).empty()) << Dump(EmptyListWarnings(result));
}

std::vector<LoadDiagnostic> WithCode(const LoadResult& r, LoadCode code) {
  std::vector<LoadDiagnostic> out;
  for (const auto& d : r.diagnostics())
    if (d.code == code) out.push_back(d);
  return out;
}

// A `let:` nothing of its rule reads is a leftover or the other half of a typo where it is read.
TEST(LintUnusedBinding, ALetItsRuleNeverReadsWarnsWhereItIsWritten) {
  Loader loader;
  loader.LoadPlaybookText(R"yaml(playbook: p
description: d
triggers:
  - failure_class: [oom-host]
rules:
  - id: oom
    query: 'increase(hw_oom_kills_total[5m]) > 0'
  - id: many
    let:
      hosts: "oom.hosts"
      counted: "len(hosts)"
      forgotten: "count(oom.values)"
    fact: "counted"
    finding:
      when: "counted > 1"
      summary: "OOM on several hosts"
)yaml",
                          "pb.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  const auto diags = WithCode(loader.result(), LoadCode::kUnusedBinding);
  ASSERT_EQ(diags.size(), 1u) << Dump(diags);   // `hosts` is read by `counted`
  EXPECT_TRUE(diags[0].warning());
  EXPECT_EQ(diags[0].field, "let.forgotten");
  EXPECT_EQ(diags[0].pos.line, 12);
  EXPECT_THAT(diags[0].message, HasSubstr("let 'forgotten' is not used by rule 'many'"));
}

TEST(LintUnusedBinding, ShippedPlaybooksHaveNone) {
  LoadResult result;
  LoadLibraryDir(DIAGNOSE_SOURCE_DIR, &result);
  ASSERT_TRUE(result.ok()) << result.AsJson().dump(2);
  EXPECT_TRUE(WithCode(result, LoadCode::kUnusedBinding).empty()) << Dump(WithCode(result, LoadCode::kUnusedBinding));
}

// A description stands in for a finding that did not fire: its placeholders may read only what
// is known before anything is asked, so it always renders.
TEST(LintDescription, PlaceholdersReadParamsThresholdsAndWindowsNotRuleResults) {
  auto load = [](const std::string& description) {
    Loader loader;
    loader.LoadPlaybookText(R"yaml(playbook: p
description: d
triggers:
  - failure_class: [oom-host]
params:
  margin_c: {type: number, default: 5}
rules:
  - id: hot
    description: ")yaml" + description + R"yaml("
    query: 'max by (host) (hw_gpu_temperature_celsius)'
    finding:
      when: "count(hot.values > 100) > 0"
      summary: "hot GPUs on {{ keys(hot.values > 100) }}"
)yaml",
                            "pb.yaml");
    return loader.result();
  };
  EXPECT_TRUE(load("hosts {{ params.margin_c }} C above the peer median").ok());
  const LoadResult reads_a_result = load("hosts {{ keys(hot.values) }} above the peer median");
  EXPECT_FALSE(reads_a_result.ok());
  ASSERT_FALSE(reads_a_result.diagnostics().empty());
  EXPECT_EQ(reads_a_result.diagnostics()[0].field, "description") << Dump(reads_a_result.diagnostics());
}

}  // namespace
}  // namespace diagnose::playbook
