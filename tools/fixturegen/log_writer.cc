#include "tools/fixturegen/log_writer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "engine/triage/hostlist.h"
#include "tools/fixturegen/random.h"

namespace fs = std::filesystem;

namespace diagnose::fixturegen {
namespace {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Strftime(double epoch, const char* format) {
  std::time_t t = static_cast<std::time_t>(std::floor(epoch));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string Hex(Rng& rng, int chars) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < chars; ++i) s += digits[rng.Next() % 16];
  return s;
}

// absl prefix: E0224 19:21:00.123456 157988 file:line]
std::string Absl(char level, double epoch, int tid, const std::string& where) {
  int usec = static_cast<int>((epoch - std::floor(epoch)) * 1e6);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%c%s.%06d %7d %s] ", level, Strftime(epoch, "%m%d %H:%M:%S").c_str(), usec, tid,
                where.c_str());
  return buf;
}

bool IsStderrLine(const std::string& line) {
  static const std::regex absl(R"(^[IWEF]\d{4} \d\d:\d\d:\d\d)");
  return line.empty() || std::regex_search(line, absl) || line.find("NCCL WARN") != std::string::npos ||
         line.find("Traceback") != std::string::npos || line.rfind("  File \"", 0) == 0 ||
         line.find("Error:") != std::string::npos || line.find("HSA_STATUS") != std::string::npos;
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
  return s;
}

class JobLogWriter {
 public:
  JobLogWriter(const Scenario& s, const Timeline& t, std::string workspace)
      : s_(s), t_(t), ws_(std::move(workspace)), ids_(Identities(s)), rng_(s.seed, "log") {
    width_ = TaskLabelWidth(static_cast<int>(s.hosts.size()));
    job_dir_ = JobDirName(s);
  }

  StatusOr<std::vector<std::string>> Run();

 private:
  // ---- sinks
  void Raw(const std::string& line) { if (main_) *main_ << line << '\n'; }
  std::string Label(int task) const {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%*d: ", width_, task);
    return buf;
  }
  // A line produced by task `task`'s stage script (not the trainer).
  void Task(int task, const std::string& line) {
    if (s_.launcher == Launcher::kSlurm) {
      Raw(Label(task) + line);
    } else if (task == 0) {
      Raw(line);
    } else if (rank_logs_.count(task)) {
      *rank_logs_[task] << line << '\n';
    }
  }
  // A line of the training subprocess: Slurm log (with Ray prefix) + Ray worker log.
  void Trainer(int task, const std::string& line, bool to_slurm = true) {
    if (s_.ray && worker_out_.count(task)) {
      auto& sink = IsStderrLine(line) ? worker_err_[task] : worker_out_[task];
      *sink << line << '\n';
    }
    if (!to_slurm) return;
    if (s_.ray) {
      std::string prefix = "\x1b[36m(MaxTextTrainerActor pid=" + std::to_string(ids_[task].pid) + ")\x1b[0m ";
      Task(task, prefix + line);
    } else {
      Task(task, line);
    }
  }
  void AllTasks(const std::function<void(int)>& fn) {
    for (int i = 0; i < static_cast<int>(s_.hosts.size()); ++i) fn(i);
  }

  std::string Substitute(const std::string& line, int task, double when) const {
    std::string out = line;
    if (task >= 0) {
      out = ReplaceAll(out, "{host}", s_.hosts[task]);
      out = ReplaceAll(out, "{task}", std::to_string(task));
      out = ReplaceAll(out, "{ip}", ids_[task].ip);
    }
    out = ReplaceAll(out, "{job_id}", s_.job_id);
    out = ReplaceAll(out, "{job_dir}", job_dir_);
    out = ReplaceAll(out, "{head}", s_.hosts[0]);
    out = ReplaceAll(out, "{mmdd}", Strftime(when, "%m%d"));
    out = ReplaceAll(out, "{hms}", Strftime(when, "%H:%M:%S"));
    out = ReplaceAll(out, "{iso}", Strftime(when, "%Y-%m-%dT%H:%M:%S"));
    out = ReplaceAll(out, "{nodelist}", CompressHostlist(s_.hosts));
    return out;
  }

  void Events(const std::string& anchor, double when, int64_t step = -1, bool to_slurm = true) {
    for (const LogEvent& ev : s_.events) {
      if (ev.anchor != anchor || (anchor == "after_step" && ev.anchor_step != step)) continue;
      std::vector<int> tasks = ev.tasks;
      if (ev.all_tasks) for (int i = 0; i < static_cast<int>(s_.hosts.size()); ++i) tasks.push_back(i);
      if (tasks.empty()) {
        for (const auto& line : ev.lines) Raw(Substitute(line, -1, when));
        continue;
      }
      for (int task : tasks) {
        for (const auto& line : ev.lines) {
          std::string text = Substitute(line, task, when);
          if (ev.trainer) Trainer(task, text, to_slurm);
          else Task(task, text);
        }
      }
    }
  }

