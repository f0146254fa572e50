// A fixture scenario: the declarative description (fixtures/scenarios/*.yaml) of one job that
// fixturegen turns into a launcher-layout job directory. Field meanings are documented in
// fixtures/README.md; the `expect` block is opaque here and read by the tests.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/core/status.h"
#include "tools/fixturegen/trace_writer.h"

namespace diagnose::fixturegen {

enum class Launcher { kSlurm, kK8s, kLocal };

struct StepRange {
  int64_t first = 0;
  int64_t last = 0;   // inclusive
  bool Contains(int64_t step) const { return step >= first && step <= last; }
};

struct Phase {
  StepRange steps;
  double tgs = 0;                 // Tokens/s/device
  double tgs_end = 0;             // >0: TGS drifts linearly from tgs to tgs_end across the range
};

// A time window given either as step numbers (resolved through the timeline) or as offsets/absolute
// times. Empty = the whole job.
struct Window {
  std::optional<StepRange> steps;
  std::optional<double> from_time;   // epoch seconds
  std::optional<double> to_time;
  std::optional<int64_t> after_step;   // starts 5 s after this step ends (open-ended unless `to`)
};

struct Fault {
  std::string kind;                  // see kFaultKinds in scenario.cc
  std::vector<std::string> hosts;    // resolved host names ("all" expands)
  Window window;
  double rate = 0;                   // events/s (counters) or the fault's magnitude (gauges)
  std::vector<int> devices;          // RDMA device / GPU indices; empty = all
  int line = 0;                      // scenario line, for messages
};

// Raw lines inserted into the job log at an anchor.
struct LogEvent {
  std::string anchor;                // job_start | after_stage:<stage> | before_memstats | before_step0 |
                                     // after_step:<n> | end
  int64_t anchor_step = -1;
  std::vector<int> tasks;            // empty = unlabelled batch-script lines
  bool all_tasks = false;
  bool trainer = true;               // for RAY=1: line comes from the trainer (Ray prefix, worker log)
  std::vector<std::string> lines;    // {host} {task} {job_id} {date_mmdd} {time} are substituted
};

struct StageOutcome {
  std::string result = "ok";        // ok | timeout | failed
  double elapsed = 0;               // seconds
  int exit_code = 1;                // for failed
  std::vector<std::string> lines;   // labelled (all tasks) lines printed inside the stage
};

struct Heartbeat {
  double time = 0;                  // crash time, epoch seconds
  std::vector<int> accused;
  std::vector<int> own_death;       // accused tasks that log their own E/F lines
  int coordinator = 0;
};

struct Summary {
  bool present = true;
  std::string status = "SUCCESS";   // SUCCESS | FAILED
  int exit_code = 0;
  std::string reason;               // after the em dash
  bool colour = false;
};

// The JAX profiler's window: <job>/<run>/tensorboard/plugins/profile/<timestamp>/, one file per
// host (1-node/proc) or per GPU (1-GPU/proc), the same kernels on every GPU and step.
struct ProfileWindow {
  std::string run;
  std::string timestamp;                 // YYYY_MM_DD_HH_MM_SS
  TraceWindowSpec spec;                  // hosts and GPUs per host come from the job
};

struct Scenario {
  std::string path;
  std::string description;
  std::string job_id;
  std::string job_name;
  std::string model;
  std::string model_alias;
  std::string exp_tag;
  Launcher launcher = Launcher::kSlurm;
  std::vector<std::string> passthrough;
  bool ray = false;
  double start_time = 0;            // epoch seconds of the batch script's start
  uint64_t seed = 1;
  std::vector<std::string> hosts;   // task order
  std::string gpu_name = "AMD Instinct MI355X";
  int gpus_per_node = 8;

  // training
  bool training = true;             // false: the job dies before the training stage
  int64_t total_steps = 0;          // steps=T
  int64_t first_step = 0;           // >0: restored from checkpoint first_step-1
  int64_t last_step = -1;           // last completed step; -1 = no step at all
  std::string stop_phase = "steps"; // before_memstats | before_step0 | steps
  bool moe = false;
  bool single_replica_restore = false;
  int seq_len = 8192;
  double per_device_batch_size = 12;
  double step0_seconds = 150;
  double init_seconds = 240;        // training stage start -> first step begins
  double step_jitter = 0.0012;      // relative spread (sd) of each step's TGS: training.step_jitter_pct / 100
  double tflops_per_tgs = 0.06413;  // TFLOP/s/device per token/s/device
  double peak_tflops = 2500;
  std::vector<Phase> phases;
  std::map<int64_t, double> pinned_seconds;  // step -> exact `seconds:` (published log lines)
  int64_t checkpoint_period = 0;    // 0 = checkpointing off
  double checkpoint_save_seconds = 300;
  int checkpoint_writers = 8;       // tasks of data-parallel replica 0 (they write the checkpoint)
  double loss_start = 10.8, loss_end = 5.5;
  double lb_loss = 0.0105;          // MoE load-balance loss baseline
  std::optional<int64_t> lb_loss_change_step;
  double lb_loss_after = 0.0;
  int extra_nccl_waves = 0;
  // Training dynamics (training-stability fixtures). Divergence: from loss_diverge_step the loss
  // grows by loss_diverge_rate per step (multiplicative), the raw grad norm with it.
  std::optional<int64_t> loss_diverge_step;
  double loss_diverge_rate = 0.06;
  std::optional<int64_t> loss_nan_step;        // loss and grad norms are NaN from this step on
  std::vector<int64_t> grad_spike_steps;       // raw (pre-clipping) grad norm x grad_spike_factor
  double grad_spike_factor = 20;
  double grad_clip = 0;                        // >0: the logged (clipped) grad norm is min(raw, grad_clip)
  std::map<std::string, StageOutcome> stages;   // preflight, pull, ecc, train
  // The trainers' `completed step` lines for these steps never reach the log (a stalled stdout pipe,
  // a full log volume): training, the TSDB and TensorBoard go on as usual.
  std::optional<StepRange> log_gap;
  double hang_seconds = 0;          // silence after the last step before the job ends
  // hang | train: what the GPUs do while the log is silent after the last step (train = the log
  // stopped but training went on). Empty: train when a heartbeat kill ends the job, else hang.
  std::string silence_activity;
  std::optional<Heartbeat> heartbeat;
  Summary summary;
  std::map<int, int> node_exits;    // task -> exit code
  bool running = false;             // job still running: no summary, fresh mtime
  std::string log_symlink = "ok";   // ok | dangling | none (prolog kill: dir without log)
  bool write_log = true;
  int ray_log_lag_steps = 0;        // RAY=1: Slurm log stops this many steps before the worker logs
  double mtime_skew_seconds = 0;    // finished job: file mtimes are its end plus this (a skewed clock)

