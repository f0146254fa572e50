// Builders for realistic maxtext-slurm job outputs in a temp dir (shapes from
// maxtext-slurm-formats.md §1-§2), used by the triage, job and report tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace diagnose::testing {

// A temporary outputs dir, removed (recursively) on destruction.
class TempOutputs {
 public:
  TempOutputs();
  ~TempOutputs();
  const std::string& path() const { return path_; }
  std::string Write(const std::string& rel, const std::string& content) const;   // returns the abs path
  void Symlink(const std::string& target, const std::string& rel_link) const;
  void Mkdir(const std::string& rel) const;

 private:
  std::string path_;
};

// Compressed Slurm hostlist for hosts prefix<first>..prefix<first+n-1>.
std::string CompressedNodelist(const std::string& prefix, int first, int n);

struct JobSpec {
  std::string id = "9101";
  std::string name = "JAX-llama2-70b";
  int ntasks = 24;
  std::string host_prefix = "gpu";
  int host_first = 400;
  bool ray = false;
  std::string passthrough = "steps=400 per_device_batch_size=2 jax_distributed_heartbeat_timeout_seconds=900";
  std::string artifact = "artifact_20260224_180102_ab12";
};

// Builds a Slurm job log line by line.
class LogBuilder {
 public:
  explicit LogBuilder(JobSpec spec);
  const JobSpec& spec() const { return spec_; }
  std::string Host(int task) const;
  std::string Label(int task) const;   // "%*d: " with the width of ntasks-1

  LogBuilder& Header();                // header block, provenance, stage table
  LogBuilder& Setup();                 // per-task env dumps, Config params, NCCL wave, barrier, memstats
  LogBuilder& NcclWave();              // one MSCCL++ warning per task and GPU
  LogBuilder& Step(int64_t step, double seconds, double tgs, int only_task = -1);
  LogBuilder& Steps(int64_t first, int64_t last, double seconds, double tgs);
  LogBuilder& Line(int task, const std::string& text);   // labelled (task >= 0) or raw (task < 0)
  LogBuilder& Summary(const std::string& status_line, const std::string& wall);
  std::string str() const { return out_; }

 private:
  JobSpec spec_;
  std::string out_;
};

std::string JobDirName(const JobSpec& spec);   // "<id>-<name>"

// Writes <outputs>/<id>-<name>.log and the job dir with its `log` symlink; returns the log path.
std::string WriteSlurmJob(const TempOutputs& out, const JobSpec& spec, const std::string& log);

std::string RulesDir();   // <source>/rules

}  // namespace diagnose::testing