  void Header();
  void Stage(const StageTiming& st);
  void StageLines(const StageTiming& st, int task);
  void TrainingSetup(int task);
  void EnvDump(int task);
  void RayStart(int task);
  void TrainerPreamble(int task);
  void NcclWave(int wave);
  void Steps();
  void Ending();
  void Summary();
  void TrainingBanner(int timeout);
  Status OpenFiles();
  std::string OutputPath() const {
    return "/outputs/" + (s_.checkpoint_period > 0 ? (s_.model_alias.empty() ? s_.model : s_.model_alias) : job_dir_);
  }

  const Scenario& s_;
  const Timeline& t_;
  std::string ws_;
  std::vector<HostIdentity> ids_;
  Rng rng_;
  int width_ = 1;
  std::string job_dir_;
  std::unique_ptr<std::ofstream> main_;
  std::map<int, std::unique_ptr<std::ofstream>> rank_logs_, worker_out_, worker_err_;
  std::vector<std::string> written_;
  bool stopped_ = false;  // a stage failed: no further output
};

std::string PassthroughJoined(const Scenario& s) {
  std::string out;
  for (const auto& a : s.passthrough) out += (out.empty() ? "" : " ") + a;
  return out;
}

Status JobLogWriter::OpenFiles() {
  std::error_code ec;
  fs::create_directories(ws_ + "/" + job_dir_, ec);
  if (ec) return InternalError("cannot create " + ws_ + "/" + job_dir_ + ": " + ec.message());
  auto open = [&](const std::string& rel) -> StatusOr<std::unique_ptr<std::ofstream>> {
    fs::create_directories(fs::path(ws_ + "/" + rel).parent_path(), ec);
    auto f = std::make_unique<std::ofstream>(ws_ + "/" + rel, std::ios::binary | std::ios::trunc);
    if (!*f) return InternalError("cannot write " + ws_ + "/" + rel);
    written_.push_back(rel);
    return f;
  };
  if (s_.write_log) {
    ASSIGN_OR_RETURN(main_, open(job_dir_ + ".log"));
  }
  if (s_.launcher == Launcher::kK8s) {
    for (int i = 1; i < static_cast<int>(s_.hosts.size()); ++i) {
      ASSIGN_OR_RETURN(rank_logs_[i], open(job_dir_ + "/rank-" + std::to_string(i) + ".log"));
      *rank_logs_[i] << "[" << i << "] Starting on " << s_.hosts[i] << " (" << ids_[i].ip << ")\n";
    }
  }
  bool ray_started = s_.ray && s_.training && t_.prometheus_start < t_.job_end && !t_.stages.empty() &&
                     t_.stages.back().name == "train";
  if (ray_started) {
    Rng hex(s_.seed, "ray-ids");
    std::string job_hex = "0" + std::to_string(1 + s_.seed % 8) + "000000";
    for (int i = 0; i < static_cast<int>(s_.hosts.size()); ++i) {
      std::string base = job_dir_ + "/ray_logs/" + s_.hosts[i] + "/worker-" + Hex(hex, 56) + "-" + job_hex + "-" +
                         std::to_string(ids_[i].pid);
      ASSIGN_OR_RETURN(worker_out_[i], open(base + ".out"));
      ASSIGN_OR_RETURN(worker_err_[i], open(base + ".err"));
      *worker_out_[i] << ":job_id:" << job_hex << "\n:actor_name:MaxTextTrainerActor\n";
      *worker_err_[i] << ":job_id:" << job_hex << "\n:actor_name:MaxTextTrainerActor\n";
      ASSIGN_OR_RETURN(auto raylet, open(job_dir_ + "/ray_logs/" + s_.hosts[i] + "/raylet.out"));
      double ts = t_.train_start + 20 + (i == 0 ? 0 : 6);
      *raylet << "[" << Strftime(ts, "%Y-%m-%d %H:%M:%S") << ",412 I " << 4100 + i << " " << 4100 + i
              << "] (raylet) main.cc:180: Setting cluster ID to: " << Hex(hex, 56) << "\n";
      ASSIGN_OR_RETURN(auto exporter, open(job_dir_ + "/metrics_exporter/" + s_.hosts[i] + ".log"));
      *exporter << "[metrics_exporter] Starting on port 9400 (poll every 10s) on " << s_.hosts[i] << "\n"
                << "[metrics_exporter] Plugin dir: /artifact_" << Strftime(s_.start_time - 120, "%Y%m%d_%H%M%S")
                << "_" << Hex(hex, 4) << "/utils\n"
                << "[metrics_exporter]   plugin: gpu_metrics_plugin.sh\n"
                << "[metrics_exporter]   plugin: host_metrics_plugin.sh\n"
                << "[metrics_exporter]   plugin: tb_metrics_plugin.sh\n"
                << "[metrics_exporter] HTTP server PID=" << 3900 + i * 7 << " on port 9400\n";
      for (const Fault& f : s_.faults) {
        if (f.kind != "ghost_exporter" || std::find(f.hosts.begin(), f.hosts.end(), s_.hosts[i]) == f.hosts.end())
          continue;
        double at = f.window.from_time.value_or(t_.prometheus_start + 600);
        *exporter << "[" << Strftime(at, "%Y-%m-%dT%H:%M:%SZ") << "] [Metrics Exporter] Watchdog: exited with code 1, restart #1\n"
                  << "Traceback (most recent call last):\n  File \"/usr/lib/python3.10/socketserver.py\", line 452, in __init__\n"
                  << "OSError: [Errno 98] Address already in use\n";
      }
    }
    std::string prom = job_dir_ + "/prometheus/";
    ASSIGN_OR_RETURN(auto yml, open(prom + "ray_prometheus.yml"));
    *yml << "# Generated by maxtext-slurm utils/prometheus.sh (fixture: scrape intervals as recorded in the TSDB)\n"
         << "global:\n  scrape_interval: " << static_cast<int>(s_.ray_interval) << "s\n"
         << "scrape_configs:\n  - job_name: 'ray'\n    static_configs:\n      - targets: [";
    for (size_t i = 0; i < s_.hosts.size(); ++i) *yml << (i ? ", " : "") << "'" << s_.hosts[i] << ":55080'";
    *yml << "]\n  - job_name: 'node_hw'\n    scrape_interval: " << static_cast<int>(s_.node_hw_interval)
         << "s\n    scrape_timeout: 8s\n    static_configs:\n      - targets: [";
    for (size_t i = 0; i < s_.hosts.size(); ++i) *yml << (i ? ", " : "") << "'" << s_.hosts[i] << ":9400'";
    *yml << "]\n";
    ASSIGN_OR_RETURN(auto plog, open(prom + "prometheus.log"));
    auto ts = [](double e) { return Strftime(e, "%Y-%m-%dT%H:%M:%S") + ".118Z"; };
    double p0 = t_.prometheus_start;
    *plog << "ts=" << ts(p0) << " caller=main.go:512 level=info msg=\"No time or size retention was set so using the default time retention\" duration=30d\n"
          << "ts=" << ts(p0) << " caller=main.go:556 level=info msg=\"Starting Prometheus Server\" mode=server version=\"(version=2.48.1, branch=HEAD, revision=63894216648f0d6be310c9d16fb48293c45c9310)\"\n"
          << "ts=" << ts(p0) << " caller=web.go:566 level=info component=web msg=\"Start listening for connections\" address=127.0.0.1:9190\n"
          << "ts=" << ts(p0 + 0.2) << " caller=main.go:1045 level=info msg=\"TSDB started\"\n"
          << "ts=" << ts(p0 + 0.2) << " caller=main.go:1229 level=info msg=\"Completed loading of configuration file\" filename=/outputs/" << job_dir_ << "/prometheus/ray_prometheus.yml\n"
          << "ts=" << ts(p0 + 0.2) << " caller=main.go:989 level=info msg=\"Server is ready to receive web requests.\"\n";
    if (!s_.running)
      *plog << "ts=" << ts(t_.job_end - 3) << " caller=main.go:854 level=warn msg=\"Received SIGTERM, exiting gracefully...\"\n"
            << "ts=" << ts(t_.job_end - 3) << " caller=main.go:1270 level=info msg=\"See you next time!\"\n";
  }
  return Status::Ok();
}

