// The fleet store for real: a VictoriaMetrics (Debian's victoria-metrics) on a loopback port in a
// temp dir, fixture jobs imported with `diagnose fleet import`, each diagnosed again through the
// store with --job-label, and `diagnose fleet nodes` reading the hosts' records across jobs.

#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/subprocess.h"
#include "engine/job/job_location.h"
#include "tests/support/fixture_reports.h"
#include "tests/pipeline/victoria_metrics_support.h"

namespace diagnose::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The newest of the records, far after every fixture job, and a `--since` before the first.
constexpr const char* kNow = "1798761600";     // 2027-01-01
constexpr const char* kSince = "2026-01-01";

json ImportJson(const std::string& url, const std::vector<std::string>& jobs, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"fleet", "import", DIAGNOSE_FIXTURE_OUTPUTS, "--vm", url, "--format", "json"};
  for (const auto& j : jobs) {
    args.push_back("--job");
    args.push_back(j);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  const CliRun run = RunDiagnoseCli(args);
  EXPECT_EQ(run.exit_code, 0) << run.err << run.out.substr(0, 2000);
  json j = json::parse(run.out, nullptr, false);
  if (!j.is_object()) {
    ADD_FAILURE() << "not a JSON object: " << run.out.substr(0, 300) << run.err;
    return json{{"jobs", json::array()}};
  }
  return j;
}

std::set<std::string> Strings(const json& array) {
  std::set<std::string> out;
  if (array.is_array())
    for (const auto& v : array) out.insert(v.get<std::string>());
  return out;
}

// Through the store: the same root cause, action and exclusions as the private copy decided when
// the job was imported (the import diagnoses each job on its own snapshot).
void ExpectSameVerdictThroughTheStore(const std::string& url, const json& imported) {
  const std::string id = imported["job"];
  SCOPED_TRACE("job " + id);
  const CliRun run = RunDiagnoseCli({id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json", "--prometheus",
                                     url, "--job-label", "slurm_job_id"});
  ASSERT_TRUE(run.exit_code == 0 || run.exit_code == kIncompleteExit) << run.err;
  const json report = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << run.out.substr(0, 300);
  EXPECT_EQ(report["tsdb"][0]["state"], "remote") << Dump(report["tsdb"]);
  EXPECT_EQ(report["tsdb"][0].value("scope", ""), "slurm_job_id=\"" + id + "\"") << Dump(report["tsdb"]);
  EXPECT_EQ(report["verdict"]["root_cause"], imported["root_cause"]);
  EXPECT_EQ(report["decision"]["action"], imported["action"]);
  EXPECT_EQ(ExcludedHosts(report), Strings(imported["excluded"]));
}

class FleetStore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { vm_ = VictoriaMetrics::Start(&why_).release(); }
  static void TearDownTestSuite() {
    delete vm_;
    vm_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(vm_, nullptr) << why_; }
  static VictoriaMetrics* vm_;
  static std::string why_;
};
VictoriaMetrics* FleetStore::vm_ = nullptr;
std::string FleetStore::why_;

