#include "tools/campaign/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "engine/triage/hostlist.h"
#include "tools/fixturegen/log_writer.h"
#include "tools/fixturegen/random.h"
#include "tools/fixturegen/scenario.h"
#include "tools/fixturegen/timeline.h"

namespace diagnose::campaign {
namespace {

using fixturegen::Rng;

// ---------------------------------------------------------------------------------------------
// The scenario as the campaign builds it, rendered to fixturegen YAML (fixtures/README.md).

struct FaultSpec {
  std::string kind;
  std::vector<std::string> hosts;
  std::string window;   // "steps: a-b", "after_step: n" or empty (whole job)
  double rate = 0;
  std::vector<int> devices;
};

struct PhaseSpec {
  int64_t first = 0, last = 0;
  double tgs = 0, tgs_end = 0;
};

// A profiler window (fixturegen's `profile:`): one step's kernels, the same on every GPU and step
// but for one slow GPU, 1-node/proc.
struct ProfileKernel {
  std::string name;
  int stream = 0;
  double start = 0, seconds = 0;
  int launches = 1;
};

struct ProfilePlan {
  int64_t first_step = 0;
  int steps = 3;
  double step_seconds = 0;
  std::vector<ProfileKernel> kernels;
  std::string slow_host;
  int slow_gpu = -1;
  double slow_factor = 1;
};

struct JobSpec {
  std::string id, model, description;
  std::string launcher = "slurm";   // slurm, k8s (rank-N.log files, no srun labels) or local (run_local.sh)
  bool ray = true;
  bool running = false;             // still running: no end-of-job line, judged at its `now`
  double start = 0;
  uint64_t seed = 1;
  std::vector<std::string> hosts;
  std::vector<std::string> passthrough;
  bool moe = false;
  int seq_len = 8192;
  int64_t first_step = 0, last_step = 0;
  double tflops_per_tgs = 0.5;
  std::optional<double> init_seconds, checkpoint_save_seconds;
  std::optional<int> checkpoint_writers;
  int extra_nccl_waves = 0;
  double hang_seconds = 0;
  double step_jitter_pct = 0.12;
  std::optional<std::pair<int64_t, int64_t>> log_gap;   // steps whose lines the log lost (fixturegen's log_gap)
  std::vector<PhaseSpec> phases;
  std::optional<int64_t> lb_change_step;
  double lb_base = 0.0104, lb_after = 0.0104;
  std::optional<double> heartbeat_time;
  std::vector<int> heartbeat_accused;
  bool heartbeat_accused_died = false;   // a true positive: the accused tasks never log their own death
  std::string silence_activity;          // what the hosts do after the last step: "", hang or train
  double node_hw_interval = 30, ray_interval = 30;
  std::string nic_vendor = "ionic";
  double power_spread_w = 0, temperature_spread_c = 0, clock_spread_mhz = 0;
  std::string instance_domain;   // exporters report FQDNs (targets; the host label too with host_label_fqdn)
  bool host_label_fqdn = false;
  std::string node_hw_names = "host";   // how node_hw series name their node (fixturegen's node_hw_names)
  bool ray_metrics = true;              // false: no Ray series in the TSDB (fixturegen's ray_metrics)
  std::string stop_phase = "steps";     // before_step0: the job ends while step 0 compiles
  std::string tsdb_format = "blocks";   // wal: Prometheus died with a job shorter than 2 h, no block cut
  std::optional<int64_t> tsdb_end_step;  // the snapshot ends just after this step (fixturegen's tsdb_end_step)
  bool ipv6 = false;                     // nodes addressed by IPv6 (fixturegen's ipv6)
  // node_hw's interval changes to this once `interval_change_at` of the job's steps have run (a
  // Prometheus reload mid-job); 0: one interval throughout.
  double node_hw_interval_after = 0, interval_change_at = 0;
  // The node's hardware (fixturegen's gpu_name, gpus_per_node, rdma_devices and GPU levels); the
  // defaults are an 8-GPU, 8-NIC MI355X node, and a level left at 0 is the MI355X's.
  std::string gpu_name;
  int gpus_per_node = 8, rdma_devices = 8;
  double gpu_power_w = 0, gpu_sclk_mhz = 0, gpu_temperature_c = 0;
  double training_power_w = 0;   // > 0: a workload lighter than the model (fixturegen's training_power_w)
  std::vector<FaultSpec> faults;
  std::vector<std::string> events;   // rendered flow mappings
  std::map<int, int> node_exits;
  std::string summary = "{status: SUCCESS, exit: 0}";
  double mtime_skew_seconds = 0;
  std::optional<ProfilePlan> profile;
};

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Scenario times are UTC with a trailing Z (fixturegen rejects anything else).
std::string Iso(double epoch) { return fixturegen::FormatIso(epoch) + "Z"; }

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

template <typename T, typename F>
std::string FlowList(const std::vector<T>& items, F render) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + render(items[i]);
  return out + "]";
}

std::string HostList(const std::vector<std::string>& hosts) {
  return FlowList(hosts, [](const std::string& h) { return h; });
}

std::string Exclusions(const std::vector<ExpectedExclusion>& exclude) {
  return FlowList(exclude, [](const ExpectedExclusion& e) {
    return e.priority ? "{host: " + e.host + ", priority: " + std::to_string(*e.priority) + "}" : e.host;
  });
}

std::string Render(const JobSpec& s, const JobTruth& truth) {
  std::ostringstream y;
  y << "description: " << Quoted(s.description) << "\n";
  y << "job:\n  id: \"" << s.id << "\"\n  model: " << s.model << "\n  launcher: " << s.launcher
    << "\n  ray: " << (s.ray ? "true" : "false") << "\n";
  y << "  start: " << Iso(s.start) << "\n  seed: " << s.seed << "\n";
  y << "  hosts: \"" << CompressHostlist(s.hosts) << "\"\n";
  if (!s.gpu_name.empty()) y << "  gpu_name: " << Quoted(s.gpu_name) << "\n";
  if (s.gpus_per_node != 8) y << "  gpus_per_node: " << s.gpus_per_node << "\n";
  y << "  passthrough: " << HostList(s.passthrough) << "\n";
  y << "training:\n  moe: " << (s.moe ? "true" : "false") << "\n  seq_len: " << s.seq_len << "\n";
  if (s.first_step > 0) y << "  first_step: " << s.first_step << "\n";
  if (s.stop_phase != "steps") y << "  stop: " << s.stop_phase << "\n";
  y << "  last_step: " << s.last_step << "\n  tflops_per_tgs: " << Num(s.tflops_per_tgs) << "\n";
  y << "  step_jitter_pct: " << Num(s.step_jitter_pct) << "\n";
  if (s.log_gap) y << "  log_gap: " << s.log_gap->first << "-" << s.log_gap->second << "\n";
  if (s.init_seconds) y << "  init_seconds: " << Num(*s.init_seconds) << "\n";
  if (s.checkpoint_save_seconds) y << "  checkpoint_save_seconds: " << Num(*s.checkpoint_save_seconds) << "\n";
  if (s.checkpoint_writers) y << "  checkpoint_writers: " << *s.checkpoint_writers << "\n";
  if (s.extra_nccl_waves) y << "  extra_nccl_waves: " << s.extra_nccl_waves << "\n";
  if (s.hang_seconds > 0) y << "  hang_seconds: " << Num(s.hang_seconds) << "\n";
  if (!s.silence_activity.empty()) y << "  silence_activity: " << s.silence_activity << "\n";
  if (s.moe)
    y << "  moe_lb_loss: {base: " << Num(s.lb_base)
      << (s.lb_change_step ? ", change_at: " + std::to_string(*s.lb_change_step) + ", after: " + Num(s.lb_after) : "")
      << "}\n";
  y << "  phases:\n";
  for (const PhaseSpec& p : s.phases) {
    y << "    - {steps: " << p.first << "-" << p.last << ", tgs: " << Num(p.tgs);
    if (p.tgs_end > 0) y << ", tgs_end: " << Num(p.tgs_end);
    y << "}\n";
  }
  if (s.heartbeat_time) {
    std::string accused = FlowList(s.heartbeat_accused, [](int t) { return std::to_string(t); });
    y << "heartbeat: {time: " << Iso(*s.heartbeat_time) << ", accused: " << accused
      << ", own_death: " << (s.heartbeat_accused_died ? "[]" : accused) << ", coordinator: 0}\n";
  }
  y << "metrics:\n  tsdb: true\n  node_hw_interval: " << Num(s.node_hw_interval)
    << "\n  ray_interval: " << Num(s.ray_interval) << "\n  nic_vendor: " << s.nic_vendor << "\n";
  y << "  power_spread_w: " << Num(s.power_spread_w) << "\n  temperature_spread_c: " << Num(s.temperature_spread_c)
    << "\n  clock_spread_mhz: " << Num(s.clock_spread_mhz) << "\n";
  if (s.rdma_devices != 8) y << "  rdma_devices: " << s.rdma_devices << "\n";
  if (s.gpu_power_w > 0) y << "  gpu_power_w: " << Num(s.gpu_power_w) << "\n";
  if (s.gpu_sclk_mhz > 0) y << "  gpu_sclk_mhz: " << Num(s.gpu_sclk_mhz) << "\n";
  if (s.gpu_temperature_c > 0) y << "  gpu_temperature_c: " << Num(s.gpu_temperature_c) << "\n";
  if (s.training_power_w > 0) y << "  training_power_w: " << Num(s.training_power_w) << "\n";
  if (!s.instance_domain.empty()) y << "  instance_domain: " << s.instance_domain << "\n";
  if (s.host_label_fqdn) y << "  host_label_fqdn: true\n";
  if (s.node_hw_names != "host") y << "  node_hw_names: " << s.node_hw_names << "\n";
  if (!s.ray_metrics) y << "  ray_metrics: false\n";
  if (s.tsdb_format != "blocks") y << "  tsdb_format: " << s.tsdb_format << "\n";
  if (s.tsdb_end_step) y << "  tsdb_end_step: " << *s.tsdb_end_step << "\n";
  if (s.ipv6) y << "  ipv6: true\n";
  if (s.node_hw_interval_after > 0) {
    const int64_t at =
        s.first_step + static_cast<int64_t>(s.interval_change_at * static_cast<double>(s.last_step - s.first_step));
    y << "  node_hw_interval_from: {step: " << at << ", interval: " << Num(s.node_hw_interval_after) << "}\n";
  }
  if (!s.faults.empty()) {
    y << "faults:\n";
    for (const FaultSpec& f : s.faults) {
      y << "  - {kind: " << f.kind << ", hosts: " << HostList(f.hosts);
      if (!f.window.empty()) y << ", " << f.window;
      if (f.rate != 0) y << ", rate: " << Num(f.rate);
      if (!f.devices.empty()) y << ", devices: " << FlowList(f.devices, [](int d) { return std::to_string(d); });
      y << "}\n";
    }
  }
  if (!s.events.empty()) {
    y << "events:\n";
    for (const auto& e : s.events) y << "  - " << e << "\n";
  }
  if (!s.node_exits.empty()) {
    y << "node_exits: {";
    bool first = true;
    for (const auto& [task, code] : s.node_exits) y << (first ? "" : ", ") << task << ": " << code, first = false;
    y << "}\n";
  }
  if (s.profile) {
    const ProfilePlan& pr = *s.profile;
    // The window's directory is named by its wall-clock start, as the profiler names it.
    std::string stamp = fixturegen::FormatIso(s.start + 600).substr(0, 19);
    std::replace_if(stamp.begin(), stamp.end(), [](char c) { return c == '-' || c == 'T' || c == ':'; }, '_');
    y << "profile:\n  run: " << s.model << "_train\n  timestamp: " << stamp << "\n  launcher_mode: 1-node/proc\n";
    y << "  first_step: " << pr.first_step << "\n  steps: " << pr.steps << "\n  step_seconds: " << Num(pr.step_seconds)
      << "\n  kernels:\n";
    for (const ProfileKernel& k : pr.kernels)
      y << "    - {name: " << Quoted(k.name) << ", stream: " << k.stream << ", start: " << Num(k.start)
        << ", seconds: " << Num(k.seconds) << ", launches: " << k.launches << "}\n";
    if (pr.slow_gpu >= 0)
      y << "  slow_gpu: {host: " << pr.slow_host << ", gpu: " << pr.slow_gpu << ", factor: " << Num(pr.slow_factor)
        << "}\n";
  }
  if (s.running) y << "running: true\n";
  else y << "summary: " << s.summary << "\n";
  if (s.mtime_skew_seconds != 0) y << "mtime_skew_seconds: " << Num(s.mtime_skew_seconds) << "\n";
  y << "expect:\n  root_cause: " << truth.root_cause << "\n  action: " << truth.action << "\n";
  y << "  exclude: " << Exclusions(truth.exclude) << "\n";
  y << "  not_excluded: " << HostList(truth.must_not_exclude) << "\n";
  if (truth.baseline) y << "  baseline: \"" << *truth.baseline << "\"\n";
  if (truth.now) y << "  now: " << static_cast<int64_t>(*truth.now) << "\n";
  y << "  campaign_kind: " << truth.kind << "\n";
  return y.str();
}

// ---------------------------------------------------------------------------------------------
// Randomized job shapes.

const char* const kSchemes[] = {"chi", "node", "gpu-a", "rk-node", "sn-c", "tc", "x1000", "mi355"};

// `count` distinct host names of one naming scheme, in Slurm's sorted nodelist order.
std::vector<std::string> HostPool(Rng& rng, int scheme, int count) {
  std::vector<std::string> hosts;
  char buf[64];
  int n = 0;
  auto gap = [&] { return rng.Uniform() < 0.15 ? 1 + static_cast<int>(rng.Uniform(0, 4)) : 0; };
  switch (scheme) {
    case 0: n = 2000 + static_cast<int>(rng.Uniform(0, 1700)); break;
    case 5: case 6: case 7: n = 0; break;
    default: n = 1 + static_cast<int>(rng.Uniform(0, 12)); break;
  }
  int rack = 1 + static_cast<int>(rng.Uniform(0, 9)), cab = static_cast<int>(rng.Uniform(0, 7));
  while (static_cast<int>(hosts.size()) < count) {
    switch (scheme) {
      case 0: std::snprintf(buf, sizeof buf, "chi%d", n); n += 1 + gap(); break;
      case 1: std::snprintf(buf, sizeof buf, "node%02d", n); n += 1 + gap(); break;
      case 2: std::snprintf(buf, sizeof buf, "gpu-a%02d", n); n += 1 + gap(); break;
      case 3: std::snprintf(buf, sizeof buf, "rk-node-%d", n); n += 1 + gap(); break;
      case 4: std::snprintf(buf, sizeof buf, "sn-c%d", n); n += 1 + gap(); break;
      case 5:   // tc-r<rack>n<1-8>
        std::snprintf(buf, sizeof buf, "tc-r%dn%d", rack + n / 8, n % 8 + 1);
        n += 1;
        break;
      case 6:   // HPE Cray names: cabinet, chassis (0-7), slot (0-7), board 0, node (0-1)
        std::snprintf(buf, sizeof buf, "x1000c%ds%db0n%d", cab + n / 16, n / 2 % 8, n % 2);
        n += 1;
        break;
      default:  // mi355-r<rack>-u<unit>, 10 units of 4U per rack
        std::snprintf(buf, sizeof buf, "mi355-r%02d-u%02d", rack + n / 10, 2 + 4 * (n % 10));
        n += 1;
        break;
    }
    hosts.push_back(buf);
  }
  return hosts;
}

std::vector<std::string> Canonical(const std::vector<std::string>& hosts) {
  auto expanded = ExpandHostlist(CompressHostlist(hosts));
  return expanded.ok() ? *expanded : hosts;
}

struct Model {
  const char* name;
  bool moe;
};
const Model kModels[] = {{"llama2-70b", false}, {"llama3.1-70b", false}, {"llama3.1-405b", false},
                         {"mixtral-8x7b", true}, {"mixtral-8x22b", true}};

constexpr double kSamplesBudget = 1.4e6;   // per job: keeps 40 jobs within minutes on 2 cores

class JobPlanner {
 public:
  JobPlanner(uint64_t seed, const std::string& stream, std::string job_id)
      : rng_(seed, stream), hardware_rng_(seed, stream + "/hardware") {
    spec_.id = std::move(job_id);
    spec_.seed = fixturegen::HashString(stream, seed) % 1000000 + 1;
    truth_.job_id = spec_.id;
  }

  double U(double lo, double hi) { return rng_.Uniform(lo, hi); }
  int Int(int lo, int hi) { return lo + static_cast<int>(std::floor(rng_.Uniform() * (hi - lo + 1))); }
  bool Chance(double p) { return rng_.Uniform() < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[static_cast<size_t>(Int(0, static_cast<int>(v.size()) - 1))]; }

  // Cluster, model, size, speed and telemetry: everything the fault does not decide.
  void Shape(bool need_moe, bool need_retx_counters, int min_steps = 100) {
    if (wide_) return WideShape(need_moe, need_retx_counters, min_steps);
    scheme_ = Int(0, 7);
    double r = rng_.Uniform();
    int nodes = r < 0.7 ? Int(4, 12) : r < 0.93 ? Int(13, 24) : Int(25, 64);
    spec_.hosts = Canonical(HostPool(rng_, scheme_, nodes));
    Speed(need_moe);
    steps_ = nodes > 24 ? Int(100, 180) : Int(std::max(100, min_steps), 400);
    steps_ = std::max(steps_, min_steps);
    Telemetry(nodes, need_retx_counters, {5, 10, 15, 20, 30}, {5, 10, 15, 30});
  }

  // The widened campaign (issue 35): 20-3,000 steps (log-uniform), 4-512 nodes, node_hw and Ray
  // scraped at independent 5-60 s intervals.
  void WideShape(bool need_moe, bool need_retx_counters, int min_steps) {
    scheme_ = Int(0, 7);
    double r = rng_.Uniform();
    int nodes = r < 0.55 ? Int(4, 12) : r < 0.8 ? Int(13, 32) : r < 0.93 ? Int(33, 128) : Int(129, 512);
    if (few_nodes_ > 0) nodes = few_nodes_;
    Speed(need_moe);
    steps_ = std::clamp(static_cast<int>(std::lround(std::exp(U(std::log(20.0), std::log(3000.0))))), min_steps,
                        std::max(min_steps, 3000));
    // A long job on many nodes would not fit the sample budget even at 60 s scrapes (or the log,
    // which grows with nodes x steps): the node count gives way, never below 4.
    const double coarsest = (need_retx_counters ? 365 : 210) / 60.0 + 30 / 60.0;
    const double duration = 300 + steps_ * step_seconds_;
    nodes = std::max(few_nodes_ > 0 ? few_nodes_ : 4,
                     std::min({nodes, static_cast<int>(kSamplesBudget / (duration * coarsest)), 200000 / steps_}));
    spec_.hosts = Canonical(HostPool(rng_, scheme_, nodes));
    Telemetry(nodes, need_retx_counters, {5, 10, 15, 20, 30, 45, 60}, {5, 10, 15, 30, 45, 60});
    // One cluster in four runs exporters that report FQDNs (`hostname`, not `hostname -s`).
    if (Chance(0.25)) {
      spec_.instance_domain = std::vector<std::string>{"cluster.local", "hpc.example.org", "ib.dc2.example"}[Int(0, 2)];
      spec_.host_label_fqdn = Chance(0.5);
    }
    // Half the jobs whose Prometheus runs well under 2 h leave only a WAL (it died with the job
    // before cutting a block); the margin covers init, compile and a failure's tail.
    if (300 + steps_ * step_seconds_ < 5400 && Chance(0.5)) spec_.tsdb_format = "wal";
  }

  // A job on exactly `nodes` nodes (the wider campaign's scale family): `min_steps` to 100 more steps,
  // scrapes at 30-60 s. At 256-512 nodes such a job runs over the sample budget, so a campaign
  // draws few of them.
  void ScaleShape(int nodes, bool need_retx_counters, int min_steps) {
    scheme_ = Int(0, 7);
    Speed(false);
    steps_ = Int(min_steps, min_steps + 100);
    spec_.hosts = Canonical(HostPool(rng_, scheme_, nodes));
    Telemetry(nodes, need_retx_counters, {30, 45, 60}, {30, 45, 60});
  }

  // fixturegen counts a fault at the scrapes that land inside its window, so a fault shorter than
  // the node_hw interval can leave nothing in the TSDB: node_hw is scraped at the coarsest of
  // 5-30 s that fits in `seconds`, and the node count gives way to the sample budget (never below 4).
  void ScrapeWithin(double seconds) {
    double interval = 5;
    for (double coarser : {10.0, 15.0, 20.0, 30.0})
      if (coarser <= seconds) interval = coarser;
    spec_.node_hw_interval = interval;
    FitSampleBudget();
  }

  // The node count gives way to the sample budget at the job's scrape intervals (never below 4), as
  // after the steps grew past what Shape() sized the job for.
  void FitSampleBudget() {
    const double duration = 300 + steps_ * step_seconds_;
    const double per_host =
        (spec_.nic_vendor == "ionic" ? 365 : 210) / spec_.node_hw_interval + 30 / spec_.ray_interval;
    const size_t fit = std::max<size_t>(4, static_cast<size_t>(kSamplesBudget / (duration * per_host)));
    if (spec_.hosts.size() > fit) spec_.hosts.resize(fit);
  }

  // Model, throughput, sequence length, batch and so the step time.
  void Speed(bool need_moe) {
    const Model& m = need_moe ? kModels[Int(3, 4)] : kModels[Int(0, 4)];
    spec_.model = m.name;
    spec_.moe = m.moe;
    tgs_ = std::round(U(1000, 3400));
    spec_.seq_len = Chance(0.5) ? 4096 : 8192;
    pdbs_ = std::clamp(static_cast<int>(std::lround(U(6, 18) * tgs_ / spec_.seq_len)), 1, 16);
    step_seconds_ = spec_.seq_len * static_cast<double>(pdbs_) / tgs_;
  }

