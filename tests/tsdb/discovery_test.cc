#include "engine/discovery/discovery.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include <gtest/gtest.h>

#include "engine/core/scrape_target.h"
#include "engine/tsdb/block_writer.h"
#include "engine/tsdb/private_prometheus.h"
#include "tests/support/table_query_client.h"
#include "tests/tsdb/tsdb_fixture.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using testing::SharedJobFixture;

DiscoveryRules Rules() {
  auto rules = LoadDiscoveryRules(std::string(DIAGNOSE_SOURCE_DIR) + "/rules/discovery.yaml");
  EXPECT_TRUE(rules.ok()) << rules.status().ToString();
  return rules.ok() ? *rules : DiscoveryRules{};
}

// `labels` sampled every 10 s for ten minutes at `value`.
Series TenMinutes(Labels labels, double value) {
  Series s;
  s.labels = std::move(labels);
  for (int i = 0; i < 60; ++i) s.samples.push_back({1771891200.0 + i * 10, value});
  return s;
}

// A private server on blocks written from `series` under `dir`.
StatusOr<std::unique_ptr<PrivatePrometheus>> ServeSeries(const std::vector<Series>& series, const std::string& dir) {
  BlockWriteOptions options;
  options.output_dir = dir + "/prometheus";
  RETURN_IF_ERROR(WriteBlocks(series, options).status());
  return PrivatePrometheus::Start(dir + "/prometheus");
}

// Discovery of a private server on `series` for a job whose nodelist is `expected_hosts`.
StatusOr<Discovery> DiscoverServed(const std::vector<Series>& series, std::vector<std::string> expected_hosts,
                                   const std::string& temp_prefix,
                                   std::map<std::string, std::string> logged_addresses = {}) {
  testing::ScopedTempDir dir_scope(temp_prefix);
  ASSIGN_OR_RETURN(auto server, ServeSeries(series, dir_scope.path));
  DiscoveryInputs inputs = InputsForSnapshot(server->inventory());
  inputs.expected_hosts = std::move(expected_hosts);
  inputs.logged_addresses = std::move(logged_addresses);
  return Discover(server->client(), inputs, Rules());
}

class DiscoveryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto server = PrivatePrometheus::Start(SharedJobFixture().tsdb_dir);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value().release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static PrivatePrometheus* server_;
};
PrivatePrometheus* DiscoveryTest::server_ = nullptr;

TEST_F(DiscoveryTest, FindsNamesHostsRangeStepsAndGaps) {
  const auto& job = SharedJobFixture();
  DiscoveryInputs inputs = InputsForSnapshot(server_->inventory());
  ASSERT_TRUE(inputs.known_range.has_value());
  inputs.expected_hosts = job.spec.hosts;
  inputs.expected_hosts.push_back("chi2899");
  inputs.log_last_step = job.facts.last_real_step;
  auto d = Discover(server_->client(), inputs, Rules());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->range_source, "block-meta");
  EXPECT_EQ(d->range.start, job.spec.start);
  EXPECT_TRUE(d->HasMetric("ray_node_gpus_utilization"));
  EXPECT_TRUE(d->HasMetric("tb_step"));
  EXPECT_EQ(d->hosts, job.spec.hosts);
  EXPECT_EQ(d->host_source.at("chi2800"), "host label");
  EXPECT_EQ(d->instance_to_host.at("chi2801:55080"), "chi2801");
  EXPECT_EQ(d->instance_to_host.at("chi2823:9400"), "chi2823");

  // Step map: real samples only; the fills after training stopped are excluded.
  ASSERT_FALSE(d->step_times.empty());
  EXPECT_EQ(d->step_times.back().step, job.facts.last_real_step);
  EXPECT_GT(d->staleness_fills_excluded, 0);
  auto t = d->TimeOfStep(job.facts.last_real_step);
  ASSERT_TRUE(t.has_value());
  EXPECT_NEAR(*t, job.spec.start + (job.facts.last_real_step - job.spec.first_step + 1) * job.spec.step_seconds + 0.137, 1e-3);
  EXPECT_EQ(d->guard.status, "match") << d->guard.message;

  int silent_chi2805 = 0, silent_other = 0, missing_2899 = 0, missing_host_family = 0;
  for (const auto& g : d->gaps) {
    if (g.kind == "silent-interval") (g.host == "chi2805" ? silent_chi2805 : silent_other)++;
    if (g.kind == "host-missing" && g.host == "chi2899") ++missing_2899;
    if (g.kind == "missing-family" && g.family == "host") ++missing_host_family;
  }
  EXPECT_EQ(silent_chi2805, 1) << ::testing::PrintToString(d->GapSentences());
  EXPECT_EQ(silent_other, 0) << ::testing::PrintToString(d->GapSentences());
  EXPECT_EQ(missing_2899, 1);
  EXPECT_EQ(missing_host_family, 1);  // the fixture has no hw_tcp/procs/mem/io/net series

  const auto json = d->ToJson();
  EXPECT_EQ(json["hosts"].size(), 24u);
  EXPECT_EQ(json["step_map"]["last"]["step"], job.facts.last_real_step);
  EXPECT_EQ(json["wrong_database_guard"]["status"], "match");
}