  // metrics
  bool tsdb = false;
  // blocks: persisted blocks (the launcher's snapshot); wal: only a write-ahead log, the TSDB a job
  // shorter than two hours leaves when its Prometheus dies with it (no block was ever cut).
  std::string tsdb_format = "blocks";
  double node_hw_interval = 10;
  // node_hw's scrape interval changes once the given step has ended (a Prometheus reload mid-job):
  // {step, interval}. Unset: one interval for the whole job.
  std::optional<std::pair<int64_t, double>> node_hw_interval_from;
  double ray_interval = 5;
  double missed_scrape_fraction = 0.004;
  int rdma_devices = 8;
  // ionic exports the full retransmit / ACK-timeout / CNP / CCL families; bnxt_re and mlx5 only the
  // standard InfiniBand byte/packet counters and the port state.
  std::string nic_vendor = "ionic";
  // Per-host offsets (drawn once per host, +-spread) so hosts are not clones of each other.
  double power_spread_w = 0;
  double temperature_spread_c = 0;
  double clock_spread_mhz = 0;
  // The GPU model's own levels (the defaults are the MI355X's): training power, the core clock it
  // holds when cool, and its temperature at that power. Every other level (idle, busy-wait, a
  // checkpoint's, the throttled clock) scales with them, as they do between models. Unset
  // temperature keeps the MI355X's 0.056 °C per W above a 34 °C inlet.
  double gpu_power_w = 914;
  double gpu_sclk_mhz = 2400;
  std::optional<double> gpu_temperature_c;
  // The workload's own training power when it differs from the model's (a memory-bound job draws
  // less): only training power follows it; idle, busy-wait and checkpoint power stay the model's.
  std::optional<double> training_power_w;
  std::vector<std::string> net_devices = {"eth0", "ens9np0"};
  // Exporters that report FQDNs: targets (instance labels) <host>.<instance_domain>:<port>, and with
  // host_label_fqdn the node_hw `host` label too (an exporter started with `hostname`, not
  // `hostname -s`). The log keeps the short names Slurm uses.
  std::string instance_domain;
  bool host_label_fqdn = false;
  // How node_hw's series name their node: `host` (a host label, the default); `instance` (no host
  // label, only the target, as Ray's series do); `ip` (no host label and the target scraped by its
  // address, <ip>:9400; only Ray's series, which carry both instance and ip, tie that ip to a name).
  std::string node_hw_names = "host";
  // false: Ray's metrics agent exported nothing (no ray_* series, no Ray target), as when the job's
  // Prometheus scrapes only node_hw: nothing in the TSDB ties a node_hw address to a node name.
  bool ray_metrics = true;
  // Nodes addressed by IPv6 (fd00:194:<subnet>::<n>): Ray's `ip` label, the log's bind= lines, and a
  // target scraped by address, written [<ip>]:<port> as Prometheus does.
  bool ipv6 = false;
  std::optional<StepRange> tb_gap;             // the tb plugin emits nothing (real or fill) for these steps
  // The snapshot ends 10 s after this step ends, before the job does (Prometheus died, or the
  // snapshot was taken while the job still ran): no sample of any job after it.
  std::optional<int64_t> tsdb_end_step;
  std::vector<Fault> faults;
  std::vector<LogEvent> events;

  std::optional<ProfileWindow> profile;

  YAML::Node expect;
};

// Reads and validates a scenario; errors name path:line:col.
StatusOr<Scenario> LoadScenario(const std::string& path);
StatusOr<Scenario> ParseScenario(const std::string& yaml_text, const std::string& path_for_messages);

std::string JobDirName(const Scenario& s);   // <JOB_ID>-<JOB_NAME>
int TaskLabelWidth(int ntasks);               // digits of ntasks-1 (min 1)

}  // namespace diagnose::fixturegen
