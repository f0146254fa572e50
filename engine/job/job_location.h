// Resolving a job reference (id, directory, log file) to its files, per the launcher's layout
// (maxtext-slurm-formats.md §1). Knows nothing about parsing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace diagnose {

struct JobLocation {
  std::string id;                 // "8308", "k8s-20260310-080957-475e", "local_20260310_080957_abcd"
  std::string name;               // JOB_DIR basename, e.g. "8308-JAX-mixtral-8x22b-24N-TGS_2610.123"
  std::string outputs_dir;        // the workspace the job lives in
  std::optional<std::string> log_path;     // <outputs>/<JOB_DIR>.log (absent: prolog kill, dangling)
  std::optional<std::string> job_dir;      // <outputs>/<JOB_DIR>/
  // The dir's `log` symlink exists but its target does not: the job was submitted and its log is
  // not written yet (or was removed). Absent log without this: the job died in the prolog.
  bool log_link_dangles = false;
  std::optional<std::string> prometheus_dir;   // <job_dir>/prometheus when it exists
  std::vector<std::string> rank_logs;      // k8s rank-N.log, ordered by N
  std::vector<std::string> ray_worker_logs;    // worker-*.out under ray_logs/<host>/[session_*/logs/]
  std::vector<std::string> notes;          // e.g. "log symlink dangles"
};

// `ref` is a job id, a job directory or a log file. `outputs_dir` is used for ids; empty means
// $DIAGNOSE_OUTPUTS, else ./outputs. An id matching several jobs is kInvalidArgument listing them.
StatusOr<JobLocation> ResolveJob(const std::string& ref, const std::string& outputs_dir);

// The outputs directory that `--outputs` / $DIAGNOSE_OUTPUTS / ./outputs designate.
std::string DefaultOutputsDir(const std::string& flag_value);

// An entry of the outputs dir named like a job that cannot be followed (a `log` link or a job dir
// pointing outside the outputs dir): `watch` ignores it, `summary` says so in the job's line.
struct RefusedJob {
  std::string id;
  std::string name;
  Status status;
};

// Every job under an outputs dir (dirs with a `log` symlink, and logs), for `watch` and `summary`.
// Entries that cannot be followed go to `refused` when given.
StatusOr<std::vector<JobLocation>> ListJobs(const std::string& outputs_dir, std::vector<RefusedJob>* refused = nullptr);

}  // namespace diagnose