  // Noise, NIC, scrape intervals (drawn from `hw` / `ray` separately, then coarsened so a job stays
  // within the sample budget), hardware spreads and the start date.
  void Telemetry(int nodes, bool need_retx_counters, const std::vector<double>& hw, const std::vector<double>& ray) {
    spec_.tflops_per_tgs = U(600, 1100) / tgs_;
    spec_.step_jitter_pct = std::round(U(0.2, 2.0) * 100) / 100;
    const size_t hw_last = hw.size() - 1, ray_last = ray.size() - 1;
    size_t hw_i = static_cast<size_t>(Int(0, static_cast<int>(hw_last))), ray_i = static_cast<size_t>(Int(0, static_cast<int>(ray_last)));
    spec_.nic_vendor = need_retx_counters ? "ionic" : std::vector<std::string>{"ionic", "ionic", "bnxt_re", "mlx5"}[Int(0, 3)];
    auto cost = [&] {
      double duration = 300 + steps_ * step_seconds_;
      double per_host = (spec_.nic_vendor == "ionic" ? 365 : 210) / hw[hw_i] + 30 / ray[ray_i];
      return nodes * duration * per_host;
    };
    while (cost() > kSamplesBudget && hw_i < hw_last) ++hw_i;
    while (cost() > kSamplesBudget && ray_i < ray_last) ++ray_i;
    spec_.node_hw_interval = hw[hw_i];
    spec_.ray_interval = ray[ray_i];
    spec_.power_spread_w = std::round(U(3, 25));
    spec_.temperature_spread_c = std::round(U(0.5, 4) * 10) / 10;
    spec_.clock_spread_mhz = std::round(U(10, 80));
    spec_.start = 1740787200.0 /* 2025-03-01 */ + std::round(U(0, 420 * 86400.0) / 60) * 60;
    spec_.last_step = steps_ - 1;
    heartbeat_timeout_ = 14400;
    if (hardware_) DrawHardware();
  }

  // `--widest` hardware: what fleets run besides 8-GPU, 8-NIC MI355X nodes. Each model with its own
  // training power, cool core clock and temperature; MI250X nodes as 8 GCDs or, as some exporters
  // report them, 4 modules; MI300A nodes with 4 APUs; 1, 2, 4 or 8 RDMA NICs. From a stream of its
  // own, so every other draw of the job is what it was without it.
  void DrawHardware() {
    struct GpuModel {
      const char* name;
      std::vector<int> gpus_per_node;
      double power_w, sclk_mhz, temperature_c;   // 0: the MI355X's own (fixturegen's defaults)
    };
    static const std::vector<GpuModel> kGpuModels = {{"AMD Instinct MI355X", {8}, 0, 0, 0},
                                                     {"AMD Instinct MI300X", {8}, 700, 2100, 80},
                                                     {"AMD Instinct MI250X", {8, 4}, 500, 1700, 70},
                                                     {"AMD Instinct MI300A", {4}, 550, 2100, 75}};
    static const std::vector<int> kNicsPerNode = {1, 2, 4, 8};
    Rng& r = hardware_rng_;
    auto pick = [&r](size_t n) { return std::min(n - 1, static_cast<size_t>(r.Uniform() * static_cast<double>(n))); };
    const GpuModel& model = kGpuModels[pick(kGpuModels.size())];
    spec_.gpu_name = model.name;
    spec_.gpus_per_node = model.gpus_per_node[pick(model.gpus_per_node.size())];
    spec_.gpu_power_w = model.power_w;
    spec_.gpu_sclk_mhz = model.sclk_mhz;
    spec_.gpu_temperature_c = model.temperature_c;
    spec_.rdma_devices = kNicsPerNode[pick(kNicsPerNode.size())];
    // One fleet in five addresses its nodes by IPv6 (drawn last: the draws above keep their values).
    spec_.ipv6 = r.Uniform() < 0.2;
    // One job in five has its node_hw scrape interval coarsened mid-job (a Prometheus reload), 20-80 %
    // of the way through; never finer, so the job stays within the sample budget.
    const double change = r.Uniform(), at = r.Uniform(0.2, 0.8);
    static const std::vector<double> kCoarser = {15, 30, 60};
    const double to = kCoarser[pick(kCoarser.size())];
    if (change < 0.2 && to > spec_.node_hw_interval) {
      spec_.node_hw_interval_after = to;
      spec_.interval_change_at = at;
    }
  }

  void Passthrough() {
    spec_.passthrough = {"steps=" + std::to_string(total_steps_ ? total_steps_ : steps_),
                         "per_device_batch_size=" + std::to_string(pdbs_), "dataset_type=synthetic",
                         "jax_distributed_heartbeat_timeout_seconds=" + std::to_string(heartbeat_timeout_)};
    if (checkpoint_period_ > 0) {
      spec_.passthrough.push_back("enable_checkpointing=true");
      spec_.passthrough.push_back("checkpoint_period=" + std::to_string(checkpoint_period_));
    }
  }

  void MaybeCheckpoint(double p = 0.4) {
    if (!Chance(p)) return;
    checkpoint_period_ = Int(30, 100);
    spec_.checkpoint_save_seconds = std::round(U(60, 240));
  }

  // Fault windows must be long enough in wall time for a rate() window to see them.
  void EnsureSteps(int64_t n) {
    if (spec_.last_step + 1 >= n) return;
    steps_ = static_cast<int>(n);
    spec_.last_step = n - 1;
  }

  // At most `n` steps (and steps= in the passthrough agrees).
  void CapSteps(int64_t n) {
    if (spec_.last_step + 1 <= n) return;
    steps_ = static_cast<int>(n);
    spec_.last_step = n - 1;
  }

  // Steps of about `seconds`: one sequence of 2,048 tokens a device a step, at the TGS that takes.
  void ShortSteps(double seconds) {
    spec_.seq_len = 2048;
    pdbs_ = 1;
    tgs_ = std::round(spec_.seq_len / seconds);
    step_seconds_ = spec_.seq_len / tgs_;
    spec_.tflops_per_tgs = U(600, 1100) / tgs_;
  }

  // Steps spanning at least `seconds` of training.
  int64_t StepsFor(double seconds) const { return static_cast<int64_t>(std::ceil(seconds / step_seconds_)); }
  double StepSeconds() const { return step_seconds_; }
  double JitterPct() const { return spec_.step_jitter_pct; }

  const std::string& HostAt(size_t i) const { return spec_.hosts[i]; }
  size_t Nodes() const { return spec_.hosts.size(); }

  // Hosts that carry no injected fault yet, in a random order.
  std::vector<std::string> FreeHosts() {
    std::vector<std::string> free;
    for (const auto& h : spec_.hosts)
      if (!busy_.count(h)) free.push_back(h);
    for (size_t i = free.size(); i > 1; --i) std::swap(free[i - 1], free[static_cast<size_t>(Int(0, static_cast<int>(i) - 1))]);
    return free;
  }
  std::string TakeHost() {
    auto free = FreeHosts();
    busy_.insert(free.front());
    return free.front();
  }
  void MarkBusy(const std::string& h) { busy_.insert(h); }
  void Decoy(const std::string& h) {
    busy_.insert(h);
    if (std::find(truth_.must_not_exclude.begin(), truth_.must_not_exclude.end(), h) == truth_.must_not_exclude.end())
      truth_.must_not_exclude.push_back(h);
  }
  void Exclude(const std::string& h, std::optional<int> priority) {
    busy_.insert(h);
    truth_.exclude.push_back({h, priority});
  }

  std::string Steps(int64_t a, int64_t b) const { return "steps: " + std::to_string(a) + "-" + std::to_string(b); }
  void Fault(std::string kind, std::vector<std::string> hosts, std::string window, double rate,
             std::vector<int> devices = {}) {
    devices = OnTheNode(kind, std::move(devices));
    spec_.faults.push_back({std::move(kind), std::move(hosts), std::move(window), rate, std::move(devices)});
  }
  // Kinds draw device indices for an 8-GPU, 8-NIC node; on a smaller node they fold onto the devices
  // it has (a NIC fault onto a NIC, a GPU fault onto a GPU). GPUs left out of a collective
  // (gpu_idle) are the highest indices: those past the node's count are dropped, and when none is
  // left the last GPU stays out, never all of them (an empty list would mean every GPU).
  std::vector<int> OnTheNode(const std::string& kind, std::vector<int> devices) const {
    const int count = kind.rfind("rdma_", 0) == 0 ? spec_.rdma_devices : spec_.gpus_per_node;
    if (devices.empty() || count >= 8) return devices;
    std::vector<int> on_node;
    for (int d : devices) {
      if (kind != "gpu_idle") on_node.push_back(d % count);
      else if (d < count) on_node.push_back(d);
    }
    if (on_node.empty()) on_node.push_back(count - 1);
    std::sort(on_node.begin(), on_node.end());
    on_node.erase(std::unique(on_node.begin(), on_node.end()), on_node.end());
    return on_node;
  }
  std::vector<int> Devices(int count, int of) {
    std::vector<int> all(static_cast<size_t>(of));
    for (int i = 0; i < of; ++i) all[static_cast<size_t>(i)] = i;
    for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[static_cast<size_t>(Int(0, static_cast<int>(i) - 1))]);
    all.resize(static_cast<size_t>(count));
    std::sort(all.begin(), all.end());
    return all;
  }

  void Flat() { spec_.phases = {{spec_.first_step, spec_.last_step, tgs_, 0}}; }

  // Background noise and decoys every job gets; `quiet` is a stretch of flat, healthy training
  // where a misaligned burst can sit without lining up with any TGS change.
  void Noise(std::optional<std::pair<int64_t, int64_t>> quiet) {
    const bool retx_counters = spec_.nic_vendor == "ionic";
    if (retx_counters) {
      double fraction = U(0, 0.3);
      for (const auto& h : FreeHosts()) {
        if (!Chance(fraction)) continue;
        Fault("rdma_retx", {h}, "", std::round(U(0.05, 0.5) * 100) / 100, {Int(0, 7)});
        Decoy(h);
      }
    }
    auto free = FreeHosts();
    if (!free.empty() && Chance(0.35)) {
      Fault("tcp_retx", {free[0]}, "", std::round(U(300, 1500)));
      Decoy(free[0]);
      notes_ += " TCP-only decoy " + free[0] + ".";
    }
    free = FreeHosts();
    if (retx_counters && !free.empty() && Chance(0.25)) {
      Fault("rdma_stale_retry_exceeded", {free[0]}, "", std::round(U(200, 60000)), {Int(0, 7)});
      Decoy(free[0]);
      notes_ += " Old retry-exhaustion total on " + free[0] + ".";
    }
    // The widened campaign reloads a driver (or reboots a host) during one job in five: every
    // counter of that host restarts from zero, on a bystander or on the faulty host itself, before,
    // during or after its fault. Nothing about it is a fault to exclude.
    if (wide_ && Chance(0.2) && spec_.last_step - spec_.first_step > 4) {
      const std::string& h = spec_.hosts[static_cast<size_t>(Int(0, static_cast<int>(spec_.hosts.size()) - 1))];
      const int64_t at = spec_.first_step + Int(1, static_cast<int>(spec_.last_step - spec_.first_step) - 1);
      Fault("counter_reset", {h}, Steps(at, spec_.last_step), 0);
      notes_ += " Counters of " + h + " reset at step " + std::to_string(at) + " (driver reload).";
    }
    free = FreeHosts();
    if (retx_counters && quiet && !free.empty() && Chance(0.25)) {
      int64_t len = std::max<int64_t>(1, StepsFor(U(120, 300)));
      if (quiet->second - quiet->first > len + 4) {
        int64_t a = quiet->first + Int(0, static_cast<int>(quiet->second - quiet->first - len));
        Fault("rdma_retx", {free[0]}, Steps(a, a + len - 1), std::round(U(80, 600)), {Int(0, 7)});
        Decoy(free[0]);
        notes_ += " Misaligned RDMA burst on " + free[0] + " at steps " + std::to_string(a) + "+.";
      }
    }
  }

  JobSpec& spec() { return spec_; }
  JobTruth& truth() { return truth_; }
  double tgs() const { return tgs_; }
  int steps() const { return steps_; }
  int scheme() const { return scheme_; }
  int64_t checkpoint_period() const { return checkpoint_period_; }
  void set_checkpoint_period(int64_t p) { checkpoint_period_ = p; }
  void set_total_steps(int64_t t) { total_steps_ = t; }
  void set_heartbeat_timeout(int t) { heartbeat_timeout_ = t; }
  void set_tgs(double t) { tgs_ = t; }
  int pdbs() const { return pdbs_; }
  std::string& notes() { return notes_; }
  Rng& rng() { return rng_; }

 private:
  Rng rng_;
  Rng hardware_rng_;
  JobSpec spec_;
  JobTruth truth_;
  std::set<std::string> busy_;
  std::string notes_;
  int scheme_ = 0;
  double tgs_ = 2000, step_seconds_ = 10;
  int pdbs_ = 4, steps_ = 200;
  int64_t checkpoint_period_ = 0, total_steps_ = 0;
  int heartbeat_timeout_ = 14400;
  bool wide_ = false;
  bool hardware_ = false;
  int few_nodes_ = 0;

 public:
  void set_wide(bool w) { wide_ = w; }
  bool wide() const { return wide_; }
  // Draw the node's hardware (`--widest`); a job on exactly `nodes` (2-3) nodes.
  void set_hardware(bool h) { hardware_ = h; }
  void set_few_nodes(int nodes) { few_nodes_ = nodes; }
};

void Verdict(JobPlanner& p, const std::string& kind, const std::string& root_cause, const std::string& action) {
  p.truth().kind = kind;
  p.truth().root_cause = root_cause;
  p.truth().action = action;
}

std::string CancelEvents(std::vector<std::string>* events) {
  events->push_back("{at: end, lines: [\"slurmstepd: error: *** JOB {job_id} ON {head} CANCELLED AT {iso} ***\"]}");
  events->push_back("{at: end, tasks: all, trainer: false, lines: [\"[SIGTERM] Received \u2014 waiting for coredump before exit...\"]}");
  return "{status: FAILED, exit: 143, reason: \"CANCELLED (scancel / SIGTERM)\"}";
}

// The kill line bash prints when the OOM killer ends the trainer of `tasks` (a flow list, "[0, 1]").
std::string OomKillEvent(int64_t after_step, const std::string& tasks) {
  return "{at: \"after_step:" + std::to_string(after_step) + "\", tasks: " + tasks +
         ", trainer: false, lines: [\"/bin/bash: line 1:  4242 Killed                  python3 -u MaxText/train.py "
         "MaxText/configs/base.yml\"]}";
}

// 9150's abort: an HSA memory fault on the GPU with uncorrectable errors, then SIGABRT.
std::string HsaAbortEvent(int64_t after_step, size_t task) {
  return "{at: \"after_step:" + std::to_string(after_step) + "\", tasks: [" + std::to_string(task) +
         "], lines: [\"Memory access fault by GPU node-7 (Agent handle: 0x55d1c2a3f8e0) on address 0x7f2a6c400000. Reason: Unknown.\", "
         "\":0:rocdevice.cpp            :3587: 2291473881 us:  Callback: Queue 0x7f2b90c00000 aborting with error : HSA_STATUS_ERROR_MEMORY_FAULT: Agent attempted to access an inaccessible address. code: 0x2b\", "
         "\"[Node {task} @ {host}] Training subprocess killed by SIGABRT (signal 6)\"]}";
}

void AllExit(JobSpec& s, int code) {
  for (size_t t = 0; t < s.hosts.size(); ++t) s.node_exits[static_cast<int>(t)] = code;
}

// --- kinds ------------------------------------------------------------------------------------

// Sustained RDMA retransmits + ACK timeouts on 1-3 hosts aligned with a TGS drop (8308/9103).
void RdmaDegradation(JobPlanner& p, bool moe_decline) {
  p.Shape(moe_decline, /*need_retx_counters=*/true, 160);
  p.MaybeCheckpoint(moe_decline ? 0 : 0.3);
  JobSpec& s = p.spec();
  int64_t window = std::max<int64_t>(40, p.StepsFor(900));
  p.EnsureSteps(30 + window + 20);
  const int64_t last = s.last_step;
  int64_t onset = std::clamp<int64_t>(static_cast<int64_t>(last * p.U(0.25, 0.55)), 30, std::max<int64_t>(30, last - window));
  int64_t end = last;
  if (!moe_decline && p.Chance(0.35) && last - onset > window + 40) end = onset + window + p.Int(0, 20);
  const double tgs = p.tgs();
  // On 2-3 nodes one host: two of them retransmitting leave no healthy majority to tell the hosts
  // from the fabric (the fleet-wide families' question, asked on >= 4 hosts).
  int nbad = moe_decline || p.Nodes() < 4 ? 1 : (p.Nodes() >= 8 ? p.Int(1, 3) : p.Int(1, 2));
  double drop = p.U(0.08, 0.25);
  if (moe_decline) {
    // 9127: the decline starts with the RDMA fault; the lb-loss shift comes well after it
    s.phases = {{0, onset - 1, tgs, 0}, {onset, last, tgs * (1 - 0.005), tgs * (1 - drop)}};
    s.lb_base = std::round(p.U(0.0098, 0.0108) * 1e5) / 1e5;
    s.lb_change_step = std::min<int64_t>(last - 5, onset + std::max<int64_t>(30, (last - onset) / 2));
    s.lb_after = std::round(s.lb_base * p.U(1.35, 1.8) * 1e5) / 1e5;
  } else {
    s.phases = {{0, onset - 1, tgs, 0}, {onset, end, std::round(tgs * (1 - drop)), 0}};
    if (end < last) s.phases.push_back({end + 1, last, tgs, 0});
  }
  bool exhaustion = !moe_decline && p.Chance(0.3);
  for (int i = 0; i < nbad; ++i) {
    std::string host = p.TakeHost();
    auto devices = p.Devices(p.Int(1, 2), 8);
    p.Fault("rdma_retx", {host}, p.Steps(onset, end), std::round(p.U(300, 1500)), devices);
    p.Fault("rdma_ack_timeout", {host}, p.Steps(onset, end), std::round(p.U(3, 25)), devices);
    if (exhaustion && i == 0) {
      p.Fault("rdma_retry_exceeded", {host}, p.Steps(onset, end), std::round(p.U(0.05, 0.2) * 100) / 100, {devices[0]});
      p.Exclude(host, 1);
    } else {
      p.Exclude(host, 2);
    }
  }
  Verdict(p, moe_decline ? "moe-rdma-not-routing" : "rdma-degradation", "rdma-link-degradation", "retry-excluding-nodes");
  p.notes() = "RDMA retx+ACK timeouts on " + std::to_string(nbad) + " host(s) over steps " + std::to_string(onset) + "-" +
              std::to_string(end) + ", TGS -" + std::to_string(static_cast<int>(drop * 100)) + "%" +
              (exhaustion ? ", retry exhaustion on the first" : "") +
              (moe_decline ? "; lb-loss shifts only at step " + std::to_string(*s.lb_change_step) : "") + "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// 9129: one short burst of RDMA retransmits (no ACK timeouts), TGS flat -> nothing to exclude.
void RdmaBurst(JobPlanner& p) {
  p.Shape(false, true);
  p.MaybeCheckpoint(0.5);
  p.Flat();
  JobSpec& s = p.spec();
  std::string host = p.TakeHost();
  int64_t len = std::max<int64_t>(1, p.StepsFor(60));
  int64_t a = p.Int(20, static_cast<int>(s.last_step - len - 10));
  p.Fault("rdma_retx", {host}, p.Steps(a, a + len - 1), std::round(p.U(40, 200)), {p.Int(0, 7)});
  p.Decoy(host);
  Verdict(p, "rdma-transient-burst", "none", "none");
  p.notes() = "About one minute of RDMA retx on " + host + " at step " + std::to_string(a) + ", no ACK timeouts, flat TGS." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, s.last_step - 5));
}

// 7877 / 9120: healthy steps, then busy-wait at idle power until scancel.
void RcclHang(JobPlanner& p) {
  p.Shape(false, false);
  p.set_heartbeat_timeout(99999);
  p.set_total_steps(5000);
  JobSpec& s = p.spec();
  s.last_step = std::min<int64_t>(s.last_step, p.Int(40, 150));
  p.Flat();
  s.hang_seconds = std::round(p.U(1800, 4500));
  s.summary = CancelEvents(&s.events);
  AllExit(s, 143);
  bool partial = p.Chance(0.4);
  if (partial) {
    int n = p.Nodes() >= 6 ? p.Int(1, 2) : 1;
    std::vector<std::string> stuck;
    for (int i = 0; i < n; ++i) stuck.push_back(p.TakeHost());
    int first_idle = p.Int(1, 5);
    std::vector<int> idle;
    for (int g = first_idle; g < 8; ++g) idle.push_back(g);
    p.Fault("gpu_idle", stuck, "after_step: " + std::to_string(s.last_step), 0, idle);
  }
  Verdict(p, "rccl-hang", "rccl-hang", "retry-same-nodes");
  p.notes() = "Hang after step " + std::to_string(s.last_step) + " for " + std::to_string(static_cast<int>(s.hang_seconds)) +
              " s, then scancel" + (partial ? "; some GPUs never entered the collective" : "") + "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, s.last_step - 3));
}

// 8043: the coordinator declares live, training tasks dead.
void HeartbeatFalsePositive(JobPlanner& p) {
  p.Shape(false, false);
  p.set_heartbeat_timeout(900);
  p.set_total_steps(5000);
  JobSpec& s = p.spec();
  s.first_step = 1;
  s.last_step = p.Int(50, 150);
  s.init_seconds = 420;
  p.Flat();
  int a = p.Int(1, static_cast<int>(p.Nodes()) - 1), b = p.Int(1, static_cast<int>(p.Nodes()) - 1);
  s.heartbeat_accused = a == b ? std::vector<int>{a} : std::vector<int>{std::min(a, b), std::max(a, b)};
  s.heartbeat_time = 0;   // placed once the timeline is known (PlanCampaign)
  AllExit(s, 1);
  s.summary = "{status: FAILED, exit: 1, reason: \"Training FAILED (exit=1)\"}";
  for (int t : s.heartbeat_accused) p.Decoy(p.HostAt(static_cast<size_t>(t)));
  Verdict(p, "heartbeat-false-positive", "heartbeat-false-positive", "retry-with-changes");
  p.notes() = "Heartbeat kill during step " + std::to_string(s.last_step + 1) + "; accused tasks trained until the kill." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, s.last_step - 3));
}