// --deadline bounds discovery too: past it, no stage starts and the failure says where it stopped,
// so the pipeline reports the run incomplete instead of reading half a discovery as the TSDB's.
TEST_F(DiscoveryTest, StopsAtTheRunsDeadline) {
  DiscoveryInputs inputs = InputsForSnapshot(server_->inventory());
  inputs.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto d = Discover(server_->client(), inputs, Rules());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kDeadlineExceeded) << d.status().ToString();
  EXPECT_NE(d.status().message().find("deadline"), std::string::npos);
  EXPECT_NE(d.status().message().find("0 queries"), std::string::npos) << d.status().message();
  // A deadline ahead leaves discovery as it was.
  inputs.deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  EXPECT_TRUE(Discover(server_->client(), inputs, Rules()).ok());
}

TEST_F(DiscoveryTest, WrongDatabaseGuardFlagsAnotherJobsTsdb) {
  const auto& job = SharedJobFixture();
  DiscoveryInputs inputs = InputsForSnapshot(server_->inventory());
  inputs.log_last_step = job.facts.last_real_step + 5000;  // the log went much further
  auto behind = Discover(server_->client(), inputs, Rules());
  ASSERT_TRUE(behind.ok());
  EXPECT_EQ(behind->guard.status, "mismatch");
  EXPECT_NE(behind->guard.message.find("another job"), std::string::npos);
  inputs.log_last_step = 3;  // the TSDB is ahead of the log: never the same job
  auto ahead = Discover(server_->client(), inputs, Rules());
  ASSERT_TRUE(ahead.ok());
  EXPECT_EQ(ahead->guard.status, "mismatch");
  inputs.log_last_step.reset();
  auto unknown = Discover(server_->client(), inputs, Rules());
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->guard.status, "unverifiable");
}

TEST_F(DiscoveryTest, RemoteStyleDiscoveryFindsTheRangeInsideTheWindow) {
  const auto& job = SharedJobFixture();
  DiscoveryInputs inputs;
  inputs.search_window = TimeRange{job.spec.start - 3600, job.spec.start + job.spec.duration_seconds + 3600};
  auto d = Discover(server_->client(), inputs, Rules());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->range_source, "queries");
  EXPECT_NEAR(d->range.start, job.spec.start, 61);
  // The last scrape, not the last evaluation the 5 m lookback still shows it at.
  EXPECT_NEAR(d->range.end, job.spec.start + job.spec.duration_seconds, 61);
  EXPECT_EQ(d->hosts.size(), 24u);

  DiscoveryInputs none;
  auto refused = Discover(server_->client(), none, Rules());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
}

