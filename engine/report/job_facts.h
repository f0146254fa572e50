// JobFacts: everything triage learns from a job's logs, as plain data. Produced once by triage;
// playbooks read it by name through its JSON form (e.g. `facts.heartbeat.accused_hosts`), the
// sweep decision rules and the reports read the struct. Field names are the JSON keys.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/iso_time.h"
#include "engine/core/json.h"
#include "engine/core/log_ref.h"
#include "engine/report/job_status.h"

namespace diagnose {

// Wall-clock instant reconstructed from a log. absl lines carry no year; `year_source` says where
// the year came from ("artifact-id", "iso-timestamp", "log-mtime", "tsdb") so a report can caveat it.
struct LogTime {
  int64_t epoch = 0;          // seconds since the Unix epoch, UTC
  std::string text;           // as printed, e.g. "0224 19:21:00"
  std::string year_source;
};
// The JSON form adds `iso` (ISO-8601 UTC of epoch) so playbook summaries and reports print a time a
// reader can compare across files; `text` stays the stamp exactly as the log printed it.
// ISO-8601 UTC of the instant, "" when the log gave none.
inline std::string IsoOf(const LogTime& t) { return t.epoch > 0 ? IsoUtc(static_cast<double>(t.epoch)) : ""; }
inline void to_json(nlohmann::json& j, const LogTime& t) {
  j = {{"epoch", t.epoch}, {"text", t.text}, {"year_source", t.year_source}};
  if (t.epoch > 0) j["iso"] = IsoOf(t);
}
inline void from_json(const nlohmann::json& j, LogTime& t) {
  t.epoch = j.value("epoch", int64_t{0});
  t.text = j.value("text", std::string());
  t.year_source = j.value("year_source", std::string());
}

struct JobHeader {
  std::string job_id;
  std::string job_name;
  std::string model_name;
  std::string model_alias;
  std::string exp_tag;
  int nnodes = 0;
  std::string nodelist;                     // compressed, as printed
  std::vector<std::string> hosts;           // expanded; index = task id = NODE_RANK
  std::map<std::string, std::string> passthrough;  // PASSTHROUGH_ARGS, key=value ("_env_X" kept)
  std::optional<int> coordinator_port;
  std::optional<int> ray_port;
  bool ray = false;                         // RAY=1 job (Ray driver prefixes or RAY_PORT seen)
  std::string launcher = "slurm";           // slurm | k8s | local
  std::string gpu_device;                   // the GPU model the log names (the MFU patch's gpu=), "" when none
  // address -> host, from the tasks' own lines ("[Ray] Starting ... (bind=<ip>)", k8s "Starting on
  // <host> (<ip>)"): names an exporter scraped by address when no series does. An address two
  // hosts claimed is left out. Not in the report.
  std::map<std::string, std::string> node_addresses;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(JobHeader, job_id, job_name, model_name, model_alias,
                                                exp_tag, nnodes, nodelist, hosts, passthrough,
                                                coordinator_port, ray_port, ray, launcher, gpu_device)

// One logical training step (the first record seen for that step number, normally task 0's).
struct StepRecord {
  int64_t step = 0;
  double seconds = 0;
  double tflops_per_device = 0;
  std::optional<double> mfu_pct;
  double tokens_per_sec_per_device = 0;   // TGS
  int64_t total_weights = 0;
  double loss = 0;
  std::optional<double> mtp_loss;
  int task = -1;
  LogRef where;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StepRecord, step, seconds, tflops_per_device, mfu_pct,
                                                tokens_per_sec_per_device, total_weights, loss,
                                                mtp_loss, task, where)

struct MemstatsRecord {
  std::string label;        // "After params initialized"
  int task = -1;
  double used_gb = 0;
  double limit_gb = 0;
  double pct = 0;
  std::string device;
  LogRef where;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MemstatsRecord, label, task, used_gb, limit_gb, pct,
                                                device, where)

struct JobSummary {
  bool present = false;
  std::string status;       // "SUCCESS" | "FAILED"
  int exit_code = 0;
  std::string reason;       // text after the em dash, if any
  int64_t wall_seconds = 0;
  LogRef where;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(JobSummary, present, status, exit_code, reason,
                                                wall_seconds, where)

struct NodeExit {
  int task = -1;
  std::string host;
  int exit_code = 0;
  LogRef where;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NodeExit, task, host, exit_code, where)

struct HeartbeatFacts {
  bool present = false;
  std::vector<int> accused_tasks;
  std::vector<std::string> accused_hosts;        // same order as accused_tasks
  std::vector<int> self_reported_death_tasks;    // accused tasks that logged their own E/F line
  std::optional<LogTime> crash_time;             // from the accused/coordinator F/E lines
  int64_t timeout_seconds = 0;                   // jax_distributed_heartbeat_timeout_seconds
  std::optional<LogTime> heartbeat_stop_time;    // crash_time - timeout
  std::optional<int64_t> last_step_before;       // last completed step before the error
  std::vector<LogRef> evidence;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HeartbeatFacts, present, accused_tasks, accused_hosts,
                                                self_reported_death_tasks, crash_time, timeout_seconds,
                                                heartbeat_stop_time, last_step_before, evidence)

// A classified log event: a failure-class match or a notable line (traceback, OOM, NCCL, HSA, XLA).
struct LogEvent {
  std::string kind;          // failure class id or event kind
  int task = -1;
  std::string host;
  std::optional<LogTime> time;
  LogRef where;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LogEvent, kind, task, host, time, where)

struct ClassMatch {
  std::string failure_class;  // id from rules/triage/failure-signatures.yaml
  int priority = 0;
  std::string stage;           // infrastructure | training | job
  int task = -1;
  std::string host;
  LogRef where;
  int64_t count = 1;           // how many lines matched
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ClassMatch, failure_class, priority, stage, task, host,
                                                where, count)

struct TgsPhase {
  int64_t first_step = 0;
  int64_t last_step = 0;
  double mean_tgs = 0;
  double stddev_tgs = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TgsPhase, first_step, last_step, mean_tgs, stddev_tgs)

// A stretch of steps clearly below the job's healthy level: a run of adjacent phases each at least
// the material-dip rule's depth below `healthy_tgs` (tgs_analysis.h states the rule).
struct TgsDip {
  int64_t first_step = 0;
  int64_t last_step = 0;
  double mean_tgs = 0;      // checkpoint spikes excluded
  double depth_pct = 0;     // below healthy_tgs
  int64_t steps = 0;        // non-spike steps inside
  double seconds = 0;       // wall time of its steps
  double t_stat = 0;        // depth against the job's own step noise: depth / (noise / sqrt(steps))
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TgsDip, first_step, last_step, mean_tgs, depth_pct, steps, seconds,
                                                t_stat)

struct TgsAnalysis {
  // stable | constant-drop | phased | gradual-decline | periodic-checkpoint-spikes | one-time-drop |
  // insufficient-data
  std::string pattern = "insufficient-data";
  std::vector<TgsPhase> phases;
  double steady_tgs = 0;        // mean of steps 5-14
  double recent_tgs = 0;        // mean of the last 10 steps
  double degradation_pct = 0;   // (steady - recent) / steady * 100
  std::optional<int64_t> decline_onset_step;   // gradual-decline only
  // Where throughput first left its healthy level, whatever the pattern: the decline onset, or the
  // first step of the first phase clearly below the best phase. Lets a playbook place a slowdown
  // in time without depending on which pattern label triage chose.
  std::optional<int64_t> degradation_onset_step;
  std::vector<int64_t> spike_steps;            // steps whose step time spiked (checkpoints etc.)
  // The level the job ran at when nothing slowed it (the best phase) and its step-to-step noise (%
  // of that level, robust: checkpoint spikes and level shifts do not inflate it).
  double healthy_tgs = 0;
  double noise_pct = 0;
  // Every material dip, whatever the pattern: a completed job with one had a symptom.
  std::vector<TgsDip> dips;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TgsAnalysis, pattern, phases, steady_tgs, recent_tgs,
                                                degradation_pct, decline_onset_step, degradation_onset_step,
                                                spike_steps, healthy_tgs, noise_pct, dips)

// The one figure every view calls a job's healthy TGS: the steady window's mean, which the job line
// of `diagnose`, the watch line and degradation_pct are reckoned from; the best phase where the
// steady window measured nothing; 0 when neither was measured.
inline double HealthyTgs(const TgsAnalysis& tgs) { return tgs.steady_tgs > 0 ? tgs.steady_tgs : tgs.healthy_tgs; }

struct Progress {
  std::optional<int64_t> first_step;
  std::optional<int64_t> last_step;
  std::optional<int64_t> total_steps;          // steps=T from PASSTHROUGH_ARGS
  double step_time_seconds = 0;                // mean after the first 5 steps
  double sum_step_seconds = 0;
  std::optional<double> unexplained_gap_seconds;   // wall - sum(seconds) - setup allowance
  std::optional<int64_t> checkpoint_period;
  std::optional<int64_t> last_checkpoint_step;
  std::optional<int64_t> progress_lost_steps;
  std::optional<double> remaining_seconds;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Progress, first_step, last_step, total_steps,
                                                step_time_seconds, sum_step_seconds,
                                                unexplained_gap_seconds, checkpoint_period,
                                                last_checkpoint_step, progress_lost_steps,
                                                remaining_seconds)

struct RestoreFacts {
  bool restored = false;
  std::optional<int64_t> restore_step;     // step restored from
  bool single_replica_restore = false;     // enable_single_replica_ckpt_restoring=true
  LogRef where;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RestoreFacts, restored, restore_step,
                                                single_replica_restore, where)

struct TunnelFacts {
  std::string head_host;
  std::optional<int> prometheus_port;
  LogRef where;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TunnelFacts, head_host, prometheus_port, where)

// When the job ran, as its log tells it: what a store holding more than this job (a live or fleet
// endpoint, where no block metadata bounds the data) is asked about. Each end says its source.
struct RunWindow {
  std::optional<int64_t> start;   // epoch seconds
  std::string start_source;       // "end-minus-wall" | "artifact-id" (the submit: an early bound)
  std::optional<int64_t> end;
  std::string end_source;         // "crash-time" | "log-mtime" | "now" (running) | "start-plus-wall"
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunWindow, start, start_source, end, end_source)

struct JobFacts {
  std::string id;
  std::string log_path;
  std::string job_dir;
  JobStatus status = JobStatus::kUnknownDeath;
  bool soft_success = false;
  std::string failure_class;               // primary class ("" when none)
  std::vector<ClassMatch> classes;         // every match, primary first
  JobHeader header;
  std::map<std::string, std::string> config;   // `Config param` values
  std::vector<StepRecord> steps;               // one per logical step, ascending
  std::vector<MemstatsRecord> memstats;
  bool barrier_passed = false;
  RestoreFacts restore;
  std::vector<int64_t> checkpoint_saves;
  int nccl_init_bursts = 0;                    // waves of communicator-init warnings
  JobSummary summary;
  std::vector<NodeExit> node_exits;
  TunnelFacts tunnel;
  HeartbeatFacts heartbeat;
  std::vector<LogEvent> events;                // notable lines, bounded (first N per kind)
  Progress progress;
  TgsAnalysis tgs;
  std::string oom_allocation;                  // "221.71GiB" when a GPU OOM names it
  std::vector<std::string> worker_logs;        // Ray worker .out files read
  std::vector<std::string> notes;              // what triage could not determine, caveats
  // How far the log's mtime lies in the future of this host's clock (the file server's clock is
  // ahead); 0 when the clocks agree. Its age then says nothing about whether the job still runs.
  double log_clock_skew_seconds = 0;
  RunWindow run_window;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(JobFacts, id, log_path, job_dir, status, soft_success,
                                                failure_class, classes, header, config, steps,
                                                memstats, barrier_passed, restore, checkpoint_saves,
                                                nccl_init_bursts, summary, node_exits, tunnel,
                                                heartbeat, events, progress, tgs, oom_allocation,
                                                worker_logs, notes, log_clock_skew_seconds, run_window)

}  // namespace diagnose
