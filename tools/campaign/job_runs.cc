#include "tools/campaign/job_runs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/core/subprocess.h"

namespace fs = std::filesystem;

namespace diagnose::campaign {

StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path.string() + ": cannot read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

StatusOr<ScoredJobs> LoadScoredJobs(const fs::path& dir, const std::string& runs_name) {
  ASSIGN_OR_RETURN(std::string truth_text, ReadFile(dir / "truth.json"));
  ASSIGN_OR_RETURN(std::vector<JobTruth> all, TruthFromJson(truth_text, (dir / "truth.json").string()));
  ScoredJobs jobs;
  for (auto& t : all)
    if (t.scored) jobs.truths.push_back(std::move(t));
  if (jobs.truths.empty()) return InvalidArgumentError((dir / "truth.json").string() + ": no scored jobs");
  jobs.runs = dir / runs_name;
  std::error_code ec;
  fs::create_directories(jobs.runs, ec);
  if (ec) return InternalError(jobs.runs.string() + ": cannot create: " + ec.message());
  return jobs;
}

CommandRun RunJobCommand(const std::vector<std::string>& argv, const fs::path& runs, const std::string& job_id,
                         const std::string& suffix, int timeout_seconds) {
  CommandRun run;
  auto started = std::chrono::steady_clock::now();
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.stdout_path = (runs / (job_id + suffix)).string();
  spawn.stderr_path = (runs / (job_id + ".err")).string();
  auto child = ChildProcess::Spawn(spawn);
  if (!child.ok()) {
    run.status = child.status();
    return run;
  }
  auto code = child->Wait(std::chrono::seconds(timeout_seconds));
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!code.ok()) {
    run.status = UnavailableError(argv[0] + ": " + code.status().message());
    return run;
  }
  if (*code != 0) {
    auto err = ReadFile(spawn.stderr_path);
    std::string first = err.ok() ? err->substr(0, std::min<size_t>(err->find('\n'), 200)) : "";
    run.status = InternalError(fs::path(argv[0]).filename().string() + " exit " + std::to_string(*code) +
                               (first.empty() ? "" : ": " + first));
    return run;
  }
  auto text = ReadFile(spawn.stdout_path);
  if (!text.ok()) {
    run.status = text.status();
    return run;
  }
  run.output = std::move(*text);
  return run;
}

void ForEachParallel(size_t n, int parallel, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < n;) fn(i);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::clamp(parallel, 1, 16); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
}

}  // namespace diagnose::campaign