TEST(DiscoveryRayOnlyTest, HostsComeFromInstanceWhenSeriesHaveNoHostLabel) {
  testing::ScopedTempDir dir_scope("discovery-ray-");
  const std::string& dir = dir_scope.path;
  std::vector<Series> series;
  for (int h = 0; h < 3; ++h)
    series.push_back(TenMinutes({{"__name__", "ray_node_mem_used"}, {"instance", "gpu-node-" + std::to_string(h) + ":55080"},
                                 {"ip", "10.9.0." + std::to_string(h)}, {"job", "ray"}},
                                1e9));
  series.push_back(TenMinutes({{"__name__", "ray_node_cpu_count"}, {"ip", "10.9.0.77"}}, 1));   // only an ip names this node
  {
    auto server = ServeSeries(series, dir);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    auto d = Discover((*server)->client(), InputsForSnapshot((*server)->inventory()), Rules());
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->hosts, (std::vector<std::string>{"10.9.0.77", "gpu-node-0", "gpu-node-1", "gpu-node-2"}));
    EXPECT_EQ(d->host_source.at("gpu-node-1"), "instance");
    EXPECT_EQ(d->host_source.at("10.9.0.77"), "ip");
    EXPECT_EQ(d->instance_to_host.at("gpu-node-2:55080"), "gpu-node-2");
    EXPECT_EQ(d->guard.status, "unverifiable");
    bool gpu_family_missing = false;
    for (const auto& g : d->gaps) gpu_family_missing |= g.kind == "missing-family" && g.family == "gpu";
    EXPECT_TRUE(gpu_family_missing);
  }
  fs::remove_all(dir);
}

// Exporters started with `hostname` report FQDNs; the job's nodelist (and so every decision) uses
// `hostname -s`. A name whose first label is in the nodelist is that node; any other stays as is.
TEST(DiscoveryFqdnTest, ExportersReportingFqdnsAreTheNodelistsNodes) {
  std::vector<Series> series;
  for (int h = 0; h < 3; ++h) {
    const std::string fqdn = "gpu-node-" + std::to_string(h) + ".rack2.example.org";
    series.push_back(TenMinutes({{"__name__", "hw_gpu_power_watts"}, {"gpu", "0"}, {"host", fqdn},
                                 {"instance", fqdn + ":9400"}, {"job", "node_hw"}},
                                700));
    series.push_back(TenMinutes({{"__name__", "ray_node_mem_used"}, {"instance", fqdn + ":55080"},
                                 {"ip", "10.9.0." + std::to_string(h)}, {"job", "ray"}},
                                1e9));
  }
  // A node outside the job's nodelist keeps its reported name.
  series.push_back(TenMinutes({{"__name__", "hw_gpu_power_watts"}, {"gpu", "0"}, {"host", "login1.example.org"},
                               {"instance", "login1.example.org:9400"}, {"job", "node_hw"}},
                              100));
  auto d = DiscoverServed(series, {"gpu-node-0", "gpu-node-1", "gpu-node-2"}, "discovery-fqdn-");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->hosts, (std::vector<std::string>{"gpu-node-0", "gpu-node-1", "gpu-node-2", "login1.example.org"}));
  EXPECT_EQ(d->instance_to_host.at("gpu-node-1.rack2.example.org:55080"), "gpu-node-1");
  EXPECT_EQ(d->instance_to_host.at("gpu-node-2.rack2.example.org:9400"), "gpu-node-2");
  EXPECT_EQ(d->instance_to_host.at("gpu-node-0.rack2.example.org"), "gpu-node-0");   // the host label's alias
  for (const auto& g : d->gaps) EXPECT_NE(g.kind, "host-missing") << g.detail;
}

