// Usage: tsdb_bench [repeats=5]. Builds a 24-node, 6 h @ 10 s TSDB with BlockWriter, then measures:
//  - private Prometheus spawn -> /-/ready (and the private copy) over several starts;
//  - the engine's HttpQueryClient::RunBatch wall time for 30 fixed discovery/playbook-style
//    queries, against the same 30 queries issued at once as 30 plain `curl` processes (argv);
// and prints the engine/curl ratio (median of the repeats, warm-up excluded).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/core/cleanup_registry.h"
#include "engine/core/subprocess.h"
#include "engine/discovery/discovery.h"
#include "engine/tsdb/private_prometheus.h"
#include "tests/tsdb/tsdb_fixture.h"

using namespace diagnose;
using Clock = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<Query> FixedBatch(double start, double end) {
  const double six_h = end - start;
  const std::string w = std::to_string(static_cast<int>(six_h) + 1) + "s";
  std::vector<Query> q;
  // Discovery-style.
  q.push_back(Query::Instant("group by (instance, host) (last_over_time(hw_scrape_duration_seconds[" + w + "]))", end));
  q.push_back(Query::Range("count by (host) (hw_scrape_duration_seconds)", start, end, 60));
  q.push_back(Query::Range("count by (instance) (up{job=\"ray\"})", start, end, 60));
  q.push_back(Query::Instant("tb_step[" + w + "]", end));
  q.push_back(Query::Instant("tb_metrics_plugin_staleness_fill[" + w + "]", end));
  q.push_back(Query::Range("count(hw_scrape_duration_seconds) or count(up)", start, end, 60));
  // Playbook-style, over three windows: whole run, last hour, first hour.
  const std::vector<std::pair<double, double>> windows = {{start, end}, {end - 3600, end}, {start, start + 3600}};
  for (const auto& [a, b] : windows) {
    q.push_back(Query::Range("sum by (host) (rate(hw_rdma_tx_retx_pkts_total[5m]))", a, b, 60));
    q.push_back(Query::Range("max by (host) (hw_gpu_temperature_celsius)", a, b, 60));
    q.push_back(Query::Range("avg by (host) (hw_gpu_power_watts)", a, b, 60));
    q.push_back(Query::Range("avg by (instance) (ray_node_gpus_utilization)", a, b, 60));
    q.push_back(Query::Range("sum by (host, device) (increase(hw_rdma_tx_retx_pkts_total[1h]))", a, b, 300));
    q.push_back(Query::Range("max by (host) (hw_scrape_duration_seconds)", a, b, 30));
    q.push_back(Query::Range("tb_learning_loss and on (host) (tb_metrics_plugin_staleness_fill == 0)", a, b, 30));
    q.push_back(Query::Instant("max_over_time(hw_gpu_temperature_celsius[" + std::to_string(static_cast<int>(b - a)) + "s])", b));
  }
  return q;  // 6 + 3 * 8 = 30
}

std::vector<std::string> CurlArgv(const std::string& base, const Query& q) {
  char buf[64];
  std::vector<std::string> argv = {"curl", "-s", "-f", "-o", "/dev/null", "--data-urlencode", "query=" + q.promql};
  auto add = [&](const char* key, double v) {
    std::snprintf(buf, sizeof buf, "%s=%.3f", key, v);
    argv.push_back("--data-urlencode");
    argv.push_back(buf);
  };
  if (q.kind == Query::Kind::kInstant) {
    add("time", q.time);
    argv.push_back(base + "/api/v1/query");
  } else {
    add("start", q.start);
    add("end", q.end);
    add("step", q.step);
    argv.push_back(base + "/api/v1/query_range");
  }
  return argv;
}

}  // namespace

int main(int argc, char** argv) {
  InstallTerminationHandler();
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::string job = testing::MakeTempDir("tsdb-bench-");
  testing::FixtureSpec spec;
  spec.hosts = testing::NumberedHosts("node", 100, 24);
  spec.duration_seconds = 6 * 3600;
  spec.scrape_seconds = 10;
  auto build_started = Clock::now();
  auto facts = testing::BuildJobTsdb(spec, job + "/prometheus");
  if (!facts.ok()) {
    std::fprintf(stderr, "fixture: %s\n", facts.status().ToString().c_str());
    return 1;
  }
  std::printf("fixture: 24 nodes, 6 h @ 10 s, %lld samples, built in %.2f s\n",
              static_cast<long long>(facts->samples), Since(build_started));

  std::vector<double> ready, copy;
  for (int i = 0; i < repeats; ++i) {
    auto server = PrivatePrometheus::Start(job + "/prometheus");
    if (!server.ok()) {
      std::fprintf(stderr, "start: %s\n", server.status().ToString().c_str());
      return 1;
    }
    ready.push_back((*server)->startup_seconds());
    copy.push_back((*server)->copy_seconds());
  }
  std::printf("private copy: median %.4f s; spawn->ready: median %.4f s, min %.4f s (%d starts)\n", Median(copy),
              Median(ready), *std::min_element(ready.begin(), ready.end()), repeats);

  auto server = PrivatePrometheus::Start(job + "/prometheus");
  if (!server.ok()) return 1;
  auto& prom = **server;
  const double start = prom.inventory().min_time_ms() / 1000.0;
  const double end = (prom.inventory().max_time_ms() - 1) / 1000.0;
  const std::vector<Query> batch = FixedBatch(start, end);

  std::vector<double> engine, curl;
  double sum_query_seconds = 0;
  for (int i = 0; i <= repeats; ++i) {  // i == 0 is the warm-up
    auto t = Clock::now();
    auto results = prom.client().RunBatch(batch);
    const double engine_s = Since(t);
    double per_query = 0;
    for (size_t k = 0; k < results.size(); ++k) {
      if (!results[k].ok()) {
        std::fprintf(stderr, "query %zu failed: %s\n", k, results[k].status().ToString().c_str());
        return 1;
      }
      per_query += results[k]->elapsed_seconds;
    }
    t = Clock::now();
    std::vector<ChildProcess> children;
    for (const auto& q : batch) {
      SpawnOptions o;
      o.argv = CurlArgv(prom.url(), q);
      auto c = ChildProcess::Spawn(o);
      if (!c.ok()) {
        std::fprintf(stderr, "curl: %s\n", c.status().ToString().c_str());
        return 1;
      }
      children.push_back(std::move(c).value());
    }
    for (auto& c : children) {
      auto code = c.Wait(std::chrono::seconds(120));
      if (!code.ok() || *code != 0) {
        std::fprintf(stderr, "a curl failed\n");
        return 1;
      }
    }
    const double curl_s = Since(t);
    if (i == 0) continue;
    engine.push_back(engine_s);
    curl.push_back(curl_s);
    sum_query_seconds = per_query;
  }
  const double e = Median(engine), c = Median(curl);
  std::printf("30 queries: engine RunBatch median %.4f s (sum of per-query times %.3f s); 30 concurrent curl median %.4f s\n",
              e, sum_query_seconds, c);
  std::printf("ratio engine/curl = %.2f (goal <= 1.2)\n", e / c);
  prom.Stop();
  std::filesystem::remove_all(job);
  return 0;
}