void JobLogWriter::Header() {
  std::string nodelist = s_.launcher == Launcher::kSlurm ? CompressHostlist(s_.hosts) : s_.hosts[0];
  Raw("JOB_ID=" + s_.job_id);
  Raw("JOB_NAME=" + s_.job_name);
  Raw("NNODES=" + std::to_string(s_.hosts.size()));
  Raw("JOB_NODELIST=" + nodelist);
  Raw("JAX_COORDINATOR_PORT=" + std::to_string(20000 + s_.seed % 32000));
  if (s_.ray) Raw("RAY_PORT=" + std::to_string(6379 + s_.seed % 200));
  Raw("PASSTHROUGH_ARGS=\"" + PassthroughJoined(s_) + "\"");
  Raw("MODEL_NAME=" + s_.model);
  if (!s_.model_alias.empty()) Raw("MODEL_NAME_ALIAS=" + s_.model_alias);
  if (!s_.exp_tag.empty()) Raw("EXP_TAG=" + s_.exp_tag);
  if (s_.launcher != Launcher::kSlurm) return;
  Rng r(s_.seed, "artifact");
  std::string artifact = "artifact_" + Strftime(s_.start_time - 120, "%Y%m%d_%H%M%S") + "_" + Hex(r, 4);
  Raw("[INFO] Running from artifact: /shared/maxtext-slurm/outputs/.artifacts/" + artifact);
  Raw("=== GIT SUMMARY BEGIN ===");
  Raw("[BRANCH]");
  Raw("main");
  Raw("[LAST COMMIT]");
  Raw("f64d93f Add hw_procs_running playbook (" + Strftime(s_.start_time - 86400 * 3, "%a %b %d %H:%M:%S %Y") +
      " +0000) <maxtext-slurm-dev>");
  Raw("[LAST COMMIT DIFF --stat]");
  Raw(" skills/tsdb-diagnosis/SKILL.md | 12 ++++++++----");
  Raw("[CHANGES --name-status]");
  Raw("M\tconfigs/" + s_.model + ".gpu.yml");
  Raw("[DIFF]");
  Raw("-  per_device_batch_size: 8");
  Raw("+  per_device_batch_size: " + Fmt("%g", s_.per_device_batch_size));
  Raw("+# NOTE: completed step: is printed by MaxText, not by this diff");
  Raw("[UNTRACKED]");
  Raw("=== GIT SUMMARY END ===");
  Raw("==STAGE TIMEOUTS (override: STAGE_TIMEOUTS=\"stage:seconds,...\")==");
  Raw("  preflight    900s");
  Raw("  pull         900s");
  Raw("  ecc          300s");
  Raw("  train        none");
  Raw("=================================================================");
}

