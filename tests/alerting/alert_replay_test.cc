// Replaying the alerts: Prometheus's `for:` on a range answer, and the whole path on the recorded
// fixtures through `diagnose rules replay` (a real private Prometheus).
#include "engine/alerting/alert_replay.h"

#include <algorithm>
#include <chrono>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/subprocess.h"

namespace diagnose::alerting {
namespace {

Series Present(const std::string& host, std::vector<double> times) {
  Series s;
  s.labels = {{"__name__", "x"}, {"host", host}};
  for (double t : times) s.samples.push_back({t, 1});
  return s;
}

TEST(ApplyFor, FiresOnceTheExpressionHeldForTheWholeFor) {
  // Present 0..300 every 30 s: pending at 0, firing at 120 with for: 120s.
  std::vector<double> t;
  for (double x = 0; x <= 300; x += 30) t.push_back(x);
  auto firings = ApplyFor("A", {Present("h1", t)}, 30, 120);
  ASSERT_EQ(firings.size(), 1u);
  EXPECT_EQ(firings[0].pending_since, 0);
  EXPECT_EQ(firings[0].fired_at, 120);
  EXPECT_EQ(firings[0].resolved_at, 300);
  EXPECT_EQ(firings[0].labels.count("__name__"), 0u);
  EXPECT_EQ(firings[0].labels.at("host"), "h1");
}

TEST(ApplyFor, AGapStartsPendingOver) {
  // 0..90, gap, 150..240: neither run lasts 120 s.
  auto firings = ApplyFor("A", {Present("h1", {0, 30, 60, 90, 150, 180, 210, 240})}, 30, 120);
  EXPECT_TRUE(firings.empty());
  // With for: 90s both runs fire, each from its own start.
  firings = ApplyFor("A", {Present("h1", {0, 30, 60, 90, 150, 180, 210, 240})}, 30, 90);
  ASSERT_EQ(firings.size(), 2u);
  EXPECT_EQ(firings[0].fired_at, 90);
  EXPECT_EQ(firings[1].fired_at, 240);
}

TEST(ApplyFor, ForZeroFiresAtTheFirstEvaluation) {
  auto firings = ApplyFor("A", {Present("h1", {60}), Present("h2", {})}, 30, 0);
  ASSERT_EQ(firings.size(), 1u);
  EXPECT_EQ(firings[0].fired_at, 60);
}

nlohmann::json ReplayFixture(const std::string& job) {
  auto run = RunCommand({DIAGNOSE_BINARY, "rules", "replay", job, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"},
                        std::chrono::seconds(120));
  EXPECT_TRUE(run.ok());
  if (!run.ok()) return {};
  EXPECT_EQ(run->exit_code, 0) << run->output;
  return nlohmann::json::parse(run->output.substr(run->output.find('{')), nullptr, false);
}

// 8308: the RDMA alert fires on exactly the four hosts diagnose excludes, before the job ends.
TEST(RulesReplay, TheRdmaAlertFiresOn8308sFourBadHostsAndNothingElse) {
  auto j = ReplayFixture("8308");
  ASSERT_TRUE(j.is_object());
  std::set<std::string> hosts;
  for (const auto& f : j["firings"]) {
    EXPECT_EQ(f["alert"], "DiagnoseRdmaLinkDegraded");
    EXPECT_GT(f["lead_seconds"].get<double>(), 0);
    hosts.insert(f["labels"]["host"].get<std::string>());
  }
  EXPECT_EQ(hosts, (std::set<std::string>{"chi2822", "chi2834", "chi2835", "chi2882"}));
  EXPECT_FALSE(j["queries"].empty());   // the evidence: every expression with its window
}

TEST(RulesReplay, HealthyAndDecoyJobsRaiseNoAlert) {
  for (const char* job : {"8309", "7938"}) {
    auto j = ReplayFixture(job);
    ASSERT_TRUE(j.is_object());
    EXPECT_TRUE(j["firings"].empty()) << job << ": " << j["firings"].dump();
  }
}

}  // namespace
}  // namespace diagnose::alerting

namespace diagnose::alerting {
namespace {

// An endpoint that is not there is the tool's failure: a non-zero exit and one line naming it.
TEST(WatchAlerts, AnUnreachableEndpointIsOneLineAndANonZeroExit) {
  auto started = std::chrono::steady_clock::now();
  auto run = RunCommand({DIAGNOSE_BINARY, "watch", DIAGNOSE_FIXTURE_OUTPUTS, "--alerts", "--prometheus",
                         "http://127.0.0.1:9", "--once"},
                        std::chrono::seconds(60));
  ASSERT_TRUE(run.ok());
  EXPECT_NE(run->exit_code, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_NE(run->output.find("cannot reach http://127.0.0.1:9"), std::string::npos) << run->output;
  size_t lines = std::count(run->output.begin(), run->output.end(), '\n');
  EXPECT_LE(lines, 2u) << run->output;   // the polling banner, then the error
}

TEST(WatchAlerts, WithoutAnEndpointItIsAUsageError) {
  auto run = RunCommand({DIAGNOSE_BINARY, "watch", DIAGNOSE_FIXTURE_OUTPUTS, "--alerts", "--once"}, std::chrono::seconds(60));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 2);
}

}  // namespace
}  // namespace diagnose::alerting
