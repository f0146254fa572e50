// `watch --alerts` on a fake endpoint: the job an alert names on a fleet store, a label that is not
// a job id, diagnoses that do not hold up the polls, failed polls retried and said.
#include "engine/watch/alert_watch.h"

#include "engine/alerting/alert_rules.h"
#include "tests/support/table_query_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

namespace diagnose {
namespace {

// Every range query answers one always-present series per entry of `series`; the first
// `failures` queries fail as an endpoint that went away would.
class AlwaysFiringEndpoint : public testing::QueryOnlyClient {
 public:
  std::vector<Labels> series;
  std::atomic<int> failures{0};
  std::atomic<int> queries{0};

  StatusOr<QueryResult> Run(const Query& q) override {
    ++queries;
    if (failures.load() > 0) {
      --failures;
      return UnavailableError("connection refused");
    }
    QueryResult r;
    r.result_type = q.kind == Query::Kind::kRange ? "matrix" : "vector";
    for (const auto& labels : series) {
      Series s;
      s.labels = labels;
      for (double t = q.start; t <= q.end; t += q.step) s.samples.push_back({t, 1});
      if (q.kind == Query::Kind::kInstant) s.samples = {{q.time, 1}};
      r.series.push_back(s);
    }
    return r;
  }
};

alerting::RuleExport OneCriticalAlert() {
  static alerting::AlertSpec spec = [] {
    alerting::AlertSpec s;
    s.root_cause = "rdma-link-degradation";
    return s;
  }();
  alerting::RuleExport rules;
  alerting::RenderedAlert a;
  a.alert = "DiagnoseRdmaRetryExhausted";
  a.spec = &spec;
  a.expr = "x >= 1";
  a.hold = "0s";
  rules.alerts.push_back(a);
  rules.interval = "60s";
  return rules;
}

struct Recorder {
  std::mutex mutex;
  std::vector<std::string> printed, notes, diagnosed;
  std::string Printed() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string all;
    for (const auto& p : printed) all += p;
    return all;
  }
};

AlertWatchOptions OptionsRecordingInto(Recorder& r) {
  AlertWatchOptions o;
  o.endpoint = "http://store:9090";
  o.poll_seconds = 0.05;
  double clock = 1'000'000;
  o.now = [clock]() mutable { return clock += 60; };
  o.default_job = [] { return StatusOr<std::string>(std::string("newest")); };
  o.diagnose = [&r](const std::string& job) -> StatusOr<std::string> {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.diagnosed.push_back(job);
    return "report of " + job + "\n";
  };
  o.print = [&r](const std::string& text) {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.printed.push_back(text);
  };
  o.note = [&r](const std::string& line) {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.notes.push_back(line);
  };
  return o;
}

// Sets `stop` once `done` holds (or after 30 s, so a broken watch fails the test instead of hanging it).
std::thread StopWhen(std::atomic<bool>& stop, std::function<bool()> done) {
  return std::thread([&stop, done = std::move(done)] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stop = true;
  });
}

// One poll of a watch on an endpoint where `series` fire, and the diagnoses it started.
void WatchOnce(const std::vector<Labels>& series, const std::string& job_label, Recorder& r) {
  AlwaysFiringEndpoint endpoint;
  endpoint.series = series;
  AlertWatchOptions o = OptionsRecordingInto(r);
  o.job_label = job_label;
  o.once = true;
  std::atomic<bool> stop{false};
  ASSERT_TRUE(RunAlertWatch(OneCriticalAlert(), endpoint, o, stop).ok());
}

TEST(AlertWatch, OnAFleetStoreEachAlertNamesItsOwnJob) {
  Recorder r;
  WatchOnce({{{"host", "n1"}, {"slurm_job", "8001"}}, {{"host", "n1"}, {"slurm_job", "8002"}}}, "slurm_job", r);
  EXPECT_EQ(r.diagnosed, (std::vector<std::string>{"8001", "8002"}));
  const std::string printed = r.Printed();
  EXPECT_NE(printed.find("slurm_job=8001} firing: diagnosing job 8001 through http://store:9090"), std::string::npos)
      << printed;
  EXPECT_NE(printed.find("report of 8002"), std::string::npos) << printed;
}