void JobLogWriter::StageLines(const StageTiming& st, int task) {
  const std::string& h = s_.hosts[task];
  if (st.name == "preflight") {
    Task(task, "=== Pre-flight GPU cleanup ===");
    Task(task, "No GPU processes found - GPUs are free");
    Task(task, h + " | disk free: 812G -> 814G (cleanup)");
    Task(task, h + " | numa_balancing: before=1 after=0");
    Task(task, h + " | semaphores: before=3 after=0 deleted=3");
    Task(task, h + " | THP before | enabled: always [madvise] never | defrag: always defer defer+madvise [madvise] never");
    Task(task, h + " | THP after  | enabled: [always] madvise never | defrag: always defer defer+madvise [madvise] never");
    if (s_.hosts.size() > 1) {
      Task(task, h + " | [CHECK_IPV6_RULES] OK (8)");
      Task(task, h + " | [CHECK_DCQCN] OK (8)");
    } else {
      Task(task, h + " | [NETWORK_CHECKS] skipped (single-node job)");
    }
  } else if (st.name == "pull") {
    Task(task, "AINIC-enabled image detected: rocm/jax-training:maxtext-v26.1");
    Task(task, "Dataset directory found, mounting read-only.");
    Task(task, h + ": COREDUMP_DIR=/shared/maxtext-slurm/outputs/" + job_dir_);
    Task(task, "PASSTHROUGH_ARGS=\"" + PassthroughJoined(s_) + "\"");
    Task(task, "[INFO] Execution mode: pull-only");
    Task(task, "NOFILE_LIMIT=1048576");
    Task(task, "DOCKER_BIN=docker");
    if (st.outcome.result == "ok") {
      Task(task, "[INFO] Image already exists locally. Skipping pull of rocm/jax-training:maxtext-v26.1 .");
      Task(task, "[INFO] Docker pull-only mode requested. Image is ready on this node: rocm/jax-training:maxtext-v26.1");
    }
  } else if (st.name == "ecc") {
    Task(task, h + ": OK (no ECC/UMC errors reported)");
  }
  for (const auto& line : st.outcome.lines) Task(task, Substitute(line, task, st.end));
}

void JobLogWriter::Stage(const StageTiming& st) {
  if (st.timeout > 0) Raw("== " + st.desc + " BEGIN (timeout=" + std::to_string(st.timeout) + "s) ==");
  else Raw("== " + st.desc + " BEGIN (no timeout) ==");
  if (st.name != "train") {
    AllTasks([&](int task) { StageLines(st, task); });
    Events("stage_end:" + st.name, st.end);
    int elapsed = static_cast<int>(st.end - st.begin);
    if (st.outcome.result == "ok") {
      Raw("== " + st.desc + " END (" + std::to_string(elapsed) + "s) ==");
    } else if (st.outcome.result == "timeout") {
      Raw("== " + st.desc + " TIMEOUT (" + std::to_string(elapsed) + "s/" + std::to_string(st.timeout) + "s) ==");
      Raw("  Hint: STAGE_TIMEOUTS=\"" + st.name + ":<seconds>\" to adjust.");
      stopped_ = true;
    } else {
      for (const auto& [task, code] : s_.node_exits)
        Task(task, "NODE_EXIT host=" + s_.hosts[task] + " exit=" + std::to_string(code));
      for (const auto& [task, code] : s_.node_exits)
        Raw("srun: error: " + s_.hosts[task] + ": task " + std::to_string(task) + ": Exited with exit code " +
            std::to_string(code));
      Raw("== " + st.desc + " FAILED (exit=" + std::to_string(st.outcome.exit_code) + ", " + std::to_string(elapsed) +
          "s) ==");
      stopped_ = true;
    }
    Events("after_stage:" + st.name, st.end);
  }
}