// 9170 (checkpoint-retention ramp on DP replica 0: a config OOM), 9174 (one host spikes) or the
// 9171 near miss (retention only, no OOM).
void HostOom(JobPlanner& p) {
  p.Shape(false, false);
  JobSpec& s = p.spec();
  const int nodes = static_cast<int>(p.Nodes());
  const int writers = std::max(2, nodes / 2);
  s.checkpoint_writers = writers;
  s.checkpoint_save_seconds = std::round(p.U(150, 300));
  int64_t period = p.Int(20, 40);
  p.set_checkpoint_period(period);
  p.set_total_steps(period * 8);
  double r = p.rng().Uniform();
  if (r < 0.4 && nodes >= 4) {
    s.last_step = period * 4 - p.Int(2, 6);
    p.Flat();
    std::vector<std::string> killed = {p.HostAt(0), p.HostAt(1)};
    std::vector<std::string> ramp_others;
    for (int i = 2; i < writers; ++i) ramp_others.push_back(p.HostAt(static_cast<size_t>(i)));
    for (const auto& h : killed) p.MarkBusy(h);
    for (const auto& h : ramp_others) p.MarkBusy(h);
    p.Fault("host_mem_ramp", killed, "after_step: " + std::to_string(period + 5), 0.55);
    if (!ramp_others.empty()) p.Fault("host_mem_ramp", ramp_others, "after_step: " + std::to_string(period + 5), 0.48);
    p.Fault("host_oom", killed, "after_step: " + std::to_string(s.last_step - 3), 1);
    s.events.push_back(OomKillEvent(s.last_step, "[0, 1]"));
    s.node_exits = {{0, 137}, {1, 137}};
    s.summary = "{status: FAILED, exit: 137, reason: \"Training FAILED (exit=137)\"}";
    Verdict(p, "host-oom-config", "host-oom", "no-retry");
    p.notes() = "Checkpoint-retention ramp on the " + std::to_string(writers) + " writers; OOM kills on the first two." + p.notes();
  } else if (r < 0.75) {
    s.last_step = period + p.Int(10, period + 10);
    p.Flat();
    int victim = p.Int(writers, nodes - 1);
    std::string host = p.HostAt(static_cast<size_t>(victim));
    p.Fault("host_oom", {host}, "after_step: " + std::to_string(s.last_step - 2), 1);
    s.events.push_back(OomKillEvent(s.last_step, "[" + std::to_string(victim) + "]"));
    s.node_exits = {{victim, 137}};
    s.summary = "{status: FAILED, exit: 137, reason: \"Training FAILED (exit=137)\"}";
    p.Exclude(host, std::nullopt);
    for (int i = 0; i < writers; ++i) p.Decoy(p.HostAt(static_cast<size_t>(i)));
    Verdict(p, "host-oom-spike", "host-oom", "retry-excluding-nodes");
    p.notes() = "Sudden host-memory spike and OOM kill on " + host + " outside checkpoint windows." + p.notes();
  } else {
    s.last_step = period * 3 + p.Int(5, 15);
    p.Flat();
    for (int i = 0; i < writers; ++i) p.Decoy(p.HostAt(static_cast<size_t>(i)));
    Verdict(p, "host-mem-retention", "none", "none");
    p.notes() = "Checkpoint writers retain ~1.37 TB after each save; no OOM." + p.notes();
  }
  p.Passthrough();
  p.Noise(std::nullopt);
}

// Room for a throttle of at least 15 minutes (40 steps) after 30 healthy steps.
int64_t ThrottleSteps(JobPlanner& p) {
  const int64_t slow_len = std::max<int64_t>(40, p.StepsFor(900));
  p.EnsureSteps(30 + slow_len + 10);
  return slow_len;
}

// A throttle at 18-26 degrees past normal on `hosts` from 30 % to `latest_onset` of the job to its
// end, costing 10-18 % TGS (9101): the job's phases and the fault. Returns the onset step and the drop.
std::pair<int64_t, double> ThrottleToTheEnd(JobPlanner& p, const std::vector<std::string>& hosts, int64_t slow_len,
                                            double latest_onset) {
  JobSpec& s = p.spec();
  const int64_t last = s.last_step;
  const int64_t onset = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(last) * p.U(0.3, latest_onset)), 30, last - slow_len);
  const double drop = p.U(0.1, 0.18);
  s.phases = {{0, onset - 1, p.tgs(), 0}, {onset, last, std::round(p.tgs() * (1 - drop)), 0}};
  p.Fault("thermal_throttle", hosts, p.Steps(onset, last), std::round(p.U(18, 26)));
  return {onset, drop};
}

// 9101 (throttled host slows the job) or the 9153 near miss (hot, clocks normal, no slowdown).
void Thermal(JobPlanner& p) {
  p.Shape(false, false, 120);
  JobSpec& s = p.spec();
  const int64_t slow_len = ThrottleSteps(p);
  const int64_t last = s.last_step;
  std::string host = p.TakeHost();
  if (p.Chance(0.65)) {
    const auto [onset, drop] = ThrottleToTheEnd(p, {host}, slow_len, 0.5);
    p.Exclude(host, std::nullopt);
    auto free = p.FreeHosts();
    if (!free.empty() && p.Chance(0.6)) {
      p.Fault("ras_errors", {free[0]}, "", 0.02, {p.Int(0, 7)});
      p.Decoy(free[0]);
    }
    Verdict(p, "thermal-throttle", "thermal-throttle", "retry-excluding-nodes");
    p.notes() = host + " throttles from step " + std::to_string(onset) + " (>100 C, low sclk), TGS -" +
                std::to_string(static_cast<int>(drop * 100)) + "%." + p.notes();
    p.Passthrough();
    p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
  } else {
    p.MaybeCheckpoint(0.3);
    p.Flat();
    p.Fault("gpu_hot", {host}, "", std::round(p.U(6, 10)), p.Devices(p.Int(1, 3), 8));
    p.Decoy(host);
    Verdict(p, "thermal-hot-not-throttled", "none", "none");
    p.notes() = "Some GPUs of " + host + " run hotter with normal clocks; no slowdown." + p.notes();
    p.Passthrough();
    p.Noise(std::make_pair<int64_t, int64_t>(5, last - 5));
  }
}

// 9150 (uncorrectable HBM errors, then an HSA abort) or the 9152 near miss (correctable only).
void GpuHardware(JobPlanner& p) {
  p.Shape(false, false);
  JobSpec& s = p.spec();
  if (p.Chance(0.65)) {
    s.last_step = std::min<int64_t>(s.last_step, p.Int(80, 200));
    p.set_total_steps(s.last_step + 60);
    p.Flat();
    size_t task = static_cast<size_t>(p.Int(0, static_cast<int>(p.Nodes()) - 1));
    std::string host = p.HostAt(task);
    int64_t onset = s.last_step / 2;
    p.Fault("ras_uncorrectable", {host}, p.Steps(onset, s.last_step), 0.01, {p.Int(0, 7)});
    p.Exclude(host, 1);
    s.events.push_back(HsaAbortEvent(s.last_step, task));
    AllExit(s, 143);
    s.node_exits[static_cast<int>(task)] = 134;
    s.summary = "{status: FAILED, exit: 1, reason: \"Training FAILED (exit=134)\"}";
    auto free = p.FreeHosts();
    if (!free.empty() && p.Chance(0.6)) {
      p.Fault("ras_errors", {free[0]}, "", 0.02, {p.Int(0, 7)});
      p.Decoy(free[0]);
    }
    Verdict(p, "gpu-hardware-fault", "gpu-hardware-fault", "retry-excluding-nodes");
    p.notes() = "Uncorrectable UMC errors on " + host + " from step " + std::to_string(onset) + ", then an HSA memory-fault abort." + p.notes();
  } else {
    p.MaybeCheckpoint(0.3);
    p.Flat();
    int n = std::min<int>(static_cast<int>(p.Nodes()) - 1, p.Int(1, 3));
    for (int i = 0; i < n; ++i) {
      std::string host = p.TakeHost();
      if (i == 2) p.Fault("pcie_correctable", {host}, "", 0.01, {p.Int(0, 7)});
      else p.Fault("ras_errors", {host}, "", i == 0 ? 0.06 : 0.01, {p.Int(0, 7)});
      p.Decoy(host);
    }
    Verdict(p, "gpu-correctable-only", "none", "none");
    p.notes() = "Correctable RAS/PCIe errors only." + p.notes();
  }
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, s.last_step - 5));
}

// 7938: lb-loss shifts, then a gradual TGS decline; the system is clean.
void MoeRoutingShift(JobPlanner& p) {
  p.Shape(true, false, 200);
  JobSpec& s = p.spec();
  p.EnsureSteps(60 + std::max<int64_t>(60, p.StepsFor(900)) + 10);
  const int64_t last = s.last_step;
  int64_t change = std::clamp<int64_t>(static_cast<int64_t>(last * p.U(0.45, 0.65)), 60, last - std::max<int64_t>(60, p.StepsFor(900)));
  double drop = p.U(0.08, 0.15);
  s.lb_base = std::round(p.U(0.0098, 0.0108) * 1e5) / 1e5;
  s.lb_change_step = change;
  s.lb_after = std::round(s.lb_base * p.U(1.5, 1.9) * 1e5) / 1e5;
  s.phases = {{0, change + 3, p.tgs(), 0}, {change + 4, last, std::round(p.tgs() * 0.998), std::round(p.tgs() * (1 - drop))}};
  Verdict(p, "moe-routing-shift", "moe-routing-shift", "none");
  p.notes() = "lb-loss shift at step " + std::to_string(change) + ", then TGS declines " + std::to_string(static_cast<int>(drop * 100)) + "%." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, change - 5));
}

void Healthy(JobPlanner& p) {
  p.Shape(false, false);
  p.MaybeCheckpoint(0.5);
  p.Flat();
  Verdict(p, "healthy", "none", "none");
  p.notes() = "Healthy run." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, p.spec().last_step - 5));
}

// --- widened kinds (issue 35) ----------------------------------------------------------------

// One injected slowdown: its fault costs `drop` of the throughput over steps [first, last].
struct Slowdown {
  int64_t first = 0, last = 0;
  double drop = 0;
};

// Piecewise-constant phases of overlapping slowdowns: a step runs at tgs x (1 - the largest drop
// active on it). Every collective waits for the slowest participant, so two slow hosts cost what the
// slower one costs: a later fault can start, or an earlier one end, without TGS moving.
std::vector<PhaseSpec> OverlapPhases(int64_t first, int64_t last, double tgs, const std::vector<Slowdown>& slow) {
  std::set<int64_t> cuts = {first, last + 1};
  for (const auto& d : slow) {
    cuts.insert(std::clamp(d.first, first, last + 1));
    cuts.insert(std::clamp(d.last + 1, first, last + 1));
  }
  std::vector<PhaseSpec> phases;
  for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
    const int64_t a = *it, b = *std::next(it) - 1;
    double drop = 0;
    for (const auto& d : slow)
      if (d.first <= a && a <= d.last) drop = std::max(drop, d.drop);
    phases.push_back({a, b, std::round(tgs * (1 - drop)), 0});
  }
  return phases;
}

// Sustained retransmits + ACK timeouts on `host` over steps [a, b]; with retry exhaustion
// (permanent loss, priority 1) when `exhausted`.
// `window` is a rendered fault window ("steps: a-b", "from: T, to: T").
void RdmaLinkFaults(JobPlanner& p, const std::string& host, const std::string& window, bool exhausted) {
  auto devices = p.Devices(p.Int(1, 2), 8);
  p.Fault("rdma_retx", {host}, window, std::round(p.U(300, 1500)), devices);
  p.Fault("rdma_ack_timeout", {host}, window, std::round(p.U(3, 25)), devices);
  if (exhausted) p.Fault("rdma_retry_exceeded", {host}, window, std::round(p.U(0.2, 0.6) * 100) / 100, {devices[0]});
}

void RdmaHostFault(JobPlanner& p, const std::string& host, int64_t a, int64_t b, bool exhausted) {
  RdmaLinkFaults(p, host, p.Steps(a, b), exhausted);
  p.Exclude(host, exhausted ? 1 : 2);
}

// Smallest drop the job's own step noise lets a careful reader see over `len` steps: ten standard
// errors of the mean, never below 3 %.
double VisibleDrop(const JobPlanner& p, int64_t len) {
  return std::max(0.03, 10 * p.JitterPct() / 100 / std::sqrt(static_cast<double>(std::max<int64_t>(1, len))));
}

// A slowdown on `host` over steps [a, b]: a throttling GPU (>100 C, low sclk; no pinned priority)
// or sustained RDMA retransmits + ACK timeouts (retry exhaustion one time in four).
void SlowFault(JobPlanner& p, bool thermal, const std::string& host, int64_t a, int64_t b) {
  if (thermal) {
    p.Fault("thermal_throttle", {host}, p.Steps(a, b), std::round(p.U(18, 26)));
    p.Exclude(host, std::nullopt);
  } else {
    RdmaHostFault(p, host, a, b, p.Chance(0.25));
  }
}

// The faults of a slowdown on `host` over `window`, without its exclusion (the caller decides
// what the host's truth is when another fault of its own follows): a throttling GPU or an RDMA link
// with retransmits and ACK timeouts.
void SlowdownFaults(JobPlanner& p, bool thermal, const std::string& host, const std::string& window) {
  if (thermal) p.Fault("thermal_throttle", {host}, window, std::round(p.U(18, 26)));
  else RdmaLinkFaults(p, host, window, false);
}

// A faulty host and the steps its fault covers.
struct FaultWindow {
  std::string host;
  int64_t first = 0, last = 0;
};

// 1-2 hosts (2 only on 8+ nodes) slowed over steps [a, b] by SlowFault, with their exclusions.
std::vector<FaultWindow> SlowHosts(JobPlanner& p, bool thermal, int64_t a, int64_t b) {
  const int nbad = p.Nodes() >= 8 ? p.Int(1, 2) : 1;
  std::vector<FaultWindow> faulty;
  for (int i = 0; i < nbad; ++i) {
    faulty.push_back({p.TakeHost(), a, b});
    SlowFault(p, thermal, faulty.back().host, a, b);
  }
  return faulty;
}

// What the wider campaign varies in the telemetry of its jobs: one job in three names node_hw's
// series only by their target (no host label, as Ray's series), one in six scrapes node_hw by
// address (instance <ip>:9400: only Ray's series, carrying instance and ip, name the node); one job
// in three misses the scrapes of a faulty host for a stretch inside its fault window (at most a
// third of it, so the fault still shows in the rest).
void WiderTelemetry(JobPlanner& p, const std::vector<FaultWindow>& faulty) {
  JobSpec& s = p.spec();
  const double names = p.U(0, 1);
  if (names < 0.5) {
    s.node_hw_names = names < 1.0 / 3 ? "instance" : "ip";
    s.host_label_fqdn = false;
    p.notes() += std::string(" node_hw series carry no host label") + (names < 1.0 / 3 ? "." : " and are scraped by IP.");
  }
  if (faulty.empty() || !p.Chance(1.0 / 3)) return;
  const FaultWindow& f = faulty[static_cast<size_t>(p.Int(0, static_cast<int>(faulty.size()) - 1))];
  const int64_t len = f.last - f.first + 1;
  const int64_t missed = len / p.Int(3, 6);
  if (missed < 1) return;
  const int64_t a = f.first + p.Int(0, static_cast<int>(len - missed));
  p.Fault("missed_scrapes", {f.host}, p.Steps(a, a + missed - 1), 0);
  p.notes() += " Scrapes of " + f.host + " missed over steps " + std::to_string(a) + "-" + std::to_string(a + missed - 1) +
               " (inside its fault window).";
}

// `k` windows [a_i, b_i] from `first` to at most `last` with a_0 < a_1 < b_0 < a_2 < b_1 < ... <
// b_(k-1), boundaries at least `gap` apart: each overlaps the next, and between b_(i-1) and
// a_(i+1) it is the only one on, so its own cost shows in TGS there (hidden entirely under a larger
// fault, its truth would be a matter of opinion). The last one reaches the job's end sometimes.
std::vector<std::pair<int64_t, int64_t>> ChainWindows(JobPlanner& p, int k, int64_t first, int64_t last, int64_t gap) {
  const bool to_end = p.Chance(0.25);
  const int64_t span = last - first - (to_end ? 0 : gap);
  std::vector<int64_t> cuts(static_cast<size_t>(2 * k));
  const int64_t slack = span - gap * (2 * k - 1);
  std::vector<int64_t> extra(static_cast<size_t>(2 * k), 0);
  for (auto& e : extra) e = p.Int(0, static_cast<int>(std::max<int64_t>(0, slack / (2 * k))));
  int64_t at = first;
  for (int c = 0; c < 2 * k; ++c) {
    at += (c ? gap : 0) + extra[static_cast<size_t>(c)];
    cuts[static_cast<size_t>(c)] = std::min(at, last);
  }
  if (to_end) cuts.back() = last;
  std::vector<std::pair<int64_t, int64_t>> windows;
  for (int i = 0; i < k; ++i) {
    const int64_t a = cuts[static_cast<size_t>(i == 0 ? 0 : 2 * i - 1)];
    const int64_t b = cuts[static_cast<size_t>(i + 1 == k ? 2 * k - 1 : 2 * i + 2)] - (i + 1 == k ? 0 : 1);
    windows.emplace_back(a, b);
  }
  return windows;
}

// 2-4 faults whose windows overlap (one of them sometimes a throttling GPU): each host's onset and
// end move TGS, the later ones while TGS is already down.
void RdmaOverlap(JobPlanner& p) {
  p.Shape(false, true, 60);
  p.MaybeCheckpoint(0.3);
  JobSpec& s = p.spec();
  const int64_t gap = std::max<int64_t>(5, p.StepsFor(240));
  const int k = std::min<int>(p.Int(2, 4), std::max<int>(2, static_cast<int>(p.Nodes()) / 2));
  p.EnsureSteps(12 + gap * (2 * k + 2));
  const int64_t last = s.last_step;
  const int64_t first = std::max<int64_t>(12, static_cast<int64_t>(static_cast<double>(last) * p.U(0.05, 0.2)));
  const auto windows = ChainWindows(p, k, first, last, gap);
  const bool thermal = p.Chance(0.25);
  std::vector<Slowdown> slow;
  std::vector<std::string> hosts;
  for (int i = 0; i < k; ++i) {
    const auto [a, b] = windows[static_cast<size_t>(i)];
    Slowdown d{a, b, std::round(p.U(std::max(0.05, VisibleDrop(p, gap)), 0.2) * 1000) / 1000};
    const std::string host = p.TakeHost();
    SlowFault(p, thermal && i == k - 1, host, d.first, d.last);
    slow.push_back(d);
    hosts.push_back(host + " " + std::to_string(d.first) + "-" + std::to_string(d.last) + " -" +
                    std::to_string(static_cast<int>(d.drop * 100)) + "%");
  }
  s.phases = OverlapPhases(0, last, p.tgs(), slow);
  Verdict(p, "rdma-overlap", "rdma-link-degradation", "retry-excluding-nodes");
  std::string list;
  for (const auto& h : hosts) list += (list.empty() ? "" : ", ") + h;
  p.notes() = "Overlapping faults (" + list + ")" + (thermal ? ", the last a throttling GPU" : "") + "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, first - 5));
}

// A dip covering most of a short job (20-120 steps) or a few steps of a long one (400-3,000):
// 1-2 hosts with sustained RDMA errors over the dip; retry exhaustion on them when the dip is too
// short in wall time for a sustained rate (permanent loss inside the job is excluded regardless).
void RdmaDipSpan(JobPlanner& p) {
  const bool long_job = p.Chance(0.5);
  p.Shape(false, true, long_job ? 400 : 20);
  JobSpec& s = p.spec();
  if (!long_job) p.CapSteps(p.Int(20, 120));
  const int64_t n = s.last_step + 1;
  int64_t len = long_job ? p.Int(3, 40) : std::max<int64_t>(3, static_cast<int64_t>(static_cast<double>(n) * p.U(0.4, 0.9)));
  const int64_t onset = std::max<int64_t>(std::max<int64_t>(6, n / 10), p.Int(static_cast<int>(n / 10), static_cast<int>(std::max<int64_t>(n / 10, n - len - 1))));
  len = std::min(len, n - onset);
  const bool recovers = onset + len < n && p.Chance(0.8);
  const int64_t end = recovers ? onset + len - 1 : s.last_step;
  const bool short_in_time = static_cast<double>(end - onset + 1) * p.StepSeconds() < 360;
  const int nbad = p.Nodes() >= 8 ? p.Int(1, 2) : 1;
  const double drop = std::round(p.U(VisibleDrop(p, end - onset + 1), 0.25) * 1000) / 1000;
  s.phases = OverlapPhases(0, s.last_step, p.tgs(), {{onset, end, drop}});
  for (int i = 0; i < nbad; ++i) RdmaHostFault(p, p.TakeHost(), onset, end, short_in_time || p.Chance(0.3));
  Verdict(p, long_job ? "rdma-short-dip-long-job" : "rdma-long-dip-short-job", "rdma-link-degradation", "retry-excluding-nodes");
  p.notes() = std::to_string(n) + "-step job, TGS -" + std::to_string(static_cast<int>(drop * 1000) / 10.0).substr(0, 4) +
              "% over steps " + std::to_string(onset) + "-" + std::to_string(end) + " on " + std::to_string(nbad) +
              " RDMA host(s)" + (short_in_time ? " (too short for a sustained rate: retry exhaustion)" : "") + "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(3, onset - 3));
}

