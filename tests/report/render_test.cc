#include "engine/report/render.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <sstream>

#include "engine/report/first_screen.h"
#include "engine/report/job_facts.h"

namespace diagnose {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

Report SampleReport() {
  Report r;
  JobEntry j;
  j.id = "9101";
  j.dir = "outputs/9101-JAX-x";
  j.status = JobStatus::kFailed;
  j.failure_class = "oom-gpu";
  j.hosts = {"gpu400", "gpu401"};
  j.first_step = 0;
  j.last_step = 20;
  j.total_steps = 400;
  r.jobs.push_back(j);
  r.verdict = {"gpu-oom", "gpu", Confidence::kConfirmed, "GPU memory exhausted on task 1 <script>alert(1)</script>."};
  Finding f;
  f.id = "log-triage/oom-gpu";
  f.playbook = "log-triage";
  f.status = FindingStatus::kFired;
  f.hosts = {"gpu401"};
  f.evidence.push_back({EvidenceKind::kLog, "9101-JAX-x.log:812", std::nullopt, nullptr,
                        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 221.71GiB & <more>"});
  r.findings.push_back(f);
  r.decision.action = DecisionAction::kNoRetry;
  r.decision.notes = {"never retry an OOM at the same batch size"};
  JobFacts facts;
  facts.id = "9101";
  facts.tgs.pattern = "phased";
  facts.tgs.phases = {{0, 96, 3293.0, 10.0}, {97, 216, 2620.0, 9.0}};
  facts.progress.step_time_seconds = 30.0;
  facts.progress.sum_step_seconds = 630;
  facts.heartbeat.present = true;
  facts.heartbeat.accused_tasks = {8, 10};
  facts.heartbeat.accused_hosts = {"gpu408", "gpu410"};
  r.facts["9101"] = facts;
  return r;
}

TEST(RenderTest, TextFirstScreenShowsStatusVerdictDecisionAndStrongestEvidence) {
  std::string t = RenderText(SampleReport());
  for (const char* want : {"failed", "oom-gpu", "0-96 3293", "97-216 2620", "gpu-oom", "no-retry", "WHY",
                           "9101-JAX-x.log:812", "221.71GiB", "gpu408", "1 fired, 0 clear", "--verbose"})
    EXPECT_NE(t.find(want), std::string::npos) << want << "\n" << t;
  EXPECT_EQ(t.find("\x1b["), std::string::npos);
  EXPECT_NE(RenderText(SampleReport(), {.color = true}).find("\x1b[1m"), std::string::npos);
  // --verbose adds the full listing (the phase table) after the first screen.
  std::string v = RenderText(SampleReport(), {.verbose = true});
  EXPECT_EQ(v.rfind(t.substr(0, t.find("Every check")), 0), 0u);
  EXPECT_NE(v.find("mean TGS"), std::string::npos) << v;
}

TEST(RenderTest, FirstScreenStaysWithinFortyLinesWhateverTheReportHolds) {
  Report r = SampleReport();
  for (int i = 0; i < 60; ++i) {
    Finding f;
    f.id = "pb/rule" + std::to_string(i);
    f.status = i % 2 ? FindingStatus::kFired : FindingStatus::kClear;
    f.summary = std::string(300, 'x');
    r.findings.push_back(f);
    r.decision.notes.push_back("note " + std::to_string(i));
  }
  r.decision.exclude = {{"gpu401", 2, "reason"}, {"gpu402", 2, "reason"}};
  std::string t = RenderText(r);
  EXPECT_LE(std::count(t.begin(), t.end(), '\n'), 40) << t;
  EXPECT_NE(t.find("exclude gpu401 (priority 2)"), std::string::npos);
  EXPECT_NE(t.find("more fired"), std::string::npos);
  EXPECT_NE(t.find("31 fired, 30 clear"), std::string::npos) << t;
  for (const auto& line : Lines(t)) EXPECT_LE(line.size(), 420u) << line;
}

TEST(RenderTest, TimesPrintAsIsoUtcWithTheLogStamp) {
  Report r = SampleReport();
  JobFacts facts = r.facts.at("9101");
  facts.heartbeat.crash_time = LogTime{1771960860, "0224 19:21:00.000000", "artifact-id"};
  r.facts["9101"] = facts;
  std::string t = RenderText(r);
  EXPECT_NE(t.find("2026-02-24T19:21:00Z (log 0224 19:21:00.000000)"), std::string::npos) << t;
  EXPECT_EQ(nlohmann::json(facts)["heartbeat"]["crash_time"]["iso"], "2026-02-24T19:21:00Z");
}

TEST(RenderTest, MarkdownHasExclusionTableAndNoEvidenceDump) {
  Report r = SampleReport();
  r.decision.exclude = {{"gpu401", 2, "sustained | retransmits"}};
  std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("| exclude | priority | reason |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `gpu401` | 2 | sustained \\| retransmits |"), std::string::npos) << md;
  EXPECT_NE(md.find("**What to do:** `no-retry`"), std::string::npos);
  EXPECT_EQ(md.find("<script>"), std::string::npos);
  EXPECT_EQ(md.find("| steps | mean TGS | stddev |"), std::string::npos);   // only with --verbose
  EXPECT_NE(RenderMarkdown(r, {.verbose = true}).find("| steps | mean TGS | stddev |"), std::string::npos);
}

TEST(RenderTest, HtmlIsSelfContainedAndEscaped) {
  std::string h = RenderHtml(SampleReport());
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(h.find("</html>"), std::string::npos);
  EXPECT_NE(h.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_NE(h.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(h.find("&amp; &lt;more&gt;"), std::string::npos);
  EXPECT_EQ(h.find("http://example"), std::string::npos);
  EXPECT_EQ(h.find("src="), std::string::npos);
  EXPECT_EQ(h.find("href="), std::string::npos);   // no endpoint outlives a private snapshot server
}

// An endpoint's error text (the reason a TSDB failed) may carry terminal escapes: the HTML report
// shows none, as the text and Markdown reports show none.
TEST(RenderTest, HtmlCarriesNoTerminalEscape) {
  Report r = SampleReport();
  TsdbState failed;
  failed.state = TsdbAvailability::kFailed;
  failed.reason = "HTTP 400 bad_data: parse error at char 1: \x1b[31mred\x07\x7f";
  r.tsdb.push_back(failed);
  r.incomplete = "diagnosis incomplete: " + failed.reason;
  r.not_evaluated.push_back("network-health/rdma_ports: skipped: " + failed.reason);
  for (const char* format : {"html", "md", "text"})
    for (const bool verbose : {false, true}) {
      RenderOptions options;
      options.verbose = verbose;
      auto rendered = RenderReport(r, format, options);
      ASSERT_TRUE(rendered.ok()) << format;
      for (char control : {'\x1b', '\x07', '\x7f'})
        EXPECT_EQ(rendered->find(control), std::string::npos) << format << (verbose ? " --verbose" : "")
                                                               << " carries control " << int(control);
    }
  EXPECT_EQ(HtmlEscape("a\x1b[31m<b>\tc\n"), "a?[31m&lt;b&gt;\tc\n");
}

// Host label values come from an endpoint or the job's TSDB (adversarial test 17, defects 02): an
// OSC title, a clear screen, a C1 CSI and a newline forging "exclude chi9999" reached the text and
// Markdown reports raw through the exclusions and the WHY evidence line.
TEST(RenderTest, HostileHostLabelsAreWrittenVisiblyInTextAndMarkdown) {
  const std::string hostile = "chi2815\x1b]0;owned\x07\x1b[2J\xc2\x9b" "31m\nexclude chi9999 (priority 1): forged";
  Report r = SampleReport();
  r.decision.action = DecisionAction::kRetryExcludingNodes;
  r.decision.exclude = {{hostile, 1, "rdma retries\r\nexclude chi9998 (priority 1): forged"}};
  Finding f;
  f.id = "network-health/rdma-retry-exhaustion";
  f.status = FindingStatus::kFired;
  f.hosts = {hostile};
  Evidence e{EvidenceKind::kPromql, "rate(x[5m])", TimeWindow{1771480200, 1771495669}, nlohmann::json::object(), ""};
  e.value[hostile] = 2;
  f.evidence.push_back(e);
  r.findings.push_back(f);
  r.verdict.finding = f.id;
  for (const char* format : {"md", "text"})
    for (const bool verbose : {false, true}) {
      auto rendered = RenderReport(r, format, {.verbose = verbose});
      ASSERT_TRUE(rendered.ok()) << format;
      const std::string where = std::string(format) + (verbose ? " --verbose" : "");
      for (char control : {'\x1b', '\x07', '\r'})
        EXPECT_EQ(rendered->find(control), std::string::npos) << where << " carries control " << int(control);
      EXPECT_EQ(rendered->find("\xc2\x9b"), std::string::npos) << where << " carries the C1 CSI";
      for (const auto& line : Lines(*rendered)) {
        const size_t text = line.find_first_not_of(" -|`");
        EXPECT_NE(line.compare(text == std::string::npos ? line.size() : text, 14, "exclude chi999"), 0)
            << where << " forged a line: " << line;
      }
      EXPECT_NE(rendered->find("chi2815\\x1b]0;owned\\x07\\x1b[2J\\u009b31m\\nexclude chi9999"), std::string::npos)
          << where << ":\n" << *rendered;
    }
}

TEST(RenderTest, HtmlDrawsBlamedHostsOverABandOfTheRestWithPhasesAndGraphLinks) {
  Report r = SampleReport();
  r.step_times["9101"] = {{0, 1000.0}, {216, 1000.0 + 216 * 30}};
  JobFacts facts = r.facts.at("9101");
  for (int s = 0; s <= 216; ++s) facts.steps.push_back({.step = s, .seconds = 30, .tokens_per_sec_per_device = s < 97 ? 3293.0 : 2620.0});
  r.facts["9101"] = facts;
  auto series = std::make_shared<nlohmann::json>(nlohmann::json::object());
  for (int h = 0; h < 20; ++h) {
    nlohmann::json pts = nlohmann::json::array();
    for (int t = 0; t < 50; ++t) pts.push_back({1000.0 + t * 130, h == 3 && t > 20 ? 900.0 : 0.1 * h});
    (*series)["gpu4" + std::to_string(10 + h) + "/ionic_0"] = pts;
  }
  Finding f;
  f.id = "rdma/bad_hosts";
  f.status = FindingStatus::kFired;
  f.hosts = {"gpu413"};
  Evidence e{EvidenceKind::kPromql, "sum by (host, device) (rate(x_total[2m]))", TimeWindow{1000, 7500}, nlohmann::json{{"gpu413/ionic_0", 900}}, "retransmits"};
  e.series = series;
  f.evidence.push_back(e);
  r.findings.push_back(f);
  r.graph_endpoint = "http://prom.example:9090/";
  std::string h = RenderHtml(r);
  EXPECT_NE(h.find("data-chart=\"tgs\""), std::string::npos);
  EXPECT_NE(h.find("class=\"series blamed\" data-host=\"gpu413\""), std::string::npos) << h.substr(0, 2000);
  EXPECT_NE(h.find("class=\"band\""), std::string::npos);
  EXPECT_NE(h.find("class=\"phase degraded\""), std::string::npos);
  EXPECT_NE(h.find("data-chart=\"heatmap\""), std::string::npos);   // 20 hosts
  EXPECT_NE(h.find("data-blamed-host=\"gpu413\""), std::string::npos);
  EXPECT_NE(h.find("<pre class=\"promql\">sum by (host, device) (rate(x_total[2m]))</pre>"), std::string::npos);
  EXPECT_NE(h.find("href=\"http://prom.example:9090/graph?g0.expr=sum%20by%20%28host%2C%20device%29"), std::string::npos);
}

// A per-host family that is zero on every host (no I/O pressure anywhere) has nothing to shade: the
// heatmap goes to the next family that moved.
TEST(RenderTest, HeatmapSkipsAFamilyThatIsZeroEverywhere) {
  Report r = SampleReport();
  Finding f;
  f.id = "moe/shift";
  f.status = FindingStatus::kFired;
  for (const char* what : {"io pressure", "memory"}) {
    auto series = std::make_shared<nlohmann::json>(nlohmann::json::object());
    for (int h = 0; h < 20; ++h) {
      nlohmann::json pts = nlohmann::json::array();
      for (int t = 0; t < 50; ++t) pts.push_back({1000.0 + t * 130, std::string(what) == "memory" ? 0.05 + 0.001 * h : 0.0});
      (*series)["host" + std::to_string(10 + h)] = pts;
    }
    Evidence e{EvidenceKind::kPromql, std::string("max by (host) (") + what + ")", TimeWindow{1000, 7500}, nlohmann::json{}, what};
    e.series = series;
    f.evidence.push_back(e);
  }
  r.findings.push_back(f);
  const std::string h = RenderHtml(r);
  EXPECT_NE(h.find("aria-label=\"per host: memory\""), std::string::npos) << h.substr(0, 1500);
  EXPECT_NE(h.find("class=\"cell\""), std::string::npos);
}

// A finding's onset on a steady TGS line is no place where throughput left its healthy level.
TEST(RenderTest, TgsChartDrawsTheOnsetOnlyWhereTheFactsFoundADropOrDip) {
  Report r = SampleReport();
  r.step_times["9101"] = {{0, 1000.0}, {71, 1000.0 + 71 * 30}};
  JobFacts facts = r.facts.at("9101");
  facts.tgs.pattern = "stable";
  facts.tgs.phases = {{0, 71, 3242.0, 3.0}};
  for (int s = 1; s <= 71; ++s) facts.steps.push_back({.step = s, .seconds = 30, .tokens_per_sec_per_device = 3242.0});
  r.facts["9101"] = facts;
  r.verdict.finding = "log-triage/oom-gpu";
  r.findings[0].onset = 1000.0 + 42 * 30;
  std::string stable = RenderHtml(r);
  const size_t tgs_chart = stable.find("data-chart=\"tgs\"");
  ASSERT_NE(tgs_chart, std::string::npos);
  const std::string tgs_figure = stable.substr(tgs_chart, stable.find("</figure>", tgs_chart) - tgs_chart);
  EXPECT_EQ(tgs_figure.find("class=\"onset\""), std::string::npos) << tgs_figure;
  EXPECT_EQ(tgs_figure.find("red dashed"), std::string::npos);
  facts.tgs.dips = {{.first_step = 40, .last_step = 60, .mean_tgs = 2800, .depth_pct = 13.6, .steps = 21}};
  r.facts["9101"] = facts;
  std::string dipped = RenderHtml(r);
  EXPECT_NE(dipped.find("throughput left its healthy level at step 40"), std::string::npos);
}

// Evidence values read as numbers and times, not as JSON with float noise.
TEST(RenderTest, EvidenceValuesAreFormattedNumbersAndTimes) {
  const nlohmann::json value{{"recovery_tgs", 3291.7780000000002}, {"burst_end_time", 1771960860.25}, {"ratio", 0.123456},
                             {"steps", 2}};
  const std::string text = FormatEvidenceValue(value);
  EXPECT_NE(text.find("recovery_tgs 3,292"), std::string::npos) << text;
  EXPECT_NE(text.find("burst_end_time 2026-02-24T19:21:00"), std::string::npos) << text;
  EXPECT_NE(text.find("ratio 0.123"), std::string::npos) << text;
  EXPECT_NE(text.find("steps 2"), std::string::npos) << text;
  EXPECT_EQ(text.find("0000000"), std::string::npos) << text;
  Report r = SampleReport();
  Finding f;
  f.id = "pb/recovery";
  f.status = FindingStatus::kFired;
  f.evidence.push_back({EvidenceKind::kDerived, "recovery", std::nullopt, value, "recovery test"});
  r.findings.push_back(f);
  const std::string h = RenderHtml(r);
  EXPECT_EQ(h.find("3291.778"), std::string::npos);
  EXPECT_NE(h.find("recovery_tgs 3,292"), std::string::npos);
}

// Hosts put up for exclusion are shown by the charts that set them apart; congestion every host
// saw alike (8308's CNP chart) is not among a finding's charts when others show the contrast.
TEST(RenderTest, ChartsThatDoNotSetTheExcludedHostsApartAreLeftOut) {
  Report r = SampleReport();
  r.decision.action = DecisionAction::kRetryExcludingNodes;
  r.decision.exclude = {{"gpu413", 2, "retx"}};
  auto series_of = [](bool apart) {
    auto series = std::make_shared<nlohmann::json>(nlohmann::json::object());
    for (int h = 0; h < 20; ++h) {
      nlohmann::json pts = nlohmann::json::array();
      for (int t = 0; t < 30; ++t) pts.push_back({1000.0 + t * 60, apart && h == 3 ? 900.0 : 40.0 + (h + t) % 7});
      (*series)["gpu4" + std::to_string(10 + h)] = pts;
    }
    return series;
  };
  Finding f;
  f.id = "rdma/bad_hosts";
  f.status = FindingStatus::kFired;
  f.hosts = {"gpu413"};
  for (const auto& [name, apart] : {std::pair{"retransmits", true}, std::pair{"congestion everywhere", false},
                                    std::pair{"ack timeouts", true}}) {
    Evidence e{EvidenceKind::kPromql, std::string("rate(") + name + "[2m])", TimeWindow{1000, 2800}, nlohmann::json::object(), name};
    e.series = series_of(apart);
    f.evidence.push_back(e);
  }
  r.findings.push_back(f);
  const std::string h = RenderHtml(r);
  EXPECT_NE(h.find("aria-label=\"retransmits\""), std::string::npos);
  EXPECT_NE(h.find("aria-label=\"ack timeouts\""), std::string::npos);
  EXPECT_EQ(h.find("aria-label=\"congestion everywhere\""), std::string::npos);
}

TEST(RenderTest, FormatDispatch) {
  Report r = SampleReport();
  ASSERT_TRUE(RenderReport(r, "json").ok());
  EXPECT_NE(RenderReport(r, "json")->find("\"schema\": \"diagnose/v1\""), std::string::npos);
  auto bad = RenderReport(r, "pdf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("pdf"), std::string::npos);
}

TEST(RenderTest, EmptyReportRenders) {
  Report r;
  EXPECT_FALSE(RenderText(r).empty());
  EXPECT_FALSE(RenderHtml(r).empty());
  EXPECT_FALSE(RenderMarkdown(r).empty());
}

}  // namespace
}  // namespace diagnose