TEST(DiscoveryAddressTest, AnExporterScrapedByAddressIsNamedThroughRaysSeries) {
  // node_hw scraped by IP with no host label; Ray's node metrics carry the ip and the name.
  std::vector<Series> series;
  for (int h = 0; h < 3; ++h) {
    const std::string ip = "10.44.0." + std::to_string(h + 11), name = "tq-b0" + std::to_string(h + 1);
    series.push_back(TenMinutes({{"__name__", "hw_gpu_power_watts"}, {"gpu", "0"}, {"instance", ip + ":9400"},
                                 {"job", "node_hw"}},
                                700));
    series.push_back(TenMinutes({{"__name__", "hw_scrape_duration_seconds"}, {"instance", ip + ":9400"}, {"job", "node_hw"}},
                                0.1));
    series.push_back(TenMinutes({{"__name__", "ray_node_mem_total"}, {"instance", name + ":55080"}, {"ip", ip}, {"job", "ray"}},
                                2e12));
  }
  // An address no Ray series names keeps its address (nothing is guessed).
  series.push_back(TenMinutes({{"__name__", "hw_gpu_power_watts"}, {"gpu", "0"}, {"instance", "10.44.0.99:9400"},
                               {"job", "node_hw"}},
                              650));
  auto d = DiscoverServed(series, {"tq-b01", "tq-b02", "tq-b03"}, "discovery-address-");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->hosts, (std::vector<std::string>{"10.44.0.99", "tq-b01", "tq-b02", "tq-b03"}));
  EXPECT_EQ(d->instance_to_host.at("10.44.0.12:9400"), "tq-b02");
  EXPECT_EQ(d->instance_to_host.at("10.44.0.13"), "tq-b03");
  EXPECT_EQ(d->host_source.count("10.44.0.11"), 0u);
  // The families the host label would have missed are found through instance.
  for (const auto& g : d->gaps) {
    EXPECT_NE(g.kind, "host-missing") << g.detail;
    EXPECT_FALSE(g.kind == "missing-family" && (g.family == "gpu" || g.family == "exporter")) << g.detail;
    EXPECT_FALSE(g.kind == "host-missing-family" && g.family == "gpu") << g.detail;
  }
}

TEST(DiscoveryAddressTest, AnAddressNoSeriesNamesIsNamedByTheJobsLog) {
  // node_hw scraped by IP, no Ray series at all (a RAY=0-style scrape config): only the log's
  // bind= lines tie the addresses to names. A Ray series naming one address wins over the log.
  std::vector<Series> series;
  for (int h = 0; h < 3; ++h) {
    const std::string ip = "10.45.0." + std::to_string(h + 21);
    series.push_back(TenMinutes({{"__name__", "hw_gpu_power_watts"}, {"gpu", "0"}, {"instance", ip + ":9400"},
                                 {"job", "node_hw"}},
                                700));
  }
  series.push_back(TenMinutes({{"__name__", "ray_node_mem_total"}, {"instance", "mx-n3:55080"}, {"ip", "10.45.0.23"},
                               {"job", "ray"}},
                              2e12));
  const std::map<std::string, std::string> logged = {
      {"10.45.0.21", "mx-n1"}, {"10.45.0.23", "mx-n9"}, {"not-an-address", "mx-n2"}, {"10.45.0.30", "10.45.0.31"}};
  auto d = DiscoverServed(series, {"mx-n1", "mx-n2", "mx-n3"}, "discovery-logged-address-", logged);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->hosts, (std::vector<std::string>{"10.45.0.22", "mx-n1", "mx-n3"}));
  EXPECT_EQ(d->instance_to_host.at("10.45.0.21:9400"), "mx-n1");
  EXPECT_EQ(d->instance_to_host.at("10.45.0.23:9400"), "mx-n3") << "the TSDB's own pair wins";
  // Without the log's names the addresses stay addresses.
  auto unnamed = DiscoverServed(series, {"mx-n1", "mx-n2", "mx-n3"}, "discovery-logged-address-");
  ASSERT_TRUE(unnamed.ok()) << unnamed.status().ToString();
  EXPECT_EQ(unnamed->hosts, (std::vector<std::string>{"10.45.0.21", "10.45.0.22", "mx-n3"}));
}

