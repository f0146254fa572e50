#include "tests/tsdb/tsdb_fixture.h"
#include "tests/support/files.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace diagnose::testing {
namespace fs = std::filesystem;

std::vector<std::string> NumberedHosts(const std::string& prefix, int first, int count) {
  std::vector<std::string> hosts;
  for (int i = 0; i < count; ++i) hosts.push_back(prefix + std::to_string(first + i));
  return hosts;
}

StatusOr<FixtureFacts> BuildJobTsdb(const FixtureSpec& spec, const std::string& tsdb_dir) {
  BlockWriteOptions options;
  options.output_dir = tsdb_dir;
  options.max_block_duration = "2h";
  BlockWriter writer(options);
  FixtureFacts facts;
  const int points = static_cast<int>(spec.duration_seconds / spec.scrape_seconds);
  auto in_gap = [&](const std::string& host, double offset) {
    for (const auto& g : spec.gap_hosts) {
      if (g == host && offset >= spec.gap_from && offset < spec.gap_to) return true;
    }
    return false;
  };
  auto add = [&](Labels labels, auto value_at, bool node_hw) -> Status {
    Series s;
    s.labels = std::move(labels);
    const std::string host = s.labels.count("host") ? s.labels.at("host") : "";
    for (int i = 0; i < points; ++i) {
      const double offset = i * spec.scrape_seconds;
      if (node_hw && in_gap(host, offset)) continue;
      s.samples.push_back({spec.start + offset, value_at(i)});
    }
    facts.samples += static_cast<int64_t>(s.samples.size());
    return writer.Add(std::move(s));
  };
  for (size_t h = 0; h < spec.hosts.size(); ++h) {
    const std::string& host = spec.hosts[h];
    const std::string hw_instance = host + ":9400";
    const std::string ray_instance = host + ":55080";
    const std::string ip = "10.1.0." + std::to_string(10 + h);
    for (int gpu = 0; gpu < 8; ++gpu) {
      const std::string g = std::to_string(gpu);
      RETURN_IF_ERROR(add({{"__name__", "hw_gpu_temperature_celsius"}, {"gpu", g}, {"host", host},
                           {"instance", hw_instance}, {"job", "node_hw"}},
                          [&](int i) { return 60 + (i + gpu) % 7 * 0.5; }, true));
      RETURN_IF_ERROR(add({{"__name__", "hw_gpu_power_watts"}, {"gpu", g}, {"host", host},
                           {"instance", hw_instance}, {"job", "node_hw"}},
                          [&](int i) { return 700.0 + (i * 7 + gpu) % 50; }, true));
      RETURN_IF_ERROR(add({{"__name__", "ray_node_gpus_utilization"}, {"GpuIndex", g}, {"ip", ip},
                           {"instance", ray_instance}, {"job", "ray"}, {"SessionName", "session_x"}},
                          [&](int i) { return 95.0 + (i % 5); }, false));
    }
    for (int dev = 0; dev < 2; ++dev) {
      RETURN_IF_ERROR(add({{"__name__", "hw_rdma_tx_retx_pkts_total"}, {"device", "ionic_" + std::to_string(dev)},
                           {"port", "1"}, {"host", host}, {"instance", hw_instance}, {"job", "node_hw"}},
                          [&](int i) { return static_cast<double>(i * (h + 1)); }, true));
    }
    RETURN_IF_ERROR(add({{"__name__", "hw_scrape_duration_seconds"}, {"host", host}, {"instance", hw_instance},
                         {"job", "node_hw"}},
                        [&](int i) { return 0.1 + (i % 3) * 0.01; }, true));
    RETURN_IF_ERROR(add({{"__name__", "up"}, {"instance", hw_instance}, {"job", "node_hw"}}, [](int) { return 1.0; },
                        false));
    RETURN_IF_ERROR(add({{"__name__", "up"}, {"instance", ray_instance}, {"job", "ray"}}, [](int) { return 1.0; },
                        false));
    RETURN_IF_ERROR(add({{"__name__", "ray_node_mem_used"}, {"ip", ip}, {"instance", ray_instance}, {"job", "ray"}},
                        [](int i) { return 1e11 + i * 1e6; }, false));
  }
  // TensorBoard series on the first host: one emission per step, each with staleness_fill=0, then
  // fills (=1) repeating the last step every 150 s after training stops.
  if (!spec.hosts.empty()) {
    const std::string host = spec.hosts[0];
    const Labels base = {{"host", host}, {"instance", host + ":9400"}, {"job", "node_hw"}};
    auto named = [&](const std::string& name) {
      Labels l = base;
      l["__name__"] = name;
      return l;
    };
    Series step{named("tb_step"), {}}, loss{named("tb_learning_loss"), {}}, fill{named("tb_metrics_plugin_staleness_fill"), {}};
    const double stop = spec.training_stops_at > 0 ? spec.training_stops_at : spec.duration_seconds;
    int64_t s = spec.first_step;
    double t = spec.step_seconds;
    for (; t < stop; t += spec.step_seconds, ++s) {
      const double ts = spec.start + t + 0.137;  // event wall times carry milliseconds
      step.samples.push_back({ts, static_cast<double>(s)});
      loss.samples.push_back({ts, 10.0 / std::sqrt(static_cast<double>(s))});
      fill.samples.push_back({ts, 0});
      facts.last_real_step = s;
    }
    for (double f = stop + 150; f < spec.duration_seconds; f += 150) {
      step.samples.push_back({spec.start + f, static_cast<double>(facts.last_real_step)});
      loss.samples.push_back({spec.start + f, loss.samples.back().v});
      fill.samples.push_back({spec.start + f, 1});
    }
    for (Series* series : {&step, &loss, &fill}) {
      facts.samples += static_cast<int64_t>(series->samples.size());
      RETURN_IF_ERROR(writer.Add(std::move(*series)));
    }
  }
  auto stats = writer.Finish();
  if (!stats.ok()) return stats.status();
  return facts;
}

