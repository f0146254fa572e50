// fixturegen: builds recorded-job fixtures (launcher-layout job directories with Prometheus TSDB
// blocks) from declarative scenarios. See fixtures/README.md.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>

#include "tools/fixturegen/generate.h"
#include "tools/fixturegen/scenario.h"

namespace fs = std::filesystem;
using namespace diagnose;
using namespace diagnose::fixturegen;

int main(int argc, char** argv) {
  CLI::App app{"Generate maxtext-slurm job fixtures from scenario YAML files"};
  std::vector<std::string> scenarios;
  std::string all_dir, out_dir, scratch, series_out, encoder = "native";
  int jobs = 2;
  bool no_tsdb = false;
  app.add_option("scenarios", scenarios, "scenario files");
  app.add_option("--all", all_dir, "generate every *.yaml in this directory");
  app.add_option("--out", out_dir, "outputs directory (the launcher workspace)")->required();
  app.add_option("--jobs,-j", jobs, "scenarios generated in parallel")->check(CLI::Range(1, 16));
  app.add_option("--encoder", encoder,
                 "how TSDB blocks are written: native (directly) or promtool (OpenMetrics text through "
                 "`promtool tsdb create-blocks-from`, the oracle)")
      ->check(CLI::IsMember({"native", "promtool"}));
  app.add_option("--scratch", scratch, "directory for the promtool encoder's intermediate OpenMetrics files");
  app.add_flag("--no-tsdb", no_tsdb, "write logs only (no TSDB blocks)");
  app.add_option("--series-out", series_out,
                 "write each job's series as JSON lines (<job dir>.series.jsonl, VictoriaMetrics import format) into "
                 "this directory instead of TSDB blocks: what a live exporter replays");
  CLI11_PARSE(app, argc, argv);

  if (!all_dir.empty()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(all_dir, ec))
      if (entry.path().extension() == ".yaml") scenarios.push_back(entry.path().string());
    if (ec) {
      std::fprintf(stderr, "fixturegen: %s: %s\n", all_dir.c_str(), ec.message().c_str());
      return 2;
    }
  }
  std::sort(scenarios.begin(), scenarios.end());
  if (scenarios.empty()) {
    std::fprintf(stderr, "fixturegen: no scenarios given (pass files or --all DIR)\n");
    return 2;
  }
  // Parse everything first so a typo fails fast, before minutes of generation.
  std::vector<Scenario> parsed;
  for (const auto& path : scenarios) {
    auto s = LoadScenario(path);
    if (!s.ok()) {
      std::fprintf(stderr, "fixturegen: %s\n", s.status().message().c_str());
      return 1;
    }
    parsed.push_back(std::move(*s));
  }
  // Heaviest (TSDB) scenarios first so the parallel workers finish together.
  std::stable_sort(parsed.begin(), parsed.end(), [](const Scenario& a, const Scenario& b) {
    return (a.tsdb ? a.hosts.size() : 0) > (b.tsdb ? b.hosts.size() : 0);
  });
  GenerateOptions options;
  options.out_dir = out_dir;
  options.scratch_dir = scratch;
  options.block_encoder = *BlockEncoderNamed(encoder);
  options.write_tsdb = !no_tsdb;
  options.series_out = series_out;
  std::atomic<size_t> next{0};
  std::atomic<int> failures{0};
  std::mutex print;
  auto worker = [&] {
    for (size_t i; (i = next++) < parsed.size();) {
      auto report = Generate(parsed[i], options);
      std::lock_guard<std::mutex> lock(print);
      if (!report.ok()) {
        std::fprintf(stderr, "fixturegen: %s\n", report.status().message().c_str());
        ++failures;
        continue;
      }
      std::printf("%-58s logs %8.1f KB", report->job_dir.c_str(), report->log_bytes / 1024.0);
      if (report->samples > 0)
        std::printf("  tsdb %6.2f MB  %6lld series  %9lld samples  %d block(s)", report->tsdb_bytes / 1048576.0,
                    static_cast<long long>(report->series), static_cast<long long>(report->samples), report->blocks);
      std::printf("  %.1fs\n", report->seconds);
      std::fflush(stdout);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::min<int>(jobs, static_cast<int>(parsed.size())); ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return failures > 0 ? 1 : 0;
}
