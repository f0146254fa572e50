// `diagnose JOB --prometheus URL` against a plain Prometheus serving the job's own TSDB (a live
// job's server, or a store holding more than the job). There is no block metadata to bound the job
// there: the time range comes from its log (artifact id, JOB SUMMARY wall time, the log's last
// write), or from --window, and the decision must equal the private copy's.
//
// The installed Prometheus 2.42 also says what it is (/api/v1/status/buildinfo): the engine then
// computes answers from the answers to their parts there as on the private server, and the report
// is the one every question asked as written gives (--ask-as-written). Composed, the parts are asked
// once each: more requests for 8308 (94 against 78) but a third fewer samples read. A real
// VictoriaMetrics is not taken for Prometheus.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/tsdb/http_query_client.h"
#include "tests/pipeline/victoria_metrics_support.h"
#include "tests/support/fixture_reports.h"
#include "tests/support/tls_prometheus.h"

namespace diagnose::e2e {
namespace {

using nlohmann::json;

// The report without what differs from run to run (wall-clock times, request counts).
json WithoutTimings(json report) {
  if (report.is_object()) {
    report.erase("timings");
    report.erase("elapsed_seconds");
    for (auto& [key, value] : report.items()) value = WithoutTimings(std::move(value));
  } else if (report.is_array()) {
    for (auto& value : report) value = WithoutTimings(std::move(value));
  }
  return report;
}

class RemoteWindow : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string missing = testing::TlsToolsMissing(); !missing.empty()) GTEST_SKIP() << missing;
    auto bed = testing::TlsTestBed::Create();
    ASSERT_TRUE(bed.ok()) << bed.status().ToString();
    bed_ = std::move(bed).value();
  }
  // A plain-HTTP Prometheus (basic auth) serving a copy of the job's TSDB; returns its URL.
  std::string Serve(const std::string& id) {
    auto url = bed_->StartServer("", FixtureJobDir(id) + "/prometheus");
    EXPECT_TRUE(url.ok()) << url.status().ToString();
    return url.ok() ? *url : "";
  }
  CliRun Remote(const std::string& id, const std::string& url, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json", "--prometheus",
                                  url, "--header", "Authorization: " + bed_->authorization()};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunDiagnoseCli(args);
  }
  std::unique_ptr<testing::TlsTestBed> bed_;
};

TEST_F(RemoteWindow, IncidentsDecideAsThePrivateCopy) {
  // 8308 and 7938 have no crash line: their window comes from the wall time and the log's mtime.
  for (const std::string id : {"8308", "7938", "8309", "7877", "8400"}) {
    SCOPED_TRACE(id);
    REQUIRE_FIXTURE(id);
    const json private_run = DiagnoseFixtureJson({id});
    const CliRun run = Remote(id, Serve(id));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json report = json::parse(run.out, nullptr, false);
    ASSERT_TRUE(report.is_object()) << run.out.substr(0, 300);
    EXPECT_EQ(report["tsdb"][0]["state"], "remote");
    EXPECT_NE(report["tsdb"][0].value("window", "").find("the job's run from its log"), std::string::npos)
        << Dump(report["tsdb"][0]);
    EXPECT_EQ(report["verdict"]["root_cause"], private_run["verdict"]["root_cause"]);
    EXPECT_EQ(report["decision"]["action"], private_run["decision"]["action"]);
    EXPECT_EQ(ExcludedHosts(report), ExcludedHosts(private_run));
  }
}

TEST_F(RemoteWindow, AWindowAwayFromTheJobFindsNoMetricsAndExcludesNobody) {
  REQUIRE_FIXTURE("8308");
  const CliRun run = Remote("8308", Serve("8308"), {"--window", "2020-01-01T00:00Z..2020-01-01T06:00Z"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json report = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << run.out.substr(0, 300);
  EXPECT_EQ(report["tsdb"][0].value("window", "").rfind("--window 2020-01-01T00:00:00Z..", 0), 0u)
      << Dump(report["tsdb"][0]);
  EXPECT_NE(Dump(report["tsdb"][0]["gaps"]).find("no heartbeat series in the search window"), std::string::npos)
      << Dump(report["tsdb"][0]);
  EXPECT_TRUE(ExcludedHosts(report).empty()) << Dump(report["decision"]);
}

TEST_F(RemoteWindow, AnIdentifiedPrometheusGivesTheReportOfEveryQuestionAskedAsWritten) {
  // 8308: 24 nodes, the bench's job; 8309: a fault the playbooks fire on.
  for (const std::string id : {"8308", "8309"}) {
    SCOPED_TRACE(id);
    REQUIRE_FIXTURE(id);
    const std::string url = Serve(id);
    const CliRun composed = Remote(id, url, {"-v"});
    const CliRun as_written = Remote(id, url, {"-v", "--ask-as-written"});
    ASSERT_EQ(composed.exit_code, 0) << composed.err;
    ASSERT_EQ(as_written.exit_code, 0) << as_written.err;
    EXPECT_NE(composed.err.find("the engine computes answers from the answers to their parts on " + url +
                                ": it is Prometheus 2.42."),
              std::string::npos)
        << composed.err;
    EXPECT_NE(as_written.err.find("every question is sent to " + url + " as written: --ask-as-written"),
              std::string::npos)
        << as_written.err;
    const json a = json::parse(composed.out, nullptr, false), b = json::parse(as_written.out, nullptr, false);
    ASSERT_TRUE(a.is_object() && b.is_object()) << composed.out.substr(0, 300) << as_written.out.substr(0, 300);
    EXPECT_EQ(WithoutTimings(a), WithoutTimings(b)) << "composed:\n" << Dump(a) << "\nas written:\n" << Dump(b);
    EXPECT_GT(a["timings"].value("playbook_answers_derived", 0), 0) << Dump(a["timings"]);
    EXPECT_EQ(b["timings"].value("playbook_answers_derived", -1), 0) << Dump(b["timings"]);
  }
}

TEST(RemoteVictoriaMetrics, IsAskedEveryQuestionAsWritten) {
  std::string why;
  auto vm = VictoriaMetrics::Start(&why);
  if (!vm) GTEST_SKIP() << why;
  RemoteEndpointOptions options;
  options.url = vm->url();
  options.identify_prometheus = true;
  auto client = HttpQueryClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_FALSE((*client)->EvaluatesPromql());
  EXPECT_NE((*client)->composition_note().find("as written: it is not Prometheus"), std::string::npos)
      << (*client)->composition_note();
}

TEST(RemoteWindowUsage, ABadWindowIsOneLineAndExitTwo) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--prometheus", "http://127.0.0.1:9", "--window", "today"},
           {"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--window", "2026-02-19T05:00Z..2026-02-19T11:00Z"}}) {
    const CliRun run = RunDiagnoseCli(args);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_EQ(run.out, "");
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_NE(run.err.find("--window"), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace diagnose::e2e