std::string DirectoryFingerprint(const std::string& dir) {
  std::map<std::string, std::string> entries;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    struct stat st;
    lstat(it->path().c_str(), &st);
    std::string rel = fs::relative(it->path(), dir).string();
    std::ostringstream info;
    info << std::oct << st.st_mode << std::dec << " " << st.st_size << " " << st.st_mtim.tv_sec << "."
         << st.st_mtim.tv_nsec;
    if (S_ISREG(st.st_mode)) {
      info << " " << std::hash<std::string>{}(testing::ReadFileOrEmpty(it->path()));
    }
    entries[rel] = info.str();
  }
  std::string out;
  for (const auto& [k, v] : entries) out += k + " " + v + "\n";
  return out;
}

std::string MakeTempDir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
  return mkdtemp(pattern.data());
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::vector<int> PrometheusChildrenOf(int parent) {
  std::vector<int> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string content;
    std::getline(stat, content);
    const size_t open = content.find('('), close = content.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string comm = content.substr(open + 1, close - open - 1);
    std::istringstream rest(content.substr(close + 2));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (comm == "prometheus" && ppid == parent && state != "Z") pids.push_back(std::stoi(name));
  }
  return pids;
}

}  // namespace diagnose::testing

namespace diagnose::testing {

const SharedJob& SharedJobFixture() {
  static SharedJob* job = [] {
    auto* j = new SharedJob();
    j->job_dir = MakeTempDir("tsdb-fixture-job-");
    j->tsdb_dir = j->job_dir + "/prometheus";
    j->spec.hosts = NumberedHosts("chi", 2800, 24);
    j->spec.gap_hosts = {"chi2805"};
    j->spec.gap_from = 1800;
    j->spec.gap_to = 3000;
    j->spec.training_stops_at = j->spec.duration_seconds - 1200;
    auto facts = BuildJobTsdb(j->spec, j->tsdb_dir);
    if (!facts.ok()) {
      std::fprintf(stderr, "fixture build failed: %s\n", facts.status().ToString().c_str());
      std::abort();
    }
    j->facts = *facts;
    // What a real job dir also holds next to the TSDB; never to be copied or touched.
    std::ofstream(j->tsdb_dir + "/prometheus.log") << "level=info msg=\"Server is ready to receive web requests.\"\n";
    std::atexit([] { std::error_code ec; fs::remove_all(SharedJobFixture().job_dir, ec); });
    return j;
  }();
  return *job;
}

}  // namespace diagnose::testing
