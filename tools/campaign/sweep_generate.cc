#include "tools/campaign/sweep_generate.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tools/campaign/job_runs.h"
#include "tools/fixturegen/random.h"

namespace diagnose::campaign {

namespace {

namespace fs = std::filesystem;
using fixturegen::Rng;
using nlohmann::json;

constexpr int kSteps = 15;
constexpr int kProfiledFirst = 9;   // the runbook's window with the profiler on
constexpr int kDumpStep = 8;        // skip_first_n_steps_for_profiler=5 + profiler_steps=3

std::string Fmt(const char* format, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) return UnavailableError("cannot write " + path.string());
  return Status::Ok();
}

// One job as the launcher writes it: the header (§2.1), the training stage's lines on task 0 and
// the others (§2.5), failure lines (§2.6) and the JOB SUMMARY (§2.7); the job dir with its `log`
// and `artifact` links (§1.2).
struct PlannedJob {
  std::string id;
  std::string model;
  std::vector<std::string> hosts;
  std::map<std::string, std::string> passthrough;   // written in this order (sorted)
  std::string artifact;
  bool profiler = false;
  // Healthy steps, or a failure.
  double level = 0;          // true TGS
  double noise_pct = 0;
  double mfu_per_tgs = 0;
  int outlier_step = -1;     // inside the window, 20-50 % slow
  std::string failure;       // "" | oom | unknown-flag | rccl-flake | python
  std::string unknown_flag;
};

std::string JobName(const PlannedJob& job) {
  std::string name = "JAX-" + job.model;
  if (auto it = job.passthrough.find("_env_TUNE_PROFILE"); it != job.passthrough.end())
    name += "-_env_TUNE_PROFILE_" + it->second;
  return name;
}

Status WriteJob(const fs::path& outputs, const PlannedJob& job, Rng& rng) {
  const std::string dir_name = job.id + "-" + JobName(job);
  std::ostringstream log;
  std::string args;
  for (const auto& [k, v] : job.passthrough) args += (args.empty() ? "" : " ") + k + "=" + v;
  std::string nodelist;
  for (const auto& h : job.hosts) nodelist += (nodelist.empty() ? "" : ",") + h;
  log << "JOB_ID=" << job.id << "\nJOB_NAME=" << JobName(job) << "\nNNODES=" << job.hosts.size()
      << "\nJOB_NODELIST=" << nodelist << "\nJAX_COORDINATOR_PORT=23456\nPASSTHROUGH_ARGS=\"" << args
      << "\"\nMODEL_NAME=" << job.model << "\n";
  log << "[INFO] Running from artifact: /outputs/.artifacts/" << job.artifact << "\n";
  log << "== Training BEGIN (no timeout) ==\n";
  for (size_t t = 0; t < job.hosts.size(); ++t) {
    log << t << ": NODELIST_EXPANDED=" << nodelist << "\n";
    log << t << ": Config param per_device_batch_size: 2\n";
    log << t << ": Config param profiler: " << (job.profiler ? "xplane" : "") << "\n";
    log << t << ": Config param steps: " << kSteps << "\n";
  }
  // Communicator init: one wave of the harmless MSCCL++ warning per rank.
  for (size_t t = 0; t < job.hosts.size(); ++t)
    log << t << ": \n" << t << ": " << job.hosts[t] << ":4242:4242 [0] init.cc:2095 NCCL WARN MSCCL++: Feature not enabled. "
        << "ENABLE_MSCCLPP must be defined at compile-time\n";
  std::string status = "SUCCESS (exit 0)";
  if (job.failure == "oom") {
    log << "0: jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
        << Fmt("%.2f", rng.Uniform(180, 260)) << "GiB.: while running replica 0 and partition 0 of a replicated "
        << "computation (other replicas may have failed as well).\n";
    log << "0: NODE_EXIT host=" << job.hosts[0] << " exit=1\nsrun: error: " << job.hosts[0]
        << ": task 0: Exited with exit code 1\n== Training FAILED (exit=1, 312s) ==\n";
    status = "FAILED (exit 1) \xE2\x80\x94 Training FAILED (exit=1)";
  } else if (job.failure == "unknown-flag") {
    log << "0: F0224 19:21:00.123456  4242 parse_flags_from_env.cc:226] Unknown flag in XLA_FLAGS: " << job.unknown_flag
        << "\n0: NODE_EXIT host=" << job.hosts[0] << " exit=134\nsrun: error: " << job.hosts[0]
        << ": task 0: Exited with exit code 134\n== Training FAILED (exit=134, 41s) ==\n";
    status = "FAILED (exit 1) \xE2\x80\x94 Training FAILED (exit=134)";
  } else if (job.failure == "rccl-flake") {
    for (int wave = 0; wave < 40; ++wave)
      log << "0: " << job.hosts[0] << ":4242:4300 [0] rccl_wrap.cc:120 NCCL WARN LL cutoff points not detected for a "
          << "supported arch gfx950\n";
    log << "slurmstepd: error: *** JOB " << job.id << " ON " << job.hosts[0] << " CANCELLED AT 2026-02-24T19:40:00 ***\n";
    status = "FAILED (exit 143) \xE2\x80\x94 CANCELLED (scancel / SIGTERM)";
  } else if (job.failure == "python") {
    log << "0: Traceback (most recent call last):\n0:   File \"/maxtext/train.py\", line 9, in <module>\n"
        << "0: ValueError: config key moe_mlp_dim is not a valid key\n0: NODE_EXIT host=" << job.hosts[0]
        << " exit=1\nsrun: error: " << job.hosts[0] << ": task 0: Exited with exit code 1\n"
        << "== Training FAILED (exit=1, 60s) ==\n";
    status = "FAILED (exit 1) \xE2\x80\x94 Training FAILED (exit=1)";
  } else {
    for (int s = 0; s < kSteps; ++s) {
      double tgs = job.level * (1 + rng.Normal(0, job.noise_pct / 100));
      if (s < 5) tgs = job.level * rng.Uniform(0.05, 0.9);            // compile and warmup
      if (job.profiler && s >= 5 && s < kProfiledFirst) tgs *= 0.9;   // inside the capture window
      if (job.profiler && s == kDumpStep) tgs = job.level * 0.04;      // the profile dump
      if (s == job.outlier_step) tgs *= rng.Uniform(0.5, 0.8);
      const double seconds = 4096.0 * 2 / tgs;
      for (size_t t = 0; t < job.hosts.size(); ++t)
        log << t << ": completed step: " << s << ", seconds: " << Fmt("%.3f", seconds)
            << ", TFLOP/s/device: " << Fmt("%.3f", tgs * 0.1) << ", MFU: " << Fmt("%.2f", tgs * job.mfu_per_tgs)
            << "%, Tokens/s/device: " << Fmt("%.3f", tgs) << ", total_weights: 8192, loss: " << Fmt("%.3f", 9.0 - s * 0.1)
            << "\n";
    }
    log << "== Training END (" << 700 << "s) ==\n";
  }
  log << "========================== JOB SUMMARY ==========================\n  Job:    " << job.id << " ("
      << JobName(job) << ")\n  Model:  " << job.model << "\n  Nodes:  " << job.hosts.size()
      << "\n  Wall:   12m 3s\n  Status: " << status
      << "\n=================================================================\n";
  RETURN_IF_ERROR(WriteText(outputs / (dir_name + ".log"), log.str()));
  std::error_code ec;
  fs::create_directories(outputs / dir_name, ec);
  fs::create_symlink("../" + dir_name + ".log", outputs / dir_name / "log", ec);
  if (ec) return UnavailableError("cannot link " + (outputs / dir_name / "log").string() + ": " + ec.message());
  fs::create_symlink("../.artifacts/" + job.artifact, outputs / dir_name / "artifact", ec);
  if (ec) return UnavailableError("cannot link the artifact of " + dir_name + ": " + ec.message());
  return Status::Ok();
}

Status WriteArtifact(const fs::path& outputs, const std::string& id, const std::string& train_env,
                     const std::string& commit) {
  const fs::path dir = outputs / ".artifacts" / id;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return UnavailableError("cannot create " + dir.string());
  RETURN_IF_ERROR(WriteText(dir / "train_env.sh", train_env));
  return WriteText(dir / "git_summary.txt", "=== GIT SUMMARY BEGIN ===\n[BRANCH]\nmain\n[LAST COMMIT]\n" + commit +
                                                 "\n[LAST COMMIT DIFF --stat]\n=== GIT SUMMARY END ===\n");
}

std::vector<std::string> Hosts(const std::string& prefix, int first, int count) {
  std::vector<std::string> hosts;
  for (int i = 0; i < count; ++i) hosts.push_back(prefix + std::to_string(first + i));
  return hosts;
}

// DIR emptied and DIR/outputs created: a sweep is generated whole or not at all.
StatusOr<fs::path> FreshOutputs(const fs::path& dir) {
  const fs::path outputs = dir / "outputs";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(outputs, ec);
  if (ec) return UnavailableError("cannot create " + outputs.string() + ": " + ec.message());
  return outputs;
}

std::string FlagFor(int i) {
  static const char* names[] = {"all_gather_combine_threshold_bytes", "reduce_scatter_combine_threshold_bytes",
                                "collective_permute_decomposer_threshold", "experimental_parallel_collective_overlap_limit",
                                "enable_pipelined_p2p", "enable_latency_hiding_scheduler", "memory_limit_slop_factor",
                                "async_stream_priority"};
  return "--xla_gpu_" + std::string(names[i % 8]) + "=" + std::to_string(1 << (i % 31));
}

Status GenerateTuningSweep(uint64_t seed, const fs::path& dir) {
  Rng rng(seed, "tuning-sweep");
  ASSIGN_OR_RETURN(const fs::path outputs, FreshOutputs(dir));

  const double noise_pct = rng.Uniform(0.3, 1.0);
  const bool profiler = rng.Uniform() < 0.3;
  const bool has_winner = rng.Uniform() < 0.6;
  const int nodes = 1 << static_cast<int>(rng.Uniform(0, 4));   // 1, 2, 4 or 8
  const double level = rng.Uniform(600, 4800);
  const double mfu_per_tgs = rng.Uniform(8, 36) / level;
  const std::vector<std::string> pinned = Hosts("chi", 2800 + static_cast<int>(rng.Uniform(0, 90)), nodes);
  const std::vector<std::string> other = Hosts("chi", 3000 + static_cast<int>(rng.Uniform(0, 90)), nodes);
  const int profiles = 30 + static_cast<int>(rng.Uniform(0, 10));

  // Profiles and their true effects.
  std::vector<std::string> names;
  std::map<std::string, double> effect;
  for (int p = 0; p < profiles; ++p) {
    names.push_back("p" + std::to_string(p));
    effect[names.back()] = 0;
  }
  std::string winner;
  std::vector<size_t> order(names.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Next() % i]);
  size_t next = 0;
  if (has_winner) {
    winner = names[order[next++]];
    effect[winner] = rng.Uniform(2.0, 3.0);
    // Real but smaller effects: at least 1 % behind the winner.
    for (int k = 0, n = 1 + static_cast<int>(rng.Uniform(0, 3)); k < n; ++k)
      effect[names[order[next++]]] = rng.Uniform(0.5, std::max(0.6, effect[winner] - 1.0));
  }
  for (int k = 0, n = 2 + static_cast<int>(rng.Uniform(0, 4)); k < n; ++k)
    effect[names[order[next++]]] = -rng.Uniform(1.0, 3.0);
  // The failures the runbook's recovery table covers, each on a profile with no effect.
  const std::string oom = names[order[next++]];
  const std::string bad_flag = names[order[next++]];
  const std::string flaky3 = names[order[next++]];
  const std::string flaky1 = names[order[next++]];
  effect[oom] = effect[bad_flag] = effect[flaky3] = effect[flaky1] = 0;
  std::string off_nodelist_profile;
  if (rng.Uniform() < 0.4) off_nodelist_profile = names[order[next++]];

