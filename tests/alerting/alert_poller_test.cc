// The live poller on a fake endpoint: pending until `for` has passed, one report per continuous
// activity, a series that went away starts over.
#include <gtest/gtest.h>

#include "engine/alerting/alert_replay.h"

namespace diagnose::alerting {
namespace {

// Answers every instant query with the hosts currently set.
class FakeEndpoint : public QueryClient {
 public:
  std::vector<std::string> hosts;
  StatusOr<QueryResult> Run(const Query&) override {
    QueryResult r;
    r.result_type = "vector";
    for (const auto& h : hosts) r.series.push_back({{{"host", h}}, {{0, 1}}});
    return r;
  }
  StatusOr<std::vector<std::string>> LabelValues(const std::string&, const std::vector<std::string>&, double,
                                                 double) override {
    return std::vector<std::string>{};
  }
  StatusOr<std::vector<Labels>> SeriesMatching(const std::vector<std::string>&, double, double) override {
    return std::vector<Labels>{};
  }
  std::string Describe() const override { return "fake"; }
};

RuleExport OneAlert(const std::string& hold) {
  RuleExport rules;
  RenderedAlert a;
  a.alert = "A";
  a.expr = "x > 1";
  a.hold = hold;
  rules.alerts.push_back(a);
  return rules;
}

TEST(AlertPoller, ReportsASeriesOnceWhenItStartsFiring) {
  RuleExport rules = OneAlert("120s");
  FakeEndpoint endpoint;
  AlertPoller poller(rules, endpoint);
  endpoint.hosts = {"h1"};
  EXPECT_TRUE(poller.Poll(0)->empty());     // pending
  EXPECT_TRUE(poller.Poll(60)->empty());
  auto fired = poller.Poll(120);
  ASSERT_EQ(fired->size(), 1u);
  EXPECT_EQ((*fired)[0].labels.at("host"), "h1");
  EXPECT_EQ((*fired)[0].pending_since, 0);
  EXPECT_TRUE(poller.Poll(180)->empty());   // still firing: no repeat
  endpoint.hosts = {};
  EXPECT_TRUE(poller.Poll(240)->empty());   // resolved
  endpoint.hosts = {"h1"};
  EXPECT_TRUE(poller.Poll(300)->empty());   // pending again from 300
  EXPECT_EQ(poller.Poll(420)->size(), 1u);
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
  endpoint.hosts = {"h1", "h2"};
  EXPECT_EQ(poller.Poll(10)->size(), 2u);
}

}  // namespace
}  // namespace diagnose::alerting
