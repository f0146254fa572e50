// The live poller on a fake endpoint: pending until `for` has passed, one report per continuous
// activity, a series that went away starts over, also between two polls.
#include <gtest/gtest.h>

#include "engine/alerting/alert_replay.h"
#include "tests/support/table_query_client.h"

#include <map>

namespace diagnose::alerting {
namespace {

// A timeline of each host's presence; range queries get a sample at every evaluation the host was
// present at, instant queries one sample when it is present at that time.
class FakeEndpoint : public testing::QueryOnlyClient {
 public:
  std::map<std::string, std::vector<std::pair<double, double>>> present;   // host -> [from, to) spans
  std::vector<Query> asked;

  bool Present(const std::string& host, double t) const {
    for (const auto& [from, to] : present.at(host))
      if (t >= from && t < to) return true;
    return false;
  }
  StatusOr<QueryResult> Run(const Query& q) override {
    asked.push_back(q);
    QueryResult r;
    r.result_type = q.kind == Query::Kind::kRange ? "matrix" : "vector";
    for (const auto& [host, spans] : present) {
      Series s;
      s.labels = {{"host", host}};
      if (q.kind == Query::Kind::kRange) {
        for (double t = q.start; t <= q.end; t += q.step)
          if (Present(host, t)) s.samples.push_back({t, 1});
      } else if (Present(host, q.time)) {
        s.samples.push_back({q.time, 1});
      }
      if (!s.samples.empty()) r.series.push_back(s);
    }
    return r;
  }
};

constexpr double kForever = 1e12;

RuleExport OneAlert(const std::string& hold) {
  RuleExport rules;
  RenderedAlert a;
  a.alert = "A";
  a.expr = "x > 1";
  a.hold = hold;
  rules.alerts.push_back(a);
  rules.interval = "60s";
  return rules;
}

TEST(AlertPoller, ReportsASeriesOnceWhenItStartsFiring) {
  RuleExport rules = OneAlert("120s");
  FakeEndpoint endpoint;
  AlertPoller poller(rules, endpoint);
  endpoint.present["h1"] = {{0, 240}, {300, kForever}};
  EXPECT_TRUE(poller.Poll(0)->empty());     // pending
  EXPECT_TRUE(poller.Poll(60)->empty());
  auto fired = poller.Poll(120);
  ASSERT_EQ(fired->size(), 1u);
  EXPECT_EQ((*fired)[0].labels.at("host"), "h1");
  EXPECT_EQ((*fired)[0].pending_since, 0);
  EXPECT_EQ((*fired)[0].fired_at, 120);
  EXPECT_TRUE(poller.Poll(180)->empty());   // still firing: no repeat
  EXPECT_TRUE(poller.Poll(240)->empty());   // resolved
  EXPECT_TRUE(poller.Poll(300)->empty());   // pending again from 300
  EXPECT_EQ(poller.Poll(420)->size(), 1u);
}

// Issue 16's note: polls every 120 s against a 60 s rule interval saw the series at both polls and
// counted it as continuous; it was absent at the evaluation between them, so `for:` starts over.
TEST(AlertPoller, ASeriesAbsentBetweenTwoPollsStartsOver) {
  RuleExport rules = OneAlert("120s");
  FakeEndpoint endpoint;
  AlertPoller poller(rules, endpoint);
  endpoint.present["h1"] = {{0, 60}, {120, kForever}};   // absent at the evaluation at 60
  EXPECT_TRUE(poller.Poll(0)->empty());
  EXPECT_TRUE(poller.Poll(120)->empty());   // pending since 120, not since 0
  auto fired = poller.Poll(240);
  ASSERT_EQ(fired->size(), 1u);
  EXPECT_EQ((*fired)[0].pending_since, 120);
  EXPECT_EQ((*fired)[0].fired_at, 240);
  // Every poll after the first reads exactly the evaluations since the one before.
  ASSERT_GE(endpoint.asked.size(), 2u);
  EXPECT_EQ(endpoint.asked[1].kind, Query::Kind::kRange);
  EXPECT_EQ(endpoint.asked[1].start, 60);
  EXPECT_EQ(endpoint.asked[1].end, 120);
  EXPECT_EQ(endpoint.asked[1].step, 60);
}

// `watch --alerts --once` could only ever report `for: 0s` alerts: one poll saw everything as pending.
TEST(AlertPoller, TheFirstPollReportsAnAlertAlreadyFiring) {
  RuleExport rules = OneAlert("300s");
  FakeEndpoint endpoint;
  AlertPoller poller(rules, endpoint);
  endpoint.present["h1"] = {{0, kForever}};
  auto fired = poller.Poll(1000);
  ASSERT_TRUE(fired.ok()) << fired.status().message();
  ASSERT_EQ(fired->size(), 1u);
  EXPECT_EQ((*fired)[0].fired_at - (*fired)[0].pending_since, 300);
  EXPECT_TRUE(poller.Poll(1060)->empty());
}

// The poller and the replay agree on when an alert fires: one ApplyFor.
TEST(AlertPoller, FiresWhereTheReplayFiresOnTheSameTimeline) {
  RuleExport rules = OneAlert("180s");
  FakeEndpoint endpoint;
  endpoint.present["h1"] = {{0, 100}, {200, 350}, {420, 900}};
  endpoint.present["h2"] = {{60, 600}};
  auto replay = ReplayAlerts(rules, endpoint, 0, 900, 60);
  ASSERT_TRUE(replay.ok());
  std::vector<std::pair<std::string, double>> replayed, polled;
  for (const auto& f : replay->firings) replayed.push_back({f.labels.at("host"), f.fired_at});
  AlertPoller poller(rules, endpoint);
  for (double now = 0; now <= 900; now += 150) {   // polls slower than the rule interval
    // Held by name: a range-for over `*poller.Poll(now)` would read the StatusOr after it died.
    auto fired = poller.Poll(now);
    ASSERT_TRUE(fired.ok()) << fired.status().message();
    for (const auto& f : *fired) polled.push_back({f.labels.at("host"), f.fired_at});
  }
  EXPECT_EQ(polled, replayed);
  EXPECT_FALSE(replayed.empty());
}

// A long window makes the client widen the step; `for:` must measure gaps in the step it used.
class WidenedStepEndpoint : public FakeEndpoint {
 public:
  StatusOr<QueryResult> Run(const Query& q) override {
    QueryResult r;
    r.result_type = "matrix";
    r.effective_step = 120;
    Series s;
    s.labels = {{"host", "h1"}};
    for (double t = q.start; t <= q.end; t += 120) s.samples.push_back({t, 1});
    r.series.push_back(s);
    return r;
  }
};

TEST(AlertReplay, ForIsMeasuredInTheStepTheClientUsed) {
  RuleExport rules = OneAlert("300s");
  WidenedStepEndpoint endpoint;
  auto replay = ReplayAlerts(rules, endpoint, 0, 1200, 30);
  ASSERT_TRUE(replay.ok()) << replay.status().message();
  ASSERT_EQ(replay->firings.size(), 1u);
  EXPECT_EQ(replay->firings[0].fired_at, 360);
  EXPECT_EQ(replay->step, 120);
}

TEST(AlertPoller, ForZeroFiresAtTheFirstPoll) {
  RuleExport rules = OneAlert("0s");
  FakeEndpoint endpoint;
  AlertPoller poller(rules, endpoint);
  endpoint.present["h1"] = {{10, kForever}};
  endpoint.present["h2"] = {{10, kForever}};
  EXPECT_EQ(poller.Poll(10)->size(), 2u);
}

}  // namespace
}  // namespace diagnose::alerting