// A small dip (2-5 % of TGS) over 15-60 % of a 60-400-step job, beginning after the steady window,
// recovering before the end three times in four: then the first and last steps agree and only the
// whole timeline shows it. The step jitter is drawn across 0.2-2 % as far as the dip stays visible
// to a careful reader (ten standard errors of the mean over it, VisibleDrop's rule, never below
// 0.2 %): a 2 % dip on a quiet job, a 5 % one next to 2 % jitter. One RDMA link retransmits with
// ACK timeouts over exactly those steps (priority 2); the dip lasts long enough in wall time for
// them to be sustained (7+ minutes).
void SmallMidJobDip(JobPlanner& p) {
  p.Shape(false, /*need_retx_counters=*/true, 60);
  JobSpec& s = p.spec();
  const int64_t shortest = std::max<int64_t>(12, p.StepsFor(420));
  p.EnsureSteps(std::max<int64_t>(60, 20 + 2 * shortest));
  p.CapSteps(std::max<int64_t>(p.Int(60, 400), 20 + 2 * shortest));
  const int64_t n = s.last_step + 1;
  const bool recovers = p.Chance(0.75);
  const int64_t tail = recovers ? std::max<int64_t>(8, static_cast<int64_t>(static_cast<double>(n) * p.U(0.1, 0.3))) : 0;
  const int64_t onset = std::max<int64_t>(16, static_cast<int64_t>(static_cast<double>(n) * p.U(0.15, 0.35)));
  const int64_t room = n - tail - onset;
  const int64_t len = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(n) * p.U(0.15, 0.6)), std::min(shortest, room), room);
  const int64_t end = recovers ? onset + len - 1 : s.last_step;
  const double drop = std::round(p.U(0.02, 0.05) * 1000) / 1000;
  const double loudest = drop * 100 * std::sqrt(static_cast<double>(end - onset + 1)) / 10;
  s.step_jitter_pct = std::round(p.U(0.2, std::clamp(loudest, 0.2, 2.0)) * 100) / 100;
  s.phases = OverlapPhases(0, s.last_step, p.tgs(), {{onset, end, drop}});
  const std::string host = p.TakeHost();
  RdmaHostFault(p, host, onset, end, /*exhausted=*/false);
  Verdict(p, recovers ? "rdma-small-dip-recovered" : "rdma-small-dip-to-end", "rdma-link-degradation", "retry-excluding-nodes");
  p.notes() = std::to_string(n) + "-step job, TGS -" + std::to_string(drop * 100).substr(0, 3) + "% over steps " +
              std::to_string(onset) + "-" + std::to_string(end) + " (step jitter " + std::to_string(s.step_jitter_pct).substr(0, 4) +
              " %) on " + host + "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// A dip among frequent checkpoint-save spikes in a short job.
void RdmaDipUnderCheckpoints(JobPlanner& p) {
  p.Shape(false, true, 40);
  JobSpec& s = p.spec();
  p.CapSteps(p.Int(40, 250));
  p.set_checkpoint_period(p.Int(5, 15));
  s.checkpoint_save_seconds = std::round(p.U(60, 240));
  const int64_t n = s.last_step + 1;
  const int64_t len = std::max<int64_t>(6, static_cast<int64_t>(static_cast<double>(n) * p.U(0.3, 0.6)));
  const int64_t onset = p.Int(static_cast<int>(std::max<int64_t>(8, n / 8)), static_cast<int>(std::max<int64_t>(8, n - len - 2)));
  const int64_t end = std::min(s.last_step, onset + len - 1);
  const bool short_in_time = static_cast<double>(end - onset + 1) * p.StepSeconds() < 360;
  const int nbad = std::min<int>(static_cast<int>(p.Nodes()) / 2, p.Int(1, 3));
  const double drop = std::round(p.U(std::max(0.08, VisibleDrop(p, end - onset + 1)), 0.25) * 1000) / 1000;
  s.phases = OverlapPhases(0, s.last_step, p.tgs(), {{onset, end, drop}});
  for (int i = 0; i < nbad; ++i) RdmaHostFault(p, p.TakeHost(), onset, end, short_in_time || p.Chance(0.5));
  Verdict(p, "rdma-dip-under-checkpoints", "rdma-link-degradation", "retry-excluding-nodes");
  p.notes() = "Checkpoint every " + std::to_string(p.checkpoint_period()) + " steps; TGS -" +
              std::to_string(static_cast<int>(drop * 100)) + "% over steps " + std::to_string(onset) + "-" +
              std::to_string(end) + " on " + std::to_string(nbad) + " RDMA host(s)." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(3, onset - 3));
}

// 1-2 throttling hosts costing only 3-8 % of TGS between them (staggered onsets, sometimes a recovery).
void ThermalModest(JobPlanner& p) {
  p.Shape(false, false, 80);
  JobSpec& s = p.spec();
  const int64_t min_len = std::max<int64_t>(40, p.StepsFor(900));
  p.EnsureSteps(20 + 2 * min_len);
  const int64_t last = s.last_step;
  const int k = p.Nodes() >= 6 ? p.Int(1, 2) : 1;
  std::vector<Slowdown> slow;
  std::string list;
  int64_t a = std::max<int64_t>(15, static_cast<int64_t>(static_cast<double>(last) * p.U(0.15, 0.35)));
  for (int i = 0; i < k; ++i) {
    const int64_t b = p.Chance(0.3) ? std::min(last, a + std::max(min_len, (last - a) * 2 / 3)) : last;
    Slowdown d{a, b, std::round(p.U(std::max(0.03, VisibleDrop(p, b - a + 1)), 0.08) * 1000) / 1000};
    const std::string host = p.TakeHost();
    p.Fault("thermal_throttle", {host}, p.Steps(d.first, d.last), std::round(p.U(18, 26)));
    p.Exclude(host, std::nullopt);
    slow.push_back(d);
    list += (list.empty() ? "" : ", ") + host + " " + std::to_string(d.first) + "-" + std::to_string(d.last);
    a = std::min(last - min_len, a + p.Int(3, static_cast<int>(std::max<int64_t>(3, min_len / 2))));
  }
  s.phases = OverlapPhases(0, last, p.tgs(), slow);
  Verdict(p, "thermal-modest-cost", "thermal-throttle", "retry-excluding-nodes");
  p.notes() = "Throttling (>100 C, low sclk) on " + list + "; each costs 3-8 % of TGS." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, slow.front().first - 5));
}

// The node of task `dead_index` goes dark after the job's last step: the survivors wait in the
// collective until the coordinator's heartbeat timeout kills the job (true, accusing the dead task)
// or a user cancels it (false).
bool EndByNodeDeath(JobPlanner& p, size_t dead_index) {
  JobSpec& s = p.spec();
  p.Fault("node_death", {p.HostAt(dead_index)}, "after_step: " + std::to_string(s.last_step), 0);
  s.silence_activity = "hang";
  const bool heartbeat_kill = p.Chance(0.5);
  if (heartbeat_kill) {
    const int timeout = p.Int(300, 900);
    p.set_heartbeat_timeout(timeout);
    s.hang_seconds = timeout;
    s.heartbeat_accused = {static_cast<int>(dead_index)};
    s.heartbeat_accused_died = true;
    s.heartbeat_time = 0;   // placed once the timeline is known (Finish)
    s.summary = "{status: FAILED, exit: 1, reason: \"Training FAILED (exit=1)\"}";
    AllExit(s, 1);
  } else {
    p.set_heartbeat_timeout(99999);
    s.hang_seconds = std::round(p.U(900, 3600));
    s.summary = CancelEvents(&s.events);
    AllExit(s, 143);
  }
  s.node_exits.erase(static_cast<int>(dead_index));
  return heartbeat_kill;
}

// A node dies mid-job (9102, 9123 generalised): its exporters go dark after a random step, the
// survivors wait in the collective until a user cancels or the coordinator's heartbeat timeout
// kills the job; sometimes a link on another host degraded earlier (two faults of two kinds, both
// hosts to exclude). With `during_throttle` (the wider campaign) another host always throttles from
// before the death until it.
void NodeDeath(JobPlanner& p, bool during_throttle = false) {
  p.Shape(false, true, 60);
  p.set_total_steps(5000);
  JobSpec& s = p.spec();
  const int64_t planned = s.last_step;
  s.last_step = p.Int(static_cast<int>(std::max<int64_t>(25, planned * 15 / 100)),
                      static_cast<int>(std::max<int64_t>(30, planned * 85 / 100)));
  // Task 0 hosts the coordinator: the dead node is any other.
  const size_t dead_index = static_cast<size_t>(p.Int(1, static_cast<int>(p.Nodes()) - 1));
  const std::string dead = p.HostAt(dead_index);
  p.Exclude(dead, 2);
  std::string earlier;
  const int64_t min_len = std::max<int64_t>(8, p.StepsFor(420));
  if (during_throttle) s.last_step = std::max<int64_t>(s.last_step, 21 + 2 * min_len);
  if ((p.Chance(0.4) || during_throttle) && s.last_step > 20 + 2 * min_len) {
    const int64_t a = p.Int(10, static_cast<int>(s.last_step - 2 * min_len));
    const int64_t b = (p.Chance(0.5) || during_throttle) ? s.last_step
                                                         : p.Int(static_cast<int>(a + min_len), static_cast<int>(s.last_step - 5));
    const double drop = std::round(p.U(std::max(0.06, VisibleDrop(p, b - a + 1)), 0.2) * 1000) / 1000;
    s.phases = OverlapPhases(0, s.last_step, p.tgs(), {{a, b, drop}});
    const std::string other = p.TakeHost();
    if (during_throttle) {
      SlowFault(p, true, other, a, b);
      WiderTelemetry(p, {{other, a, b}});
    } else {
      RdmaHostFault(p, other, a, b, p.Chance(0.3));
    }
    earlier = std::string(during_throttle ? " Meanwhile, a throttling GPU on " : " Earlier, RDMA degradation on ") + other +
              " over steps " + std::to_string(a) + "-" + std::to_string(b) + " (-" +
              std::to_string(static_cast<int>(drop * 100)) + "% TGS).";
  } else {
    p.Flat();
  }
  const bool heartbeat_kill = EndByNodeDeath(p, dead_index);
  Verdict(p, earlier.empty() ? "node-death" : during_throttle ? "node-death-during-throttle" : "node-death-after-link-fault",
          "gpu-hardware-fault", "retry-excluding-nodes");
  p.notes() = dead + " died after step " + std::to_string(s.last_step) + "; " +
              (heartbeat_kill ? "the heartbeat timeout killed the job " + std::to_string(static_cast<int>(s.hang_seconds)) + " s later."
                              : "the survivors hung " + std::to_string(static_cast<int>(s.hang_seconds)) + " s until scancel.") +
              earlier + p.notes();
  p.Passthrough();
  const int64_t quiet_end = s.phases.size() > 1 ? s.phases[1].first - 3 : s.last_step - 3;
  p.Noise(std::pair<int64_t, int64_t>(5, quiet_end));
}

// --- wider kinds (`--wider`) --------------------------------------------------------------------

// A job on 2 or 3 nodes (`--widest`): too few peers for a majority, so a host can only be named by
// its own counters, its own earlier phase or an absolute signal. Only kinds whose truth holds on so
// few hosts: a healthy job, a GPU's uncorrectable errors and abort (or correctable errors only), one
// throttling host (or hot GPUs at full clock), a node death and one host's RDMA link.
void FewNodes(JobPlanner& p) {
  const int kind = p.Int(0, 4);
  // A node death may follow a link fault on another host: three nodes then, so one stays healthy.
  p.set_few_nodes(kind == 3 ? 3 : p.Int(2, 3));
  switch (kind) {
    case 0: Healthy(p); break;
    case 1: GpuHardware(p); break;
    case 2: Thermal(p); break;
    case 3: NodeDeath(p); break;
    default: RdmaDegradation(p, false); break;
  }
  p.truth().kind = "few-nodes-" + p.truth().kind;
}

// Two slowdowns of different kinds, an RDMA link and a throttling GPU, in either order, overlapping
// (a0 < a1 < b0 < b1, each alone on for a few minutes): the earlier TGS drop is the root cause, and
// both hosts cost TGS, so both are excluded.
void MixedOverlap(JobPlanner& p) {
  p.Shape(false, true, 60);
  p.MaybeCheckpoint(0.3);
  JobSpec& s = p.spec();
  const int64_t gap = std::max<int64_t>(5, p.StepsFor(300));
  p.EnsureSteps(12 + gap * 6);
  const int64_t last = s.last_step;
  const int64_t first = std::max<int64_t>(12, static_cast<int64_t>(static_cast<double>(last) * p.U(0.05, 0.25)));
  const auto windows = ChainWindows(p, 2, first, last, gap);
  const bool thermal_first = p.Chance(0.5);
  std::vector<Slowdown> slow;
  std::vector<FaultWindow> faulty;
  std::string list;
  for (int i = 0; i < 2; ++i) {
    const auto [a, b] = windows[static_cast<size_t>(i)];
    const bool thermal = (i == 0) == thermal_first;
    slow.push_back({a, b, std::round(p.U(std::max(0.05, VisibleDrop(p, gap)), 0.2) * 1000) / 1000});
    const std::string host = p.TakeHost();
    SlowFault(p, thermal, host, a, b);
    faulty.push_back({host, a, b});
    list += std::string(i ? ", then " : "") + (thermal ? "a throttling GPU on " : "RDMA degradation on ") + host + " over " +
            std::to_string(a) + "-" + std::to_string(b) + " (-" + std::to_string(static_cast<int>(slow.back().drop * 100)) + "%)";
  }
  s.phases = OverlapPhases(0, last, p.tgs(), slow);
  Verdict(p, thermal_first ? "thermal-then-rdma" : "rdma-then-thermal",
          thermal_first ? "thermal-throttle" : "rdma-link-degradation", "retry-excluding-nodes");
  p.notes() = "Overlapping faults of two kinds: " + list + "." + p.notes();
  WiderTelemetry(p, faulty);
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, first - 5));
}

// A slowdown on from the job's start (no healthy step before it), RDMA or thermal, that ends at
// 35-75 % of the job: the job's shape, its phases, and where and how much the slowdown ends.
struct EarlySlowdown {
  bool thermal = false;
  int64_t end = 0;
  double drop = 0;
};

// `slow_init`: init (runtime, data pipeline) takes 240-600 s, room for a fault to start in it.
EarlySlowdown PlanEarlySlowdown(JobPlanner& p, bool slow_init = false) {
  const bool thermal = p.Chance(0.5);
  p.Shape(false, !thermal, 80);
  p.MaybeCheckpoint(0.3);
  JobSpec& s = p.spec();
  if (slow_init) s.init_seconds = std::round(p.U(240, 600));
  const int64_t min_len = std::max<int64_t>(20, p.StepsFor(600));
  p.EnsureSteps(2 * min_len + 10);
  const int64_t last = s.last_step;
  const int64_t end = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(last) * p.U(0.35, 0.75)), min_len,
                                          last - min_len);
  const double drop = std::round(p.U(std::max(0.06, VisibleDrop(p, std::min(end + 1, last - end))), 0.22) * 1000) / 1000;
  s.phases = OverlapPhases(0, last, p.tgs(), {{0, end, drop}});
  return {thermal, end, drop};
}

// A slowdown already on at the first step (no healthy phase before it) on 1-2 hosts, RDMA or
// thermal, that ends at 35-75 % of the job: TGS rises when it ends, which is what shows its cost.
void FaultFromFirstStep(JobPlanner& p) {
  const auto [thermal, end, drop] = PlanEarlySlowdown(p);
  const int64_t last = p.spec().last_step;
  const int nbad = p.Nodes() >= 8 ? p.Int(1, 2) : 1;
  std::vector<FaultWindow> faulty;
  for (int i = 0; i < nbad; ++i) {
    faulty.push_back({p.TakeHost(), 0, end});
    SlowFault(p, thermal, faulty.back().host, 0, end);
  }
  Verdict(p, thermal ? "thermal-from-first-step" : "rdma-from-first-step",
          thermal ? "thermal-throttle" : "rdma-link-degradation", "retry-excluding-nodes");
  p.notes() = std::string(thermal ? "Throttling GPUs" : "RDMA degradation") + " on " + std::to_string(nbad) +
              " host(s) from the first step to step " + std::to_string(end) + ", TGS +" +
              std::to_string(static_cast<int>(drop * 100)) + "% once it ends." + p.notes();
  WiderTelemetry(p, faulty);
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(end + 5, last - 5));
}

// A slowdown from 20 % to `latest_onset` of the job on (at least 10 minutes), to the end or, one
// time in three, recovering: its steps and its cost, 6 % (or the job's visible drop) to `max_drop`.
struct MidJobSlowdown {
  int64_t onset = 0, end = 0;
  double drop = 0;
};

MidJobSlowdown PlanMidJobSlowdown(JobPlanner& p, double latest_onset, double max_drop) {
  const int64_t window = std::max<int64_t>(30, p.StepsFor(600));
  p.EnsureSteps(20 + window + 10);
  const int64_t last = p.spec().last_step;
  const int64_t onset =
      std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(last) * p.U(0.2, latest_onset)), 15, last - window);
  const int64_t end = p.Chance(0.3) && last - onset > window + 20 ? onset + window + p.Int(0, 10) : last;
  const double drop = std::round(p.U(std::max(0.06, VisibleDrop(p, end - onset + 1)), max_drop) * 1000) / 1000;
  return {onset, end, drop};
}

// What ManyFaultyHosts draws: the node count (log-uniform) and how many hosts fail, and the kind's
// name.
struct ManyHostsShape {
  double min_nodes = 64, max_nodes = 512;
  int min_faulty = 3, max_faulty = 6;
  std::string kind = "many-hosts";
};

// 3-6 hosts of one kind fail at once among 64-512 nodes (a rack's switch, a cooling loop), onsets
// a few steps apart: every one of them is excluded.
void ManyFaultyHosts(JobPlanner& p, const ManyHostsShape& shape = {}) {
  const bool thermal = p.Chance(0.35);
  const int nodes = static_cast<int>(std::lround(std::exp(p.U(std::log(shape.min_nodes), std::log(shape.max_nodes)))));
  p.ScaleShape(nodes, !thermal, 60);
  JobSpec& s = p.spec();
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.45, 0.25);
  const int64_t last = s.last_step;
  const int k = p.Int(shape.min_faulty, shape.max_faulty);
  std::vector<Slowdown> slow;
  std::vector<FaultWindow> faulty;
  for (int i = 0; i < k; ++i) {
    const int64_t a = onset + (i ? p.Int(0, 3) : 0);
    faulty.push_back({p.TakeHost(), a, end});
    SlowFault(p, thermal, faulty.back().host, a, end);
    slow.push_back({a, end, drop});
  }
  s.phases = OverlapPhases(0, last, p.tgs(), slow);
  Verdict(p, shape.kind + (thermal ? "-throttle" : "-rdma"), thermal ? "thermal-throttle" : "rdma-link-degradation",
          "retry-excluding-nodes");
  p.notes() = std::to_string(k) + " of " + std::to_string(nodes) + " hosts " +
              (thermal ? "throttle" : "show RDMA retx + ACK timeouts") + " from step " + std::to_string(onset) + " to " +
              std::to_string(end) + ", TGS -" + std::to_string(static_cast<int>(drop * 100)) + "%." + p.notes();
  WiderTelemetry(p, faulty);
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// A dip of one step (retransmits, ACK timeouts and retry exhaustion on one host during it: a
// permanent loss), or one over ~90 % of the job (5-10 % healthy steps before it) on 1-2 RDMA hosts.
void DipExtreme(JobPlanner& p) {
  const bool single = p.Chance(0.5);
  p.Shape(false, true, single ? 120 : 60);
  JobSpec& s = p.spec();
  p.CapSteps(p.Int(single ? 120 : 60, 600));
  const int64_t n = s.last_step + 1;
  std::vector<FaultWindow> faulty;
  if (single) {
    const int64_t at = p.Int(static_cast<int>(n / 4), static_cast<int>(3 * n / 4));
    // One step stands out only well past its own noise: ten standard deviations, at least 15 %.
    const double lo = std::max(0.15, 10 * p.JitterPct() / 100);
    const double drop = std::round(p.U(lo, lo + 0.15) * 1000) / 1000;
    p.ScrapeWithin(p.StepSeconds());
    s.phases = OverlapPhases(0, s.last_step, p.tgs(), {{at, at, drop}});
    const std::string host = p.TakeHost();
    RdmaHostFault(p, host, at, at, true);
    Verdict(p, "rdma-single-step-dip", "rdma-link-degradation", "retry-excluding-nodes");
    p.notes() = std::to_string(n) + "-step job, step " + std::to_string(at) + " alone " +
                std::to_string(static_cast<int>(drop * 100)) + "% slower, retry exhaustion on " + host + " in it." + p.notes();
    p.Passthrough();
    p.Noise(std::make_pair<int64_t, int64_t>(3, at - 3));
    return;
  }
  const int64_t onset = std::max<int64_t>(5, std::lround(static_cast<double>(n) * p.U(0.05, 0.1)));
  const int64_t end = p.Chance(0.5) ? s.last_step : std::max<int64_t>(onset + 5, std::lround(static_cast<double>(n) * 0.95));
  const bool short_in_time = static_cast<double>(end - onset + 1) * p.StepSeconds() < 360;
  const double drop = std::round(p.U(std::max(0.05, VisibleDrop(p, end - onset + 1)), 0.25) * 1000) / 1000;
  s.phases = OverlapPhases(0, s.last_step, p.tgs(), {{onset, end, drop}});
  const int nbad = p.Nodes() >= 8 ? p.Int(1, 2) : 1;
  for (int i = 0; i < nbad; ++i) {
    faulty.push_back({p.TakeHost(), onset, end});
    RdmaHostFault(p, faulty.back().host, onset, end, short_in_time || p.Chance(0.3));
  }
  Verdict(p, "rdma-dip-90pct", "rdma-link-degradation", "retry-excluding-nodes");
  p.notes() = std::to_string(n) + "-step job, TGS -" + std::to_string(static_cast<int>(drop * 100)) + "% over steps " +
              std::to_string(onset) + "-" + std::to_string(end) + " on " + std::to_string(nbad) + " RDMA host(s)." + p.notes();
  WiderTelemetry(p, faulty);
  p.Passthrough();
  p.Noise(std::nullopt);
}

