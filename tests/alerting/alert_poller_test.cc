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

TEST(AlertPoller, ForZeroFiresAtTheFirstPoll) {
  RuleExport rules = OneAlert("0s");
  FakeEndpoint endpoint;
  AlertPoller poller(rules, endpoint);
  endpoint.hosts = {"h1", "h2"};
  EXPECT_EQ(poller.Poll(10)->size(), 2u);
}

}  // namespace
}  // namespace diagnose::alerting
