#include "tools/fixturegen/scenario.h"

#include <algorithm>
#include <ctime>
#include <iomanip>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/core/yaml_reader.h"
#include "engine/triage/hostlist.h"

namespace diagnose::fixturegen {
namespace {

const std::set<std::string> kFaultKinds = {
    "rdma_retx",          // hw_rdma_tx_retx_pkts/bytes + ccl retx
    "rdma_ack_timeout",   // hw_rdma_tx_ack_timeout_total (+ccl)
    "rdma_retry_exceeded",
    "rdma_cnp",           // congestion notification bursts (rx/tx cnp, rx ecn)
    "rdma_cqe_error",
    "rdma_port_down",     // hw_rdma_port_state 0 and no traffic on the devices in the window
    "tcp_retx",           // hw_tcp_retransmits_total storm
    "thermal_throttle",   // temperature >100 C and lower sclk
    "host_oom",           // hw_oom_kills_total step + ray_node_mem_used near total
    "gpu_hang",           // util 100 %, power ~300 W (per host; the job-wide hang uses hang_seconds)
    "gpu_idle",           // 0 % util at idle power: these GPUs never entered the collective
    "node_death",         // targets go down, no samples after the window start
    "ras_errors",         // hw_gpu_ras_umc_ce/ue increments
    "dmesg_errors",       // hw_dmesg_gpu_errors_total increments
    "ghost_exporter",     // node_hw samples flatline (same values, constant scrape duration)
    "missed_scrapes",     // up == 0 and no samples in the window
    "procs_running_offset",  // thread leak: hw_procs_running + rate
    "io_pressure",        // hw_io_pressure_* high
    "ras_uncorrectable",  // hw_gpu_ras_umc_ue increments (and the correctable errors that come with them)
    "pcie_correctable",   // hw_gpu_pcie_correctable_total growth (AER correctable: replayed TLPs)
    "driver_fault",       // GPU plugin cycles alternate ~12 s (killed) / <3 s, GPU series gaps, dmesg errors
    "vram_pressure",      // hw_gpu_vram_used_bytes / ray_node_gram_used at `rate` x VRAM total while busy
    "gpu_hot",            // GPUs run `rate` C hotter with the clocks unchanged (no throttling)
    "gpu_plugin_absent",  // the GPU plugin exited 99 on these hosts: no hw_gpu_* series in the window
    "host_mem_ramp",      // ray_node_mem_used climbs linearly by rate x total over the window
    "rdma_stale_retry_exceeded",   // retry-exhaustion lifetime total `rate` from before the job, flat in it
    "counter_reset",      // driver reload / reboot at the window start: every node_hw counter restarts from 0
    "exporter_down",      // node_hw's exporter down in the window (up == 0, no hw_* sample); Ray still reports
};

// Families only ionic NICs export; on bnxt_re / mlx5 a fault on them would be invisible, so it is an error.
const std::set<std::string> kIonicOnlyFaults = {"rdma_retx", "rdma_ack_timeout", "rdma_retry_exceeded", "rdma_cnp",
                                                "rdma_cqe_error", "rdma_stale_retry_exceeded"};

// The scenario format's getters on top of the shared positioned reader: optional keys read
// in place, step ranges and UTC times.
class Reader : public YamlReader {
 public:
  using YamlReader::YamlReader;

  template <typename T>
  Status Get(const YAML::Node& map, const std::string& key, T* out) const {
    YAML::Node node = map[key];
    if (!node) return Status::Ok();
    try {
      *out = node.as<T>();
    } catch (const YAML::Exception& e) {
      return Error(node, "'" + key + "' has the wrong type");
    }
    return Status::Ok();
  }

  Status GetStrings(const YAML::Node& map, const std::string& key, std::vector<std::string>* out) const {
    YAML::Node node = map[key];
    if (!node) return Status::Ok();
    out->clear();
    if (node.IsScalar()) {
      out->push_back(node.as<std::string>());
      return Status::Ok();
    }
    if (!node.IsSequence()) return Error(node, "'" + key + "' must be a string or a list of strings");
    for (const auto& item : node) {
      if (!item.IsScalar()) return Error(item, "'" + key + "' entries must be strings");
      out->push_back(item.as<std::string>());
    }
    return Status::Ok();
  }

  Status GetInts(const YAML::Node& map, const std::string& key, std::vector<int>* out) const {
    YAML::Node node = map[key];
    if (!node) return Status::Ok();
    out->clear();
    if (!node.IsSequence()) return Error(node, "'" + key + "' must be a list of integers");
    for (const auto& item : node) {
      try {
        out->push_back(item.as<int>());
      } catch (const YAML::Exception&) {
        return Error(item, "'" + key + "' entries must be integers");
      }
    }
    return Status::Ok();
  }