// Uncorrectable HBM errors on one GPU of task `task` from 5-10 minutes before the job's last step
// (never before step `earliest`), then its HSA abort after that step ends the job.
void EndByGpuAbort(JobPlanner& p, size_t task, int64_t earliest) {
  JobSpec& s = p.spec();
  const int64_t last = s.last_step;
  // At 0.01 errors/s the counter needs minutes to move: the errors start 5-10 minutes before the abort.
  const int64_t ue_first = std::max<int64_t>(earliest, last - p.StepsFor(p.U(300, 600)));
  p.Fault("ras_uncorrectable", {p.HostAt(task)}, p.Steps(ue_first, last), 0.01, {p.Int(0, 7)});
  s.events.push_back(HsaAbortEvent(last, task));
  AllExit(s, 143);
  s.node_exits[static_cast<int>(task)] = 134;
  s.summary = "{status: FAILED, exit: 1, reason: \"Training FAILED (exit=134)\"}";
  p.Exclude(p.HostAt(task), 1);
}

// Task `task`'s host jumps to its memory limit two steps before the last one, and the OOM killer
// ends its trainer.
void EndByOomKill(JobPlanner& p, size_t task) {
  JobSpec& s = p.spec();
  const int64_t last = s.last_step;
  p.Fault("host_oom", {p.HostAt(task)}, "after_step: " + std::to_string(last - 2), 1);
  s.events.push_back(OomKillEvent(last, "[" + std::to_string(task) + "]"));
  s.node_exits = {{static_cast<int>(task), 137}};
  s.summary = "{status: FAILED, exit: 137, reason: \"Training FAILED (exit=137)\"}";
  p.Exclude(p.HostAt(task), std::nullopt);
}

// The shape of a job a fault ends after its last step (more steps were planned) with a slowdown of
// at least 10 minutes before that: returns the slowdown's least length in steps.
int64_t PlanFatalJob(JobPlanner& p, bool thermal) {
  p.Shape(false, !thermal, 80);
  const int64_t min_len = std::max<int64_t>(20, p.StepsFor(600));
  p.EnsureSteps(30 + 2 * min_len);
  p.set_total_steps(p.spec().last_step + p.Int(60, 400));
  return min_len;
}

// A fault that ends the job (uncorrectable HBM errors then an HSA abort, or a host OOM kill) after
// or during a slowdown on another host (an RDMA link or a throttling GPU). The fault that ended the
// job is its root cause, as with node-death-after-link-fault: the slowdown did not stop it. The
// slow host's own cost showed in TGS, so it is excluded too.
void FatalAfterSlowdown(JobPlanner& p) {
  const bool gpu = p.Chance(0.5), thermal = p.Chance(0.5);
  JobSpec& s = p.spec();
  const int64_t min_len = PlanFatalJob(p, thermal);
  const int64_t last = s.last_step;
  const int64_t a = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(last) * p.U(0.15, 0.4)), 10, last - min_len - 10);
  const bool during = p.Chance(0.5);
  const int64_t b = during ? last : p.Int(static_cast<int>(a + min_len), static_cast<int>(last - 5));
  const double drop = std::round(p.U(std::max(0.06, VisibleDrop(p, b - a + 1)), 0.2) * 1000) / 1000;
  s.phases = OverlapPhases(0, last, p.tgs(), {{a, b, drop}});
  const std::string slow_host = p.TakeHost();
  SlowFault(p, thermal, slow_host, a, b);
  size_t task = static_cast<size_t>(p.Int(0, static_cast<int>(p.Nodes()) - 1));
  while (p.HostAt(task) == slow_host) task = (task + 1) % p.Nodes();
  const std::string host = p.HostAt(task);
  if (gpu) EndByGpuAbort(p, task, a + 1);
  else EndByOomKill(p, task);
  Verdict(p, gpu ? "gpu-fault-after-slowdown" : "host-oom-after-slowdown", gpu ? "gpu-hardware-fault" : "host-oom",
          "retry-excluding-nodes");
  p.notes() = std::string(thermal ? "A throttling GPU on " : "RDMA degradation on ") + slow_host + " over steps " +
              std::to_string(a) + "-" + std::to_string(b) + " (-" + std::to_string(static_cast<int>(drop * 100)) + "% TGS), " +
              (during ? "still on when " : "then ") + host + (gpu ? " aborted on uncorrectable HBM errors" : " was OOM-killed") +
              " after step " + std::to_string(last) + "." + p.notes();
  WiderTelemetry(p, {{slow_host, a, b}});
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, a - 5));
}

// --- widest kinds (`--widest`) -------------------------------------------------------------------

StatusOr<fixturegen::Timeline> TimelineOf(const std::string& yaml, const std::string& name);

// The job's timeline as its scenario stands now, the passthrough's checkpoint cadence included
// (faults do not move it; a heartbeat kill would).
StatusOr<fixturegen::Timeline> PlannedTimeline(JobPlanner& p) {
  p.Passthrough();
  return TimelineOf(Render(p.spec(), p.truth()), p.spec().id);
}

std::string TimeWindow(double from, double to) { return "from: " + Iso(from) + ", to: " + Iso(to); }

// A GPU's uncorrectable HBM errors from init on, then its HSA abort while step 0 compiles: the job
// ends before any step is logged. A careful SRE excludes that host (priority 1) and retries.
Status FatalInCompile(JobPlanner& p) {
  p.Shape(false, false);
  JobSpec& s = p.spec();
  p.Flat();
  s.stop_phase = "before_step0";
  s.init_seconds = std::round(p.U(240, 600));
  const size_t task = static_cast<size_t>(p.Int(0, static_cast<int>(p.Nodes()) - 1));
  const std::string host = p.HostAt(task);
  // fixturegen logs before_step0 lines halfway through step 0's 150 s compile; the job ends when
  // srun has killed the other tasks.
  s.hang_seconds = 75 + std::round(p.U(20, 90));
  ASSIGN_OR_RETURN(fixturegen::Timeline t, PlannedTimeline(p));
  const double onset = t.train_start + s.init_seconds.value() * p.U(0.45, 0.8);
  // fixturegen's counters draw each scrape's errors at random around the rate: at least six
  // expected in the window, so the exported counter moves (at 0.02/s over three minutes it stayed
  // at 0 about one time in ten, and the truth's priority-1 exclusion had no evidence).
  const double ue_rate = std::max(0.02, std::ceil(6000 / (t.memstats_time - onset)) / 1000);
  p.Fault("ras_uncorrectable", {host}, TimeWindow(onset, t.memstats_time), ue_rate, {p.Int(0, 7)});
  std::string abort = HsaAbortEvent(0, task);
  abort.replace(abort.find("\"after_step:0\""), std::string("\"after_step:0\"").size(), "before_step0");
  s.events.push_back(abort);
  AllExit(s, 143);
  s.node_exits[static_cast<int>(task)] = 134;
  s.summary = "{status: FAILED, exit: 1, reason: \"Training FAILED (exit=134)\"}";
  p.Exclude(host, 1);
  Verdict(p, "gpu-fault-in-compile", "gpu-hardware-fault", "retry-excluding-nodes");
  p.notes() = "Uncorrectable HBM errors on " + host + " from init on, then an HSA abort while step 0 compiled: no step logged." +
              p.notes();
  p.Passthrough();
  p.Noise(std::nullopt);
  return Status::Ok();
}

// A fault that starts before the first step's line: during init (runtime, data pipeline) or while
// step 0 compiles. Two in three are a slowdown on 1-3 hosts (RDMA link or throttling GPU) that ends
// at 35-75 % of the job, so TGS shows its cost only when it ends (no healthy step came before it),
// or, a third of the throttles, never ends (TGS one level: only the peers show it); one in three is
// a GPU fault that aborts the job in compile.
Status InitPhaseFault(JobPlanner& p) {
  if (p.Chance(1.0 / 3)) return FatalInCompile(p);
  const auto [thermal, end, drop] = PlanEarlySlowdown(p, /*slow_init=*/true);
  JobSpec& s = p.spec();
  const int64_t last = s.last_step;
  // One throttle in three never lifts: TGS holds the throttled level from the first step to the
  // last, no change point shows it, and only the unthrottled peers do.
  const bool to_the_end = thermal && p.Chance(1.0 / 3);
  if (to_the_end) s.phases = {{s.first_step, last, std::round(p.tgs() * (1 - drop)), 0}};
  ASSIGN_OR_RETURN(fixturegen::Timeline t, PlannedTimeline(p));
  // From after Prometheus' first scrapes to 10 s before step 0's line: init or compile.
  const bool in_compile = p.Chance(0.5);
  const double from = in_compile ? p.U(t.first_step_begin, t.steps.front().end - 10)
                                 : p.U(std::max(t.prometheus_start + 60, t.train_start + 0.4 * *s.init_seconds), t.first_step_begin);
  const std::string window = TimeWindow(std::round(from), to_the_end ? t.FindStep(last)->end + 60 : t.FindStep(end)->end);
  // A minority of several hosts (a rack's cooling, a batch of bad cables): up to a third of them,
  // at most three, so 2-3 of 6-9 hosts come up as often as one.
  const int nbad = p.Int(1, std::clamp(static_cast<int>(p.Nodes()) / 3, 1, 3));
  std::string list;
  for (int i = 0; i < nbad; ++i) {
    const std::string host = p.TakeHost();
    SlowdownFaults(p, thermal, host, window);
    p.Exclude(host, thermal ? std::nullopt : std::optional<int>(2));
    list += (list.empty() ? "" : ", ") + host;
  }
  Verdict(p, to_the_end ? "thermal-from-init-to-end" : thermal ? "thermal-from-init" : "rdma-from-init",
          thermal ? "thermal-throttle" : "rdma-link-degradation", "retry-excluding-nodes");
  p.notes() = std::string(thermal ? "Throttling GPUs" : "RDMA degradation") + " on " + list + " from " +
              (in_compile ? "step 0's compile" : "init") + " (" + Iso(std::round(from)) + ") " +
              (to_the_end ? "to the end, TGS one level (" + std::to_string(static_cast<int>(drop * 100)) + "% under the unthrottled rate)."
                          : "to step " + std::to_string(end) + ", TGS +" + std::to_string(static_cast<int>(drop * 100)) + "% once it ends.") +
              p.notes();
  p.Passthrough();
  p.Noise(to_the_end ? std::make_pair<int64_t, int64_t>(5, last - 5) : std::make_pair<int64_t, int64_t>(end + 5, last - 5));
  return Status::Ok();
}

// The slow host itself ends the job: one host throttles or its link degrades (6-20 % TGS), and
// later that same host dies, aborts on uncorrectable HBM errors or is OOM-killed. The fault that
// ended the job is the root (as when the two faults are on two hosts); one host to exclude.
void FatalOnSlowHost(JobPlanner& p) {
  const int end_kind = p.Int(0, 2);   // 0 node death, 1 GPU abort, 2 OOM kill
  const bool thermal = p.Chance(0.5);
  JobSpec& s = p.spec();
  const int64_t min_len = PlanFatalJob(p, thermal);
  const int64_t last = s.last_step;
  const int64_t a = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(last) * p.U(0.15, 0.5)), 10, last - min_len);
  const double drop = std::round(p.U(std::max(0.06, VisibleDrop(p, last - a + 1)), 0.2) * 1000) / 1000;
  s.phases = OverlapPhases(0, last, p.tgs(), {{a, last, drop}});
  // Task 0 hosts the coordinator: a dead node is any other.
  const size_t task = static_cast<size_t>(p.Int(end_kind == 0 ? 1 : 0, static_cast<int>(p.Nodes()) - 1));
  const std::string host = p.HostAt(task);
  p.MarkBusy(host);
  SlowdownFaults(p, thermal, host, p.Steps(a, last));
  std::string ending;
  if (end_kind == 0) {
    const bool heartbeat_kill = EndByNodeDeath(p, task);
    p.Exclude(host, 2);
    ending = std::string(" died; ") + (heartbeat_kill ? "the heartbeat timeout killed the job." : "the survivors hung until scancel.");
  } else if (end_kind == 1) {
    EndByGpuAbort(p, task, a + 1);
    ending = " aborted on uncorrectable HBM errors.";
  } else {
    EndByOomKill(p, task);
    ending = " was OOM-killed.";
  }
  static const char* const kKinds[] = {"death-on-slow-host", "gpu-fault-on-slow-host", "host-oom-on-slow-host"};
  Verdict(p, kKinds[end_kind], end_kind == 2 ? "host-oom" : "gpu-hardware-fault", "retry-excluding-nodes");
  p.notes() = std::string(thermal ? "A throttling GPU on " : "RDMA degradation on ") + host + " from step " +
              std::to_string(a) + " (-" + std::to_string(static_cast<int>(drop * 100)) + "% TGS); after step " +
              std::to_string(last) + " the same host" + ending + p.notes();
  WiderTelemetry(p, {{host, a, last}});
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, a - 5));
}

// A slowdown on 1-2 hosts (RDMA link or throttling GPU, 6-22 %, sometimes recovering) in a job whose
// Prometheus scraped node_hw by address and holds no Ray series: only the job log's `[Ray] Starting
// ... (bind=<ip>)` lines, labelled by task, tie an address to a node name (a RAY=0-style scrape
// config).
void AddressesOnlyInLog(JobPlanner& p) {
  const bool thermal = p.Chance(0.5);
  p.Shape(false, !thermal, 80);
  JobSpec& s = p.spec();
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.22);
  const int64_t last = s.last_step;
  s.phases = OverlapPhases(0, last, p.tgs(), {{onset, end, drop}});
  std::string list;
  for (const FaultWindow& f : SlowHosts(p, thermal, onset, end)) list += (list.empty() ? "" : ", ") + f.host;
  s.node_hw_names = "ip";
  s.host_label_fqdn = false;
  s.ray_metrics = false;
  Verdict(p, thermal ? "thermal-addresses-only" : "rdma-addresses-only", thermal ? "thermal-throttle" : "rdma-link-degradation",
          "retry-excluding-nodes");
  p.notes() = std::string(thermal ? "Throttling GPUs" : "RDMA degradation") + " on " + list + " over steps " +
              std::to_string(onset) + "-" + std::to_string(end) + " (-" + std::to_string(static_cast<int>(drop * 100)) +
              "% TGS); node_hw scraped by IP, no Ray series: only the log names the addresses." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// One host's link (or GPU cooling) fails twice: two episodes of the same fault on the same host,
// each costing TGS, with a healthy stretch of at least 5 minutes between them (a flapping link).
void TwoEpisodesOneHost(JobPlanner& p) {
  const bool thermal = p.Chance(0.4);
  p.Shape(false, !thermal, 100);
  p.MaybeCheckpoint(0.3);
  JobSpec& s = p.spec();
  const int64_t gap = std::max<int64_t>(8, p.StepsFor(300));
  const int64_t min_len = std::max<int64_t>(15, p.StepsFor(420));
  p.EnsureSteps(10 + 2 * min_len + 3 * gap);
  const int64_t last = s.last_step;
  const int64_t slack = last - (10 + 2 * min_len + 2 * gap);
  const int64_t a0 = 10 + p.Int(0, static_cast<int>(slack / 3));
  const int64_t b0 = a0 + min_len - 1 + p.Int(0, static_cast<int>(slack / 3));
  const int64_t a1 = b0 + gap + p.Int(0, static_cast<int>(std::max<int64_t>(0, (last - b0 - gap - min_len) / 2)));
  const int64_t b1 = p.Chance(0.5) ? last : std::min(last, a1 + min_len - 1 + p.Int(0, static_cast<int>(std::max<int64_t>(0, last - a1 - min_len))));
  const double least = std::max(0.06, VisibleDrop(p, min_len));
  const Slowdown first{a0, b0, std::round(p.U(least, 0.2) * 1000) / 1000}, second{a1, b1, std::round(p.U(least, 0.2) * 1000) / 1000};
  s.phases = OverlapPhases(0, last, p.tgs(), {first, second});
  const std::string host = p.TakeHost();
  SlowdownFaults(p, thermal, host, p.Steps(a0, b0));
  SlowdownFaults(p, thermal, host, p.Steps(a1, b1));
  p.Exclude(host, thermal ? std::nullopt : std::optional<int>(2));
  Verdict(p, thermal ? "thermal-two-episodes" : "rdma-two-episodes", thermal ? "thermal-throttle" : "rdma-link-degradation",
          "retry-excluding-nodes");
  p.notes() = std::string(thermal ? "Throttling on " : "RDMA degradation on ") + host + " twice: steps " + std::to_string(a0) +
              "-" + std::to_string(b0) + " (-" + std::to_string(static_cast<int>(first.drop * 100)) + "%) and " +
              std::to_string(a1) + "-" + std::to_string(b1) + " (-" + std::to_string(static_cast<int>(second.drop * 100)) + "%)." +
              p.notes();
  WiderTelemetry(p, {{host, a0, b0}, {host, a1, b1}});
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, a0 - 5));
}

