// What `campaign score` and `campaign alerts` share: the scored jobs of a generated campaign, and
// one diagnose command per job run in parallel with its output kept in DIR/<runs>/.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "tools/campaign/truth.h"

namespace diagnose::campaign {

StatusOr<std::string> ReadFile(const std::filesystem::path& path);

// The jobs truth.json marks as scored (a restore case's baseline is not), and DIR/<runs_name>
// created for their outputs.
struct ScoredJobs {
  std::vector<JobTruth> truths;
  std::filesystem::path runs;
};
StatusOr<ScoredJobs> LoadScoredJobs(const std::filesystem::path& dir, const std::string& runs_name);

// argv run with stdout to <runs>/<job><suffix> and stderr beside it. The stdout text on exit 0;
// otherwise an error with the exit code and stderr's first line.
struct CommandRun {
  Status status;
  std::string output;
  double seconds = 0;
};
CommandRun RunJobCommand(const std::vector<std::string>& argv, const std::filesystem::path& runs,
                         const std::string& job_id, const std::string& suffix, int timeout_seconds);

// fn(i) for i in [0, n) on `parallel` threads.
void ForEachParallel(size_t n, int parallel, const std::function<void(size_t)>& fn);

}  // namespace diagnose::campaign