  StatusOr<double> Time(const YAML::Node& node) const {
    std::string text = node.as<std::string>();
    std::tm tm{};
    std::istringstream in(text);
    in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
    if (in.fail()) return Error(node, "time '" + text + "' is not YYYY-MM-DDTHH:MM:SSZ");
    std::string rest;
    in >> rest;
    if (rest != "Z") return Error(node, "time '" + text + "' must end with Z (UTC)");
    return static_cast<double>(timegm(&tm));
  }

  StatusOr<StepRange> Steps(const YAML::Node& node) const {
    std::string text = node.as<std::string>();
    StepRange r;
    auto dash = text.find('-');
    try {
      r.first = std::stoll(text.substr(0, dash));
      r.last = dash == std::string::npos ? r.first : std::stoll(text.substr(dash + 1));
    } catch (const std::exception&) {
      return Error(node, "step range '" + text + "' is not N or N-M");
    }
    if (r.last < r.first) return Error(node, "step range '" + text + "' is descending");
    return r;
  }
};

std::string PassthroughValue(const std::vector<std::string>& args, const std::string& key) {
  for (const auto& a : args) {
    if (a.rfind(key + "=", 0) == 0) return a.substr(key.size() + 1);
  }
  return "";
}

Status ParseWindow(const Reader& r, const YAML::Node& node, Window* window) {
  if (node["steps"]) {
    ASSIGN_OR_RETURN(StepRange steps, r.Steps(node["steps"]));
    window->steps = steps;
  }
  if (node["after_step"]) {
    try {
      window->after_step = node["after_step"].as<int64_t>();
    } catch (const YAML::Exception&) {
      return r.Error(node["after_step"], "after_step must be a step number");
    }
  }
  if (node["from"]) {
    ASSIGN_OR_RETURN(double t, r.Time(node["from"]));
    window->from_time = t;
  }
  if (node["to"]) {
    ASSIGN_OR_RETURN(double t, r.Time(node["to"]));
    window->to_time = t;
  }
  if ((window->steps ? 1 : 0) + (window->from_time ? 1 : 0) + (window->after_step ? 1 : 0) > 1)
    return r.Error(node, "a window starts with one of 'steps', 'from' or 'after_step'");
  return Status::Ok();
}

Status ReadJob(const Reader& r, const YAML::Node& root, Scenario& s) {
  YAML::Node job = root["job"];
  if (!job) return r.Error(root, "missing 'job'");
  RETURN_IF_ERROR(r.OnlyKeys(job, {"id", "name", "model", "alias", "exp_tag", "launcher", "passthrough", "ray",
                                   "start", "seed", "hosts", "gpu_name", "gpus_per_node"},
                             "job"));
  RETURN_IF_ERROR(r.Get(job, "id", &s.job_id));
  RETURN_IF_ERROR(r.Get(job, "name", &s.job_name));
  RETURN_IF_ERROR(r.Get(job, "model", &s.model));
  RETURN_IF_ERROR(r.Get(job, "alias", &s.model_alias));
  RETURN_IF_ERROR(r.Get(job, "exp_tag", &s.exp_tag));
  if (s.job_id.empty()) return r.Error(job, "job.id is required");
  if (s.model.empty()) return r.Error(job, "job.model is required");
  if (s.job_name.empty()) s.job_name = "JAX-" + s.model + (s.exp_tag.empty() ? "" : "-" + s.exp_tag);
  for (char c : s.job_id + s.job_name)
    if (c == '/' || c == '\0') return r.Error(job, "job id/name must not contain '/'");
  std::string launcher = "slurm";
  RETURN_IF_ERROR(r.Get(job, "launcher", &launcher));
  if (launcher == "slurm") s.launcher = Launcher::kSlurm;
  else if (launcher == "k8s") s.launcher = Launcher::kK8s;
  else if (launcher == "local") s.launcher = Launcher::kLocal;
  else return r.Error(job["launcher"], "launcher must be slurm, k8s or local, not '" + launcher + "'");
  RETURN_IF_ERROR(r.GetStrings(job, "passthrough", &s.passthrough));
  RETURN_IF_ERROR(r.Get(job, "ray", &s.ray));
  RETURN_IF_ERROR(r.Get(job, "seed", &s.seed));
  RETURN_IF_ERROR(r.Get(job, "gpu_name", &s.gpu_name));
  RETURN_IF_ERROR(r.Get(job, "gpus_per_node", &s.gpus_per_node));
  if (!job["start"]) return r.Error(job, "job.start is required (data times derive from it, never the clock)");
  ASSIGN_OR_RETURN(s.start_time, r.Time(job["start"]));
  if (!job["hosts"]) return r.Error(job, "job.hosts is required");
  {
    std::vector<std::string> parts;
    RETURN_IF_ERROR(r.GetStrings(job, "hosts", &parts));
    std::string joined;
    for (const auto& p : parts) joined += (joined.empty() ? "" : ",") + p;
    auto hosts = ExpandHostlist(joined);
    if (!hosts.ok()) return r.Error(job["hosts"], hosts.status().message());
    s.hosts = *hosts;
    std::set<std::string> unique(s.hosts.begin(), s.hosts.end());
    if (unique.size() != s.hosts.size()) return r.Error(job["hosts"], "duplicate host in job.hosts");
    if (s.hosts.empty()) return r.Error(job["hosts"], "job.hosts is empty");
    if (s.launcher == Launcher::kSlurm) {
      // Slurm numbers tasks along the sorted nodelist (scontrol show hostnames); a scenario listing
      // hosts in another order would map tasks to hosts differently from a real job.
      auto canonical = ExpandHostlist(CompressHostlist(s.hosts));
      if (canonical.ok() && *canonical != s.hosts) {
        std::string want;
        for (const auto& h : *canonical) want += (want.empty() ? "" : ",") + h;
        return r.Error(job["hosts"], "Slurm orders tasks by the sorted nodelist; list hosts as " + want);
      }
    }
  }
  return Status::Ok();
}

// The passthrough args first: the training section may override them.
Status ReadTraining(const Reader& r, const YAML::Node& root, Scenario& s) {
  std::string steps_arg = PassthroughValue(s.passthrough, "steps");
  if (!steps_arg.empty()) s.total_steps = std::stoll(steps_arg);
  std::string pdbs = PassthroughValue(s.passthrough, "per_device_batch_size");
  if (!pdbs.empty()) s.per_device_batch_size = std::stod(pdbs);
  std::string ckpt = PassthroughValue(s.passthrough, "enable_checkpointing");
  std::string period = PassthroughValue(s.passthrough, "checkpoint_period");
  if (ckpt == "true") s.checkpoint_period = period.empty() ? 200 : std::stoll(period);
  if (PassthroughValue(s.passthrough, "enable_single_replica_ckpt_restoring") == "true")
    s.single_replica_restore = true;

  if (YAML::Node t = root["training"]) {
    RETURN_IF_ERROR(r.OnlyKeys(t, {"enabled", "steps", "first_step", "last_step", "stop", "moe", "seq_len",
                                   "step0_seconds", "init_seconds", "tflops_per_tgs", "peak_tflops", "phases",
                                   "checkpoint_save_seconds", "loss", "moe_lb_loss", "extra_nccl_waves",
                                   "hang_seconds", "silence_activity", "ray_log_lag_steps", "pinned_seconds",
                                   "loss_diverge_at", "loss_diverge_rate", "loss_nan_at", "grad_spikes", "grad_clip",
                                   "checkpoint_writers", "step_jitter_pct", "log_gap"},
                               "training"));
    RETURN_IF_ERROR(r.Get(t, "enabled", &s.training));
    if (t["log_gap"]) {
      ASSIGN_OR_RETURN(StepRange gap, r.Steps(t["log_gap"]));
      s.log_gap = gap;
    }
    RETURN_IF_ERROR(r.Get(t, "steps", &s.total_steps));
    RETURN_IF_ERROR(r.Get(t, "first_step", &s.first_step));
    RETURN_IF_ERROR(r.Get(t, "last_step", &s.last_step));
    RETURN_IF_ERROR(r.Get(t, "stop", &s.stop_phase));
    RETURN_IF_ERROR(r.Get(t, "moe", &s.moe));
    RETURN_IF_ERROR(r.Get(t, "seq_len", &s.seq_len));
    RETURN_IF_ERROR(r.Get(t, "step0_seconds", &s.step0_seconds));
    RETURN_IF_ERROR(r.Get(t, "init_seconds", &s.init_seconds));
    RETURN_IF_ERROR(r.Get(t, "tflops_per_tgs", &s.tflops_per_tgs));
    RETURN_IF_ERROR(r.Get(t, "peak_tflops", &s.peak_tflops));
    RETURN_IF_ERROR(r.Get(t, "checkpoint_save_seconds", &s.checkpoint_save_seconds));
    RETURN_IF_ERROR(r.Get(t, "checkpoint_writers", &s.checkpoint_writers));
    if (t["step_jitter_pct"]) {
      double pct = 0;
      RETURN_IF_ERROR(r.Get(t, "step_jitter_pct", &pct));
      if (pct < 0 || pct > 20) return r.Error(t["step_jitter_pct"], "step_jitter_pct must be between 0 and 20");
      s.step_jitter = pct / 100;
    }
    if (s.checkpoint_writers < 1) return r.Error(t["checkpoint_writers"], "checkpoint_writers must be >= 1");
    RETURN_IF_ERROR(r.Get(t, "extra_nccl_waves", &s.extra_nccl_waves));
    RETURN_IF_ERROR(r.Get(t, "hang_seconds", &s.hang_seconds));
    RETURN_IF_ERROR(r.Get(t, "silence_activity", &s.silence_activity));
    if (!s.silence_activity.empty() && s.silence_activity != "hang" && s.silence_activity != "train")
      return r.Error(t["silence_activity"], "silence_activity is hang or train");
    RETURN_IF_ERROR(r.Get(t, "ray_log_lag_steps", &s.ray_log_lag_steps));
    if (t["loss"]) {
      std::vector<double> loss;
      RETURN_IF_ERROR(r.Get(t, "loss", &loss));
      if (loss.size() != 2) return r.Error(t["loss"], "loss is [start, end]");
      s.loss_start = loss[0];
      s.loss_end = loss[1];
    }
    for (const auto& [key, field] : {std::pair{"loss_diverge_at", &s.loss_diverge_step}, std::pair{"loss_nan_at", &s.loss_nan_step}}) {
      if (!t[key]) continue;
      int64_t step = 0;
      RETURN_IF_ERROR(r.Get(t, key, &step));
      *field = step;
    }
    RETURN_IF_ERROR(r.Get(t, "loss_diverge_rate", &s.loss_diverge_rate));
    if (s.loss_diverge_rate <= 0) return r.Error(t["loss_diverge_rate"], "loss_diverge_rate must be positive");
    RETURN_IF_ERROR(r.Get(t, "grad_clip", &s.grad_clip));
    if (YAML::Node gs = t["grad_spikes"]) {
      RETURN_IF_ERROR(r.OnlyKeys(gs, {"steps", "factor"}, "grad_spikes"));
      std::vector<int> steps;
      RETURN_IF_ERROR(r.GetInts(gs, "steps", &steps));
      if (steps.empty()) return r.Error(gs, "grad_spikes needs steps");
      s.grad_spike_steps.assign(steps.begin(), steps.end());
      RETURN_IF_ERROR(r.Get(gs, "factor", &s.grad_spike_factor));
      if (s.grad_spike_factor <= 1) return r.Error(gs["factor"], "grad_spikes.factor must be > 1");
    }
    if (YAML::Node lb = t["moe_lb_loss"]) {
      RETURN_IF_ERROR(r.OnlyKeys(lb, {"base", "change_at", "after"}, "moe_lb_loss"));
      RETURN_IF_ERROR(r.Get(lb, "base", &s.lb_loss));
      if (lb["change_at"]) s.lb_loss_change_step = lb["change_at"].as<int64_t>();
      RETURN_IF_ERROR(r.Get(lb, "after", &s.lb_loss_after));
    }
    if (YAML::Node pinned = t["pinned_seconds"]) {
      if (!pinned.IsMap()) return r.Error(pinned, "pinned_seconds maps step -> seconds");
      for (const auto& kv : pinned) {
        try {
          s.pinned_seconds[kv.first.as<int64_t>()] = kv.second.as<double>();
        } catch (const YAML::Exception&) {
          return r.Error(kv.first, "pinned_seconds maps step -> seconds");
        }
      }
    }
    if (YAML::Node phases = t["phases"]) {
      if (!phases.IsSequence()) return r.Error(phases, "phases must be a list");
      for (const auto& p : phases) {
        RETURN_IF_ERROR(r.OnlyKeys(p, {"steps", "tgs", "tgs_end"}, "phase"));
        if (!p["steps"] || !p["tgs"]) return r.Error(p, "a phase needs 'steps' and 'tgs'");
        Phase phase;
        ASSIGN_OR_RETURN(phase.steps, r.Steps(p["steps"]));
        RETURN_IF_ERROR(r.Get(p, "tgs", &phase.tgs));
        RETURN_IF_ERROR(r.Get(p, "tgs_end", &phase.tgs_end));
        if (phase.tgs <= 0) return r.Error(p["tgs"], "tgs must be positive");
        s.phases.push_back(phase);
      }
    }
  }
  static const std::set<std::string> kStops = {"before_stages", "setup", "before_memstats", "before_step0", "steps"};
  if (!kStops.count(s.stop_phase))
    return r.Error(root["training"]["stop"], "training.stop must be before_stages, setup, before_memstats, before_step0 or steps");
  if (s.training && s.stop_phase == "steps") {
    if (s.last_step < s.first_step)
      return r.Error(root["training"] ? root["training"] : root, "training.last_step must be >= first_step");
    if (s.phases.empty()) return r.Error(root["training"] ? root["training"] : root, "training.phases is required");
    for (int64_t step = s.first_step; step <= s.last_step; ++step) {
      bool covered = std::any_of(s.phases.begin(), s.phases.end(), [&](const Phase& p) { return p.steps.Contains(step); });
      if (!covered)
        return r.Error(root["training"]["phases"], "step " + std::to_string(step) + " is in no phase");
    }
  }
  return Status::Ok();
}

Status ReadStages(const Reader& r, const YAML::Node& root, Scenario& s) {
  if (YAML::Node stages = root["stages"]) {
    RETURN_IF_ERROR(r.OnlyKeys(stages, {"preflight", "pull", "ecc", "train"}, "stages"));
    for (const auto& kv : stages) {
      RETURN_IF_ERROR(r.OnlyKeys(kv.second, {"result", "elapsed", "exit", "lines"}, "stage"));
      StageOutcome o;
      RETURN_IF_ERROR(r.Get(kv.second, "result", &o.result));
      RETURN_IF_ERROR(r.Get(kv.second, "elapsed", &o.elapsed));
      RETURN_IF_ERROR(r.Get(kv.second, "exit", &o.exit_code));
      RETURN_IF_ERROR(r.GetStrings(kv.second, "lines", &o.lines));
      if (o.result != "ok" && o.result != "timeout" && o.result != "failed")
        return r.Error(kv.second["result"], "stage result must be ok, timeout or failed");
      s.stages[kv.first.as<std::string>()] = o;
    }
  }
  return Status::Ok();
}

Status ReadHeartbeat(const Reader& r, const YAML::Node& root, Scenario& s) {
  if (YAML::Node hb = root["heartbeat"]) {
    RETURN_IF_ERROR(r.OnlyKeys(hb, {"time", "accused", "own_death", "coordinator"}, "heartbeat"));
    Heartbeat h;
    if (!hb["time"]) return r.Error(hb, "heartbeat.time is required");
    ASSIGN_OR_RETURN(h.time, r.Time(hb["time"]));
    RETURN_IF_ERROR(r.GetInts(hb, "accused", &h.accused));
    RETURN_IF_ERROR(r.GetInts(hb, "own_death", &h.own_death));
    RETURN_IF_ERROR(r.Get(hb, "coordinator", &h.coordinator));
    for (int task : h.accused)
      if (task < 0 || task >= static_cast<int>(s.hosts.size()))
        return r.Error(hb["accused"], "accused task " + std::to_string(task) + " is not a task of this job");
    s.heartbeat = h;
  }
  return Status::Ok();
}

Status ReadSummary(const Reader& r, const YAML::Node& root, Scenario& s) {
  if (YAML::Node sm = root["summary"]) {
    if (sm.IsNull()) {
      s.summary.present = false;
    } else {
      RETURN_IF_ERROR(r.OnlyKeys(sm, {"status", "exit", "reason", "colour"}, "summary"));
      RETURN_IF_ERROR(r.Get(sm, "status", &s.summary.status));
      RETURN_IF_ERROR(r.Get(sm, "exit", &s.summary.exit_code));
      RETURN_IF_ERROR(r.Get(sm, "reason", &s.summary.reason));
      RETURN_IF_ERROR(r.Get(sm, "colour", &s.summary.colour));
      if (s.summary.status != "SUCCESS" && s.summary.status != "FAILED")
        return r.Error(sm["status"], "summary.status must be SUCCESS or FAILED");
    }
  }
  return Status::Ok();
}

Status ReadNodeExits(const Reader& r, const YAML::Node& root, Scenario& s) {
  if (YAML::Node ne = root["node_exits"]) {
    if (!ne.IsMap()) return r.Error(ne, "node_exits maps task -> exit code");
    for (const auto& kv : ne) s.node_exits[kv.first.as<int>()] = kv.second.as<int>();
  }
  return Status::Ok();
}

Status ReadProfile(const Reader& r, const YAML::Node& root, Scenario& s) {
  if (YAML::Node pr = root["profile"]) {
    RETURN_IF_ERROR(r.OnlyKeys(pr, {"run", "timestamp", "launcher_mode", "first_step", "steps", "step_seconds",
                                    "kernels", "slow_gpu"},
                               "profile"));
    ProfileWindow w;
    std::string mode = "1-node/proc";
    RETURN_IF_ERROR(r.Get(pr, "run", &w.run));
    RETURN_IF_ERROR(r.Get(pr, "timestamp", &w.timestamp));
    RETURN_IF_ERROR(r.Get(pr, "launcher_mode", &mode));
    RETURN_IF_ERROR(r.Get(pr, "first_step", &w.spec.first_step));
    RETURN_IF_ERROR(r.Get(pr, "steps", &w.spec.steps));
    RETURN_IF_ERROR(r.Get(pr, "step_seconds", &w.spec.step_seconds));
    if (w.run.empty() || w.timestamp.empty()) return r.Error(pr, "profile needs run and timestamp");
    if (mode != "1-node/proc" && mode != "1-GPU/proc") return r.Error(pr["launcher_mode"], "launcher_mode must be 1-node/proc or 1-GPU/proc");
    w.spec.one_file_per_gpu = mode == "1-GPU/proc";
    for (const auto& k : pr["kernels"]) {
      RETURN_IF_ERROR(r.OnlyKeys(k, {"name", "stream", "start", "seconds", "launches"}, "profile kernel"));
      TraceSlice slice;
      RETURN_IF_ERROR(r.Get(k, "name", &slice.name));
      RETURN_IF_ERROR(r.Get(k, "stream", &slice.stream));
      RETURN_IF_ERROR(r.Get(k, "start", &slice.start_s));
      RETURN_IF_ERROR(r.Get(k, "seconds", &slice.dur_s));
      RETURN_IF_ERROR(r.Get(k, "launches", &slice.launches));
      if (slice.name.empty() || slice.dur_s <= 0 || slice.launches < 1)
        return r.Error(k, "a profile kernel needs a name, seconds > 0 and launches >= 1");
      w.spec.slices.push_back(slice);
    }
    if (YAML::Node slow = pr["slow_gpu"]) {
      RETURN_IF_ERROR(r.OnlyKeys(slow, {"host", "gpu", "factor"}, "profile.slow_gpu"));
      RETURN_IF_ERROR(r.Get(slow, "host", &w.spec.slow_host));
      RETURN_IF_ERROR(r.Get(slow, "gpu", &w.spec.slow_device));
      RETURN_IF_ERROR(r.Get(slow, "factor", &w.spec.slow_factor));
    }
    s.profile = w;
  }
  return Status::Ok();
}

// `running`, `log_symlink`, `write_log` and `mtime_skew_seconds`.
Status ReadLogOptions(const Reader& r, const YAML::Node& root, Scenario& s) {
  RETURN_IF_ERROR(r.Get(root, "running", &s.running));
  if (s.running) s.summary.present = false;
  RETURN_IF_ERROR(r.Get(root, "log_symlink", &s.log_symlink));
  if (s.log_symlink != "ok" && s.log_symlink != "dangling" && s.log_symlink != "none")
    return r.Error(root["log_symlink"], "log_symlink must be ok, dangling or none");
  RETURN_IF_ERROR(r.Get(root, "write_log", &s.write_log));
  RETURN_IF_ERROR(r.Get(root, "mtime_skew_seconds", &s.mtime_skew_seconds));
  return Status::Ok();
}

Status ReadMetrics(const Reader& r, const YAML::Node& root, Scenario& s) {
  if (YAML::Node m = root["metrics"]) {
    RETURN_IF_ERROR(r.OnlyKeys(m, {"tsdb", "node_hw_interval", "ray_interval", "missed_scrapes", "rdma_devices",
                                   "net_devices", "tb_gap", "nic_vendor", "power_spread_w", "temperature_spread_c",
                                   "clock_spread_mhz", "instance_domain", "host_label_fqdn", "node_hw_names",
                                   "tsdb_format", "ray_metrics", "gpu_power_w", "gpu_sclk_mhz", "gpu_temperature_c",
                                    "training_power_w", "tsdb_end_step", "ipv6", "node_hw_interval_from"},
                               "metrics"));
    RETURN_IF_ERROR(r.Get(m, "tsdb", &s.tsdb));
    RETURN_IF_ERROR(r.Get(m, "tsdb_format", &s.tsdb_format));
    if (s.tsdb_format != "blocks" && s.tsdb_format != "wal")
      return r.Error(m["tsdb_format"], "tsdb_format must be blocks or wal");
    RETURN_IF_ERROR(r.Get(m, "node_hw_interval", &s.node_hw_interval));
    RETURN_IF_ERROR(r.Get(m, "ray_interval", &s.ray_interval));
    RETURN_IF_ERROR(r.Get(m, "missed_scrapes", &s.missed_scrape_fraction));
    RETURN_IF_ERROR(r.Get(m, "rdma_devices", &s.rdma_devices));
    RETURN_IF_ERROR(r.GetStrings(m, "net_devices", &s.net_devices));
    RETURN_IF_ERROR(r.Get(m, "nic_vendor", &s.nic_vendor));
    if (s.nic_vendor != "ionic" && s.nic_vendor != "bnxt_re" && s.nic_vendor != "mlx5")
      return r.Error(m["nic_vendor"], "nic_vendor must be ionic, bnxt_re or mlx5");
    RETURN_IF_ERROR(r.Get(m, "power_spread_w", &s.power_spread_w));
    RETURN_IF_ERROR(r.Get(m, "temperature_spread_c", &s.temperature_spread_c));
    RETURN_IF_ERROR(r.Get(m, "clock_spread_mhz", &s.clock_spread_mhz));
    RETURN_IF_ERROR(r.Get(m, "instance_domain", &s.instance_domain));
    RETURN_IF_ERROR(r.Get(m, "host_label_fqdn", &s.host_label_fqdn));
    if (s.host_label_fqdn && s.instance_domain.empty())
      return r.Error(m["host_label_fqdn"], "host_label_fqdn needs an instance_domain");
    RETURN_IF_ERROR(r.Get(m, "node_hw_names", &s.node_hw_names));
    if (s.node_hw_names != "host" && s.node_hw_names != "instance" && s.node_hw_names != "ip")
      return r.Error(m["node_hw_names"], "node_hw_names must be host, instance or ip");
    if (s.node_hw_names != "host" && s.host_label_fqdn)
      return r.Error(m["node_hw_names"], "host_label_fqdn needs node_hw_names: host (no host label otherwise)");
    RETURN_IF_ERROR(r.Get(m, "ray_metrics", &s.ray_metrics));
    RETURN_IF_ERROR(r.Get(m, "ipv6", &s.ipv6));
    RETURN_IF_ERROR(r.Get(m, "gpu_power_w", &s.gpu_power_w));
    RETURN_IF_ERROR(r.Get(m, "gpu_sclk_mhz", &s.gpu_sclk_mhz));
    if (m["gpu_temperature_c"]) {
      double temperature = 0;
      RETURN_IF_ERROR(r.Get(m, "gpu_temperature_c", &temperature));
      if (temperature <= 34) return r.Error(m["gpu_temperature_c"], "gpu_temperature_c must be above the 34 °C inlet");
      s.gpu_temperature_c = temperature;
    }
    if (s.gpu_power_w < 100 || s.gpu_sclk_mhz < 500) return r.Error(m, "gpu_power_w must be >= 100 and gpu_sclk_mhz >= 500");
    if (m["training_power_w"]) {
      double training = 0;
      RETURN_IF_ERROR(r.Get(m, "training_power_w", &training));
      if (training < 100) return r.Error(m["training_power_w"], "training_power_w must be >= 100");
      s.training_power_w = training;
    }
    if (s.power_spread_w < 0 || s.temperature_spread_c < 0 || s.clock_spread_mhz < 0)
      return r.Error(m, "spreads must not be negative");
    if (m["tb_gap"]) {
      ASSIGN_OR_RETURN(StepRange gap, r.Steps(m["tb_gap"]));
      s.tb_gap = gap;
    }
    if (s.node_hw_interval < 1 || s.ray_interval < 1) return r.Error(m, "scrape intervals must be >= 1 s");
    if (YAML::Node from = m["node_hw_interval_from"]) {
      RETURN_IF_ERROR(r.OnlyKeys(from, {"step", "interval"}, "node_hw_interval_from"));
      int64_t step = -1;
      double interval = 0;
      RETURN_IF_ERROR(r.Get(from, "step", &step));
      RETURN_IF_ERROR(r.Get(from, "interval", &interval));
      if (step < 0 || interval < 1) return r.Error(from, "node_hw_interval_from needs a step and an interval >= 1 s");
      s.node_hw_interval_from = std::make_pair(step, interval);
    }
    if (m["tsdb_end_step"]) {
      int64_t step = 0;
      RETURN_IF_ERROR(r.Get(m, "tsdb_end_step", &step));
      if (step < 0) return r.Error(m["tsdb_end_step"], "tsdb_end_step must be a step number");
      s.tsdb_end_step = step;
    }
  }
  if (s.tsdb && !s.ray) return r.Error(root["metrics"], "a TSDB exists only for RAY=1 jobs (job.ray: true)");
  return Status::Ok();
}

Status ReadFaults(const Reader& r, const YAML::Node& root, Scenario& s) {
  if (YAML::Node faults = root["faults"]) {
    if (!faults.IsSequence()) return r.Error(faults, "faults must be a list");
    for (const auto& f : faults) {
      RETURN_IF_ERROR(r.OnlyKeys(f, {"kind", "hosts", "steps", "from", "to", "after_step", "rate", "devices"}, "fault"));
      Fault fault;
      fault.line = f.Mark().line + 1;
      RETURN_IF_ERROR(r.Get(f, "kind", &fault.kind));
      if (!kFaultKinds.count(fault.kind)) return r.Error(f["kind"] ? f["kind"] : f, "unknown fault kind '" + fault.kind + "'");
      if (s.nic_vendor != "ionic" && kIonicOnlyFaults.count(fault.kind))
        return r.Error(f["kind"], fault.kind + " needs counters that " + s.nic_vendor + " NICs do not export (nic_vendor: ionic)");
      std::vector<std::string> hosts;
      RETURN_IF_ERROR(r.GetStrings(f, "hosts", &hosts));
      if (hosts.size() == 1 && hosts[0] == "all") hosts = s.hosts;
      for (const auto& h : hosts) {
        if (std::find(s.hosts.begin(), s.hosts.end(), h) == s.hosts.end())
          return r.Error(f["hosts"], "fault host '" + h + "' is not in job.hosts");
      }
      if (hosts.empty()) return r.Error(f, "a fault needs hosts (a list or 'all')");
      fault.hosts = hosts;
      RETURN_IF_ERROR(ParseWindow(r, f, &fault.window));
      RETURN_IF_ERROR(r.Get(f, "rate", &fault.rate));
      RETURN_IF_ERROR(r.GetInts(f, "devices", &fault.devices));
      s.faults.push_back(fault);
    }
  }
  return Status::Ok();
}

Status ReadEvents(const Reader& r, const YAML::Node& root, Scenario& s) {
  if (YAML::Node events = root["events"]) {
    if (!events.IsSequence()) return r.Error(events, "events must be a list");
    for (const auto& e : events) {
      RETURN_IF_ERROR(r.OnlyKeys(e, {"at", "tasks", "trainer", "lines"}, "event"));
      LogEvent ev;
      std::string at = "end";
      RETURN_IF_ERROR(r.Get(e, "at", &at));
      if (at.rfind("after_step:", 0) == 0) {
        ev.anchor = "after_step";
        try {
          ev.anchor_step = std::stoll(at.substr(11));
        } catch (const std::exception&) {
          return r.Error(e["at"], "after_step:<N> needs a number");
        }
      } else if (at == "job_start" || at == "before_memstats" || at == "before_step0" || at == "end" ||
                 at == "train_start" || at.rfind("after_stage:", 0) == 0 || at.rfind("stage_end:", 0) == 0) {
        ev.anchor = at;
      } else {
        return r.Error(e["at"], "unknown event anchor '" + at + "'");
      }
      if (YAML::Node tasks = e["tasks"]) {
        if (tasks.IsScalar() && tasks.as<std::string>() == "all") ev.all_tasks = true;
        else RETURN_IF_ERROR(r.GetInts(e, "tasks", &ev.tasks));
        for (int t : ev.tasks)
          if (t < 0 || t >= static_cast<int>(s.hosts.size()))
            return r.Error(tasks, "task " + std::to_string(t) + " is not a task of this job");
      }
      RETURN_IF_ERROR(r.Get(e, "trainer", &ev.trainer));
      RETURN_IF_ERROR(r.GetStrings(e, "lines", &ev.lines));
      if (ev.lines.empty()) return r.Error(e, "an event needs lines");
      s.events.push_back(ev);
    }
  }
  return Status::Ok();
}

}  // namespace

int TaskLabelWidth(int ntasks) {
  int width = 1;
  for (int n = std::max(ntasks - 1, 0); n >= 10; n /= 10) ++width;
  return width;
}

std::string JobDirName(const Scenario& s) { return s.job_id + "-" + s.job_name; }

StatusOr<Scenario> ParseScenario(const std::string& yaml_text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    return InvalidArgumentError(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                                std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
  }
  Reader r(path);
  if (!root || !root.IsMap()) return InvalidArgumentError(path + ": a scenario must be a YAML mapping");
  Scenario s;
  s.path = path;
  r.Part([&] {
    return r.OnlyKeys(root, {"description", "job", "training", "stages", "heartbeat", "summary",
                              "node_exits", "running", "log_symlink", "write_log", "metrics",
                              "faults", "events", "expect", "mtime_skew_seconds", "profile"},
                       "scenario");
  });
  r.Part([&] { return r.Get(root, "description", &s.description); });
  // Every later section reads the job's hosts, tasks and passthrough args: its errors end the reading.
  r.Part([&] { return ReadJob(r, root, s); });
  if (r.failed()) return r.Finish();
  // Each section on its own, so that a mistake in one still lets the others be checked.
  for (const auto read : {ReadTraining, ReadStages, ReadHeartbeat, ReadSummary, ReadNodeExits, ReadProfile,
                          ReadLogOptions, ReadMetrics, ReadFaults, ReadEvents})
    r.Part([&] { return read(r, root, s); });
  r.Part([&]() -> Status {
    s.expect = root["expect"];
    if (!s.expect) return r.Error(root, "every scenario needs an 'expect' block (the tests read it)");
    return Status::Ok();
  });
  RETURN_IF_ERROR(r.Finish());
  return s;
}

StatusOr<Scenario> LoadScenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open scenario");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseScenario(buffer.str(), path);
}

}  // namespace diagnose::fixturegen