// Throttling no peer can show: every host of the job throttles from the same step, so the fleet
// median falls with them. Either a job on one node (its own clock before the slowdown is the only
// baseline; the host is excluded and the job retried elsewhere), a job of 4+ nodes in a room whose
// cooling failed (the facility is the cause: nothing to exclude), or a job on one node hot from its
// first step to its last: no peer, no step before the heat and no baseline to compare with, so
// whether it throttled, and what it cost, cannot be told; a careful SRE names the heat, excludes
// nothing on a guess and reruns it against a baseline.
void PeerlessThermal(JobPlanner& p) {
  const int shape = p.Int(0, 2);   // 0 one node, 1 a room, 2 one node hot from the start
  if (shape != 1) p.ScaleShape(1, false, 120);
  else p.Shape(false, false, 120);
  const int64_t slow_len = ThrottleSteps(p);
  const std::vector<std::string> hosts = p.spec().hosts;
  if (shape == 2) {
    p.Flat();
    p.Fault("thermal_throttle", hosts, p.Steps(0, p.spec().last_step), std::round(p.U(18, 26)));
    Verdict(p, "thermal-one-host-from-start", "thermal-throttle", "none");
    p.notes() = "A one-node job: " + hosts.front() + " is hot (>100 C, low sclk) from the first step to the last; no peer, no " +
                "healthier phase and no baseline to compare with: nothing to exclude on a guess." + p.notes();
    p.Passthrough();
    p.Noise(std::nullopt);
    return;
  }
  const auto [onset, drop] = ThrottleToTheEnd(p, hosts, slow_len, 0.6);
  if (shape == 0) {
    p.Exclude(hosts.front(), std::nullopt);
    Verdict(p, "thermal-one-host", "thermal-throttle", "retry-excluding-nodes");
    p.notes() = "A one-node job: " + hosts.front() + " throttles from step " + std::to_string(onset) + " (>100 C, low sclk), TGS -" +
                std::to_string(static_cast<int>(drop * 100)) + "%; no peer to compare with." + p.notes();
  } else {
    Verdict(p, "thermal-fleet-wide", "thermal-throttle", "none");
    p.notes() = "Every host (" + std::to_string(hosts.size()) + ") throttles from step " + std::to_string(onset) +
                " (facility cooling), TGS -" + std::to_string(static_cast<int>(drop * 100)) + "%: nothing to exclude." + p.notes();
  }
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// Judgements that need the GPU model's own rated levels (rules/common/gpu-models.yaml, matched
// from Ray's GpuDeviceName): a one-node job on a cooler model hot from its first step to its last
// (no peer, no phase before the heat, no baseline: the model's own throttling point names it, at
// insufficient evidence, as an MI355X past 100 C is named); an MI355X running a light,
// memory-bound workload whose RCCL hang busy-waits at the silicon's ~300 W (a ceiling scaled down
// with the workload's power missed it); and that light workload healthy, the hang's near miss.
void GpuModelLevels(JobPlanner& p) {
  const int shape = p.Int(0, 2);   // 0 cooler model hot from the start, 1 light-workload hang, 2 light-workload healthy
  if (shape == 0) {
    p.ScaleShape(1, false, 120);
    ThrottleSteps(p);
    // throttle_c: the model's throttling point in rules/common/gpu-models.yaml (the campaign test
    // checks the two agree). The heat takes each GPU past it and stays under the MI355X's 100 C, so
    // only the model's own level can name the job: 2 C of margin on both sides for the noise.
    struct CoolerModel {
      const char* name;
      int gpus_per_node;
      double power_w, sclk_mhz, temperature_c, throttle_c;
    };
    static const CoolerModel kCooler[] = {{"AMD Instinct MI300X", 8, 700, 2100, 80, 95},
                                          {"AMD Instinct MI250X", 4, 500, 1700, 70, 85},
                                          {"AMD Instinct MI300A", 4, 550, 2100, 75, 88}};
    const CoolerModel& model = kCooler[p.Int(0, 2)];
    JobSpec& s = p.spec();
    s.gpu_name = model.name;
    s.gpus_per_node = model.gpus_per_node;
    s.gpu_power_w = model.power_w;
    s.gpu_sclk_mhz = model.sclk_mhz;
    s.gpu_temperature_c = model.temperature_c;
    p.Flat();
    constexpr double kMargin = 2, kMi355xThrottle = 100;
    const double heat = std::round(p.U(model.throttle_c + kMargin - model.temperature_c,
                                       kMi355xThrottle - kMargin - model.temperature_c));
    p.Fault("thermal_throttle", s.hosts, p.Steps(0, s.last_step), heat);
    Verdict(p, "rated-thermal-one-node-from-start", "thermal-throttle", "none");
    p.notes() = "A one-node " + std::string(model.name) + " job: " + s.hosts.front() + " runs ~" +
                std::to_string(static_cast<int>(model.temperature_c + heat)) + " C with the clock down from the first step to the last " +
                "(under the MI355X's 100 C, past its own model's throttling point); no peer, no healthier phase, no baseline." + p.notes();
    p.Passthrough();
    p.Noise(std::nullopt);
    return;
  }
  if (shape == 1) RcclHang(p);
  else Healthy(p);
  JobSpec& s = p.spec();
  s.gpu_name = "AMD Instinct MI355X";
  s.gpu_power_w = s.gpu_sclk_mhz = s.gpu_temperature_c = 0;
  s.gpus_per_node = 8;
  s.training_power_w = std::round(p.U(620, 760));
  p.truth().kind = shape == 1 ? "rccl-hang-light-workload" : "light-workload-healthy";
  p.notes() += " A memory-bound workload: the MI355X GPUs train at ~" + std::to_string(static_cast<int>(s.training_power_w)) +
               " W, not ~900 W" + (shape == 1 ? " (the hang still busy-waits at the silicon's ~300 W)." : ".");
}

// Scrapes missed where the evidence is: a GPU's uncorrectable errors and HSA abort on a host whose
// scrapes stop before the errors begin and never come back (the counters the TSDB holds for it are
// clean: only the log names the fault, which is priority 1 whatever the coverage), or a host
// retransmitting with ACK timeouts whose scrapes are missed over the middle of its fault but about
// two minutes at either end (45-90 % of it): under five minutes of samples in all, those around
// the hole still show it sustained: it is excluded, never let go for the hole (seed 1402005 job
// 705039).
void CoverageGaps(JobPlanner& p) {
  if (p.Int(0, 1) == 0) {
    p.Shape(false, false);
    JobSpec& s = p.spec();
    s.last_step = std::min<int64_t>(s.last_step, p.Int(80, 200));
    p.set_total_steps(s.last_step + 60);
    p.Flat();
    const size_t task = static_cast<size_t>(p.Int(1, static_cast<int>(p.Nodes()) - 1));
    const std::string host = p.HostAt(task);
    const int64_t onset = s.last_step / 2;
    const int64_t gap = std::max<int64_t>(5, onset - p.Int(5, 20));
    p.Fault("ras_uncorrectable", {host}, p.Steps(onset, s.last_step), 0.01, {p.Int(0, 7)});
    // To the end of the data, not to the last step: scrapes that came back after the abort would
    // read the counters again (and the errors with them).
    p.Fault("missed_scrapes", {host}, "after_step: " + std::to_string(gap - 1), 0);
    p.Exclude(host, 1);
    s.events.push_back(HsaAbortEvent(s.last_step, task));
    AllExit(s, 143);
    s.node_exits[static_cast<int>(task)] = 134;
    s.summary = "{status: FAILED, exit: 1, reason: \"Training FAILED (exit=134)\"}";
    Verdict(p, "gpu-abort-after-scrape-gap", "gpu-hardware-fault", "retry-excluding-nodes");
    p.notes() = "Scrapes of " + host + " missed from step " + std::to_string(gap) + " to the end; uncorrectable UMC errors from step " +
                std::to_string(onset) + ", then an HSA memory-fault abort." + p.notes();
    p.Passthrough();
    p.Noise(std::make_pair(int64_t{5}, std::max<int64_t>(6, gap - 5)));
    return;
  }
  RdmaDegradation(p, false);
  JobSpec& s = p.spec();
  const std::string host = p.truth().exclude.front().host;
  for (const FaultSpec& f : s.faults) {
    if (f.kind != "rdma_retx" || f.hosts.front() != host) continue;
    const auto dash = f.window.find('-');
    const int64_t first = std::stoll(f.window.substr(std::string("steps: ").size())), last = std::stoll(f.window.substr(dash + 1));
    // About two minutes of the fault left on either side of the hole (under the 5-minute sustain in
    // all), the hole at least 45 % and at most 90 % of the fault.
    const int64_t len = last - first + 1;
    const int64_t keep = std::max<int64_t>(2, p.StepsFor(p.U(100, 140)));
    const int64_t missed = std::clamp<int64_t>(len - 2 * keep, static_cast<int64_t>(0.45 * static_cast<double>(len)),
                                               static_cast<int64_t>(0.9 * static_cast<double>(len)));
    const int64_t a = first + (len - missed) / 2;
    p.Fault("missed_scrapes", {host}, p.Steps(a, a + missed - 1), 0);
    p.notes() += " Scrapes of " + host + " missed over steps " + std::to_string(a) + "-" + std::to_string(a + missed - 1) +
                 " (the middle of its fault window).";
    break;
  }
  p.truth().kind = "rdma-standout-scrape-gap";
}

// --- shapes real clusters produce that the kinds above never draw (`--widest`) --------------------

// The fault SlowdownFaults() injects, for a job's notes.
std::string SlowdownName(bool thermal) { return thermal ? "throttling GPU" : "RDMA retx+ACK timeouts"; }

// The truth of a slowdown on `host` that the TSDB shows: its cause, the host excluded (an RDMA link
// at priority 2), the kind named after its fault ("thermal-<kind>", "rdma-<kind>").
void SlowHostTruth(JobPlanner& p, bool thermal, const std::string& host, const std::string& kind) {
  p.Exclude(host, thermal ? std::nullopt : std::optional<int>(2));
  Verdict(p, (thermal ? "thermal-" : "rdma-") + kind, thermal ? "thermal-throttle" : "rdma-link-degradation",
          "retry-excluding-nodes");
}

// A slowdown on `host` over `window` (a throttling GPU, or an RDMA link excluded at priority 2) and
// its truth, named `kind` after its fault ("thermal-<kind>", "rdma-<kind>"): excluded when the TSDB
// can show it, otherwise an observability gap that nobody is excluded for.
void SlowdownWithTruth(JobPlanner& p, bool thermal, const std::string& host, const std::string& window, bool visible,
                       const std::string& kind) {
  SlowdownFaults(p, thermal, host, window);
  if (!visible) return Verdict(p, (thermal ? "thermal-" : "rdma-") + kind, "observability-gap", "none");
  SlowHostTruth(p, thermal, host, kind);
}

// A fault that begins in the job's last 2-5 % and runs to its end: an RDMA link (two times in three)
// or a throttling GPU on one host, TGS down over those steps. The tail lasts from three node_hw
// scrapes plus a minute (at least 150 s and four steps: shorter leaves nothing a rate window can
// see) to just under the 5 minutes a mid-job fault must hold, and the job is as long as makes that
// 2-5 % of it: the job's end, not the fault, cut it short.
void LateFault(JobPlanner& p) {
  const bool thermal = p.Chance(1.0 / 3);
  p.Shape(false, /*need_retx_counters=*/!thermal, 100);
  const double fraction = p.U(0.02, 0.05);
  const double shortest = std::max(150.0, 3 * p.spec().node_hw_interval + 60);
  const int64_t tail = std::max<int64_t>(4, p.StepsFor(p.U(shortest, std::max(shortest, 285.0))));
  const int64_t steps = static_cast<int64_t>(std::lround(static_cast<double>(tail) / fraction));
  p.EnsureSteps(steps);
  p.CapSteps(steps);
  p.FitSampleBudget();
  JobSpec& s = p.spec();
  const int64_t last = s.last_step;
  const int64_t onset = last - tail + 1;
  const double drop = std::round(p.U(std::max(0.08, VisibleDrop(p, tail)), 0.25) * 1000) / 1000;
  s.phases = {{0, onset - 1, p.tgs(), 0}, {onset, last, std::round(p.tgs() * (1 - drop)), 0}};
  const std::string host = p.TakeHost();
  SlowdownWithTruth(p, thermal, host, p.Steps(onset, last), /*visible=*/true, "late");
  p.notes() = SlowdownName(thermal) + " on " + host + " over the last " + std::to_string(tail) + " of " +
              std::to_string(last + 1) + " steps (" +
              std::to_string(static_cast<int>(std::lround(static_cast<double>(tail) * p.StepSeconds()))) +
              " s), TGS -" +
              std::to_string(static_cast<int>(drop * 100)) + "%." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// One host's node_hw exporter is down for the whole job (up 0, no hw_* sample; its Ray series
// report as before) while an RDMA link (two times in three) or a GPU throttles mid-job. Half the
// time the fault is on that blind host: nothing in the TSDB can show it, so the slowdown's cause
// cannot be judged and the blind host is the gap to name (observability-gap, nobody excluded on a
// guess). Otherwise the fault is on a host that reports: its verdict as usual, the blind host kept.
void BlindHost(JobPlanner& p) {
  const bool thermal = p.Chance(1.0 / 3);
  p.Shape(false, /*need_retx_counters=*/!thermal, 160);
  JobSpec& s = p.spec();
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.25);
  const int64_t last = s.last_step;
  s.phases = {{0, onset - 1, p.tgs(), 0}, {onset, end, std::round(p.tgs() * (1 - drop)), 0}};
  if (end < last) s.phases.push_back({end + 1, last, p.tgs(), 0});
  const bool on_blind = p.Chance(0.5);
  const std::string blind = p.TakeHost();
  p.Fault("exporter_down", {blind}, "", 0);
  const std::string faulty = on_blind ? blind : p.TakeHost();
  SlowdownWithTruth(p, thermal, faulty, p.Steps(onset, end), /*visible=*/!on_blind,
                    on_blind ? "on-blind-host" : "beside-blind-host");
  if (!on_blind) p.Decoy(blind);
  p.notes() = "node_hw down on " + blind + " for the whole job; " + SlowdownName(thermal) + " on " + faulty +
              " over steps " + std::to_string(onset) + "-" + std::to_string(end) + ", TGS -" +
              std::to_string(static_cast<int>(drop * 100)) + "%." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// The TSDB snapshot ends before the job does (Prometheus died, or it was copied while the job ran):
// at least 15 minutes of training are missing. Half the time an RDMA link (or a GPU, one time in
// three) degrades only after the snapshot's end: the TSDB cannot say why TGS fell, and a clean
// family in it proves nothing (observability-gap, nobody excluded). Otherwise the fault began well
// inside the snapshot, and its verdict stands.
void TruncatedTsdb(JobPlanner& p) {
  const bool thermal = p.Chance(1.0 / 3);
  p.Shape(false, /*need_retx_counters=*/!thermal, 160);
  const int64_t missing = std::max<int64_t>(20, p.StepsFor(900));
  const int64_t window = std::max<int64_t>(20, p.StepsFor(900));
  p.EnsureSteps(40 + 2 * window + missing);
  p.FitSampleBudget();
  JobSpec& s = p.spec();
  const int64_t last = s.last_step;
  const bool after_end = p.Chance(0.5);
  int64_t onset = 0, end_step = 0;
  if (after_end) {
    end_step = p.Int(static_cast<int>(last / 3), static_cast<int>(last - missing));
    onset = p.Int(static_cast<int>(end_step + 5), static_cast<int>(std::max(end_step + 5, last - 10)));
  } else {
    onset = p.Int(20, static_cast<int>(last - missing - window));
    end_step = p.Int(static_cast<int>(onset + window), static_cast<int>(last - missing));
  }
  s.tsdb_end_step = end_step;
  const double drop = std::round(p.U(std::max(0.08, VisibleDrop(p, last - onset + 1)), 0.25) * 1000) / 1000;
  s.phases = {{0, onset - 1, p.tgs(), 0}, {onset, last, std::round(p.tgs() * (1 - drop)), 0}};
  const std::string host = p.TakeHost();
  SlowdownWithTruth(p, thermal, host, p.Steps(onset, last), /*visible=*/!after_end,
                    after_end ? "after-tsdb-end" : "before-tsdb-end");
  p.notes() = "TSDB ends after step " + std::to_string(end_step) + " of " + std::to_string(last) + "; " +
              SlowdownName(thermal) + " on " + host + " from step " +
              std::to_string(onset) + ", TGS -" + std::to_string(static_cast<int>(drop * 100)) + "%." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, std::min(onset, end_step) - 5));
}

// Retransmit and ACK-timeout rates (per second and device).
struct LinkRates {
  double retx = 0, ack = 0;
};

// A fabric episode's shared retransmits and ACK timeouts on `episode` over `window`; `standout`
// (when not empty) retransmits 6-10 times as much on its own and is excluded at priority 2.
void EpisodeRetransmits(JobPlanner& p, const std::vector<std::string>& episode, const std::string& standout,
                        const std::string& window, LinkRates rates, const std::vector<int>& devices) {
  std::vector<std::string> shared = episode;
  if (!standout.empty()) {
    shared.erase(std::find(shared.begin(), shared.end(), standout));
    const double factor = p.U(6, 10);
    p.Fault("rdma_retx", {standout}, window, std::round(rates.retx * factor), devices);
    p.Fault("rdma_ack_timeout", {standout}, window, std::round(rates.ack * factor), devices);
    p.Exclude(standout, 2);
  }
  p.Fault("rdma_retx", shared, window, rates.retx, devices);
  p.Fault("rdma_ack_timeout", shared, window, rates.ack, devices);
}

// A fabric episode (a switch, a congestion storm): all of 4-64 hosts, or more than half of them,
// begin retransmitting RDMA with ACK timeouts at the same step, costing 6-25 % TGS to the end or
// recovering. Excluding them cannot help, so the job is retried on the same nodes and no host is
// excluded. One job in three, one of them also exhausts its retries on a port (permanent loss): a
// dead port is a host fault even in a congested fabric, and that host alone is excluded (priority
// 1). One in six, one of them retransmits 6-10 times as much as the rest: a fault of its own on top
// of the fabric's, excluded alone (priority 2).
void FleetWideRdma(JobPlanner& p) {
  const int nodes = static_cast<int>(std::lround(std::exp(p.U(std::log(4.0), std::log(64.0)))));
  p.ScaleShape(nodes, /*need_retx_counters=*/true, 80);
  p.MaybeCheckpoint(0.3);
  JobSpec& s = p.spec();
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.45, 0.25);
  s.phases = OverlapPhases(0, s.last_step, p.tgs(), {{onset, end, drop}});
  const int n = static_cast<int>(p.Nodes());
  const int k = p.Chance(0.5) ? n : p.Int(n / 2 + 1, n - 1);
  std::vector<std::string> fleet;
  std::vector<FaultWindow> faulty;
  for (int i = 0; i < k; ++i) {
    fleet.push_back(p.TakeHost());
    faulty.push_back({fleet.back(), onset, end});
  }
  std::sort(fleet.begin(), fleet.end());
  const auto devices = p.Devices(p.Int(1, 2), 8);
  const std::string window = p.Steps(onset, end);
  const double retx = std::round(p.U(300, 1500)), ack = std::round(p.U(3, 25));
  const double shape = p.U(0, 1);
  const std::string odd = shape < 0.5 ? fleet[static_cast<size_t>(p.Int(0, k - 1))] : "";
  const bool dead = shape < 1.0 / 3;
  EpisodeRetransmits(p, fleet, dead ? "" : odd, window, {retx, ack}, devices);
  if (dead) {
    p.Fault("rdma_retry_exceeded", {odd}, window, std::round(p.U(0.2, 0.6) * 100) / 100, {devices[0]});
    p.Exclude(odd, 1);
  }
  for (const auto& h : fleet)
    if (h != odd) p.Decoy(h);
  const std::string kind = odd.empty() ? "rdma-fleet-wide" : dead ? "rdma-fleet-wide-dead-link" : "rdma-fleet-wide-standout";
  Verdict(p, kind, "rdma-link-degradation", odd.empty() ? "retry-same-nodes" : "retry-excluding-nodes");
  p.notes() = std::to_string(k) + " of " + std::to_string(n) + " hosts retransmit RDMA (ACK timeouts too) from step " +
              std::to_string(onset) + " to " + std::to_string(end) + " (the fabric), TGS -" +
              std::to_string(static_cast<int>(drop * 100)) + "%" +
              (odd.empty() ? "" : dead ? "; retry exhaustion on " + odd : "; " + odd + " retransmits 6-10x the rest") + "." +
              p.notes();
  WiderTelemetry(p, faulty);
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// The fabric shapes the fleet-rdma family leaves out (issue 14's review), each a quarter of the
// fabric-rdma family's jobs on 4-64 nodes (5-64 for the bare majority):
// - retransmits without ACK timeouts on most hosts at once (a flapping spine link recovered by
//   NAKs): the fabric's, retried on the same nodes, nobody excluded;
// - a bare majority (n/2 + 1 hosts) retransmitting with timeouts, one of them 6-10 times the rest:
//   the fleet's median is itself an episode host's level, yet that host alone is excluded (2);
// - an episode on a majority, and another host whose port left (retry exhaustion, priority 1) in a
//   slow stretch of its own half an hour or more before it: that host alone is excluded, the
//   episode's hosts stay;
// - a congestion storm (CNPs on most hosts, no retransmits) while TGS falls: the fabric congested,
//   retried on the same nodes, nobody excluded.
enum class FabricShape { kRetxOnly, kBareMajorityStandout, kFarDeadPort, kCnpStorm };

// `k` free hosts, sorted.
std::vector<std::string> TakeHosts(JobPlanner& p, int k) {
  std::vector<std::string> hosts;
  for (int i = 0; i < k; ++i) hosts.push_back(p.TakeHost());
  std::sort(hosts.begin(), hosts.end());
  return hosts;
}

// How many hosts share the episode: a bare majority for the standout shape, a majority short of
// one host for the dead port (it stays outside), else all hosts half the time.
int EpisodeSize(JobPlanner& p, FabricShape shape, int n) {
  if (shape == FabricShape::kBareMajorityStandout) return n / 2 + 1;
  if (shape == FabricShape::kFarDeadPort || !p.Chance(0.5)) return p.Int(n / 2 + 1, n - 1);
  return n;
}

// The episode's faults over `window`; returns the host planted 6-10 times worse ("" if none) and
// says what the hosts do in `what`.
std::string EpisodeFaults(JobPlanner& p, FabricShape shape, const std::vector<std::string>& episode,
                          const std::string& window, std::string* what) {
  const auto devices = p.Devices(p.Int(1, 2), 8);
  const double retx = std::round(p.U(300, 1500)), ack = std::round(p.U(3, 25));
  if (shape == FabricShape::kRetxOnly) {
    p.Fault("rdma_retx", episode, window, retx, devices);
    *what = "retransmit RDMA without ACK timeouts";
    return "";
  }
  if (shape == FabricShape::kCnpStorm) {
    p.Fault("rdma_cnp", episode, window, std::round(p.U(200, 2000)), p.Devices(8, 8));
    *what = "receive congestion notifications (a CNP storm, no retransmits)";
    return "";
  }
  const std::string odd = shape == FabricShape::kBareMajorityStandout
                              ? episode[static_cast<size_t>(p.Int(0, static_cast<int>(episode.size()) - 1))]
                              : "";
  EpisodeRetransmits(p, episode, odd, window, {retx, ack}, devices);
  *what = "retransmit RDMA (ACK timeouts too)";
  return odd;
}

void FabricRdma(JobPlanner& p) {
  static const char* const kKinds[] = {"rdma-fabric-retx-only", "rdma-fabric-bare-majority-standout",
                                       "rdma-fabric-far-dead-port", "rdma-fabric-cnp-storm"};
  const auto shape = static_cast<FabricShape>(p.Int(0, 3));
  const bool far_dead = shape == FabricShape::kFarDeadPort;
  // The far dead port's job runs an hour longer: fewer nodes keep it within the sample budget.
  const double min_nodes = shape == FabricShape::kBareMajorityStandout ? 5 : 4, max_nodes = far_dead ? 24 : 64;
  p.ScaleShape(static_cast<int>(std::lround(std::exp(p.U(std::log(min_nodes), std::log(max_nodes))))), true, 80);
  JobSpec& s = p.spec();
  // The dead port's stretch of 10+ minutes, then half an hour or more before the episode.
  const int64_t early = far_dead ? std::max<int64_t>(30, p.StepsFor(600)) : 0;
  if (far_dead) p.EnsureSteps(s.last_step + 1 + 10 + early + p.StepsFor(1800));
  auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.45, 0.25);
  std::vector<Slowdown> slow;
  std::string dead;
  if (far_dead) {
    const int64_t episode_len = end - onset;
    onset = std::max(onset, 10 + early + p.StepsFor(1800));
    end = std::min(s.last_step, std::max(end, onset + episode_len));
    dead = p.TakeHost();
    RdmaLinkFaults(p, dead, p.Steps(5, 4 + early), /*exhausted=*/true);
    p.Exclude(dead, 1);
    slow.push_back({5, 4 + early, std::round(p.U(0.06, 0.15) * 1000) / 1000});
  }
  slow.push_back({onset, end, drop});
  s.phases = OverlapPhases(0, s.last_step, p.tgs(), slow);
  const int n = static_cast<int>(p.Nodes());
  const int k = EpisodeSize(p, shape, n);
  const std::vector<std::string> episode = TakeHosts(p, k);
  std::string what;
  const std::string odd = EpisodeFaults(p, shape, episode, p.Steps(onset, end), &what);
  std::vector<FaultWindow> faulty;
  for (const auto& h : episode) {
    if (h != odd) p.Decoy(h);
    faulty.push_back({h, onset, end});
  }
  const bool excluding = !odd.empty() || !dead.empty();
  Verdict(p, kKinds[static_cast<int>(shape)], shape == FabricShape::kCnpStorm ? "fabric-congestion" : "rdma-link-degradation",
          excluding ? "retry-excluding-nodes" : "retry-same-nodes");
  p.notes() = std::to_string(k) + " of " + std::to_string(n) + " hosts " + what + " from step " + std::to_string(onset) +
              " to " + std::to_string(end) + " (the fabric), TGS -" + std::to_string(static_cast<int>(drop * 100)) + "%" +
              (odd.empty() ? "" : "; " + odd + " retransmits 6-10x the rest") +
              (dead.empty() ? "" : "; " + dead + "'s port left over steps 5-" + std::to_string(4 + early)) + "." + p.notes();
  WiderTelemetry(p, faulty);
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(far_dead ? 10 + early : 5, onset - 5));
}

// A job id as the k8s and local launchers name their runs (k8s-20260301-101500-a3f9,
// local_20260301_120000_b7c2): the start time and four hex digits.
std::string LauncherJobId(JobPlanner& p, const std::string& launcher) {
  std::string stamp = fixturegen::FormatIso(p.spec().start);   // 2026-03-01T10:15:00
  stamp.erase(std::remove_if(stamp.begin(), stamp.end(), [](char c) { return c == '-' || c == ':'; }), stamp.end());
  const char sep = launcher == "k8s" ? '-' : '_';
  std::replace(stamp.begin(), stamp.end(), 'T', sep);
  char hex[8];
  std::snprintf(hex, sizeof hex, "%04x", p.Int(0, 0xffff));
  return launcher + sep + stamp + sep + hex;
}