void JobLogWriter::EnvDump(int task) {
  std::vector<std::string> hosts = s_.hosts;
  std::string expanded;
  for (const auto& h : hosts) expanded += (expanded.empty() ? "" : ",") + h;
  std::vector<std::string> env = {
      "HOSTNAME=" + s_.hosts[task],
      "NODE_RANK=" + std::to_string(task),
      "NNODES=" + std::to_string(s_.hosts.size()),
      "JOB_ID=" + s_.job_id,
      "JOB_DIR=" + job_dir_,
      "NODELIST_EXPANDED=" + expanded,
      "JAX_COORDINATOR_IP=" + ids_[0].ip,
      "JAX_COORDINATOR_PORT=" + std::to_string(20000 + s_.seed % 32000),
      "XLA_PYTHON_CLIENT_MEM_FRACTION=.93",
      "XLA_FLAGS=--xla_gpu_enable_latency_hiding_scheduler=true --xla_gpu_enable_command_buffer= --xla_gpu_memory_limit_slop_factor=95",
      "NCCL_IB_GID_INDEX=1",
      "NCCL_SOCKET_IFNAME=" + s_.net_devices[0],
      "NCCL_DEBUG=WARN",
      "NCCL_IB_HCA=ionic_0,ionic_1,ionic_2,ionic_3,ionic_4,ionic_5,ionic_6,ionic_7",
      "OUTPUT_PATH=" + OutputPath(),
      "HOME=/root",
      "PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      "PYTHONUNBUFFERED=1",
      "LOGIN_NODE_HOSTNAME=user@login01.cluster.example",
      "LOGIN_NODE_IP=user@10.0.0.5",
      "MODEL_NAME=" + s_.model,
      "GPU_MAX_HW_QUEUES=2",
      "HIP_FORCE_DEV_KERNARG=1",
  };
  if (s_.ray) {
    env.push_back("RAY=1");
    env.push_back("RAY_PORT=" + std::to_string(6379 + s_.seed % 200));
  }
  std::sort(env.begin(), env.end());
  Task(task, "Show all environment variables:");
  for (const auto& e : env) Task(task, e);
}

void JobLogWriter::TrainingSetup(int task) {
  const std::string& h = s_.hosts[task];
  Task(task, "AINIC-enabled image detected: rocm/jax-training:maxtext-v26.1");
  Task(task, "Dataset directory found, mounting read-only.");
  Task(task, h + ": COREDUMP_DIR=/shared/maxtext-slurm/outputs/" + job_dir_);
  Task(task, "PASSTHROUGH_ARGS=\"" + PassthroughJoined(s_) + "\"");
  Task(task, "[INFO] Execution mode: script");
  Task(task, "NOFILE_LIMIT=1048576");
  Task(task, "DOCKER_BIN=docker");
  Task(task, "[INFO] Image already exists locally. Skipping pull of rocm/jax-training:maxtext-v26.1 .");
  Task(task, "Detected IB driver on host (bnxt_re/ionic): enabling /etc/libibverbs.d mounts.");
  Task(task, "==STARTING DOCKER CONTAINER== (maxtext-slurm-" + s_.job_id + "-node" + std::to_string(task) + ")");
  Task(task, "[coredump] requested_core_pattern=/coredump/core." + s_.job_id + ".%t." + std::to_string(task) + ".%h.%e.%p");
  Task(task, "[coredump] core_pattern_apply_status=ok");
  Task(task, "+ pip list");
  Task(task, "jax                      0.8.2");
  Task(task, "jaxlib                   0.8.2");
  Task(task, "[SKIP] No MAXTEXT_PATCH_BRANCH set, using image default.");
  Task(task, "Running _train.sh");
  Task(task, "args: " + s_.model + " -- " + PassthroughJoined(s_));
  Task(task, "PASSTHROUGH_ARGS=\"" + PassthroughJoined(s_) + "\"");
  Task(task, "MODEL_NAME=" + s_.model);
  Task(task, "OUTPUT_PATH=" + OutputPath());
  Task(task, "[INFO] " + h + ": Pensando AINIC detected: NCCL_IB_TC=104 NCCL_IB_FIFO_TC=192");
  Task(task, "[INFO] " + h + ": NCCL_IB_GID_INDEX=1 (auto-detected, RoCEv2-preferred)");
  Task(task, "NCCL INFO " + h + ": NCCL_SOCKET_IFNAME=" + s_.net_devices[0]);
  Task(task, "NIC_DRIVER_CHECK " + h + " iface=" + s_.net_devices[0] + " driver=ionic version=25.06.4.001 firmware-version=1.117.1-a-63 ");
  Task(task, "Loading per-model env: configs/" + s_.model + ".env.sh");
  EnvDump(task);
}