TEST(DiscoveryAddressTest, AHostLabelHoldingAnAddressIsNamedAndASharedAddressNamesNone) {
  std::vector<Series> series;
  series.push_back(TenMinutes({{"__name__", "hw_gpu_power_watts"}, {"gpu", "0"}, {"host", "10.46.0.5"},
                               {"instance", "10.46.0.5:9400"}, {"job", "node_hw"}},
                              700));
  series.push_back(TenMinutes({{"__name__", "ray_node_mem_total"}, {"instance", "px-a:55080"}, {"ip", "10.46.0.5"}, {"job", "ray"}},
                              2e12));
  // Every container reports the bridge's address: it cannot say which node an exporter is.
  series.push_back(TenMinutes({{"__name__", "hw_gpu_power_watts"}, {"gpu", "0"}, {"instance", "172.17.0.2:9400"},
                               {"job", "node_hw"}},
                              690));
  for (const char* node : {"px-b", "px-c"})
    series.push_back(TenMinutes({{"__name__", "ray_node_mem_total"}, {"instance", std::string(node) + ":55080"},
                                 {"ip", "172.17.0.2"}, {"job", "ray"}},
                                2e12));
  auto d = DiscoverServed(series, {"px-a", "px-b", "px-c"}, "discovery-address-label-");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->hosts, (std::vector<std::string>{"172.17.0.2", "px-a", "px-b", "px-c"}));
  EXPECT_EQ(d->host_source.at("px-a"), "host label");
  EXPECT_EQ(d->instance_to_host.at("10.46.0.5:9400"), "px-a");
  EXPECT_EQ(d->instance_to_host.count("172.17.0.2"), 0u);
}

TEST(WithoutHostLabelTest, AddsTheEmptyHostMatcherInsideTheBraces) {
  EXPECT_EQ(WithoutHostLabel(R"(hw_gpu_power_watts)"), R"(hw_gpu_power_watts{host=""})");
  EXPECT_EQ(WithoutHostLabel(R"(hw_gpu_power_watts{})"), R"(hw_gpu_power_watts{host=""})");
  EXPECT_EQ(WithoutHostLabel(R"({ })"), R"({host=""})");
  EXPECT_EQ(WithoutHostLabel(R"({job="node_hw"})"), R"({job="node_hw", host=""})");
  // A trailing comma or spaces before the brace, or after it, would make `, , host=""` otherwise.
  EXPECT_EQ(WithoutHostLabel(R"({job="node_hw", })"), R"({job="node_hw", host=""})");
  EXPECT_EQ(WithoutHostLabel(R"(up{job="node_hw" ,} )"), R"(up{job="node_hw", host=""})");
}

TEST(IsAddressTest, TellsAddressesFromNames) {
  EXPECT_TRUE(IsAddress("10.0.3.7"));
  EXPECT_TRUE(IsAddress("fe80::1"));
  EXPECT_FALSE(IsAddress("node07"));
  EXPECT_FALSE(IsAddress("10.0.3"));
  EXPECT_FALSE(IsAddress("1234.0.0.1"));
  EXPECT_FALSE(IsAddress("x1000c1s0b0n0"));
  EXPECT_FALSE(IsAddress("10.0.3.7.example"));
}

// Counts how discovery asks: label-value questions one at a time or together, and query batches.
class AskingRecorder : public testing::QueryOnlyClient {
 public:
  int single_label_questions = 0;
  std::vector<std::vector<LabelValuesQuestion>> label_batches;
  std::vector<std::vector<Query>> query_batches;
  StatusOr<std::vector<std::string>> LabelValues(const std::string& label, const std::vector<std::string>&, double,
                                                 double) override {
    ++single_label_questions;
    return std::vector<std::string>{label == "__name__" ? "tb_step" : "chi2800"};
  }
  std::vector<StatusOr<std::vector<std::string>>> LabelValuesBatch(
      const std::vector<LabelValuesQuestion>& questions) override {
    label_batches.push_back(questions);
    std::vector<StatusOr<std::vector<std::string>>> answers;
    for (const auto& q : questions) answers.push_back(std::vector<std::string>{q.label == "__name__" ? "tb_step" : "chi2800"});
    return answers;
  }
  StatusOr<QueryResult> Run(const Query&) override { return QueryResult{}; }
  std::vector<StatusOr<QueryResult>> RunBatch(const std::vector<Query>& queries) override {
    query_batches.push_back(queries);
    return std::vector<StatusOr<QueryResult>>(queries.size(), QueryResult{});
  }
};

