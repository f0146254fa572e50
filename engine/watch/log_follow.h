// Incremental follower of one growing job log: reads only what was appended since the last poll
// (by byte offset) and keeps the few facts `watch` needs to decide *when* to diagnose: header keys,
// the last completed step, the steady-state TGS window, and the JOB SUMMARY status. Deliberately
// minimal (maxtext-slurm-formats.md §2.1, §2.5 step line, §2.7): full parsing is triage's job, and
// this file is the one place to swap for engine/log when that lands.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace diagnose {

struct LogProgress {
  // Header (unlabelled lines at the top of the log).
  std::string job_id;
  std::string job_name;
  std::string model;
  std::string nodelist;
  std::vector<std::string> hosts;           // expanded nodelist
  int nnodes = 0;
  std::string passthrough;                  // PASSTHROUGH_ARGS as printed
  // Training progress.
  std::optional<int64_t> last_step;         // highest `completed step:` seen on any task
  int64_t step_lines = 0;
  double steady_tgs_sum = 0;                // first record of each step in [5, 14]
  double steady_mfu_sum = 0;
  int steady_steps = 0;
  int steady_mfu_steps = 0;
  // JOB SUMMARY.
  bool summary_seen = false;
  std::string summary_status;               // SUCCESS | FAILED
  int exit_code = 0;
  std::string reason;
};

class LogFollower {
 public:
  explicit LogFollower(std::string path) : path_(std::move(path)) {}

  // Reads everything appended since the previous call. Returns whether anything new that counts
  // as progress (a new highest step, or the summary) arrived. kNotFound when the log is gone.
  StatusOr<bool> Poll();

  const LogProgress& progress() const { return progress_; }
  uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  bool ConsumeLine(const std::string& line);

  std::string path_;
  uint64_t offset_ = 0;
  uint64_t inode_ = 0;
  std::string carry_;                       // an incomplete last line, cut at a bound
  bool in_summary_ = false;
  std::vector<int64_t> steady_seen_;        // steps 5..14 already counted (at most 10)
  LogProgress progress_;
};

// PASSTHROUGH_ARGS text -> key=value pairs (values may be quoted; bare words are kept with "").
std::vector<std::pair<std::string, std::string>> SplitPassthrough(const std::string& text);

}  // namespace diagnose