TEST(AlertWatch, WithoutAJobLabelTheAlertBelongsToTheEndpointsJob) {
  Recorder r;
  WatchOnce({{{"host", "n1"}}, {{"host", "n2"}}}, "", r);
  // Two hosts, one root cause: one diagnosis.
  EXPECT_EQ(r.diagnosed, (std::vector<std::string>{"newest"}));
  EXPECT_NE(r.Printed().find("job newest already diagnosed for rdma-link-degradation"), std::string::npos);
}

// The label's value comes from the endpoint's answer: never a path.
TEST(AlertWatch, AJobLabelThatIsNotAJobIdIsSaidAndNotDiagnosed) {
  Recorder r;
  WatchOnce({{{"host", "n1"}, {"slurm_job", "../../etc"}}, {{"host", "n2"}}}, "slurm_job", r);
  EXPECT_TRUE(r.diagnosed.empty());
  const std::string printed = r.Printed();
  EXPECT_NE(printed.find("its slurm_job label \"../../etc\" is not a job id"), std::string::npos) << printed;
  EXPECT_NE(printed.find("the alert has no slurm_job label"), std::string::npos) << printed;
}

// Before, the diagnosis ran inside the polling loop: no poll while it lasted.
TEST(AlertWatch, ADiagnosisInFlightDoesNotHoldUpThePolls) {
  AlwaysFiringEndpoint endpoint;
  endpoint.series = {{{"host", "n1"}}};
  Recorder r;
  AlertWatchOptions o = OptionsRecordingInto(r);
  std::atomic<int> polls_during_diagnosis{-1};
  o.diagnose = [&endpoint, &polls_during_diagnosis](const std::string&) -> StatusOr<std::string> {
    const int at_start = endpoint.queries.load();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (endpoint.queries.load() < at_start + 3 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    polls_during_diagnosis = endpoint.queries.load() - at_start;
    return std::string("report\n");
  };
  std::atomic<bool> stop{false};
  std::thread stopper = StopWhen(stop, [&] { return polls_during_diagnosis.load() >= 0; });
  ASSERT_TRUE(RunAlertWatch(OneCriticalAlert(), endpoint, o, stop).ok());
  stopper.join();
  EXPECT_GE(polls_during_diagnosis.load(), 3);
}

TEST(AlertWatch, FailedPollsAreRetriedAndTheRecoveryIsSaid) {
  AlwaysFiringEndpoint endpoint;
  endpoint.series = {{{"host", "n1"}}};
  endpoint.failures = 2;
  Recorder r;
  AlertWatchOptions o = OptionsRecordingInto(r);
  std::atomic<bool> stop{false};
  std::thread stopper = StopWhen(stop, [&] {
    std::lock_guard<std::mutex> lock(r.mutex);
    return !r.diagnosed.empty();
  });
  ASSERT_TRUE(RunAlertWatch(OneCriticalAlert(), endpoint, o, stop).ok());
  stopper.join();
  ASSERT_GE(r.notes.size(), 3u);
  EXPECT_EQ(r.notes[0], "poll failed (1 in a row): alert DiagnoseRdmaRetryExhausted: connection refused; retrying in 0 s");
  EXPECT_NE(r.notes[1].find("poll failed (2 in a row)"), std::string::npos);
  EXPECT_EQ(r.notes[2], "http://store:9090 answers again after 2 failed poll(s)");
  EXPECT_EQ(r.diagnosed, (std::vector<std::string>{"newest"}));
}

TEST(AlertWatch, OnceReturnsThePollsError) {
  AlwaysFiringEndpoint endpoint;
  endpoint.failures = 1;
  Recorder r;
  AlertWatchOptions o = OptionsRecordingInto(r);
  o.once = true;
  std::atomic<bool> stop{false};
  Status s = RunAlertWatch(OneCriticalAlert(), endpoint, o, stop);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("connection refused"), std::string::npos);
}

}  // namespace
}  // namespace diagnose