// Discovery's questions do not wait for one another: every label-value question goes out in one
// batch and every query in one more, the step queries included once the names say tb_step exists.
TEST(DiscoveryAskingTest, LabelValuesAndQueriesGoOutInOneBatchEach) {
  const DiscoveryRules rules = Rules();
  AskingRecorder client;
  DiscoveryInputs inputs;
  inputs.known_range = TimeRange{1771891200, 1771891800};
  inputs.expected_hosts = {"chi2800"};
  auto d = Discover(client, inputs, rules);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(client.single_label_questions, 0);
  ASSERT_EQ(client.label_batches.size(), 1u);
  EXPECT_EQ(client.label_batches[0].size(), 5 + rules.families.size());
  EXPECT_EQ(client.label_batches[0][0].label, "__name__");
  ASSERT_EQ(client.query_batches.size(), 1u);
  int steps = 0;
  for (const auto& q : client.query_batches[0]) steps += q.id == "discovery:steps";
  EXPECT_EQ(steps, 1);
  EXPECT_EQ(d->hosts, std::vector<std::string>{"chi2800"});
  EXPECT_EQ(d->queries, static_cast<int>(client.label_batches[0].size() + client.query_batches[0].size()));
}

// A block claiming INT64_MIN..INT64_MAX ms, or an endpoint's samples at ±1e14 s, made one step
// query per day of that range (gigabytes of queries): the range is clipped, and a gap says so.
TEST(DiscoveryAskingTest, AnImpossibleRangeIsClippedAndSaysSo) {
  const auto ask = [](TimeRange claimed, std::optional<TimeRange> window) {
    AskingRecorder client;
    DiscoveryInputs inputs;
    inputs.known_range = claimed;
    inputs.search_window = window;
    inputs.expected_hosts = {"chi2800"};
    auto d = Discover(client, inputs, Rules());
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok() || client.query_batches.empty()) return std::make_pair(Discovery{}, -1);
    int steps = 0;
    for (const auto& q : client.query_batches.at(0)) steps += q.id == "discovery:steps";
    return std::make_pair(*d, steps);
  };
  const auto clipped = [](const Discovery& d) {
    for (const auto& g : d.gaps)
      if (g.kind == "range-clipped") return g.detail;
    return std::string();
  };
  const auto [whole, whole_steps] = ask({-9.2e15, 9.2e15}, std::nullopt);
  EXPECT_LE(whole_steps, 93);
  EXPECT_LE(whole.range.end - whole.range.start, 92 * 86400.0);
  EXPECT_NE(clipped(whole).find("block-meta range claimed"), std::string::npos) << clipped(whole);
  const TimeRange log_window{1771891200, 1771891800};
  const auto [windowed, windowed_steps] = ask({1771891200 - 10 * 365 * 86400.0, 1771891800}, log_window);
  EXPECT_DOUBLE_EQ(windowed.range.start, log_window.start - 86400);
  EXPECT_DOUBLE_EQ(windowed.range.end, log_window.end);
  EXPECT_LE(windowed_steps, 3);
  EXPECT_FALSE(clipped(windowed).empty());
  const auto [plain, plain_steps] = ask(log_window, std::nullopt);
  EXPECT_EQ(clipped(plain), "");
  EXPECT_EQ(plain_steps, 1);
}

// One block's meta.json claiming INT64_MIN..INT64_MAX ms (or ten years) took 8-14 GB of step
// queries: its range no longer bounds the queries, the other blocks' does, and a gap names it.
TEST(DiscoveryInputsTest, ABlockClaimingAnImpossibleRangeDoesNotStretchTheRange) {
  TsdbInventory inventory;
  inventory.blocks = {{"01GOOD", 1771891200000, 1771898400000},
                      {"01ABSURD", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()},
                      {"01DECADE", 1771891200000 - int64_t{10} * 365 * 86400000, 1771898400000}};
  const DiscoveryInputs inputs = InputsForSnapshot(inventory);
  ASSERT_TRUE(inputs.known_range.has_value());
  EXPECT_DOUBLE_EQ(inputs.known_range->start, 1771891200);
  EXPECT_NEAR(inputs.known_range->end, 1771898400, 0.01);
  ASSERT_EQ(inputs.gaps.size(), 2u);
  EXPECT_EQ(inputs.gaps[0].kind, "range-clipped");
  EXPECT_NE(inputs.gaps[0].detail.find("block 01ABSURD claims data from"), std::string::npos) << inputs.gaps[0].detail;
  EXPECT_NE(inputs.gaps[1].detail.find("block 01DECADE"), std::string::npos);
}

