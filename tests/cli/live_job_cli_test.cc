// A live job (issue 37 point 2): a generated RDMA job replayed as if it were running now. The
// exporter (tests/support/live_job.py) serves the job's series at the wall clock, one target per
// host and Prometheus job as the launcher scrapes them; a real Prometheus scrapes it every second;
// the job's logs grow step by step. Then, as a user would:
//   - `diagnose watch OUT --alerts --prometheus URL` fires the RDMA alert on the bad host and prints
//     the diagnosis (the time from the first sample that could fire it to the printed report is
//     printed, and bounded: rule interval 30 s + poll 2 s + scrape 1 s + the diagnosis);
//   - `diagnose JOB --prometheus URL` in mid-run gives the answer a private copy of the same data
//     gives (the live server's TSDB snapshot, diagnosed the embedded way);
//   - Prometheus killed mid-watch: the watch says the failed polls and the recovery, and goes on;
//     the exporter killed: the watch goes on polling.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/core/subprocess.h"
#include "engine/tsdb/http_query_client.h"
#include "engine/tsdb/private_prometheus.h"
#include "tests/support/cli.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::ReadFileOrEmpty;
using testing::TempDir;
using testing::WriteFile;

constexpr char kJob[] = "7001";
constexpr char kJobDir[] = "7001-JAX-llama2-70b";
const std::vector<std::string> kHosts = {"lv-1", "lv-2", "lv-3", "lv-4"};

std::string Missing() {
  for (const char* tool : {"python3", "prometheus"})
    if (FindExecutable(tool).empty()) return std::string(tool) + " is not installed";
  if (!fs::exists(std::string(DIAGNOSE_BUILD_DIR) + "/fixturegen")) return "fixturegen is not built";
  return "";
}