// A slowdown mid-job (RDMA link or throttling GPU, 6-22 %, sometimes recovering) on a job the
// Slurm campaign never launches: through Kubernetes (rank-N.log files, no srun labels; 1-2 faulty
// hosts) or run_local.sh on one node (a throttle, judged against its own clock before it). The
// truth is the same as on Slurm: the log layout must not change the diagnosis.
void OtherLauncher(JobPlanner& p) {
  const bool k8s = p.Chance(0.6);
  const bool thermal = !k8s || p.Chance(0.5);
  if (k8s) p.Shape(false, !thermal, 80);
  else p.ScaleShape(1, false, 80);
  JobSpec& s = p.spec();
  s.launcher = k8s ? "k8s" : "local";
  s.id = LauncherJobId(p, s.launcher);
  p.truth().job_id = s.id;
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.22);
  s.phases = OverlapPhases(0, s.last_step, p.tgs(), {{onset, end, drop}});
  const size_t nbad = SlowHosts(p, thermal, onset, end).size();
  Verdict(p, s.launcher + (thermal ? "-throttle" : "-rdma"), thermal ? "thermal-throttle" : "rdma-link-degradation",
          "retry-excluding-nodes");
  p.notes() = std::string(k8s ? "A Kubernetes job: " : "A run_local.sh job on one node: ") + (thermal ? "throttling on " : "RDMA degradation on ") +
              std::to_string(nbad) + " host(s) over steps " + std::to_string(onset) + "-" + std::to_string(end) + " (-" +
              std::to_string(static_cast<int>(drop * 100)) + "% TGS)." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// A job still running when it is judged (no end-of-job line; the log written moments before its
// `now`), slowed mid-job by an RDMA link or a throttling GPU on 1-2 hosts that is still on: the
// same cause and exclusions as once it has ended, so the sweep driver can act before it does.
void StillRunning(JobPlanner& p) {
  const bool thermal = p.Chance(0.5);
  p.Shape(false, !thermal, 80);
  JobSpec& s = p.spec();
  // A WAL-only TSDB of a running job is one Prometheus is still writing: diagnose refuses to copy
  // it (a live job; query its own Prometheus instead), and whether the generated WAL still looks
  // fresh would depend on how soon the campaign is scored. The campaign cannot serve a live
  // Prometheus, so its running jobs are judged from a snapshot of cut blocks.
  s.tsdb_format = "blocks";
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.22);
  s.phases = OverlapPhases(0, s.last_step, p.tgs(), {{onset, s.last_step, drop}});
  p.set_total_steps(s.last_step + p.Int(100, 2000));
  s.running = true;
  const std::vector<FaultWindow> faulty = SlowHosts(p, thermal, onset, s.last_step);
  const size_t nbad = faulty.size();
  Verdict(p, thermal ? "running-throttle" : "running-rdma", thermal ? "thermal-throttle" : "rdma-link-degradation",
          "retry-excluding-nodes");
  p.notes() = std::string("Still running at step ") + std::to_string(s.last_step) + ": " + (thermal ? "throttling on " : "RDMA degradation on ") +
              std::to_string(nbad) + " host(s) from step " + std::to_string(onset) + " (-" +
              std::to_string(static_cast<int>(drop * 100)) + "% TGS), still on." + p.notes();
  (void)end;
  WiderTelemetry(p, faulty);
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// ---------------------------------------------------------------------------------------------

// Slowdowns whose evidence is not the usual pair: a link that retransmits without a single ACK
// timeout (a lossy link recovered by NAKs) from the step TGS fell, which the joint fit of the TGS
// series blames (excluded at priority 2); one or two hosts whose run queue (a stray process) or full
// I/O pressure (a stalling local disk) rises from that step, their peers unchanged (host contention,
// excluded at priority 2); or a job whose TGS falls with every system family clean (and, for an MoE
// model, a flat load-balance loss), which nothing in the TSDB explains (unknown: profile it; never
// "healthy").
void UnusualEvidence(JobPlanner& p) {
  const double pick = p.U(0, 1);
  const bool link = pick < 0.4, contention = !link && pick < 0.75;
  p.Shape(false, link, 100);
  p.MaybeCheckpoint(0.3);
  JobSpec& s = p.spec();
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.55, 0.2);
  s.phases = OverlapPhases(0, s.last_step, p.tgs(), {{onset, end, drop}});
  const std::string steps = std::to_string(onset) + "-" + std::to_string(end);
  if (link) {
    const std::string host = p.TakeHost();
    p.Fault("rdma_retx", {host}, p.Steps(onset, end), std::round(p.U(300, 1500)), p.Devices(p.Int(1, 2), 8));
    p.Exclude(host, 2);
    Verdict(p, "rdma-retx-without-timeouts", "rdma-link-degradation", "retry-excluding-nodes");
    p.notes() = "RDMA retransmits without ACK timeouts on " + host + " over steps " + steps + "." + p.notes();
  } else if (contention) {
    const bool cpu = p.Chance(0.5);
    const int count = s.hosts.size() >= 8 && p.Chance(0.3) ? 2 : 1;
    std::vector<std::string> hosts;
    for (int i = 0; i < count; ++i) hosts.push_back(p.TakeHost());
    // A run queue 25-60 threads deeper (a busy host runs ~18) or 25-70 % full I/O pressure.
    p.Fault(cpu ? "procs_running_offset" : "io_pressure", hosts, p.Steps(onset, end),
            std::round(cpu ? p.U(25, 60) : p.U(25, 70)));
    for (const auto& h : hosts) p.Exclude(h, 2);
    Verdict(p, cpu ? "cpu-contention" : "io-contention", "host-contention", "retry-excluding-nodes");
    std::string list;
    for (const auto& h : hosts) list += (list.empty() ? "" : ", ") + h;
    p.notes() = std::string(cpu ? "CPU" : "I/O") + " contention on " + list + " over steps " + steps + "." + p.notes();
  } else {
    Verdict(p, "unexplained-drop", "unknown", "none");
    p.notes() = "TGS falls over steps " + steps + " with every system family clean." + p.notes();
  }
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// --- shapes the sixteenth session's probes drew (`--widest`, once per block each) ----------------

// A slowdown over steps [onset, end] of the job (OverlapPhases' one dip), with the window's text.
std::string DipPhases(JobPlanner& p, int64_t onset, int64_t end, double drop) {
  p.spec().phases = OverlapPhases(0, p.spec().last_step, p.tgs(), {{onset, end, drop}});
  return std::to_string(onset) + "-" + std::to_string(end) + " (TGS -" + std::to_string(static_cast<int>(drop * 100)) + "%)";
}

// One GPU of one host throttles (one of 8, of 16 one job in two, or of the node's drawn count):
// every collective waits for that GPU, so its host costs the job as a whole hot node does.
void OneGpuThrottle(JobPlanner& p) {
  p.Shape(false, false, 160);
  JobSpec& s = p.spec();
  if (p.Chance(0.5)) {
    s.gpus_per_node = 16;
    // Twice the GPU series a host: half the hosts keep the job within the sample budget.
    s.hosts.resize(std::max<size_t>(4, s.hosts.size() / 2));
  }
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.2);
  const std::string window = DipPhases(p, onset, end, drop);
  const std::string host = p.TakeHost();
  const int gpu = p.Int(0, s.gpus_per_node - 1);
  p.Fault("thermal_throttle", {host}, p.Steps(onset, end), std::round(p.U(18, 26)), {gpu});
  p.Exclude(host, std::nullopt);
  Verdict(p, s.gpus_per_node == 16 ? "one-gpu-throttle-of-16" : "one-gpu-throttle", "thermal-throttle",
          "retry-excluding-nodes");
  p.notes() = "GPU " + std::to_string(gpu) + " of " + std::to_string(s.gpus_per_node) + " on " + host +
              " throttles over steps " + window + "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// Two faults of two kinds on two hosts from the same step (a throttling GPU on one, an RDMA link on
// the other), and most times a third host storming correctable GPU and PCIe errors that cost
// nothing. Either fault is the root cause (neither came first); both hosts are excluded, each for
// its own cause, and the third is kept.
void SimultaneousKinds(JobPlanner& p) {
  p.Shape(false, true, 160);
  p.MaybeCheckpoint(0.3);
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.25);
  const std::string window = DipPhases(p, onset, end, drop);
  const std::string hot = p.TakeHost(), link = p.TakeHost();
  SlowFault(p, true, hot, onset, end);
  SlowFault(p, false, link, onset, end);
  p.notes() = "From the same step, a throttling GPU on " + hot + " and RDMA degradation on " + link + " over steps " +
              window + ".";
  if (p.FreeHosts().size() > 1 && p.Chance(0.7)) {
    const std::string storm = p.TakeHost();
    p.Fault("ras_errors", {storm}, "", std::round(p.U(0.5, 3) * 100) / 100, {p.Int(0, 7)});
    p.Fault("pcie_correctable", {storm}, "", std::round(p.U(5, 60)));
    p.Decoy(storm);
    p.notes() += " Correctable GPU and PCIe errors on " + storm + " the whole job.";
  }
  Verdict(p, "simultaneous-kinds", "thermal-throttle|rdma-link-degradation", "retry-excluding-nodes");
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// A node dies while the job saves a checkpoint (its exporters go dark just after a checkpoint step)
// or a few steps after the job restored one (a short run with no earlier phase of its own): the dead
// node is excluded as in NodeDeath, whichever moment it chose.
void DeathAtCheckpoint(JobPlanner& p) {
  const bool after_restore = p.Chance(0.5);
  p.Shape(false, true, 60);
  p.set_total_steps(5000);
  JobSpec& s = p.spec();
  const int64_t period = p.Int(20, 60);
  p.set_checkpoint_period(period);
  s.checkpoint_save_seconds = std::round(p.U(90, 240));
  if (after_restore) {
    s.first_step = period * p.Int(2, 20) + 1;
    s.last_step = s.first_step + p.Int(2, 8);
  } else {
    s.last_step = period * p.Int(1, 4) + (period < 25 ? period : 0);
  }
  p.Flat();
  const size_t dead_index = static_cast<size_t>(p.Int(1, static_cast<int>(p.Nodes()) - 1));
  const std::string dead = p.HostAt(dead_index);
  p.Exclude(dead, 2);
  const bool heartbeat_kill = EndByNodeDeath(p, dead_index);
  Verdict(p, after_restore ? "death-after-restore" : "death-in-checkpoint-save", "gpu-hardware-fault",
          "retry-excluding-nodes");
  p.notes() = dead + " died after step " + std::to_string(s.last_step) +
              (after_restore ? ", " + std::to_string(s.last_step - s.first_step + 1) + " steps after restoring step " +
                                   std::to_string(s.first_step - 1)
                             : ", while checkpoint " + std::to_string(s.last_step) + " was being saved") +
              (heartbeat_kill ? "; the heartbeat timeout killed the job." : "; scancel ended the job.") + p.notes();
  p.Passthrough();
  p.Noise(std::nullopt);
}

// An RDMA link degrades and, inside its fault, the host's exporter restarts (a scrape or three
// without samples one time in two) and every counter of the host starts again from zero: the
// rates across the reset must neither hide the fault nor read a counter drop as a burst.
void ResetMidFault(JobPlanner& p) {
  p.Shape(false, true, 160);
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.2);
  const std::string window = DipPhases(p, onset, end, drop);
  const std::string host = p.TakeHost();
  RdmaHostFault(p, host, onset, end, p.Chance(0.25));
  const int64_t at = onset + p.Int(static_cast<int>((end - onset) / 4), static_cast<int>((end - onset) * 3 / 4));
  const bool gap = p.Chance(0.5);
  if (gap) p.Fault("exporter_down", {host}, p.Steps(at, at + std::max<int64_t>(1, p.StepsFor(p.U(20, 60))) - 1), 0);
  p.Fault("counter_reset", {host}, p.Steps(at, p.spec().last_step), 0);
  Verdict(p, "counter-reset-mid-fault", "rdma-link-degradation", "retry-excluding-nodes");
  p.notes() = "RDMA degradation on " + host + " over steps " + window + "; its exporter restarted at step " +
              std::to_string(at) + (gap ? " after a gap" : "") + " (counters from zero)." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// Very noisy steps (5-8 % jitter) and a real 8-12 % slowdown, long enough that its mean stands ten
// standard errors clear of the noise: a throttling GPU or an RDMA link, excluded as usual.
void NoisyDip(JobPlanner& p) {
  const bool thermal = p.Chance(0.5);
  p.Shape(false, !thermal, 200);
  JobSpec& s = p.spec();
  s.step_jitter_pct = std::round(p.U(5, 8) * 100) / 100;
  const double drop = std::round(p.U(0.08, 0.12) * 1000) / 1000;
  const double needed = 0.1 * s.step_jitter_pct / drop;
  const int64_t window = std::max({static_cast<int64_t>(std::ceil(needed * needed)), p.StepsFor(600), int64_t{30}});
  p.EnsureSteps(40 + 2 * window);
  p.FitSampleBudget();
  const int64_t last = s.last_step;
  const int64_t onset = p.Int(20, static_cast<int>(last - window));
  const int64_t end = p.Chance(0.5) ? last : onset + window - 1;
  const std::string steps = DipPhases(p, onset, end, drop);
  const std::string host = p.TakeHost();
  SlowdownWithTruth(p, thermal, host, p.Steps(onset, end), /*visible=*/true, "noisy-dip");
  p.notes() = SlowdownName(thermal) + " on " + host + " over steps " + steps + " under " + Num(s.step_jitter_pct) +
              " % step jitter." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// A fault of 6-12 minutes early in a job that then trains healthily for at least four times as long
// and completes: the fault cost TGS while it lasted, so its host is excluded all the same.
void TransientEarly(JobPlanner& p) {
  const bool thermal = p.Chance(0.5);
  p.Shape(false, !thermal, 200);
  const int64_t window = std::max<int64_t>(20, p.StepsFor(p.U(360, 720)));
  p.EnsureSteps(30 + 5 * window);
  p.FitSampleBudget();
  const int64_t last = p.spec().last_step;
  const int64_t onset = p.Int(10, static_cast<int>(std::max<int64_t>(10, last / 5)));
  const int64_t end = onset + window - 1;
  const double drop = std::round(p.U(std::max(0.06, VisibleDrop(p, window)), 0.2) * 1000) / 1000;
  const std::string steps = DipPhases(p, onset, end, drop);
  const std::string host = p.TakeHost();
  SlowdownWithTruth(p, thermal, host, p.Steps(onset, end), /*visible=*/true, "transient-early");
  p.notes() = SlowdownName(thermal) + " on " + host + " over steps " + steps + " only, of " + std::to_string(last + 1) +
              "; the job recovered and completed." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(end + 10, last - 5));
}

// Exactly half the hosts of a 4-, 6- or 8-node job fail alike from the same step (a throttling GPU
// each, or an RDMA link each): no healthy majority, no fleet-wide episode (that needs more than
// half), so every faulty host is excluded on its own evidence.
void HalfTheHosts(JobPlanner& p) {
  const bool thermal = p.Chance(0.5);
  p.set_few_nodes(2 * p.Int(2, 4));
  p.Shape(false, !thermal, 160);
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.25);
  const std::string steps = DipPhases(p, onset, end, drop);
  std::string list;
  for (size_t i = 0; i < p.Nodes() / 2; ++i) {
    const std::string host = p.TakeHost();
    SlowFault(p, thermal, host, onset, end);
    list += (list.empty() ? "" : ", ") + host;
  }
  Verdict(p, thermal ? "half-hosts-throttle" : "half-hosts-rdma", thermal ? "thermal-throttle" : "rdma-link-degradation",
          "retry-excluding-nodes");
  p.notes() = SlowdownName(thermal) + " on " + list + " (half the job) over steps " + steps + "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// Steps of 1-2 s with Ray scraped every 5 s and node_hw every 5-15 s: a scrape spans several steps,
// so a fault's alignment with TGS is read from few samples a step.
void FastSteps(JobPlanner& p) {
  const bool thermal = p.Chance(0.5);
  p.Shape(false, !thermal, 100);
  p.ShortSteps(p.U(1, 2));
  JobSpec& s = p.spec();
  s.ray_interval = 5;
  s.node_hw_interval = p.Pick(std::vector<double>{5, 10, 15});
  s.node_hw_interval_after = 0;
  p.EnsureSteps(p.StepsFor(p.U(1800, 3600)));
  p.CapSteps(p.StepsFor(3600));
  p.FitSampleBudget();
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.2);
  const std::string steps = DipPhases(p, onset, end, drop);
  const std::string host = p.TakeHost();
  SlowdownWithTruth(p, thermal, host, p.Steps(onset, end), /*visible=*/true, "fast-steps");
  p.notes() = Num(p.StepSeconds()) + " s steps; " + SlowdownName(thermal) + " on " + host + " over steps " + steps + "." +
              p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// A host whose node_hw exporter joins late (no sample before 20-50 % of the job, then as its
// peers) while another host's fault runs: the late host's missing start is no fault of its own.
void LateExporter(JobPlanner& p) {
  const bool thermal = p.Chance(0.5);
  p.Shape(false, !thermal, 160);
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.2);
  const std::string steps = DipPhases(p, onset, end, drop);
  const std::string late = p.TakeHost();
  const int64_t joins = static_cast<int64_t>(static_cast<double>(p.spec().last_step) * p.U(0.2, 0.5));
  p.Fault("exporter_down", {late}, p.Steps(0, joins), 0);
  p.Decoy(late);
  const std::string host = p.TakeHost();
  SlowdownWithTruth(p, thermal, host, p.Steps(onset, end), /*visible=*/true, "beside-late-exporter");
  p.notes() = "node_hw on " + late + " starts after step " + std::to_string(joins) + "; " + SlowdownName(thermal) + " on " +
              host + " over steps " + steps + "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

// The log loses the step lines of a stretch of training (a stalled stdout pipe) around a fault. Two
// times in three the gap covers only the fault's onset and the fault runs on after it, so TGS after
// the gap shows its cost (excluded as usual). Otherwise an RDMA link degrades and recovers inside
// the gap: nothing in the log can show a cost, so the answer is `unknown` (insufficient evidence),
// nobody excluded on a guess.
void LogGap(JobPlanner& p) {
  const bool hidden = p.Chance(1.0 / 3);
  const bool thermal = !hidden && p.Chance(0.5);
  p.Shape(false, !thermal, 200);
  const int64_t window = std::max<int64_t>(20, p.StepsFor(p.U(420, 900)));
  p.EnsureSteps(60 + 3 * window);
  p.FitSampleBudget();
  JobSpec& s = p.spec();
  const int64_t onset = p.Int(30, static_cast<int>(s.last_step - 2 * window));
  const int64_t end = onset + (hidden ? window : 2 * window) - 1;
  const int64_t gap_first = onset - p.Int(2, 8);
  const int64_t gap_last = hidden ? end + p.Int(2, 8) : onset + window / 2;
  s.log_gap = std::make_pair(gap_first, gap_last);
  const double drop = std::round(p.U(std::max(0.06, VisibleDrop(p, window)), 0.2) * 1000) / 1000;
  const std::string steps = DipPhases(p, onset, end, drop);
  const std::string host = p.TakeHost();
  if (hidden) {
    SlowdownFaults(p, false, host, p.Steps(onset, end));
    Verdict(p, "rdma-inside-log-gap", "unknown", "none");
  } else {
    SlowdownWithTruth(p, thermal, host, p.Steps(onset, end), /*visible=*/true, "log-gap-over-onset");
  }
  p.notes() = "The log lost steps " + std::to_string(gap_first) + "-" + std::to_string(gap_last) + "; " +
              SlowdownName(thermal) + " on " + host + " over steps " + steps + "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, gap_first - 5));
}

// A slowdown that comes and goes (a fan that stalls and restarts, a link that flaps): 3-5 episodes
// on one host, one every 100-300 steps (at least 15 minutes apart), each 5 minutes or more and
// under half its period, costing 6-18 % while on. Every episode is the same host's: it is excluded.
void ComesAndGoes(JobPlanner& p) {
  const bool thermal = p.Chance(0.6);
  p.Shape(false, !thermal, 100);
  const int episodes = p.Int(3, 5);
  const int64_t min_len = std::max<int64_t>(15, p.StepsFor(300));
  const int64_t period = std::max<int64_t>({static_cast<int64_t>(p.Int(100, 300)), 2 * min_len + 10, p.StepsFor(900)});
  const int64_t first = 10 + p.Int(0, static_cast<int>(period / 2));
  p.EnsureSteps(first + episodes * period + 10);
  p.CapSteps(first + (episodes + 1) * period);
  p.FitSampleBudget();
  const int64_t last = p.spec().last_step;
  const std::string host = p.TakeHost();
  std::vector<Slowdown> slow;
  std::string list;
  for (int k = 0; k < episodes; ++k) {
    const int64_t a = first + k * period;
    const int64_t b = std::min(last, a + p.Int(static_cast<int>(min_len), static_cast<int>(period / 2)) - 1);
    slow.push_back({a, b, std::round(p.U(std::max(0.06, VisibleDrop(p, b - a + 1)), 0.18) * 1000) / 1000});
    SlowdownFaults(p, thermal, host, p.Steps(a, b));
    list += (list.empty() ? "" : ", ") + std::to_string(a) + "-" + std::to_string(b);
  }
  p.spec().phases = OverlapPhases(0, last, p.tgs(), slow);
  SlowHostTruth(p, thermal, host, "comes-and-goes");
  p.notes() = SlowdownName(thermal) + " on " + host + " comes and goes: steps " + list + "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, first - 5));
}

// The host that runs warmest anyway (every GPU 5-9 C above its peers' for the whole job, at full
// clock: a rack's warmer air), and a mid-job slowdown either on that same host or, one time in two,
// on another: the fault's host is excluded, and a warm host whose clock never dropped is kept.
void WarmestHost(JobPlanner& p) {
  const bool thermal = p.Chance(0.5);
  const bool on_warm = p.Chance(0.5);
  p.Shape(false, !thermal, 160);
  p.MaybeCheckpoint(0.3);
  const auto [onset, end, drop] = PlanMidJobSlowdown(p, 0.5, 0.2);
  const std::string steps = DipPhases(p, onset, end, drop);
  const std::string warm = p.TakeHost();
  p.Fault("gpu_hot", {warm}, "", std::round(p.U(5, 9)));
  const std::string host = on_warm ? warm : p.TakeHost();
  SlowdownFaults(p, thermal, host, p.Steps(onset, end));
  SlowHostTruth(p, thermal, host, on_warm ? "on-warmest-host" : "beside-warmest-host");
  if (!on_warm) p.Decoy(warm);
  p.notes() = warm + " runs warmest all job (full clock); " + SlowdownName(thermal) + " on " + host + " over steps " + steps +
              "." + p.notes();
  p.Passthrough();
  p.Noise(std::make_pair<int64_t, int64_t>(5, onset - 5));
}