// tb_step samples of -Inf, NaN or 1e300 are no steps: llround of one was INT64_MIN, and its distance
// to the log's step overflowed (the release build then called the TSDB another job's).
class NonFiniteSteps : public AskingRecorder {
 public:
  std::vector<StatusOr<QueryResult>> RunBatch(const std::vector<Query>& queries) override {
    std::vector<StatusOr<QueryResult>> answers = AskingRecorder::RunBatch(queries);
    for (size_t i = 0; i < queries.size(); ++i) {
      if (queries[i].id != "discovery:steps") continue;
      Series s;
      s.labels = {{"__name__", "tb_step"}, {"host", "chi2800"}};
      s.samples = {{1771891300, 100}, {1771891400, -INFINITY}, {1771891500, NAN}, {1771891600, 1e300},
                   {NAN, 5}, {1e300, 6}};
      QueryResult r;
      r.result_type = "matrix";
      r.series = {s};
      answers[i] = r;
    }
    return answers;
  }
};

TEST(DiscoveryAskingTest, NonFiniteStepSamplesAreSkipped) {
  NonFiniteSteps client;
  DiscoveryInputs inputs;
  inputs.known_range = TimeRange{1771891200, 1771891800};
  inputs.expected_hosts = {"chi2800"};
  inputs.log_last_step = 100;
  auto d = Discover(client, inputs, Rules());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->step_times.size(), 1u);
  EXPECT_EQ(d->step_times[0].step, 100);
  EXPECT_NE(d->guard.status, "mismatch") << d->guard.message;
  inputs.log_last_step = std::numeric_limits<int64_t>::min();   // a log's step as absurd: no overflow
  auto far = Discover(client, inputs, Rules());
  ASSERT_TRUE(far.ok());
  EXPECT_EQ(far->guard.status, "mismatch");
}

TEST(DiscoveryRulesTest, BadRulesNameTheFile) {
  testing::ScopedTempDir dir_scope("discovery-rules-");
  const std::string& dir = dir_scope.path;
  std::ofstream(dir + "/bad.yaml") << "families:\n  - id: x\n    selector: [unclosed\n";
  auto bad = LoadDiscoveryRules(dir + "/bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.yaml:"), std::string::npos) << bad.status().message();
  std::ofstream(dir + "/incomplete.yaml") << "families: []\n";
  auto incomplete = LoadDiscoveryRules(dir + "/incomplete.yaml");
  ASSERT_FALSE(incomplete.ok());
  EXPECT_NE(incomplete.status().message().find("gap_threshold_seconds"), std::string::npos);
  fs::remove_all(dir);
}

TEST(DiscoveryRulesTest, EveryMistakeIsReportedWithItsPosition) {
  testing::ScopedTempDir dir_scope("discovery-rules-");
  const std::string path = dir_scope.path + "/two-mistakes.yaml";
  std::ofstream(path) << "families:\n"
                         "  - id: gpu\n"
                         "    selector: '{__name__=~\"hw_gpu_.+\"}'\n"
                         "    hosts_from: rack\n"
                         "gap_threshold_seconds: 600\n"
                         "gap_resolution_seconds: soon\n"
                         "step_metric: tb_step\n"
                         "staleness_metric: up\n"
                         "wrong_db_max_steps_ahead: 10\n"
                         "wrong_db_max_steps_behind: 10\n";
  auto rules = LoadDiscoveryRules(path);
  ASSERT_FALSE(rules.ok());
  const std::string& message = rules.status().message();
  EXPECT_NE(message.find(path + ":4:17: family 'gpu': hosts_from must be host or instance"), std::string::npos)
      << message;
  EXPECT_NE(message.find(path + ":6:25: gap_resolution_seconds must be a number"), std::string::npos) << message;
}