  std::ostringstream env;
  env << "TUNE_PROFILE=\"${TUNE_PROFILE:-${EXTRACTED_ENV_MAP[TUNE_PROFILE]:-baseline}}\"\nTUNE_FLAGS=\"\"\n"
      << "case \"${TUNE_PROFILE}\" in\n  baseline) ;;\n";
  for (size_t p = 0; p < names.size(); ++p) env << "  " << names[p] << ")\n    TUNE_FLAGS+=\" " << FlagFor(static_cast<int>(p)) << "\"\n    ;;\n";
  env << "  *)\n    echo \"[train_env.sh] WARNING: unknown TUNE_PROFILE='$TUNE_PROFILE'\" >&2\n    ;;\nesac\n";
  const std::string artifact = "artifact_20260224_101500_" + Fmt("%04.0f", static_cast<double>(seed % 10000));
  RETURN_IF_ERROR(WriteArtifact(outputs, artifact, env.str(), "c0ffee1 tuning sweep base"));

  std::vector<PlannedJob> jobs;
  int id = 10000 + static_cast<int>(seed % 50) * 100;
  auto plan = [&](const std::string& profile, const std::string& failure, const std::vector<std::string>& hosts,
                  double extra_pct) {
    PlannedJob j;
    j.id = std::to_string(id++);
    j.model = "llama2-70b";
    j.hosts = hosts;
    j.passthrough = {{"steps", "15"}, {"dataset_type", "synthetic"}, {"per_device_batch_size", "2"},
                     {"jax_distributed_heartbeat_timeout_seconds", "99999"}};
    if (profile != "baseline") j.passthrough["_env_TUNE_PROFILE"] = profile;
    if (profiler) j.passthrough["profiler"] = "xplane";
    j.artifact = artifact;
    j.profiler = profiler;
    j.level = level * (1 + (profile == "baseline" ? 0 : effect[profile]) / 100 + extra_pct / 100);
    j.noise_pct = noise_pct;
    j.mfu_per_tgs = mfu_per_tgs;
    if (rng.Uniform() < 0.15) j.outlier_step = (profiler ? kProfiledFirst : 5) + static_cast<int>(rng.Uniform(0, 6));
    j.failure = failure;
    if (failure == "unknown-flag") j.unknown_flag = "--xla_gpu_enable_async_all_gather=true";
    jobs.push_back(j);
  };
  for (int r = 0; r < 3; ++r) plan("baseline", "", pinned, 0);   // Wave 1, repeated
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& p = names[i];
    if (p == oom) plan(p, "oom", pinned, 0);
    else if (p == bad_flag) plan(p, "unknown-flag", pinned, 0), plan(p, "", pinned, 0);   // fixed, resubmitted
    else if (p == flaky3) plan(p, "rccl-flake", pinned, 0), plan(p, "rccl-flake", pinned, 0), plan(p, "rccl-flake", pinned, 0);
    else if (p == flaky1) plan(p, "rccl-flake", pinned, 0), plan(p, "", pinned, 0);
    else plan(p, "", pinned, 0);
    // Another nodelist: faster hardware, no flag effect; the nodelist check must keep it out.
    if (p == off_nodelist_profile) plan(p, "", other, 5.0);
  }
  json truth = {{"kind", "tuning"},
                {"seed", seed},
                {"noise_pct", noise_pct},
                {"profiler", profiler},
                {"winner", winner.empty() ? json(nullptr) : json(winner)},
                {"effects_pct", effect},
                {"jobs", jobs.size()},
                {"rules", {{oom, "dropped-oom"}, {bad_flag, "retried"}, {flaky3, "infra-flake"}, {flaky1, "retried"}}},
                {"off_nodelist_profile", off_nodelist_profile}};
  std::vector<std::string> off_jobs;
  for (const auto& j : jobs) {
    RETURN_IF_ERROR(WriteJob(outputs, j, rng));
    if (j.hosts != pinned) off_jobs.push_back(j.id);
  }
  truth["off_nodelist_jobs"] = off_jobs;
  return WriteText(dir / "truth.json", truth.dump(2) + "\n");
}

