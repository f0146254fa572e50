#include "tools/campaign/generate_jobs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
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

// The jobs of the listed kinds (prefixes) and the unscored baselines they name.
std::vector<PlannedJob> OfKinds(std::vector<PlannedJob> plan, const std::vector<std::string>& kinds) {
  auto wanted = [&](const JobTruth& t) {
    return std::any_of(kinds.begin(), kinds.end(), [&](const std::string& k) { return t.kind.rfind(k, 0) == 0; });
  };
  std::set<std::string> keep;
  for (const PlannedJob& job : plan) {
    if (!job.truth.scored || !wanted(job.truth)) continue;
    keep.insert(job.truth.job_id);
    if (job.truth.baseline) keep.insert(*job.truth.baseline);
  }
  std::erase_if(plan, [&](const PlannedJob& job) { return !keep.count(job.truth.job_id); });
  return plan;
}

}  // namespace

Status GenerateCampaign(const GenerateCampaignOptions& options) {
  if (options.out_dir.empty()) return InvalidArgumentError("--out is required");
  if (options.shards < 1 || options.shard < 0 || options.shard >= options.shards)
    return InvalidArgumentError("--shard " + std::to_string(options.shard) + "/" + std::to_string(options.shards) +
                                ": needs 0 <= K < N");
  const bool sharded = options.shards > 1;
  ASSIGN_OR_RETURN(std::vector<PlannedJob> plan, PlanCampaign(options.seed, options.jobs, options.wide, options.perf, options.wider, options.widest));
  if (!options.kinds.empty()) plan = OfKinds(std::move(plan), options.kinds);
  const fs::path out(options.out_dir);
  // Shards run at once in one directory: each has its own scratch.
  const fs::path scratch = out / (sharded ? "scratch-" + std::to_string(options.shard) : std::string("scratch"));
  std::error_code ec;
  for (const fs::path& dir : {out / "outputs", out / "scenarios", scratch}) {
    fs::create_directories(dir, ec);
    if (ec) return InternalError(dir.string() + ": cannot create: " + ec.message());
  }

  // Parse every scenario before any generation: a planning bug fails in a second, not minutes in.
  std::vector<fixturegen::Scenario> scenarios;
  std::vector<JobTruth> truths;
  for (const PlannedJob& job : plan) {
    const fs::path path = out / "scenarios" / (job.truth.job_id + ".yaml");
    if (!sharded) RETURN_IF_ERROR(WriteFile(path, job.scenario_yaml));
    ASSIGN_OR_RETURN(fixturegen::Scenario scenario, fixturegen::ParseScenario(job.scenario_yaml, path.string()));
    scenarios.push_back(std::move(scenario));
    truths.push_back(job.truth);
  }
  if (!sharded) RETURN_IF_ERROR(WriteFile(out / "truth.json", TruthToJson(truths)));
  if (options.plan_only) {
    fs::remove_all(scratch, ec);
    return Status::Ok();
  }

  // Heaviest first so the workers (and the shards) finish together.
  std::vector<size_t> by_cost(plan.size());
  for (size_t i = 0; i < by_cost.size(); ++i) by_cost[i] = i;
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) { return plan[a].cost > plan[b].cost; });
  std::vector<size_t> order;
  for (size_t k = options.shard; k < by_cost.size(); k += options.shards) order.push_back(by_cost[k]);

  fixturegen::GenerateOptions generate;
  generate.out_dir = (out / "outputs").string();
  generate.scratch_dir = scratch.string();
  generate.write_tsdb = options.write_tsdb;
  generate.block_encoder = options.block_encoder;
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
  fs::remove_all(scratch, ec);
  return first_error;
}

}  // namespace diagnose::campaign
