// Replaying the alerts: Prometheus's `for:` on a range answer, and the whole path on the recorded
// fixtures through `diagnose rules replay` (a real private Prometheus).
#include "engine/alerting/alert_replay.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <cstdio>
#include <thread>
#include <iterator>
#include <fstream>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/subprocess.h"
#include "tests/support/fake_http_server.h"

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

// 9216: two hosts' drivers reload mid-job (every counter restarts from zero), one of them carrying
// lifetime retry exhaustions. max - min read that drop as 38 new exhaustions: a critical alert.
TEST(RulesReplay, ADriverReloadIsNotCounterGrowth) {
  auto j = ReplayFixture("9216");
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["firings"].empty()) << j["firings"].dump();
}

// 9217: rl-n6's driver reloads at step 20 and its link degrades from step 45; retransmits, ACK
// timeouts and retry exhaustion all start there. The reload alone must not fire the critical alert
// before the degradation does.
TEST(RulesReplay, AfterAReloadOnlyTheFaultsOwnGrowthFires) {
  auto j = ReplayFixture("9217");
  ASSERT_TRUE(j.is_object());
  double degraded_since = 0, exhausted_since = 0;
  for (const auto& f : j["firings"]) {
    EXPECT_EQ(f["labels"]["host"], "rl-n6") << f.dump();
    const double since = f["pending_since"].get<double>();
    if (f["alert"] == "DiagnoseRdmaLinkDegraded") degraded_since = since;
    if (f["alert"] == "DiagnoseRdmaRetryExhausted") exhausted_since = since;
  }
  ASSERT_GT(degraded_since, 0) << j["firings"].dump();
  ASSERT_GT(exhausted_since, 0) << j["firings"].dump();
  EXPECT_GE(exhausted_since, degraded_since) << "retry exhaustion pending before the link degraded: a reload read as growth";
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

// Issue 16's note: one failed query ended the watch. Now the watch says so, waits (1 s, 2 s, ...)
// and polls again; once the endpoint answers it says that too and goes on.
TEST(WatchAlerts, AFailedPollIsRetriedWithBackoffNotTheEndOfTheWatch) {
  // A poll is a burst of range queries (one per alert); polls are at least 1 s apart. The first two
  // polls fail, the third and later are answered.
  std::mutex mutex;
  int polls = 0;
  std::chrono::steady_clock::time_point last_range{};
  diagnose::testing::FakeHttpServer server([&](const diagnose::testing::FakeRequest& r) {
    diagnose::testing::FakeResponse response;
    if (r.target.find("query_range") == std::string::npos) {
      response.body = R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[0,"1"]}]}})";
      return response;
    }
    std::lock_guard<std::mutex> lock(mutex);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_range > std::chrono::milliseconds(700)) ++polls;
    last_range = now;
    if (polls <= 2) {
      response.status = 500;
      response.body = R"({"status":"error","errorType":"internal","error":"injected"})";
    } else {
      response.body = R"({"status":"success","data":{"resultType":"matrix","result":[]}})";
    }
    return response;
  });
  const std::string err = ::testing::TempDir() + "/watch-alerts-retry.err";
  auto child = ChildProcess::Spawn({{DIAGNOSE_BINARY, "watch", DIAGNOSE_FIXTURE_OUTPUTS, "--alerts", "--prometheus",
                                     server.url(), "--poll-seconds", "1"}, "", err, ""});
  ASSERT_TRUE(child.ok()) << child.status().message();
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && child->Running()) {
    std::ifstream in(err);
    text.assign(std::istreambuf_iterator<char>(in), {});
    if (text.find("answers again") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(child->Running()) << "the watch ended:\n" << text;
  child->Terminate();
  EXPECT_THAT(text, ::testing::HasSubstr("poll failed (1 in a row)"));
  EXPECT_THAT(text, ::testing::HasSubstr("retrying in 1 s"));
  EXPECT_THAT(text, ::testing::HasSubstr("retrying in 2 s"));
  EXPECT_THAT(text, ::testing::HasSubstr(server.url() + " answers again after"));
  std::remove(err.c_str());
}

TEST(WatchAlerts, WithoutAnEndpointItIsAUsageError) {
  auto run = RunCommand({DIAGNOSE_BINARY, "watch", DIAGNOSE_FIXTURE_OUTPUTS, "--alerts", "--once"}, std::chrono::seconds(60));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 2);
}

}  // namespace
}  // namespace diagnose::alerting