void JobLogWriter::RayStart(int task) {
  const std::string& h = s_.hosts[task];
  std::string base = "/shared/maxtext-slurm/outputs/" + job_dir_;
  Task(task, "[py-spy] Wrapper installed: dump/record will redirect to training subprocess");
  Task(task, "[Metrics Exporter] Started on port 9400 on " + h + " (log: " + base + "/metrics_exporter/" + h + ".log)");
  std::string ray_port = std::to_string(6379 + s_.seed % 200);
  if (task == 0) {
    Task(task, "[Ray] Starting HEAD on " + h + ":" + ray_port + " (bind=" + ids_[0].ip + ")");
    Task(task, "Local node IP: " + ids_[0].ip);
    Task(task, "Ray runtime started.");
    Task(task, "[Ray] Logs -> " + base + "/ray_logs/" + h + " (persistent, symlinked from /tmp/ray/session_" +
                   Strftime(t_.train_start + 20, "%Y-%m-%d_%H-%M-%S") + "_118204_1/logs)");
    std::string ray_targets, hw_targets;
    for (const auto& host : s_.hosts) {
      ray_targets += (ray_targets.empty() ? "" : ", ") + ("'" + host + ":55080'");
      hw_targets += (hw_targets.empty() ? "" : ", ") + ("'" + host + ":9400'");
    }
    Task(task, "[Prometheus] Started on port 9190 (ray: " + ray_targets + "; node_hw: " + hw_targets + ")");
    Task(task, "[Prometheus] TSDB -> " + base + "/prometheus (persistent)");
    Task(task, "[Prometheus] Log  -> " + base + "/prometheus/prometheus.log");
    Task(task, "==============================================");
    Task(task, "SSH tunnel from your local machine (Ray dashboard is bound to the head's");
    Task(task, "localhost for security; use ProxyJump through the login node):");
    Task(task, "  ssh -J user@login01.cluster.example -L 8265:localhost:8265 -L 6006:localhost:6006 -L 9190:localhost:9190 root@" + h);
    Task(task, "  ssh -J user@10.0.0.5       -L 8265:localhost:8265 -L 6006:localhost:6006 -L 9190:localhost:9190 root@" + h);
    Task(task, "Then open in your browser:");
    Task(task, "  Ray Dashboard:  http://localhost:8265");
    Task(task, "  TensorBoard:    http://localhost:6006");
    Task(task, "  Prometheus:     http://localhost:9190");
    Task(task, "Persisted TSDB (after the job): utils/prometheus.sh view /shared/maxtext-slurm/outputs/" + job_dir_ + "/prometheus");
    Task(task, "Ray logs: /shared/maxtext-slurm/outputs/" + job_dir_ + "/ray_logs/<hostname>/session_*/logs/");
    Task(task, "==============================================");
    Task(task, "[TensorBoard] Started on port 6006 (logdir: " + OutputPath() + ")");
  } else {
    Task(task, "[Ray] Starting WORKER -> " + ids_[0].ip + ":" + ray_port + " (bind=" + ids_[task].ip + ")");
  }
}

void JobLogWriter::TrainerPreamble(int task) {
  // The patch names the GPU by its model (the last word of the device name: MI355X, MI250X, ...).
  const std::string gpu = s_.gpu_name.substr(s_.gpu_name.find_last_of(' ') == std::string::npos ? 0 : s_.gpu_name.find_last_of(' ') + 1);
  Trainer(task, "[MFU] MFU tracking enabled (gpu=" + gpu + ", dtype=bf16, peak=" + Fmt("%.0f", s_.peak_tflops) +
                    " TFLOP/s, source=auto)");
  std::map<std::string, std::string> config = {
      {"base_output_directory", "/outputs"},
      {"checkpoint_period", std::to_string(s_.checkpoint_period > 0 ? s_.checkpoint_period : 10000)},
      {"dataset_type", "synthetic"},
      {"enable_checkpointing", s_.checkpoint_period > 0 ? "True" : "False"},
      {"enable_single_replica_ckpt_restoring", s_.single_replica_restore ? "True" : "False"},
      {"log_period", "100"},
      {"max_target_length", std::to_string(s_.seq_len)},
      {"model_name", s_.model},
      {"num_experts", s_.moe ? "8" : "1"},
      {"per_device_batch_size", Fmt("%g", s_.per_device_batch_size)},
      {"quantization", "NONE"},
      {"run_name", s_.model + "_train_test"},
      {"steps", std::to_string(s_.total_steps)},
      {"tensorboard_dir", OutputPath() + "/" + s_.model + "_train_test/tensorboard/"},
  };
  for (const auto& a : s_.passthrough) {
    auto eq = a.find('=');
    if (eq != std::string::npos && a.rfind("_env_", 0) != 0) config[a.substr(0, eq)] = a.substr(eq + 1);
  }
  for (const auto& [k, v] : config) Trainer(task, "Config param " + k + ": " + v);
  std::string devices = "JAX global devices: [RocmDevice(id=0, process_index=0), ...]";
  Trainer(task, devices);
  Trainer(task, s_.moe ? "number parameters: 140.621 billion" : "number parameters: 68.977 billion");
}

void JobLogWriter::NcclWave(int wave) {
  Rng r(s_.seed, "nccl-wave-" + std::to_string(wave));
  AllTasks([&](int task) {
    for (int gpu = 0; gpu < s_.gpus_per_node; ++gpu) {
      Trainer(task, "");
      Trainer(task, s_.hosts[task] + ":" + std::to_string(ids_[task].pid) + ":" +
                        std::to_string(ids_[task].pid + 200 + wave * 16 + gpu) + " [" + std::to_string(gpu) +
                        "] init.cc:2095 NCCL WARN MSCCL++: Feature not enabled. ENABLE_MSCCLPP must be defined at compile-time");
    }
  });
}

void JobLogWriter::Steps() {
  int64_t slurm_last = s_.last_step - s_.ray_log_lag_steps;
  for (const StepRecord& r : t_.steps) {
    bool to_slurm = r.step <= slurm_last;
    const bool lost = s_.log_gap && s_.log_gap->Contains(r.step);
    if (!lost) AllTasks([&](int task) { Trainer(task, FormatStepLine(r), to_slurm); });
    if (r.step == t_.steps.front().step) {
      NcclWave(2);  // the third wave: first collectives of the training step
    }
    if (r.checkpoint_saved) {
      AllTasks([&](int task) { Trainer(task, "Saved a checkpoint at step " + std::to_string(r.step) + ".", to_slurm); });
    }
    if ((r.step + 1) % 100 == 0)
      AllTasks([&](int task) {
        Trainer(task, "To see full metrics 'tensorboard --logdir=" + OutputPath() + "/" + s_.model + "_train_test/tensorboard/'",
                to_slurm);
      });
    Events("after_step", r.end, r.step, to_slurm);
  }
}