// Waits until `done` holds or `seconds` pass; false on timeout.
bool WaitFor(double seconds, const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

std::string UtcIso(std::time_t t) {
  char text[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The launcher's two scrape jobs (ray on :55080, node_hw on :9400), every host a target of each;
// all targets are the one exporter, told apart by path, and keep the instance a cluster would give.
std::string ScrapeConfig(int exporter_port) {
  std::string yml = "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n";
  for (const auto& [job, port] : std::vector<std::pair<std::string, int>>{{"ray", 55080}, {"node_hw", 9400}}) {
    yml += "  - job_name: " + job + "\n    static_configs:\n";
    for (const auto& host : kHosts) {
      const std::string instance = host + ":" + std::to_string(port);
      yml += "      - targets: ['127.0.0.1:" + std::to_string(exporter_port) + "']\n        labels: {instance: '" +
             instance + "', __metrics_path__: '/metrics/" + job + "/" + instance + "'}\n";
    }
  }
  return yml;
}

// When lv-3's retry-exhaustion counter first grows: the first sample that can fire the alert.
double FirstRetryExhaustion(const std::string& series_file) {
  std::ifstream in(series_file);
  double first = 0;
  for (std::string line; std::getline(in, line);) {
    auto d = nlohmann::json::parse(line);
    if (d["metric"]["__name__"] != "hw_rdma_req_tx_retry_excd_err_total" || d["metric"]["host"] != "lv-3") continue;
    const auto& values = d["values"];
    for (size_t i = 1; i < values.size(); ++i) {
      if (values[i].get<double>() > values[0].get<double>()) {
        const double t = d["timestamps"][i].get<double>() / 1000;
        if (first == 0 || t < first) first = t;
        break;
      }
    }
  }
  return first;
}

class LiveJob {
 public:
  explicit LiveJob(const TempDir& dir) : dir_(dir) {}

  // Generates the job (started a minute ago), starts the exporter and Prometheus.
  void Start() {
    std::string scenario = ReadFileOrEmpty(std::string(DIAGNOSE_SOURCE_DIR) + "/tests/cli/testdata/live-rdma-job.yaml");
    ASSERT_NE(scenario.find("start: START"), std::string::npos);
    scenario.replace(scenario.find("start: START"), 12, "start: " + UtcIso(std::time(nullptr) - 115));
    const std::string path = WriteFile(dir_.path() / "live.yaml", scenario);
    auto gen = testing::RunProgram({std::string(DIAGNOSE_BUILD_DIR) + "/fixturegen", path, "--out", dir_ / "generated",
                                    "--series-out", dir_ / "series"});
    ASSERT_EQ(gen.exit_code, 0) << gen.Printed();
    series_ = dir_ / ("series/" + std::string(kJobDir) + ".series.jsonl");
    fs::create_directories(dir_ / "outputs");
    StartExporter();
    WriteFile(dir_.path() / "prometheus.yml", ScrapeConfig(exporter_port_));
    StartPrometheus("127.0.0.1:0");
  }

  void StartExporter() {
    SpawnOptions spawn;
    spawn.argv = {"python3", std::string(DIAGNOSE_SOURCE_DIR) + "/tests/support/live_job.py", "--series", series_,
                  "--job-dir", dir_ / ("generated/" + std::string(kJobDir)), "--outputs", dir_ / "outputs",
                  "--port-file", dir_ / "exporter.port"};
    spawn.stdout_path = spawn.stderr_path = dir_ / "exporter.log";
    auto child = ChildProcess::Spawn(spawn);
    ASSERT_TRUE(child.ok()) << child.status().message();
    exporter_.emplace(std::move(*child));
    ASSERT_TRUE(WaitFor(30, [&] { return fs::exists(dir_ / "exporter.port"); })) << ReadFileOrEmpty(dir_ / "exporter.log");
    exporter_port_ = std::stoi(ReadFileOrEmpty(dir_ / "exporter.port"));
  }

  // On `address` (127.0.0.1:0 the first time, its port again on a restart), over the same storage.
  void StartPrometheus(const std::string& address) {
    const std::string log = dir_ / "prometheus.log";
    fs::remove(log);
    SpawnOptions spawn;
    spawn.argv = {"prometheus", "--config.file=" + dir_ / "prometheus.yml", "--storage.tsdb.path=" + dir_ / "tsdb",
                  "--web.listen-address=" + address, "--web.enable-admin-api"};
    spawn.stdout_path = spawn.stderr_path = log;
    auto child = ChildProcess::Spawn(spawn);
    ASSERT_TRUE(child.ok()) << child.status().message();
    prometheus_.emplace(std::move(*child));
    std::optional<int> port;
    ASSERT_TRUE(WaitFor(30, [&] { return (port = ListeningPortInLog(ReadFileOrEmpty(log))).has_value(); }))
        << ReadFileOrEmpty(log);
    url_ = "http://127.0.0.1:" + std::to_string(*port);
    RemoteEndpointOptions endpoint;
    endpoint.url = url_;
    auto client = HttpQueryClient::Create(endpoint);
    ASSERT_TRUE(client.ok());
    client_ = std::move(*client);
    ASSERT_TRUE(WaitFor(30, [&] {
      auto ready = client_->Get("/-/ready", 2);
      return ready.ok() && ready->http_code == 200;
    })) << ReadFileOrEmpty(log);
  }

  void StopPrometheus() { prometheus_.reset(); }
  void StopExporter() { exporter_.reset(); }

  // A copy of the job as it stands: its logs so far and the live server's TSDB snapshot as its
  // persisted TSDB, in a fresh outputs dir.
  std::string Freeze() {
    auto answer = client_->Post("/api/v1/admin/tsdb/snapshot", "", "application/x-www-form-urlencoded", 30);
    EXPECT_TRUE(answer.ok() && answer->http_code == 200) << (answer.ok() ? answer->body : answer.status().message());
    if (!answer.ok()) return "";
    const std::string name = nlohmann::json::parse(answer->body)["data"]["name"];
    const std::string frozen = dir_ / "frozen";
    fs::copy(dir_ / "outputs", frozen, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    fs::copy(dir_ / ("tsdb/snapshots/" + name), frozen + "/" + kJobDir + "/prometheus",
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    return frozen;
  }

  const std::string& url() const { return url_; }
  const std::string& series() const { return series_; }

 private:
  const TempDir& dir_;
  std::string series_, url_;
  int exporter_port_ = 0;
  std::optional<ChildProcess> exporter_, prometheus_;
  std::unique_ptr<HttpQueryClient> client_;
};

std::set<std::string> Excluded(const nlohmann::json& report) {
  std::set<std::string> hosts;
  for (const auto& e : report["decision"]["exclude"]) hosts.insert(e["host"].get<std::string>());
  return hosts;
}

TEST(LiveJobCliTest, TheWatchFiresOnTheBadHostDiagnosesAndSurvivesItsEndpointGoing) {
  if (const std::string missing = Missing(); !missing.empty()) GTEST_SKIP() << missing;
  TempDir dir("diagnose-live-job");
  LiveJob live(dir);
  ASSERT_NO_FATAL_FAILURE(live.Start());
  const double onset = FirstRetryExhaustion(live.series());
  ASSERT_GT(onset, 0);

  SpawnOptions spawn;
  spawn.argv = {DIAGNOSE_BINARY, "watch", dir / "outputs", "--alerts", "--prometheus", live.url(), "--job", kJob,
                "--poll-seconds", "2"};
  spawn.stdout_path = dir / "watch.out";
  spawn.stderr_path = dir / "watch.err";
  auto watch = ChildProcess::Spawn(spawn);
  ASSERT_TRUE(watch.ok());
  auto printed = [&] { return ReadFileOrEmpty(dir / "watch.out"); };
  auto said = [&] { return ReadFileOrEmpty(dir / "watch.err"); };

  // The alert, then the whole report.
  ASSERT_TRUE(WaitFor(150, [&] { return printed().find("WHAT TO DO") != std::string::npos &&
                                        printed().find("\nWHY") != std::string::npos; }))
      << printed() << said();
  const double reported = static_cast<double>(std::time(nullptr));
  const std::string report = printed();
  EXPECT_NE(report.find("alert DiagnoseRdmaRetryExhausted {host=lv-3,instance=lv-3:9400} firing: diagnosing job 7001"),
            std::string::npos) << report;
  EXPECT_NE(report.find("rdma-link-degradation"), std::string::npos) << report;
  EXPECT_NE(report.find("slurm: --exclude=lv-3\n"), std::string::npos) << report;
  for (const char* healthy : {"lv-1", "lv-2", "lv-4"})
    EXPECT_EQ(report.find(std::string("exclude ") + healthy), std::string::npos) << report;
  std::printf("live job: first firing sample to the printed diagnosis: %.0f s (bound 90 s)\n", reported - onset);
  EXPECT_LT(reported - onset, 90);

  // Mid-run: through the live endpoint and from a private copy of the same data, one answer.
  const std::string frozen = live.Freeze();
  ASSERT_FALSE(frozen.empty());
  auto remote = testing::RunDiagnoseCli({kJob, "--outputs", frozen, "--prometheus", live.url(), "--format", "json"});
  auto copy = testing::RunDiagnoseCli({kJob, "--outputs", frozen, "--format", "json"});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  ASSERT_EQ(copy.exit_code, 0) << copy.err;
  const auto r = nlohmann::json::parse(remote.out), c = nlohmann::json::parse(copy.out);
  EXPECT_EQ(r["jobs"][0]["status"], "running");
  EXPECT_EQ(c["tsdb"][0]["mode"], "private-copy");
  EXPECT_EQ(r["tsdb"][0]["mode"], "remote");
  EXPECT_EQ(r["verdict"]["root_cause"], c["verdict"]["root_cause"]);
  EXPECT_EQ(r["decision"]["action"], c["decision"]["action"]);
  EXPECT_EQ(Excluded(r), Excluded(c));
  EXPECT_EQ(Excluded(r), std::set<std::string>{"lv-3"});

  // Prometheus goes away mid-watch and comes back on its port: the watch says both and goes on.
  const std::string address = live.url().substr(std::string("http://").size());
  live.StopPrometheus();
  ASSERT_TRUE(WaitFor(60, [&] { return said().find("poll failed (1 in a row)") != std::string::npos; })) << said();
  ASSERT_NO_FATAL_FAILURE(live.StartPrometheus(address));
  ASSERT_TRUE(WaitFor(60, [&] { return said().find("answers again after") != std::string::npos; })) << said();
  // The exporter goes away: its targets are down, the store still answers, the watch polls on.
  live.StopExporter();
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_TRUE(watch->Running()) << said();
  watch->Terminate();
  EXPECT_EQ(printed().find("diagnosis failed"), std::string::npos) << printed();
}

}  // namespace
}  // namespace diagnose
