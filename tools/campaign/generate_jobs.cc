#include "tools/campaign/generate_jobs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "tools/campaign/planner.h"
#include "tools/fixturegen/generate.h"
#include "tools/fixturegen/scenario.h"

namespace fs = std::filesystem;

namespace diagnose::campaign {
namespace {

Status WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return InternalError(path.string() + ": cannot write");
  return Status::Ok();
}

}  // namespace

Status GenerateCampaign(const GenerateCampaignOptions& options) {
  if (options.out_dir.empty()) return InvalidArgumentError("--out is required");
  ASSIGN_OR_RETURN(std::vector<PlannedJob> plan, PlanCampaign(options.seed, options.jobs, options.wide));
  const fs::path out(options.out_dir);
  std::error_code ec;
  for (const char* sub : {"outputs", "scenarios", "scratch"}) {
    fs::create_directories(out / sub, ec);
    if (ec) return InternalError((out / sub).string() + ": cannot create: " + ec.message());
  }

  // Parse every scenario before any generation: a planning bug fails in a second, not minutes in.
  std::vector<fixturegen::Scenario> scenarios;
  std::vector<JobTruth> truths;
  for (const PlannedJob& job : plan) {
    const fs::path path = out / "scenarios" / (job.truth.job_id + ".yaml");
    RETURN_IF_ERROR(WriteFile(path, job.scenario_yaml));
    ASSIGN_OR_RETURN(fixturegen::Scenario scenario, fixturegen::ParseScenario(job.scenario_yaml, path.string()));
    scenarios.push_back(std::move(scenario));
    truths.push_back(job.truth);
  }
  RETURN_IF_ERROR(WriteFile(out / "truth.json", TruthToJson(truths)));

  // Heaviest first so the workers finish together.
  std::vector<size_t> order(plan.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return plan[a].cost > plan[b].cost; });

  fixturegen::GenerateOptions generate;
  generate.out_dir = (out / "outputs").string();
  generate.scratch_dir = (out / "scratch").string();
  generate.write_tsdb = options.write_tsdb;
  std::atomic<size_t> next{0};
  std::mutex lock;
  Status first_error = Status::Ok();
  auto worker = [&] {
    for (size_t k; (k = next++) < order.size();) {
      const size_t i = order[k];
      auto report = fixturegen::Generate(scenarios[i], generate);
      std::lock_guard<std::mutex> guard(lock);
      if (!report.ok()) {
        if (first_error.ok()) first_error = report.status();
        continue;
      }
      std::printf("%-40s %-28s %3zu hosts  %6.2f MB tsdb  %5.1fs\n", report->job_dir.c_str(), truths[i].kind.c_str(),
                  scenarios[i].hosts.size(), report->tsdb_bytes / 1048576.0, report->seconds);
      std::fflush(stdout);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::clamp(options.parallel, 1, 16); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  fs::remove_all(out / "scratch", ec);
  return first_error;
}

}  // namespace diagnose::campaign