void JobLogWriter::Ending() {
  double end = t_.job_end;
  if (s_.heartbeat) {
    const Heartbeat& hb = *s_.heartbeat;
    std::set<int> accused(hb.accused.begin(), hb.accused.end());
    std::set<int> own(hb.own_death.begin(), hb.own_death.end());
    std::string unhealthy = "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):";
    // coordinator's status text
    Trainer(hb.coordinator, Absl('E', hb.time, 118327, "coordination_service.cc:1215") +
                                "Use error polling to propagate the following error to all tasks: " + unhealthy);
    for (int a : hb.accused) Trainer(hb.coordinator, "/job:jax_worker/replica:0/task:" + std::to_string(a));
    Trainer(hb.coordinator, "The tasks have crashed. Check the task logs for an earlier error, or scheduler events "
                            "(e.g. preemption, eviction) to debug further.");
    AllTasks([&](int task) {
      if (accused.count(task) && !own.count(task)) return;
      double when = hb.time + 0.05 * (task % 7);
      Trainer(task, Absl('E', when, 157900 + task, "coordination_service_agent.cc:310") +
                        "Polled error from coordination service");
      Trainer(task, Absl('F', when + 0.001, 157900 + task, "client.h:77") +
                        "Terminating process because the JAX distributed service detected fatal errors. This most "
                        "likely indicates that another task died; see the other task logs for more details. Disable "
                        "Python buffering, i.e. `python -u`, to be sure to see all the previous output. absl::Status: " +
                        unhealthy);
      for (int a : hb.accused) Trainer(task, "/job:jax_worker/replica:0/task:" + std::to_string(a));
      Trainer(task, "The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. "
                    "preemption, eviction) to debug further.");
      Trainer(task, "RPC: /tensorflow.CoordinationService/PollForError [type.googleapis.com/tensorflow.CoordinationServiceError='']");
    });
    // The F line aborts every trainer; the actor's exit line is left out so the heartbeat block stays
    // the last failure in the log (upstream triage scans bottom-up), as in the published 8043 log.
  }
  Events("end", end - 8);
  for (const auto& [task, code] : s_.node_exits)
    Task(task, "NODE_EXIT host=" + s_.hosts[task] + " exit=" + std::to_string(code));
  for (const auto& [task, code] : s_.node_exits)
    Raw("srun: error: " + s_.hosts[task] + ": task " + std::to_string(task) + ": Exited with exit code " +
        std::to_string(code));
  if (s_.ray && !s_.running) Task(0, "[Ray] Cleaning up...");
}

// The stage wrapper's closing banner follows from how the stage ended (the summary's reason).
void JobLogWriter::TrainingBanner(int timeout) {
  int elapsed = static_cast<int>(t_.job_end - 3 - t_.train_start);
  const std::string& reason = s_.summary.reason;
  if (!s_.summary.present) return;
  if (timeout > 0) {
    Raw("== Training TIMEOUT (" + std::to_string(timeout) + "s/" + std::to_string(timeout) + "s) ==");
    Raw("  Hint: STAGE_TIMEOUTS=\"train:<seconds>\" to adjust.");
  } else if (s_.summary.status == "SUCCESS") {
    Raw("== Training END (" + std::to_string(elapsed) + "s) ==");
  } else if (reason.rfind("Training FAILED (exit=", 0) == 0) {
    std::string rc = reason.substr(22, reason.find(')') - 22);
    Raw("== Training FAILED (exit=" + rc + ", " + std::to_string(elapsed) + "s) ==");
  }
}

void JobLogWriter::Summary() {
  if (!s_.summary.present) return;
  Raw("========================== JOB SUMMARY ==========================");
  Raw("  Job:    " + s_.job_id + " (" + s_.job_name + ")");
  Raw("  Model:  " + s_.model);
  Raw("  Nodes:  " + std::to_string(s_.hosts.size()));
  Raw("  Wall:   " + FormatWall(t_.job_end - t_.job_start));
  std::string status = s_.summary.status + " (exit " + std::to_string(s_.summary.exit_code) + ")";
  if (s_.summary.status == "FAILED" && s_.launcher == Launcher::kSlurm)
    status += " \u2014 " + (s_.summary.reason.empty() ? std::string("unknown") : s_.summary.reason);
  if (s_.summary.colour)
    status = std::string(s_.summary.status == "SUCCESS" ? "\x1b[32m" : "\x1b[31m") + status + "\x1b(B\x1b[m";
  Raw("  Status: " + status);
  Raw("=================================================================");
}