TEST_F(FleetStore, ImportIsIdempotentAndEveryJobDecidesAsItsPrivateCopy) {
  // A pool of three jobs sharing hosts, a published incident and a failed job on other hosts
  // (the heavier incidents are in the every-fixture test, which the sanitized tree skips).
  const std::vector<std::string> jobs{"9201", "9202", "9203", "8043", "9128"};
  for (const auto& id : jobs) REQUIRE_FIXTURE(id);
  const json first = ImportJson(vm_->url(), jobs);
  ASSERT_EQ(first["jobs"].size(), jobs.size());
  for (const auto& job : first["jobs"]) {
    SCOPED_TRACE(Dump(job));
    EXPECT_EQ(job["outcome"], "imported");
    EXPECT_GT(job["samples"].get<int64_t>(), 1000);
    EXPECT_EQ(job["stored_samples"], job["samples"]);   // counted back from the store
  }
  // A second import finds every job complete and writes no sample.
  const json again = ImportJson(vm_->url(), jobs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i]);
    EXPECT_EQ(again["jobs"][i]["outcome"], "already-present");
    EXPECT_EQ(again["jobs"][i]["stored_samples"], first["jobs"][i]["samples"]);
  }
  // --force replaces one job: the store then holds its samples once, not twice.
  const json forced = ImportJson(vm_->url(), {"9203"}, {"--force"});
  EXPECT_EQ(forced["jobs"][0]["outcome"], "replaced");
  EXPECT_EQ(forced["jobs"][0]["stored_samples"], first["jobs"][2]["samples"]);

  for (const auto& job : first["jobs"]) ExpectSameVerdictThroughTheStore(vm_->url(), job);

  // Diagnosed through the store, a job's decision cites the earlier jobs' record of its hosts:
  // 9202 (thermal) excludes fl-c05, which 9201 (RDMA) excluded the day before; the healthy 9203
  // keeps it, after two exclusions; nothing is said about the pool's healthy hosts.
  auto notes_of = [&](const std::string& id) {
    const CliRun run = RunDiagnoseCli({id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json",
                                       "--prometheus", vm_->url(), "--job-label", "slurm_job_id"});
    const json report = json::parse(run.out, nullptr, false);
    std::string fleet;
    if (report.is_object())
      for (const auto& n : report["decision"]["notes"])
        if (n.get<std::string>().rfind("fleet record: ", 0) == 0) fleet += n.get<std::string>() + "\n";
    return fleet;
  };
  const std::string on_9202 = notes_of("9202");
  EXPECT_NE(on_9202.find("fl-c05 was also excluded in 1 earlier job(s)"), std::string::npos) << on_9202;
  EXPECT_NE(on_9202.find("9201 (rdma-link-degradation)"), std::string::npos) << on_9202;
  const std::string on_9203 = notes_of("9203");
  EXPECT_NE(on_9203.find("fl-c05 is not excluded by this job's evidence but was excluded in 2 earlier job(s)"),
            std::string::npos)
      << on_9203;
  EXPECT_EQ(std::count(on_9203.begin(), on_9203.end(), '\n'), 1) << on_9203;
  EXPECT_EQ(notes_of("9201"), "");   // the first job of the pool has no earlier record

  // The pool's record: fl-c05 was excluded in two of its three jobs, for two different faults.
  const CliRun nodes = RunDiagnoseCli({"fleet", "nodes", "--prometheus", vm_->url(), "--since", kSince, "--now", kNow,
                                       "--format", "json"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  const json table = json::parse(nodes.out, nullptr, false);
  ASSERT_TRUE(table.is_object()) << nodes.out.substr(0, 300);
  EXPECT_EQ(table["jobs"], jobs.size());
  EXPECT_EQ(Strings(table["repeat_offenders"]), std::set<std::string>{"fl-c05"});
  // No healthy host of the pool is excluded anywhere: its decoys (background retransmits, a TCP
  // storm, correctable RAS errors) stay decoys across jobs.
  std::set<std::string> excluded_in_pool;
  for (const auto& h : table["hosts"]) {
    const std::string host = h["host"];
    if (host.rfind("fl-c", 0) == 0 && h["excluded"].get<int>() > 0) excluded_in_pool.insert(host);
    if (host == "fl-c05") {
      EXPECT_EQ(h["jobs"], 3);
      EXPECT_EQ(h["excluded"], 2);
      std::set<std::string> excluded_in;
      for (const auto& r : h["records"]) {
        if (r["state"] != "excluded") continue;
        excluded_in.insert(r["job"].get<std::string>());
        EXPECT_FALSE(r["reason"].get<std::string>().empty()) << Dump(r);   // with its evidence
      }
      EXPECT_EQ(excluded_in, (std::set<std::string>{"9201", "9202"}));
    }
  }
  EXPECT_EQ(excluded_in_pool, std::set<std::string>{"fl-c05"});

  const CliRun text = RunDiagnoseCli({"fleet", "nodes", "--prometheus", vm_->url(), "--since", kSince, "--now", kNow,
                                      "--format", "text"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Excluded in 2 or more jobs"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("fl-c05"), std::string::npos) << text.out;
}

TEST_F(FleetStore, NodesWithoutRecordsOrAWindowBeforeTheJobsSayWhatIsMissing) {
  const CliRun run = RunDiagnoseCli({"fleet", "nodes", "--prometheus", vm_->url(), "--since", "2020-01-01",
                                     "--now", "1580515200"});   // 2020-02-01: before every fixture
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("diagnose fleet import"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST(FleetImportUsage, APrometheusIsNotAFleetStoreAndAnUnreachableOneIsNamed) {
  const CliRun run = RunDiagnoseCli({"fleet", "import", DIAGNOSE_FIXTURE_OUTPUTS, "--job", "9203", "--vm",
                                     "http://127.0.0.1:9"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("127.0.0.1:9"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  const CliRun no_store = RunDiagnoseCli({"fleet", "import", DIAGNOSE_FIXTURE_OUTPUTS});
  EXPECT_EQ(no_store.exit_code, 2);   // a usage error: --vm is required
  EXPECT_NE(no_store.err.find("--vm"), std::string::npos) << no_store.err;
}

// Every fixture job with a TSDB through the store, in shards so that each stays well inside a third
// of the per-test time limit and two run at once (main tree only: each job is diagnosed twice).
constexpr int kFleetShards = 8;

class FleetStoreEveryFixture : public FleetStore, public ::testing::WithParamInterface<int> {};

TEST_P(FleetStoreEveryFixture, DecidesAsItsPrivateCopy) {
  auto listed = ListJobs(DIAGNOSE_FIXTURE_OUTPUTS);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<std::string> all, jobs;
  for (const auto& job : *listed)
    if (job.prometheus_dir) all.push_back(job.id);
  ASSERT_GE(all.size(), 50u);
  for (size_t i = GetParam(); i < all.size(); i += kFleetShards) jobs.push_back(all[i]);
  // A few jobs per command, so no one command nears the CLI runner's time limit.
  json results = json::array();
  for (size_t i = 0; i < jobs.size(); i += 3) {
    const std::vector<std::string> batch(jobs.begin() + i, jobs.begin() + std::min(i + 3, jobs.size()));
    const json imported = ImportJson(vm_->url(), batch);
    for (const auto& job : imported["jobs"]) results.push_back(job);
  }
  ASSERT_EQ(results.size(), jobs.size());
  for (const auto& job : results) {
    // record-only: a TSDB dir that holds nothing (the job's verdict rests on its logs either way).
    if (job["outcome"] != "imported" && job["outcome"] != "record-only") {
      ADD_FAILURE() << Dump(job);
      continue;
    }
    ExpectSameVerdictThroughTheStore(vm_->url(), job);
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, FleetStoreEveryFixture, ::testing::Range(0, kFleetShards));

}  // namespace
}  // namespace diagnose::e2e