Status GenerateModelSweep(uint64_t seed, const fs::path& dir) {
  Rng rng(seed, "model-sweep");
  ASSIGN_OR_RETURN(const fs::path outputs, FreshOutputs(dir));
  struct Cell {
    std::string model;
    int nodes;
    double level;
  };
  std::vector<Cell> all = {{"llama2-70b", 1, 1840},  {"llama2-70b", 2, 2036},   {"mixtral-8x22b", 4, 4766},
                           {"mixtral-8x22b", 8, 4780}, {"grok-1", 8, 2536},      {"llama3.1-405b", 8, 674},
                           {"deepseek3-671b", 8, 1416}, {"kimi-k2-1t", 8, 1149}};
  const int count = 6 + static_cast<int>(rng.Uniform(0, 3));
  for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng.Next() % i]);
  all.resize(count);
  const double noise_pct = rng.Uniform(0.3, 1.0);
  std::vector<double> mfu_per_tgs;   // a model's MFU per TGS does not change with the commit
  for (const Cell& cell : all) mfu_per_tgs.push_back(rng.Uniform(9, 35) / cell.level);
  // Roles: cell 0 regresses in sweep 2, cell 1 breaks in sweep 2, cell 2 fails throughout.
  const std::vector<std::string> commits = {"a11ce01 main", "b0b0b02 candidate", "c0de003 follow-up"};
  const double regression_pct = rng.Uniform(8, 15);
  const std::vector<std::string> nodes8 = Hosts("mi", 100, 8);
  json expected = json::array();
  int id = 20000 + static_cast<int>(seed % 50) * 100;
  for (size_t s = 0; s < commits.size(); ++s) {
    const std::string artifact = "artifact_2026022" + std::to_string(s) + "_120000_" + Fmt("%04.0f", static_cast<double>(s));
    RETURN_IF_ERROR(WriteArtifact(outputs, artifact, "# no TUNE_PROFILE block\n", commits[s]));
    for (size_t c = 0; c < all.size(); ++c) {
      PlannedJob j;
      j.id = std::to_string(id++);
      j.model = all[c].model;
      // The same nodelist per model x node count across sweeps (batch-sweep's critical rule).
      j.hosts = std::vector<std::string>(nodes8.begin() + (all[c].nodes == 1 ? 0 : all[c].nodes == 2 ? 2 : all[c].nodes == 4 ? 4 : 0),
                                         nodes8.begin() + (all[c].nodes == 1 ? 1 : all[c].nodes == 2 ? 4 : 8));
      j.passthrough = {{"steps", "15"}, {"dataset_type", "synthetic"}};
      j.artifact = artifact;
      j.noise_pct = noise_pct;
      j.mfu_per_tgs = mfu_per_tgs[c];
      j.level = all[c].level * (1 + rng.Uniform(-0.4, 0.4) / 100);   // within noise
      if (c == 0 && s >= 1) j.level *= 1 - regression_pct / 100;
      if (c == 1 && s >= 1) j.failure = "oom";
      if (c == 2) j.failure = "python";
      if (rng.Uniform() < 0.1) j.outlier_step = 5 + static_cast<int>(rng.Uniform(0, 10));
      RETURN_IF_ERROR(WriteJob(outputs, j, rng));
      if (s == 0) continue;
      std::string outcome = "no regression";
      if (c == 0 && s == 1) outcome = "regression";
      if (c == 1) outcome = s == 1 ? "new breakage" : "pre-existing failure";
      if (c == 2) outcome = "pre-existing failure";
      expected.push_back({{"sweep", s}, {"model", all[c].model}, {"nodes", all[c].nodes}, {"outcome", outcome}});
    }
  }
  json truth = {{"kind", "model"}, {"seed", seed}, {"noise_pct", noise_pct}, {"commits", commits}, {"expected", expected}};
  return WriteText(dir / "truth.json", truth.dump(2) + "\n");
}

}  // namespace

Status GenerateSweeps(const SweepGenerateOptions& options) {
  if (options.out_dir.empty()) return InvalidArgumentError("--out is required");
  for (int k = 0; k < options.tuning_sweeps; ++k)
    RETURN_IF_ERROR(GenerateTuningSweep(options.seed * 1000 + k, fs::path(options.out_dir) / ("tuning-" + std::to_string(k))));
  for (int k = 0; k < options.model_sweeps; ++k)
    RETURN_IF_ERROR(GenerateModelSweep(options.seed * 1000 + k, fs::path(options.out_dir) / ("model-" + std::to_string(k))));
  return Status::Ok();
}

}  // namespace diagnose::campaign