StatusOr<std::vector<std::string>> JobLogWriter::Run() {
  RETURN_IF_ERROR(OpenFiles());
  Header();
  Events("job_start", t_.job_start);
  bool slurm = s_.launcher == Launcher::kSlurm;
  for (const StageTiming& st : t_.stages) {
    if (st.name == "train") break;
    if (slurm) Stage(st);
    if (stopped_) break;
  }
  if (s_.stop_phase == "before_stages") stopped_ = true;
  auto train_stage = s_.stages.find("train");
  int train_timeout = train_stage != s_.stages.end() && train_stage->second.result == "timeout"
                          ? static_cast<int>(train_stage->second.elapsed) : 0;
  if (!stopped_ && s_.training) {
    if (slurm) {
      if (train_timeout > 0) Raw("== Training BEGIN (timeout=" + std::to_string(train_timeout) + "s) ==");
      else Raw("== Training BEGIN (no timeout) ==");
    }
    AllTasks([&](int task) { TrainingSetup(task); });
    Events("train_start", t_.train_start);
    if (s_.stop_phase == "setup") {
      Ending();
    } else {
    if (s_.ray) {
      AllTasks([&](int task) { RayStart(task); });
      AllTasks([&](int task) { Task(task, "Launching via Ray actor..."); });
      AllTasks([&](int task) {
        Task(task, "[Node " + std::to_string(task) + " @ " + s_.hosts[task] + "] Launching training subprocess: "
                   "/opt/venv/bin/python -u /maxtext-slurm/utils/monkey_patch_maxtext.py MaxText/configs/base.yml");
        Task(task, "[Node " + std::to_string(task) + " @ " + s_.hosts[task] + "] Training subprocess started (pid=" +
                       std::to_string(ids_[task].pid) + ")");
      });
    } else {
      AllTasks([&](int task) { Task(task, "Launching MaxText.train directly..."); });
    }
    AllTasks([&](int task) { TrainerPreamble(task); });
    AllTasks([&](int task) {
      Trainer(task, "checkpoint manager exists so trying to load this run's existing checkpoint");
      if (s_.first_step > 0) Trainer(task, "restoring from this run's directory step " + std::to_string(s_.first_step - 1));
      else Trainer(task, "No existing checkpoints found, not restoring checkpoint.");
    });
    NcclWave(0);
    // single-replica restore broadcasts through extra communicators: one more wave each
    for (int i = 0; i < s_.extra_nccl_waves; ++i) NcclWave(10 + i);
    NcclWave(1);
    Events("before_memstats", t_.first_step_begin);
    if (s_.stop_phase != "before_memstats") {
      AllTasks([&](int task) {
        Trainer(task, "");
        Trainer(task, "Memstats: After params initialized:");
        for (int gpu = 0; gpu < s_.gpus_per_node; ++gpu)
          Trainer(task, "\tUsing (GB) 151.27 / 270.19 (55.986527%) on rocm:" + std::to_string(gpu));
      });
      AllTasks([&](int task) { Trainer(task, "====== BARRIER: Synchronizing hosts before training loop ======"); });
      AllTasks([&](int task) { Trainer(task, "====== BARRIER PASSED: Starting training loop ======"); });
      Events("before_step0", t_.memstats_time);
      if (s_.stop_phase == "steps") Steps();
    }
    Ending();
    }
    if (slurm) TrainingBanner(train_timeout);
  }
  if (s_.launcher == Launcher::kSlurm || !stopped_) Summary();
  for (auto* m : {&rank_logs_, &worker_out_, &worker_err_})
    for (auto& [k, f] : *m) f->close();
  if (main_) main_->close();
  return written_;
}

}  // namespace

std::vector<HostIdentity> Identities(const Scenario& s) {
  std::vector<HostIdentity> ids;
  Rng r(s.seed, "identities");
  int subnet = 16 + static_cast<int>(s.seed % 200);
  for (size_t i = 0; i < s.hosts.size(); ++i) {
    HostIdentity id;
    id.host = s.hosts[i];
    if (s.ipv6) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "fd00:194:%x::%zx", subnet + static_cast<int>(i / 200), 10 + i % 200);
      id.ip = buf;
    } else {
      id.ip = "10.194." + std::to_string(subnet + static_cast<int>(i / 200)) + "." + std::to_string(10 + i % 200);
    }
    id.pid = 1800 + static_cast<int>(r.Next() % 60000);
    ids.push_back(id);
  }
  return ids;
}

std::string FormatWall(double seconds) {
  long s = std::lround(seconds);
  char buf[48];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh %ldm %lds", s / 3600, (s % 3600) / 60, s % 60);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%ldm %lds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

std::string FormatIso(double epoch) { return Strftime(epoch, "%Y-%m-%dT%H:%M:%S"); }

std::string FormatStepLine(const StepRecord& r, bool) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "completed step: %lld, seconds: %.3f, TFLOP/s/device: %.3f, MFU: %.2f%%, Tokens/s/device: %.3f, "
                "total_weights: %lld, loss: %.3f",
                static_cast<long long>(r.step), r.seconds, r.tflops, r.mfu, r.tgs, static_cast<long long>(r.total_weights), r.loss);
  return buf;
}

StatusOr<std::vector<std::string>> WriteJobLogs(const Scenario& scenario, const Timeline& timeline,
                                                const std::string& workspace) {
  JobLogWriter writer(scenario, timeline, workspace);
  return writer.Run();
}

}  // namespace diagnose::fixturegen