TEST(InstanceHostTest, StripsPortsIncludingIpv6) {
  EXPECT_EQ(InstanceHost("chi2822:9400"), "chi2822");
  EXPECT_EQ(InstanceHost("[fe80::1]:9100"), "fe80::1");
  EXPECT_EQ(InstanceHost("chi2822"), "chi2822");
  EXPECT_EQ(InstanceHost("10.0.0.1:55080"), "10.0.0.1");
}

}  // namespace
}  // namespace diagnose

#include "engine/discovery/tsdb_state.h"

namespace diagnose {
namespace {

TEST_F(DiscoveryTest, TsdbStateCarriesDiscoveryGapsAndGuard) {
  DiscoveryInputs inputs = InputsForSnapshot(server_->inventory());
  inputs.log_last_step = 1;  // a TSDB ahead of the log: another job's
  auto d = Discover(server_->client(), inputs, Rules());
  ASSERT_TRUE(d.ok());
  TsdbState served = ServedTsdbState(*server_, *d);
  EXPECT_EQ(served.mode, TsdbMode::kPrivateCopy);
  EXPECT_EQ(served.state, TsdbAvailability::kServed);
  EXPECT_EQ(served.source, SharedJobFixture().tsdb_dir);
  ASSERT_FALSE(served.gaps.empty());
  EXPECT_NE(served.gaps.front().find("another job"), std::string::npos);
  EXPECT_EQ(served.discovery["hosts"].size(), 24u);
  TsdbState none = UnavailableTsdbState(TsdbMode::kPrivateCopy, "/x/prometheus",
                                        NotFoundError("TSDB dir /x/prometheus does not exist"));
  EXPECT_EQ(none.state, TsdbAvailability::kUnavailable);
  EXPECT_NE(none.reason.find("/x/prometheus"), std::string::npos);
}

TEST(TwoTsdbsTest, TwoPrivateServersSideBySideStaySeparate) {
  testing::ScopedTempDir dir_scope("two-tsdbs-");
  const std::string& dir = dir_scope.path;
  for (const std::string name : {"subject", "baseline"}) {
    testing::FixtureSpec spec;
    spec.hosts = {name + "-node1", name + "-node2"};
    spec.duration_seconds = 900;
    ASSERT_TRUE(testing::BuildJobTsdb(spec, dir + "/" + name + "/prometheus").ok());
  }
  {
    auto subject = PrivatePrometheus::Start(dir + "/subject/prometheus");
    auto baseline = PrivatePrometheus::Start(dir + "/baseline/prometheus");
    ASSERT_TRUE(subject.ok() && baseline.ok());
    EXPECT_NE((*subject)->url(), (*baseline)->url());
    EXPECT_NE((*subject)->copy_dir(), (*baseline)->copy_dir());
    auto a = (*subject)->client().LabelValues("host", {}, 0, 4102444800.0);
    auto b = (*baseline)->client().LabelValues("host", {}, 0, 4102444800.0);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, (std::vector<std::string>{"subject-node1", "subject-node2"}));
    EXPECT_EQ(*b, (std::vector<std::string>{"baseline-node1", "baseline-node2"}));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace diagnose

namespace diagnose {
namespace {

TEST(ParseTimeRangeTest, IsoAndEpochEnds) {
  auto r = ParseTimeRange("2026-02-19T05:58Z..2026-02-19T10:05:30+01:00");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->start, 1771480680);
  EXPECT_EQ(r->end, 1771491930);   // 10:05:30 at +01:00 is 09:05:30Z
  auto e = ParseTimeRange("1771480680..1771495530");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->start, 1771480680);
  EXPECT_EQ(e->end, 1771495530);
}

TEST(ParseTimeRangeTest, RefusalsSayWhatIsWrong) {
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"2026-02-19", "is not START..END"},
           {"a..b..c", "is not START..END"},
           {"yesterday..now", "neither ISO-8601 nor epoch seconds"},
           {"2026-02-19T10:00Z..2026-02-19T09:00Z", "does not start before it ends"},
           {"5..5", "does not start before it ends"},
           {"1..99999999999999999999", "too far in the future"},
           {"2026-13-01..2026-12-01", "neither ISO-8601 nor epoch seconds"}}) {
    auto r = ParseTimeRange(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(says), std::string::npos) << text << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace diagnose