StatusOr<fixturegen::Timeline> TimelineOf(const std::string& yaml, const std::string& name) {
  ASSIGN_OR_RETURN(fixturegen::Scenario scenario, fixturegen::ParseScenario(yaml, name));
  return fixturegen::BuildTimeline(scenario);
}

class CampaignPlanner {
 public:
  CampaignPlanner(uint64_t seed, bool wide, bool perf, bool wider, bool widest)
      : seed_(seed), wide_(wide || wider || widest), perf_(perf), wider_(wider || widest), widest_(widest) {}

  std::string NextId() { return std::to_string(700000 + (seed_ % 100) * 1000 + next_index_++); }

  Status Finish(JobPlanner& p, std::vector<PlannedJob>* out) {
    JobSpec& s = p.spec();
    s.description = "Campaign seed " + std::to_string(seed_) + ", job " + s.id + ": " + p.truth().kind + ". " + p.notes();
    p.truth().notes = p.notes();
    if (s.heartbeat_time) {
      // The crash lands 0.45 of a step after the last step (fixturegen's heartbeat anchoring);
      // placing it there leaves the timeline where the plan put it.
      auto probe = s;
      probe.heartbeat_time.reset();
      ASSIGN_OR_RETURN(fixturegen::Timeline t, TimelineOf(Render(probe, p.truth()), s.id));
      s.heartbeat_time = std::floor(t.steps.back().end + 0.45 * t.steps.back().seconds);
    }
    ASSIGN_OR_RETURN(fixturegen::Timeline timeline, TimelineOf(Render(s, p.truth()), s.id));
    // A hang or a long start can carry a job drawn short past the 2 h a WAL-only TSDB allows.
    if (s.tsdb_format == "wal" && timeline.job_end - timeline.prometheus_start > 2 * 3600) s.tsdb_format = "blocks";
    if (s.tsdb_format == "wal") p.notes() += " TSDB: WAL only.";
    s.description = "Campaign seed " + std::to_string(seed_) + ", job " + s.id + ": " + p.truth().kind + ". " + p.notes();
    p.truth().notes = p.notes();
    job_end_ = timeline.job_end;
    PlannedJob job;
    job.scenario_yaml = Render(s, p.truth());
    // Validate the final text through the same path generation takes.
    RETURN_IF_ERROR(fixturegen::ParseScenario(job.scenario_yaml, s.id + ".yaml").status());
    job.truth = p.truth();
    job.cost = static_cast<double>(s.hosts.size()) * (timeline.job_end - timeline.prometheus_start) / s.node_hw_interval;
    out->push_back(std::move(job));
    return Status::Ok();
  }

  // A job judged at `now` = its end (a running job's last write) + `seconds_after_end`; `now`
  // belongs in the scenario's expect too, so the scenario is rendered once more with it.
  Status FinishJudgedAt(JobPlanner& p, double seconds_after_end, std::vector<PlannedJob>* out) {
    RETURN_IF_ERROR(Finish(p, out));
    out->back().truth.now = std::floor(job_end_ + seconds_after_end);
    JobTruth truth = out->back().truth;
    out->back().scenario_yaml = Render(p.spec(), truth);
    return Status::Ok();
  }

  // 7879/7882, 9124-9126: a fresh baseline, then a restore from one of its checkpoints on a partly
  // overlapping allocation, with (leak) or without (near miss) extra runnable threads.
  Status Restore(uint64_t job_seed, int index, std::vector<PlannedJob>* out) {
    std::string stream = "campaign/job/" + std::to_string(index);
    JobPlanner base(job_seed, stream + "/baseline", NextId());
    base.set_wide(wide_);
    base.Shape(false, false);
    int64_t period = base.Int(20, 60);
    bool cancelled = base.Chance(0.4);
    int64_t restored = cancelled ? period * base.Int(1, 2) : 0;
    base.set_checkpoint_period(cancelled ? period : 1000);
    base.spec().checkpoint_save_seconds = std::round(base.U(60, 150));
    base.set_total_steps(std::max<int64_t>(base.steps(), restored + 201));
    if (cancelled) {
      base.spec().last_step = restored + base.Int(1, 3);
      base.spec().summary = CancelEvents(&base.spec().events);
      AllExit(base.spec(), 143);
    }
    base.Flat();
    Verdict(base, "restore-baseline", "none", "none");
    base.truth().scored = false;
    base.notes() = cancelled ? "Baseline cancelled right after the step-" + std::to_string(restored) + " checkpoint."
                             : "Fresh baseline run.";
    base.Passthrough();
    base.Noise(std::nullopt);
    RETURN_IF_ERROR(Finish(base, out));
    const double baseline_end = job_end_;
    const JobSpec& b = base.spec();

    JobPlanner p(job_seed, stream, NextId());
    JobSpec& s = p.spec();
    s = b;   // same configuration, its own noise and telemetry below
    s.id = p.truth().job_id;
    s.seed = fixturegen::HashString(stream, job_seed) % 1000000 + 1;
    s.faults.clear();
    s.events.clear();
    s.node_exits.clear();
    s.summary = "{status: SUCCESS, exit: 0}";
    // a partly overlapping allocation: some baseline hosts, some fresh ones from the same cluster
    auto pool = HostPool(p.rng(), base.scheme(), static_cast<int>(b.hosts.size()) * 2 + 8);
    std::vector<std::string> hosts;
    for (const auto& h : b.hosts)
      if (p.Chance(0.5)) hosts.push_back(h);
    for (const auto& h : pool) {
      if (hosts.size() >= b.hosts.size()) break;
      if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
    }
    s.hosts = Canonical(hosts);
    s.start = baseline_end + std::round(p.U(600, 6 * 3600.0));
    s.first_step = restored + 1;
    s.last_step = restored + base.Int(80, 200);
    bool leak = p.Chance(0.6);
    s.init_seconds = leak ? 420 : 400;
    s.extra_nccl_waves = leak ? 2 : 0;
    double tgs = b.phases.front().tgs * (leak ? p.U(0.985, 0.992) : p.U(0.997, 1.002));
    s.phases = {{s.first_step, s.last_step, std::round(tgs), 0}};
    // same passthrough as the baseline (steps= covers the restored run); the leak comes with the single-replica restore
    if (leak) s.passthrough.push_back("enable_single_replica_ckpt_restoring=true");
    if (leak) p.Fault("procs_running_offset", s.hosts, p.Steps(s.first_step, s.last_step), std::round(p.U(12, 20)));
    Verdict(p, leak ? "restore-thread-leak" : "restore-no-leak", leak ? "restore-thread-leak" : "none", "none");
    p.truth().baseline = b.id;
    p.notes() = std::string(leak ? "Single-replica restore from step " : "Regular restore from step ") + std::to_string(restored) +
                (leak ? ", +runnable threads on every host" : ", no extra threads") + "; baseline " + b.id +
                (cancelled ? " (cancelled after that checkpoint)." : ".");
    p.Noise(std::nullopt);
    return Finish(p, out);
  }

  // Issue 33's performance regressions: a baseline run with a healthy profile window (RCCL under
  // the GEMMs, step - total kernel negative), then the same job slower for one reason no system
  // metric shows, judged with --baseline. perf-noise is the near miss: the same kernels, TGS
  // within the 3 % noise band.
  Status PerfRegression(uint64_t job_seed, int index, const std::string& family, std::vector<PlannedJob>* out) {
    const std::string stream = "campaign/job/" + std::to_string(index);
    JobPlanner base(job_seed, stream + "/baseline", NextId());
    base.Shape(false, false, 40);
    // Trace files cost what their kernels cost: few nodes, a short job.
    base.spec().hosts.resize(std::min<size_t>(base.spec().hosts.size(), static_cast<size_t>(base.Int(2, 6))));
    base.CapSteps(base.Int(40, 80));
    base.Flat();
    const double step = base.StepSeconds();
    const int64_t window = base.Int(8, static_cast<int>(base.spec().last_step) - 12);
    const auto kernels = [&](double gap, bool exposed_comm) {
      // Shares of the healthy step: GEMM, flash attention and a fusion fill the main stream; RCCL
      // runs on its own stream under the GEMM.
      const double gemm = 0.60 * step, fmha = 0.22 * step, convert = 0.14 * step, rccl = 0.12 * step;
      const double after_gemm = gemm + gap;
      std::vector<ProfileKernel> k = {{"ck::kernel_gemm_xdl_cshuffle_v3_f8", 0, 0, gemm, 126}};
      if (gap > 0) k.push_back({"input_scatter_fusion_3.kd", 0, gemm, 0.04 * step, 6});
      k.push_back({"aiter::fmha_fwd_hd128_bf16", 0, after_gemm + (gap > 0 ? 0.04 * step : 0), fmha, 126});
      const double convert_at = k.back().start + fmha;
      k.push_back({"loop_convert_fusion_7.kd", 0, convert_at, convert, 126});
      k.push_back({"ncclDevKernel_Generic_1", 1, exposed_comm ? convert_at + convert : 0.17 * step, rccl, 252});
      return k;
    };
    base.spec().profile = ProfilePlan{window, 3, step, kernels(0, false), "", -1, 1};
    Verdict(base, "perf-baseline", "none", "none");
    base.truth().scored = false;
    base.notes() = "Baseline run with a healthy profile window at steps " + std::to_string(window) + "-" +
                   std::to_string(window + 2) + ".";
    base.Passthrough();
    RETURN_IF_ERROR(Finish(base, out));
    const double baseline_end = job_end_;
    const JobSpec& b = base.spec();

    JobPlanner p(job_seed, stream, NextId());
    JobSpec& s = p.spec();
    s = b;
    s.id = p.truth().job_id;
    s.seed = fixturegen::HashString(stream, job_seed) % 1000000 + 1;
    s.start = baseline_end + std::round(p.U(600, 6 * 3600.0));
    ProfilePlan& pr = *s.profile;
    double slowdown = 1;
    if (family == "perf-blocker") {
      // Past 0.08 of the step the gap outweighs the healthy overlap: step - total kernel turns positive.
      const double gap = std::round(p.U(0.14, 0.3) * step * 100) / 100;
      pr.kernels = kernels(gap, false);
      slowdown = (step + gap + 0.04 * step) / step;
      Verdict(p, "perf-blocker", "kernel-time-regression", "none");
      p.notes() = "A fusion stalls the main stream: " + Num(gap) + " s of gap per step after it.";
    } else if (family == "perf-overlap-loss") {
      pr.kernels = kernels(0, true);
      slowdown = 1.12;   // the main stream's 0.96 of the step, then RCCL's 0.12, then the 0.04 before the next step
      Verdict(p, "perf-overlap-loss", "kernel-time-regression", "none");
      p.notes() = "RCCL no longer overlaps compute: it runs after the main stream's kernels.";
    } else if (family == "perf-slow-gpu") {
      pr.slow_host = s.hosts[static_cast<size_t>(p.Int(0, static_cast<int>(s.hosts.size()) - 1))];
      pr.slow_gpu = p.Int(0, 7);
      pr.slow_factor = std::round(p.U(1.2, 1.4) * 100) / 100;
      // Every collective waits for the slow GPU: the step grows by its extra main-stream time.
      slowdown = 1 + 0.96 * (pr.slow_factor - 1);
      Verdict(p, "perf-slow-gpu", "kernel-time-regression", "none");
      p.notes() = "GPU " + std::to_string(pr.slow_gpu) + " of " + pr.slow_host + " runs its kernels " +
                  Num(pr.slow_factor) + "x slower; the others wait for it.";
    } else {
      slowdown = p.U(1.0, 1.015);
      Verdict(p, "perf-noise", "none", "none");
      p.notes() = "The same kernels; TGS within noise of the baseline.";
    }
    pr.step_seconds = step * slowdown;
    s.phases = {{s.first_step, s.last_step, std::round(b.phases.front().tgs / slowdown), 0}};
    p.truth().baseline = b.id;
    p.notes() += " Baseline " + b.id + ".";
    return Finish(p, out);
  }

  Status Job(int index, std::vector<PlannedJob>* out) {
    // Shuffled round-robin over the families: every block of twelve jobs holds each family once,
    // so even a 40-job CI campaign covers them all (uniform, in a seeded order).
    static const std::vector<std::string> kFamilies = {"rdma",    "rdma-burst", "rccl",     "heartbeat",
                                                       "oom",     "thermal",    "gpu",      "restore",
                                                       "moe",     "moe-rdma",   "healthy",  "skew"};
    static const std::vector<std::string> kWideFamilies = {"rdma-overlap", "dip-span", "dip-checkpoint", "thermal-modest",
                                                           "node-death"};
    // Issue 35's second widening: shapes the families above never draw. Twice in every block, so a
    // 24-job campaign holds about ten of them.
    static const std::vector<std::string> kWiderFamilies = {"mixed-overlap", "from-first-step", "many-hosts",
                                                            "dip-extreme",   "death-throttle",  "fatal-after-slowdown"};
    // The third widening (`--widest`): a fault before the first step, a fatal fault on the slow host
    // itself, addresses only the log names, two episodes on one host, throttling on every host of the
    // job (one node, or a whole room, or one node hot from its first step; three times each), a
    // fabric episode on most hosts of a job at once, a Kubernetes or run_local.sh job, a job still
    // running, a link retransmitting without timeouts, host contention or a dense model's
    // unexplained drop, a job on 2-3 nodes, a fabric-wide shape (retransmits without timeouts, a
    // standout in a bare majority, a far dead port, a CNP storm) (three times each), and many faulty hosts among more than 429 nodes (once: those
    // jobs are the costliest to generate). The wider families come once, so a 24-job campaign holds
    // about nine of these. Every `--widest` job also draws its nodes' hardware (DrawHardware).
    static const std::vector<std::string> kWidestFamilies = {"init-fault", "fatal-on-slow-host", "addresses-in-log",
                                                             "two-episodes", "peerless-thermal", "fleet-rdma",
                                                             "other-launcher", "still-running", "unusual-evidence",
                                                             "few-nodes", "fabric-rdma"};
    static const std::vector<std::string> kPerfFamilies = {"perf-blocker", "perf-overlap-loss", "perf-slow-gpu",
                                                           "perf-noise"};
    std::vector<std::string> families = kFamilies;
    if (wide_) families.insert(families.end(), kWideFamilies.begin(), kWideFamilies.end());
    for (int copy = 0; wider_ && copy < (widest_ ? 1 : 2); ++copy)
      families.insert(families.end(), kWiderFamilies.begin(), kWiderFamilies.end());
    for (int copy = 0; widest_ && copy < 3; ++copy)
      families.insert(families.end(), kWidestFamilies.begin(), kWidestFamilies.end());
    if (widest_) families.push_back("huge-many-hosts");
    // Small mid-job dips against the job's own jitter (SmallMidJobDip), twice a block.
    if (widest_) families.insert(families.end(), 2, "small-dip");
    // Judgements that need a GPU model's rated levels, evidence behind missed scrapes, and shapes real
    // clusters produce that the families above never drew: once per block each.
    static const std::vector<std::string> kOncePerBlockFamilies = {"gpu-model-levels", "coverage-gaps", "late-fault",
                                                                   "blind-host", "truncated-tsdb"};
    if (widest_) families.insert(families.end(), kOncePerBlockFamilies.begin(), kOncePerBlockFamilies.end());
    // Shapes the sixteenth session's probes drew (one GPU, two kinds at once, a death at a
    // checkpoint, a counter reset inside a fault, noisy steps, an early transient, half the hosts,
    // 1-2 s steps, a late exporter, a log that lost a stretch of steps), and the seventeenth's (a
    // slowdown that comes and goes, a fault on or beside the host that runs warmest anyway): once
    // per block each.
    static const std::vector<std::string> kProbedShapeFamilies = {
        "one-gpu-throttle", "simultaneous-kinds", "death-at-checkpoint", "reset-mid-fault",  "noisy-dip",
        "transient-early",  "half-the-hosts",     "fast-steps",          "late-exporter", "log-gap",
        "comes-and-goes",   "warmest-host"};
    if (widest_) families.insert(families.end(), kProbedShapeFamilies.begin(), kProbedShapeFamilies.end());
    if (perf_) families.insert(families.end(), kPerfFamilies.begin(), kPerfFamilies.end());
    const int block = index / static_cast<int>(families.size());
    std::vector<std::string> order = families;
    Rng shuffle(seed_, "campaign/kinds/" + std::to_string(block));
    for (size_t i = order.size(); i > 1; --i)
      std::swap(order[i - 1], order[static_cast<size_t>(shuffle.Uniform() * static_cast<double>(i))]);
    const std::string family = order[static_cast<size_t>(index) % order.size()];
    Rng pick(seed_, "campaign/kind/" + std::to_string(index));
    const uint64_t job_seed = seed_;
    if (family == "restore") return Restore(job_seed, index, out);
    if (family.rfind("perf-", 0) == 0) return PerfRegression(job_seed, index, family, out);
    JobPlanner p(job_seed, "campaign/job/" + std::to_string(index), NextId());
    p.set_wide(wide_);
    p.set_hardware(widest_);
    if (family == "rdma") RdmaDegradation(p, false);
    else if (family == "rdma-overlap") RdmaOverlap(p);
    else if (family == "dip-span") RdmaDipSpan(p);
    else if (family == "small-dip") SmallMidJobDip(p);
    else if (family == "dip-checkpoint") RdmaDipUnderCheckpoints(p);
    else if (family == "thermal-modest") ThermalModest(p);
    else if (family == "node-death") NodeDeath(p);
    else if (family == "death-throttle") NodeDeath(p, /*during_throttle=*/true);
    else if (family == "mixed-overlap") MixedOverlap(p);
    else if (family == "from-first-step") FaultFromFirstStep(p);
    else if (family == "many-hosts") ManyFaultyHosts(p);
    else if (family == "dip-extreme") DipExtreme(p);
    else if (family == "fatal-after-slowdown") FatalAfterSlowdown(p);
    else if (family == "init-fault") RETURN_IF_ERROR(InitPhaseFault(p));
    else if (family == "fatal-on-slow-host") FatalOnSlowHost(p);
    else if (family == "addresses-in-log") AddressesOnlyInLog(p);
    else if (family == "two-episodes") TwoEpisodesOneHost(p);
    else if (family == "peerless-thermal") PeerlessThermal(p);
    else if (family == "fleet-rdma") FleetWideRdma(p);
    else if (family == "fabric-rdma") FabricRdma(p);
    else if (family == "other-launcher") OtherLauncher(p);
    else if (family == "still-running") StillRunning(p);
    else if (family == "unusual-evidence") UnusualEvidence(p);
    else if (family == "few-nodes") FewNodes(p);
    else if (family == "late-fault") LateFault(p);
    else if (family == "blind-host") BlindHost(p);
    else if (family == "truncated-tsdb") TruncatedTsdb(p);
    else if (family == "huge-many-hosts") ManyFaultyHosts(p, {430, 512, 7, 12, "huge-hosts"});
    else if (family == "gpu-model-levels") GpuModelLevels(p);
    else if (family == "coverage-gaps") CoverageGaps(p);
    else if (family == "one-gpu-throttle") OneGpuThrottle(p);
    else if (family == "simultaneous-kinds") SimultaneousKinds(p);
    else if (family == "death-at-checkpoint") DeathAtCheckpoint(p);
    else if (family == "reset-mid-fault") ResetMidFault(p);
    else if (family == "noisy-dip") NoisyDip(p);
    else if (family == "transient-early") TransientEarly(p);
    else if (family == "half-the-hosts") HalfTheHosts(p);
    else if (family == "fast-steps") FastSteps(p);
    else if (family == "late-exporter") LateExporter(p);
    else if (family == "log-gap") LogGap(p);
    else if (family == "comes-and-goes") ComesAndGoes(p);
    else if (family == "warmest-host") WarmestHost(p);
    else if (family == "rdma-burst") RdmaBurst(p);
    else if (family == "rccl") RcclHang(p);
    else if (family == "heartbeat") HeartbeatFalsePositive(p);
    else if (family == "oom") HostOom(p);
    else if (family == "thermal") Thermal(p);
    else if (family == "gpu") GpuHardware(p);
    else if (family == "moe") MoeRoutingShift(p);
    else if (family == "moe-rdma") RdmaDegradation(p, true);
    else if (family == "healthy") Healthy(p);
    else {
      // A finished job whose files carry mtimes hours in the future of the `now` it is judged at
      // (a node with a skewed clock wrote them). The truth is the job's own.
      bool rdma = pick.Uniform() < 0.4;
      if (rdma) RdmaDegradation(p, false);
      else Healthy(p);
      p.spec().mtime_skew_seconds = std::round(p.U(3, 8)) * 3600;
      p.truth().kind = "clock-skew";
      p.notes() += " File mtimes +" + std::to_string(static_cast<int>(p.spec().mtime_skew_seconds / 3600)) + " h.";
      return FinishJudgedAt(p, std::round(p.U(300, 3600)), out);
    }
    // Judged 30 s after the log's last line (its mtime, the timeline's end): running, not hanging.
    if (family == "still-running") return FinishJudgedAt(p, 30, out);
    return Finish(p, out);
  }

 private:
  uint64_t seed_;
  bool wide_ = false;
  bool perf_ = false;
  bool wider_ = false;
  bool widest_ = false;
  int next_index_ = 0;
  double job_end_ = 0;
};

}  // namespace

StatusOr<std::vector<PlannedJob>> PlanCampaign(uint64_t seed, int jobs, bool wide, bool perf, bool wider, bool widest) {
  if (jobs < 1 || jobs > 900) return InvalidArgumentError("--jobs must be between 1 and 900");
  CampaignPlanner planner(seed, wide, perf, wider, widest);
  std::vector<PlannedJob> out;
  for (int i = 0; i < jobs; ++i) RETURN_IF_ERROR(planner.Job(i, &out));
  return out;
}

}  // namespace diagnose::campaign
