#include "tools/fixturegen/metric_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tools/fixturegen/log_writer.h"
#include "tools/fixturegen/random.h"

namespace diagnose::fixturegen {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The levels GpuPower and the clock model were written for (an MI355X in training).
constexpr double kMi355xPowerW = 914;
constexpr double kMi355xSclkMhz = 2400;

struct FaultWindow {
  const Fault* fault;
  double begin, end;
};

// What a host is doing at one instant, after faults are applied.
struct HostState {
  Activity activity = Activity::kGone;
  bool dead = false;           // node death: targets down
  bool missed = false;         // this scrape failed
  bool ghost = false;          // exporter replays stale values
  bool counters_reset = false; // the host's driver was reloaded: its counters restarted from zero
  double power_scale = 1.0;    // job-wide slowdown lowers power a little
  bool writer = false;         // checkpoint writer (DP replica 0)
  std::map<std::string, double> fault;   // kind -> magnitude active now
  std::map<std::string, std::vector<int>> fault_devices;
  std::map<std::string, double> fault_progress;   // kind -> 0..1 through its window (ramps)
};

class SeriesSet {
 public:
  // Adds a series; returns its index. `counter_start` < 0 marks a gauge.
  size_t Add(Labels labels, double counter_start = -1) {
    Series s;
    s.labels = std::move(labels);
    series_.push_back(std::move(s));
    value_.push_back(counter_start < 0 ? 0 : counter_start);
    counter_.push_back(counter_start >= 0);
    return series_.size() - 1;
  }
  void Gauge(size_t i, double t, double v) { series_[i].samples.push_back({t, v}); }
  // Counters: add a non-negative increment, then sample the cumulative value.
  void Counter(size_t i, double t, double increment) {
    value_[i] += std::max(0.0, increment);
    series_[i].samples.push_back({t, std::floor(value_[i])});
  }
  double Value(size_t i) const { return value_[i]; }
  // A driver reload or reboot: every counter restarts from zero; gauges are untouched.
  void ResetCounters() {
    for (size_t i = 0; i < value_.size(); ++i)
      if (counter_[i]) value_[i] = 0;
  }
  void Repeat(size_t i, double t) {
    if (!series_[i].samples.empty()) series_[i].samples.push_back({t, series_[i].samples.back().v});
  }
  size_t size() const { return series_.size(); }
  Status Flush(const SeriesSink& sink, MetricStats* stats) {
    for (auto& s : series_) {
      if (s.samples.empty()) continue;
      stats->series++;
      stats->samples += static_cast<int64_t>(s.samples.size());
      RETURN_IF_ERROR(sink(std::move(s)));
    }
    series_.clear();
    value_.clear();
    counter_.clear();
    return Status::Ok();
  }

 private:
  std::vector<Series> series_;
  std::vector<double> value_;
  std::vector<bool> counter_;
};

std::string RdmaDeviceName(const std::string& vendor, int device) {
  if (vendor == "bnxt_re") return "bnxt_re" + std::to_string(device);
  if (vendor == "mlx5") return "mlx5_" + std::to_string(device);
  return "ionic_" + std::to_string(device);
}

// An empty value is no label (Prometheus does not store empty labels): that is how a series
// without a host label is written.
Labels With(Labels base, std::initializer_list<std::pair<const std::string, std::string>> extra) {
  for (const auto& kv : extra) {
    if (kv.second.empty()) base.erase(kv.first);
    else base[kv.first] = kv.second;
  }
  return base;
}

class MetricModel {
 public:
  MetricModel(const Scenario& s, const Timeline& t) : s_(s), t_(t), ids_(Identities(s)) {
    for (const Fault& f : s.faults) {
      FaultWindow w{&f, t.prometheus_start, t.job_end + 1};
      if (f.window.steps) {
        double b = 0, e = 0;
        if (t.StepWindow(*f.window.steps, &b, &e)) w.begin = b, w.end = e;
        else continue;
      }
      if (f.window.after_step) {
        const StepRecord* r = t.FindStep(*f.window.after_step);
        if (!r) continue;
        w.begin = r->end + 5;
      }
      if (f.window.from_time) w.begin = *f.window.from_time;
      if (f.window.to_time) w.end = *f.window.to_time;
      windows_.push_back(w);
    }
    double steady = 0;
    int n = 0;
    for (const auto& r : t.steps) {
      if (r.step >= t.steps.front().step + 5 && r.step < t.steps.front().step + 15) steady += r.tgs, ++n;
    }
    baseline_tgs_ = n ? steady / n : 0;
    metrics_end_ = t.job_end;
    if (s.tsdb_end_step) {
      if (const StepRecord* r = t.FindStep(*s.tsdb_end_step)) metrics_end_ = std::min(t.job_end, r->end + 10);
    }
  }

  StatusOr<MetricStats> Run(const SeriesSink& sink) {
    MetricStats stats;
    for (size_t i = 0; i < s_.hosts.size(); ++i) {
      RETURN_IF_ERROR(NodeHw(static_cast<int>(i), sink, &stats));
      if (s_.ray_metrics) RETURN_IF_ERROR(Ray(static_cast<int>(i), sink, &stats));
    }
    RETURN_IF_ERROR(Tensorboard(sink, &stats));
    return stats;
  }

 private:
  HostState StateAt(int task, double time, const std::string& target, int64_t scrape_index) const {
    HostState st;
    const std::string& host = s_.hosts[task];
    st.activity = t_.ActivityAt(time);
    if (st.activity == Activity::kHang && !t_.steps.empty() && time > t_.steps.back().end) {
      // After the last step: a job-wide hang, a crash in progress (still training), or teardown.
      const bool trains_on = s_.silence_activity.empty() ? s_.heartbeat.has_value() : s_.silence_activity == "train";
      if (trains_on) st.activity = Activity::kTrain;
      else if (s_.silence_activity.empty() && s_.hang_seconds <= 0) st.activity = Activity::kIdle;
    }
    st.writer = task < std::min<int>(s_.checkpoint_writers, static_cast<int>(s_.hosts.size()));
    if (st.activity == Activity::kTrain && baseline_tgs_ > 0) {
      auto it = std::upper_bound(t_.steps.begin(), t_.steps.end(), time,
                                 [](double v, const StepRecord& r) { return v < r.end; });
      if (it != t_.steps.end()) st.power_scale = 0.8 + 0.2 * std::min(1.0, it->tgs / baseline_tgs_);
    }
    for (const FaultWindow& w : windows_) {
      if (std::find(w.fault->hosts.begin(), w.fault->hosts.end(), host) == w.fault->hosts.end()) continue;
      const std::string& kind = w.fault->kind;
      if (kind == "node_death" && time >= w.begin) st.dead = true;
      if (kind == "ghost_exporter" && time >= w.begin && target == "node_hw") st.ghost = true;
      if (kind == "counter_reset" && time >= w.begin && target == "node_hw") st.counters_reset = true;
      if (time < w.begin || time > w.end) continue;
      if (kind == "missed_scrapes" || (kind == "exporter_down" && target == "node_hw")) st.missed = true;
      st.fault[kind] = w.fault->rate;
      st.fault_devices[kind] = w.fault->devices;
      if (w.end > w.begin) st.fault_progress[kind] = std::clamp((time - w.begin) / (w.end - w.begin), 0.0, 1.0);
    }
    Rng miss(s_.seed, target + "/miss/" + host + "/" + std::to_string(scrape_index));
    if (miss.Uniform() < s_.missed_scrape_fraction) st.missed = true;
    return st;
  }

  bool Active(const HostState& st) const {
    return st.activity == Activity::kTrain || st.activity == Activity::kCheckpoint;
  }

  // Active in this window and aimed at this device (or at all devices). Alone, it serves state faults
  // (no magnitude).
  bool DeviceFaulted(const HostState& st, const std::string& kind, int device) const {
    auto it = st.fault_devices.find(kind);
    if (it == st.fault_devices.end()) return false;
    return it->second.empty() || std::find(it->second.begin(), it->second.end(), device) != it->second.end();
  }

  // The fault's magnitude on this host (and device, when given), 0 when it is not on.
  double FaultOn(const HostState& st, const std::string& kind, int device = -1) const {
    auto it = st.fault.find(kind);
    if (it == st.fault.end()) return 0;
    if (device >= 0 && !DeviceFaulted(st, kind, device)) return 0;
    return it->second;
  }

  // The VRAM fraction a vram_pressure fault pins on a busy GPU, 0 when none applies.
  double VramPressure(const HostState& st, Activity gpu_activity, int gpu) const {
    if (gpu_activity == Activity::kIdle || gpu_activity == Activity::kInit) return 0;
    return FaultOn(st, "vram_pressure", gpu);
  }

  // A per-GPU fault overrides the host's activity for that GPU only.
  Activity GpuActivity(const HostState& st, int gpu) const {
    if (DeviceFaulted(st, "gpu_idle", gpu)) return Activity::kIdle;
    if (DeviceFaulted(st, "gpu_hang", gpu)) return Activity::kHang;
    return st.activity;
  }

  // The names the exporters report: the target (instance) and node_hw's host label.
  std::string TargetName(const std::string& host) const {
    return s_.instance_domain.empty() ? host : host + "." + s_.instance_domain;
  }
  std::string HostLabel(const std::string& host) const {
    if (s_.node_hw_names != "host") return "";
    return s_.host_label_fqdn ? TargetName(host) : host;
  }

  // An address as a target names it: an IPv6 address in brackets, so its colons do not read as the
  // port's.
  static std::string Bracketed(const std::string& ip) {
    return ip.find(':') == std::string::npos ? ip : "[" + ip + "]";
  }

  Labels Base(int task, const std::string& job, int port) const {
    const bool by_address = job == "node_hw" && s_.node_hw_names == "ip";
    return {{"job", job},
            {"instance",
             (by_address ? Bracketed(ids_[task].ip) : TargetName(s_.hosts[task])) + ":" + std::to_string(port)}};
  }

  std::vector<double> ScrapeTimes(int task, const std::string& target, double interval) const {
    Rng r(s_.seed, target + "/offset/" + s_.hosts[task]);
    double offset = std::round(r.Uniform(0, interval) * 1000.0) / 1000.0;
    // A node_hw interval that changes mid-job takes effect at the first scrape after that step.
    double change_at = metrics_end_ + 1, changed = interval;
    if (target == "node_hw" && s_.node_hw_interval_from) {
      if (const StepRecord* step = t_.FindStep(s_.node_hw_interval_from->first)) change_at = step->end;
      changed = s_.node_hw_interval_from->second;
    }
    std::vector<double> times;
    for (double time = t_.prometheus_start + offset; time <= metrics_end_;
         time += time >= change_at ? changed : interval)
      times.push_back(std::round(time * 1000.0) / 1000.0);
    return times;
  }

  struct HostSpread {
    double power_w = 0, temperature_c = 0, clock_mhz = 0;
  };
  // Drawn from their own stream, and only when asked for, so scenarios without spreads keep every
  // other value they had.
  HostSpread Spread(const std::string& host) const {
    HostSpread spread;
    if (s_.power_spread_w <= 0 && s_.temperature_spread_c <= 0 && s_.clock_spread_mhz <= 0) return spread;
    Rng r(s_.seed, "node_hw/spread/" + host);
    spread.power_w = s_.power_spread_w * r.Uniform(-1, 1);
    spread.temperature_c = s_.temperature_spread_c * r.Uniform(-1, 1);
    spread.clock_mhz = s_.clock_spread_mhz * r.Uniform(-1, 1);
    return spread;
  }

  // A retry-exhaustion total left by an earlier job on this device: large, and flat in this one.
  double StaleRetryExceeded(const std::string& host, int device) const {
    double total = 0;
    for (const Fault& f : s_.faults) {
      if (f.kind != "rdma_stale_retry_exceeded") continue;
      if (std::find(f.hosts.begin(), f.hosts.end(), host) == f.hosts.end()) continue;
      if (!f.devices.empty() && std::find(f.devices.begin(), f.devices.end(), device) == f.devices.end()) continue;
      total += std::floor(f.rate);
    }
    return total;
  }

  Status NodeHw(int task, const SeriesSink& sink, MetricStats* stats);
  Status Ray(int task, const SeriesSink& sink, MetricStats* stats);
  Status Tensorboard(const SeriesSink& sink, MetricStats* stats);

  const Scenario& s_;
  const Timeline& t_;
  std::vector<HostIdentity> ids_;
  double metrics_end_ = 0;   // the snapshot's last moment: the job's end, or earlier (tsdb_end_step)
  std::vector<FaultWindow> windows_;
  double baseline_tgs_ = 0;
};

double GpuPower(const HostState& st, Rng& r) {
  switch (st.activity) {
    case Activity::kIdle: return r.Normal(258, 2.5);
    case Activity::kInit: return r.Normal(332, 12);
    case Activity::kCompile: return r.Normal(415, 25);
    case Activity::kTrain: return r.Normal(914 * st.power_scale, 14);
    case Activity::kCheckpoint: return r.Normal(505, 30);
    case Activity::kHang: return r.Normal(298, 5);
    case Activity::kGone: return 0;
  }
  return 0;
}

double GpuUtil(const HostState& st, Rng& r) {
  switch (st.activity) {
    case Activity::kIdle: return 0;
    case Activity::kInit: return std::round(r.Uniform(5, 25));
    case Activity::kCompile: return std::round(r.Uniform(30, 70));
    case Activity::kTrain: return r.Uniform() < 0.9 ? 100 : 99;
    case Activity::kCheckpoint: return std::round(r.Uniform(20, 45));
    case Activity::kHang: return 100;
    case Activity::kGone: return 0;
  }
  return 0;
}

namespace {

// A counter's mean rate over a scrape interval `dt` that held missed scrapes: `unscraped` counted
// in them, `rate` for the `since` seconds after the last of them. A rate that held through the hole
// is kept as it was (no rounding of a constant through the division), so only a rate that changed
// inside a hole reads differently.
double MeanRateAcross(double rate, double since, double unscraped, double dt) {
  const double mean = (rate * since + unscraped) / dt;
  return std::abs(mean - rate) <= 1e-9 * std::max(1.0, rate) ? rate : mean;
}

}  // namespace

Status MetricModel::NodeHw(int task, const SeriesSink& sink, MetricStats* stats) {
  const std::string& host = s_.hosts[task];
  Labels base = Base(task, "node_hw", 9400);
  Rng init(s_.seed, "node_hw/init/" + host);
  SeriesSet set;
  auto lifetime = [&](double scale) { return std::floor(init.Uniform(0.2, 1.0) * scale); };

  struct Gpu { size_t temp, power, sclk, mclk, vram_used, vram_total, pcie_cor, pcie_nonfatal, pcie_fatal; std::vector<size_t> ras; };
  std::vector<Gpu> gpus;
  static const char* kRasBlocks[] = {"umc", "xgmi", "gfx", "mmhub", "sdma"};
  for (int g = 0; g < s_.gpus_per_node; ++g) {
    Labels gl = With(base, {{"gpu", std::to_string(g)}, {"host", HostLabel(host)}});
    Gpu gpu;
    gpu.temp = set.Add(With(gl, {{"__name__", "hw_gpu_temperature_celsius"}}));
    gpu.power = set.Add(With(gl, {{"__name__", "hw_gpu_power_watts"}}));
    gpu.sclk = set.Add(With(gl, {{"__name__", "hw_gpu_clock_mhz"}, {"type", "sclk"}}));
    gpu.mclk = set.Add(With(gl, {{"__name__", "hw_gpu_clock_mhz"}, {"type", "mclk"}}));
    gpu.vram_used = set.Add(With(gl, {{"__name__", "hw_gpu_vram_used_bytes"}}));
    gpu.vram_total = set.Add(With(gl, {{"__name__", "hw_gpu_vram_total_bytes"}}));
    for (const char* block : kRasBlocks) {
      for (const char* kind : {"ue", "ce"}) {
        double start = std::string(kind) == "ce" && init.Uniform() < 0.15 ? std::floor(init.Uniform(1, 40)) : 0;
        gpu.ras.push_back(set.Add(
            With(gl, {{"__name__", std::string("hw_gpu_ras_") + block + "_" + kind + "_total"}}), start));
      }
    }
    gpu.pcie_cor = set.Add(With(gl, {{"__name__", "hw_gpu_pcie_correctable_total"}}), std::floor(init.Uniform(0, 12)));
    gpu.pcie_nonfatal = set.Add(With(gl, {{"__name__", "hw_gpu_pcie_nonfatal_total"}}), 0);
    gpu.pcie_fatal = set.Add(With(gl, {{"__name__", "hw_gpu_pcie_fatal_total"}}), 0);
    gpus.push_back(gpu);
  }

  struct Net { size_t rx_b, tx_b, rx_e, tx_e, rx_d, tx_d; };
  std::vector<Net> nets;
  for (const auto& dev : s_.net_devices) {
    Labels nl = With(base, {{"device", dev}, {"host", HostLabel(host)}});
    Net n;
    n.rx_b = set.Add(With(nl, {{"__name__", "hw_net_rx_bytes_total"}}), lifetime(4e14));
    n.tx_b = set.Add(With(nl, {{"__name__", "hw_net_tx_bytes_total"}}), lifetime(4e14));
    n.rx_e = set.Add(With(nl, {{"__name__", "hw_net_rx_errors_total"}}), 0);
    n.tx_e = set.Add(With(nl, {{"__name__", "hw_net_tx_errors_total"}}), 0);
    n.rx_d = set.Add(With(nl, {{"__name__", "hw_net_rx_drop_total"}}), lifetime(2e4));
    n.tx_d = set.Add(With(nl, {{"__name__", "hw_net_tx_drop_total"}}), 0);
    nets.push_back(n);
  }

  struct Rdma {
    size_t rx_b, tx_b, rx_p, tx_p, retx_b, retx_p, ack_to, ecn, rx_cnp, tx_cnp, cqe, retry_excd, ccl_retx_p, ccl_retx_b,
        ccl_ack_to, ccl_tx_p, ccl_rx_p, ccl_tx_b, ccl_rx_b, dup_resp, dup_req, state;
  };
  std::vector<Rdma> rdmas;
  const bool ionic = s_.nic_vendor == "ionic";
  for (int d = 0; d < s_.rdma_devices; ++d) {
    Labels rl = With(base, {{"device", RdmaDeviceName(s_.nic_vendor, d)}, {"port", "1"}, {"host", HostLabel(host)}});
    auto add = [&](const char* name, double start) { return set.Add(With(rl, {{"__name__", name}}), start); };
    Rdma r;
    r.rx_b = add("hw_rdma_rx_bytes_total", lifetime(3e16));
    r.tx_b = add("hw_rdma_tx_bytes_total", lifetime(3e16));
    r.rx_p = add("hw_rdma_rx_pkts_total", lifetime(8e12));
    r.tx_p = add("hw_rdma_tx_pkts_total", lifetime(8e12));
    if (!ionic) {
      // standard InfiniBand counters only: no retransmit, ACK-timeout, CNP or CCL families
      r.state = add("hw_rdma_port_state", -1);
      rdmas.push_back(r);
      continue;
    }
    // lifetime retransmits from earlier jobs: non-zero on some hosts, so only rate() tells the truth
    double old_retx = init.Uniform() < 0.4 ? lifetime(5e6) : 0;
    r.retx_b = add("hw_rdma_tx_retx_bytes_total", old_retx * 4096);
    r.retx_p = add("hw_rdma_tx_retx_pkts_total", old_retx);
    r.ack_to = add("hw_rdma_tx_ack_timeout_total", old_retx > 0 ? std::floor(old_retx / 300) : 0);
    r.ecn = add("hw_rdma_rx_ecn_pkts_total", lifetime(4e7));
    r.rx_cnp = add("hw_rdma_rx_cnp_pkts_total", lifetime(2e7));
    r.tx_cnp = add("hw_rdma_tx_cnp_pkts_total", lifetime(2e7));
    r.cqe = add("hw_rdma_req_rx_cqe_err_total", 0);
    r.retry_excd = add("hw_rdma_req_tx_retry_excd_err_total", StaleRetryExceeded(host, d));
    r.ccl_retx_p = add("hw_rdma_ccl_tx_retx_pkts_total", old_retx * 0.8);
    r.ccl_retx_b = add("hw_rdma_ccl_tx_retx_bytes_total", old_retx * 0.8 * 4096);
    r.ccl_ack_to = add("hw_rdma_ccl_tx_ack_timeout_total", old_retx > 0 ? std::floor(old_retx / 400) : 0);
    r.ccl_tx_p = add("hw_rdma_ccl_tx_pkts_total", lifetime(6e12));
    r.ccl_rx_p = add("hw_rdma_ccl_rx_pkts_total", lifetime(6e12));
    r.ccl_tx_b = add("hw_rdma_ccl_tx_bytes_total", lifetime(2.4e16));
    r.ccl_rx_b = add("hw_rdma_ccl_rx_bytes_total", lifetime(2.4e16));
    r.dup_resp = add("hw_rdma_rx_dup_response_total", lifetime(1e4));
    r.dup_req = add("hw_rdma_rx_dup_request_total", lifetime(1e4));
    r.state = add("hw_rdma_port_state", -1);
    rdmas.push_back(r);
  }

  Labels hl = With(base, {{"host", HostLabel(host)}});
  auto host_series = [&](const char* name, double start = -1) { return set.Add(With(hl, {{"__name__", name}}), start); };
  size_t tcp_retx = host_series("hw_tcp_retransmits_total", lifetime(2e7));
  size_t listen_ovf = host_series("hw_tcp_listen_overflows_total", lifetime(300));
  size_t listen_drops = host_series("hw_tcp_listen_drops_total", lifetime(300));
  size_t estab_resets = host_series("hw_tcp_estab_resets_total", lifetime(5e5));
  size_t abort_timeout = host_series("hw_tcp_abort_on_timeout_total", lifetime(2e3));
  size_t procs_running = host_series("hw_procs_running");
  size_t procs_blocked = host_series("hw_procs_blocked");
  size_t ctxt = host_series("hw_context_switches_total", lifetime(5e12));
  size_t oom = host_series("hw_oom_kills_total", init.Uniform() < 0.2 ? 1 : 0);
  size_t dirty = host_series("hw_mem_dirty_bytes");
  size_t writeback = host_series("hw_mem_writeback_bytes");
  size_t io_some = host_series("hw_io_pressure_some_pct");
  size_t io_full = host_series("hw_io_pressure_full_pct");
  size_t io_some300 = host_series("hw_io_pressure_some_avg300_pct");
  size_t io_full300 = host_series("hw_io_pressure_full_avg300_pct");
  size_t io_full_us = host_series("hw_io_pressure_full_total_us", lifetime(4e11));
  size_t dmesg = host_series("hw_dmesg_gpu_errors_total", std::floor(init.Uniform(0, 3)));
  size_t gpu_procs = host_series("hw_gpu_user_processes");
  size_t scrape_dur = host_series("hw_scrape_duration_seconds");
  // Prometheus' own per-target series
  size_t up = set.Add(With(base, {{"__name__", "up"}}));
  size_t prom_dur = set.Add(With(base, {{"__name__", "scrape_duration_seconds"}}));
  size_t prom_samples = set.Add(With(base, {{"__name__", "scrape_samples_scraped"}}));
  const double exported = static_cast<double>(set.size() - 3);
  const size_t gpu_series = gpus.size() * (6 + gpus.front().ras.size() + 3);
  double d_state = 0;   // processes left in D state by killed plugin reads (~6 per hour)

  const HostSpread spread = Spread(host);
  // The MI355X's levels are the model's own; another GPU model's scale with its training power and
  // cool core clock (a throttled clock stays the same fraction of the cool one).
  const double power_scale = s_.gpu_power_w / kMi355xPowerW;
  const double training_scale = s_.training_power_w.value_or(s_.gpu_power_w) / kMi355xPowerW;
  const double clock_scale = s_.gpu_sclk_mhz / kMi355xSclkMhz;
  const double kelvin_per_watt = s_.gpu_temperature_c ? (*s_.gpu_temperature_c - 34) / s_.gpu_power_w : 0.056;
  Rng r(s_.seed, "node_hw/noise/" + host);
  double last_time = -1;
  double io_full300_state = 0, io_some300_state = 0;
  std::vector<double> times = ScrapeTimes(task, "node_hw", s_.node_hw_interval);
  // The NIC counts on while nobody scrapes: the RDMA errors of each missed scrape's interval, at the
  // rates its own moment had, are read by the next good scrape (a fault that began and ended inside a
  // hole still shows in the counters' growth across it).
  std::vector<double> unscraped_retx(static_cast<size_t>(s_.rdma_devices), 0), unscraped_ack(unscraped_retx);
  bool unscraped = false;
  double last_scrape = -1;   // the previous scrape, missed or not
  bool ghost_frozen = false;
  bool oom_killed = false;
  bool counters_were_reset = false;
  for (size_t k = 0; k < times.size(); ++k) {
    double time = times[k];
    HostState st = StateAt(task, time, "node_hw", static_cast<int64_t>(k));
    double dt = last_time < 0 ? s_.node_hw_interval : time - last_time;
    const double since_scrape = last_scrape < 0 ? s_.node_hw_interval : time - last_scrape;
    last_scrape = time;
    if (st.dead || st.missed) {
      set.Gauge(up, time, 0);
      set.Gauge(prom_dur, time, st.dead ? 8.0 : r.Uniform(8.0, 8.01));
      set.Gauge(prom_samples, time, 0);
      for (int d = 0; !st.dead && d < s_.rdma_devices; ++d) {
        unscraped_retx[static_cast<size_t>(d)] += FaultOn(st, "rdma_retx", d) * since_scrape;
        unscraped_ack[static_cast<size_t>(d)] += FaultOn(st, "rdma_ack_timeout", d) * since_scrape;
        unscraped = true;
      }
      continue;   // counters keep their value; the interval accrues into the next good scrape
    }
    if (st.counters_reset && !counters_were_reset) {
      set.ResetCounters();
      counters_were_reset = true;
    }
    // Driver fault: every other exporter cycle the GPU plugin hangs in sysfs until its 10 s kill, so
    // that cycle takes ~12 s and carries no GPU series; the other cycles are slow but complete.
    const double driver_fault = FaultOn(st, "driver_fault");
    // A killed cycle (driver fault) or a GPU plugin that exited 99 ("never run again") exports no GPU series.
    const bool plugin_killed = (driver_fault > 0 && k % 2 == 0) || st.fault.count("gpu_plugin_absent") > 0;
    set.Gauge(up, time, 1);
    set.Gauge(prom_dur, time, st.ghost ? 0.004 : r.Uniform(0.11, 0.19));
    set.Gauge(prom_samples, time, plugin_killed ? exported - static_cast<double>(gpu_series) : exported);
    if (st.ghost) {
      // the exporter serves its last file forever: identical values, constant cycle duration
      if (!ghost_frozen) ghost_frozen = true;
      for (size_t i = 0; i < set.size(); ++i) {
        if (i == up || i == prom_dur || i == prom_samples) continue;
        set.Repeat(i, time);
      }
      last_time = time;
      continue;
    }
    last_time = time;
    bool active = Active(st);
    bool ckpt = st.activity == Activity::kCheckpoint;
    for (int g = 0; g < s_.gpus_per_node && !plugin_killed; ++g) {
      Gpu& gpu = gpus[g];
      // A throttle with `devices` heats and slows only those GPUs (one bad heatsink), else all of them.
      const double throttle = FaultOn(st, "thermal_throttle", g);
      HostState gst = st;
      gst.activity = GpuActivity(st, g);
      double power = GpuPower(gst, r) * (gst.activity == Activity::kTrain ? training_scale : power_scale);
      if (spread.power_w != 0 && gst.activity != Activity::kGone) power = std::max(0.0, power + spread.power_w);
      double temp = 34 + power * kelvin_per_watt + r.Normal(0, 0.6) + (throttle > 0 ? throttle : 0) + FaultOn(st, "gpu_hot", g);
      if (spread.temperature_c != 0) temp += spread.temperature_c;
      set.Gauge(gpu.power, time, std::round(power * 10) / 10);
      set.Gauge(gpu.temp, time, std::round(temp * 10) / 10);
      double sclk = gst.activity == Activity::kIdle ? 132
                    : (throttle > 0 ? 1480 * clock_scale + r.Normal(0, 30) : s_.gpu_sclk_mhz - r.Uniform(0, 180) * clock_scale);
      if (spread.clock_mhz != 0 && gst.activity != Activity::kIdle && throttle <= 0) sclk = std::min(s_.gpu_sclk_mhz, sclk + spread.clock_mhz);
      set.Gauge(gpu.sclk, time, std::round(sclk));
      set.Gauge(gpu.mclk, time, gst.activity == Activity::kIdle ? 900 : 1900);
      double vram = gst.activity == Activity::kIdle ? 0.28 * kGiB : (gst.activity == Activity::kInit ? 40 * kGiB : 251.9 * kGiB + r.Normal(0, 0.05) * kGiB);
      if (double fraction = VramPressure(st, gst.activity, g); fraction > 0)
        vram = fraction * 309220868096.0 - std::abs(r.Normal(0, 0.05)) * kGiB;
      set.Gauge(gpu.vram_used, time, std::floor(vram));
      set.Gauge(gpu.vram_total, time, 309220868096.0);
      for (size_t i = 0; i < gpu.ras.size(); ++i) {
        double inc = 0;
        // correctable UMC errors only: a noisy-but-healthy DIMM, not an uncorrectable fault
        if (i == 1 && FaultOn(st, "ras_errors", g) > 0) inc = FaultOn(st, "ras_errors", g) * dt * r.Uniform(0, 2);
        // uncorrectable UMC errors (i == 0), with the correctable ones that come with failing HBM
        const double ue = FaultOn(st, "ras_uncorrectable", g);
        if (i == 0 && ue > 0) inc = ue * dt * r.Uniform(0, 2);
        if (i == 1 && ue > 0) inc += 4 * ue * dt * r.Uniform(0, 2);
        set.Counter(gpu.ras[i], time, inc);
      }
      const double pcie_cor = FaultOn(st, "pcie_correctable", g);
      set.Counter(gpu.pcie_cor, time, pcie_cor > 0 ? pcie_cor * dt * r.Uniform(0, 2) : (r.Uniform() < 0.002 ? 1 : 0));
      set.Counter(gpu.pcie_nonfatal, time, 0);
      set.Counter(gpu.pcie_fatal, time, 0);
    }
    for (size_t n = 0; n < nets.size(); ++n) {
      double rate = (n == 0 ? 2.2e7 : 4e6) * (active ? 1 : 0.1);
      if (ckpt && st.writer && n == 0) rate = 1.4e9;
      set.Counter(nets[n].rx_b, time, rate * dt * r.Uniform(0.8, 1.2));
      set.Counter(nets[n].tx_b, time, rate * dt * r.Uniform(0.8, 1.2));
      set.Counter(nets[n].rx_e, time, 0);
      set.Counter(nets[n].tx_e, time, 0);
      set.Counter(nets[n].rx_d, time, r.Uniform() < 0.05 ? 1 : 0);
      set.Counter(nets[n].tx_d, time, 0);
    }
    for (int d = 0; d < s_.rdma_devices; ++d) {
      Rdma& rd = rdmas[d];
      double bytes = active ? 8.6e9 * r.Uniform(0.9, 1.1) : (st.activity == Activity::kHang ? 2e3 : 1e5);
      if (st.activity == Activity::kCompile || st.activity == Activity::kInit) bytes = 2e8;
      const bool port_down = DeviceFaulted(st, "rdma_port_down", d);
      if (port_down) bytes = 0;
      set.Counter(rd.rx_b, time, bytes * dt);
      set.Counter(rd.tx_b, time, bytes * dt * r.Uniform(0.98, 1.02));
      set.Counter(rd.rx_p, time, bytes / 4096 * dt);
      set.Counter(rd.tx_p, time, bytes / 4096 * dt);
      if (!ionic) {
        set.Gauge(rd.state, time, port_down ? 0 : 1);
        continue;
      }
      double retx = FaultOn(st, "rdma_retx", d);
      double ack = FaultOn(st, "rdma_ack_timeout", d);
      if (unscraped) {   // the mean rate over the missed scrapes' intervals and this one
        retx = MeanRateAcross(retx, since_scrape, unscraped_retx[static_cast<size_t>(d)], dt);
        ack = MeanRateAcross(ack, since_scrape, unscraped_ack[static_cast<size_t>(d)], dt);
      }
      retx = retx > 0 ? retx * std::exp(r.Normal(0, 0.6)) : 0;   // bursty
      ack = ack > 0 ? ack * std::exp(r.Normal(0, 0.5)) : 0;
      set.Counter(rd.retx_p, time, retx * dt);
      set.Counter(rd.retx_b, time, retx * dt * 4120);
      set.Counter(rd.ack_to, time, ack * dt);
      set.Counter(rd.ccl_retx_p, time, retx * dt * 0.82);
      set.Counter(rd.ccl_retx_b, time, retx * dt * 0.82 * 4120);
      set.Counter(rd.ccl_ack_to, time, ack * dt * 0.9);
      double cnp = (active ? 1.5 : 0) + FaultOn(st, "rdma_cnp", d);
      set.Counter(rd.ecn, time, cnp * 1.3 * dt * r.Uniform(0.5, 1.5));
      set.Counter(rd.rx_cnp, time, cnp * dt * r.Uniform(0.5, 1.5));
      set.Counter(rd.tx_cnp, time, cnp * dt * r.Uniform(0.5, 1.5));
      set.Counter(rd.cqe, time, FaultOn(st, "rdma_cqe_error", d) * dt);
      set.Counter(rd.retry_excd, time, FaultOn(st, "rdma_retry_exceeded", d) * dt);
      set.Counter(rd.ccl_tx_p, time, bytes / 4096 * dt * 0.75);
      set.Counter(rd.ccl_rx_p, time, bytes / 4096 * dt * 0.75);
      set.Counter(rd.ccl_tx_b, time, bytes * dt * 0.75);
      set.Counter(rd.ccl_rx_b, time, bytes * dt * 0.75);
      set.Counter(rd.dup_resp, time, retx > 0 ? retx * 0.01 * dt : 0);
      set.Counter(rd.dup_req, time, retx > 0 ? retx * 0.01 * dt : 0);
      set.Gauge(rd.state, time, port_down ? 0 : 1);
    }
    if (unscraped) {
      std::fill(unscraped_retx.begin(), unscraped_retx.end(), 0.0);
      std::fill(unscraped_ack.begin(), unscraped_ack.end(), 0.0);
      unscraped = false;
    }
    double tcp = active ? 0.08 * r.Uniform(0, 2) : 0.02;
    if (ckpt && st.writer) tcp = r.Uniform(600, 2400);
    tcp += FaultOn(st, "tcp_retx") * std::exp(r.Normal(0, 0.3));
    set.Counter(tcp_retx, time, tcp * dt);
    set.Counter(listen_ovf, time, 0);
    set.Counter(listen_drops, time, 0);
    set.Counter(estab_resets, time, r.Uniform() < 0.1 ? 1 : 0);
    set.Counter(abort_timeout, time, 0);
    double running = st.activity == Activity::kIdle ? r.Uniform(1, 4)
                     : active || st.activity == Activity::kHang ? r.Normal(18, 1.4)
                                                                 : r.Normal(10, 2);
    running += FaultOn(st, "procs_running_offset");
    set.Gauge(procs_running, time, std::max(1.0, std::round(running)));
    if (driver_fault > 0) d_state += dt / 600;
    double blocked = ckpt && st.writer ? std::round(r.Uniform(10, 22)) : (r.Uniform() < 0.1 ? 1 : 0);
    blocked += std::floor(d_state);
    set.Gauge(procs_blocked, time, blocked);
    set.Counter(ctxt, time, (active ? 2.1e5 : 4e4) * dt * r.Uniform(0.9, 1.1));
    double oom_now = FaultOn(st, "host_oom");
    // the first scrape of an OOM window always sees the kill; later ones see further kills at random
    bool kill = oom_now > 0 && (!oom_killed || r.Uniform() < 0.5);
    if (oom_now > 0) oom_killed = true;
    set.Counter(oom, time, kill ? 1 : 0);
    set.Gauge(dirty, time, std::floor(ckpt && st.writer ? r.Uniform(6e9, 2.4e10) : r.Uniform(1e5, 4e7)));
    set.Gauge(writeback, time, std::floor(ckpt && st.writer ? r.Uniform(1e9, 6e9) : r.Uniform(0, 2e5)));
    double full = ckpt && st.writer ? r.Uniform(40, 80) : 0;
    full += FaultOn(st, "io_pressure");
    double some = full > 0 ? std::min(100.0, full * 1.15) : (r.Uniform() < 0.1 ? 0.01 * std::round(r.Uniform(1, 30)) : 0);
    io_full300_state += (full - io_full300_state) * std::min(1.0, dt / 300);
    io_some300_state += (some - io_some300_state) * std::min(1.0, dt / 300);
    set.Gauge(io_some, time, std::round(some * 100) / 100);
    set.Gauge(io_full, time, std::round(full * 100) / 100);
    set.Gauge(io_some300, time, std::round(io_some300_state * 100) / 100);
    set.Gauge(io_full300, time, std::round(io_full300_state * 100) / 100);
    set.Counter(io_full_us, time, full / 100 * dt * 1e6);
    set.Counter(dmesg, time, (FaultOn(st, "dmesg_errors") + driver_fault) * dt);
    set.Gauge(gpu_procs, time, st.activity == Activity::kIdle ? 0 : 1);
    double cycle = driver_fault <= 0 ? r.Uniform(0.08, 0.14) : (plugin_killed ? r.Uniform(12.0, 12.4) : r.Uniform(0.6, 2.8));
    set.Gauge(scrape_dur, time, std::round(cycle * 1000) / 1000);
  }
  return set.Flush(sink, stats);
}

Status MetricModel::Ray(int task, const SeriesSink& sink, MetricStats* stats) {
  const std::string& host = s_.hosts[task];
  Labels base = Base(task, "ray", 55080);
  std::string session = "session_" + FormatIso(t_.train_start + 20) + "_118204_1";
  std::replace(session.begin(), session.end(), 'T', '_');
  std::replace(session.begin(), session.end(), ':', '-');
  base["ip"] = ids_[task].ip;
  base["SessionName"] = session;
  base["IsHeadNode"] = task == 0 ? "true" : "false";
  base["Version"] = "2.49.2";
  SeriesSet set;
  std::vector<size_t> util, gram_used, gram_avail;
  for (int g = 0; g < s_.gpus_per_node; ++g) {
    Labels gl = With(base, {{"GpuIndex", std::to_string(g)}, {"GpuDeviceName", s_.gpu_name}});
    util.push_back(set.Add(With(gl, {{"__name__", "ray_node_gpus_utilization"}})));
    gram_used.push_back(set.Add(With(gl, {{"__name__", "ray_node_gram_used"}})));
    gram_avail.push_back(set.Add(With(gl, {{"__name__", "ray_node_gram_available"}})));
  }
  auto node = [&](const char* name) { return set.Add(With(base, {{"__name__", name}})); };
  size_t mem_used = node("ray_node_mem_used"), mem_total = node("ray_node_mem_total"),
         mem_avail = node("ray_node_mem_available"), cpu = node("ray_node_cpu_utilization"),
         cpu_count = node("ray_node_cpu_count"), disk_r = node("ray_node_disk_io_read"),
         disk_w = node("ray_node_disk_io_write");
  Labels pbase = Base(task, "ray", 55080);
  size_t up = set.Add(With(pbase, {{"__name__", "up"}}));
  size_t prom_dur = set.Add(With(pbase, {{"__name__", "scrape_duration_seconds"}}));
  Rng r(s_.seed, "ray/noise/" + host);
  Rng init(s_.seed, "ray/init/" + host);
  double disk_read = std::floor(init.Uniform(1e12, 9e12)), disk_write = std::floor(init.Uniform(1e12, 9e12));
  const double total = 3.02e12;
  double retained = 0;   // host memory kept after a checkpoint save (DP replica 0)
  std::vector<double> times = ScrapeTimes(task, "ray", s_.ray_interval);
  double last = -1;
  for (size_t k = 0; k < times.size(); ++k) {
    double time = times[k];
    // Ray's agent starts with the raylet; nothing before that
    HostState st = StateAt(task, time, "ray", static_cast<int64_t>(k));
    double dt = last < 0 ? s_.ray_interval : time - last;
    if (st.dead || st.missed) {
      set.Gauge(up, time, 0);
      set.Gauge(prom_dur, time, 5.0);
      continue;
    }
    last = time;
    set.Gauge(up, time, 1);
    set.Gauge(prom_dur, time, std::round(r.Uniform(0.02, 0.06) * 1000) / 1000);
    bool ckpt = st.activity == Activity::kCheckpoint;
    for (int g = 0; g < s_.gpus_per_node; ++g) {
      HostState gst = st;
      gst.activity = GpuActivity(st, g);
      set.Gauge(util[g], time, GpuUtil(gst, r));
      double used = gst.activity == Activity::kIdle ? 0.28 : (gst.activity == Activity::kInit ? 40 : 251.9);
      if (double fraction = VramPressure(st, gst.activity, g); fraction > 0) used = fraction * 288;
      set.Gauge(gram_used[g], time, std::floor(used * 1024) * 1024 * 1024);
      set.Gauge(gram_avail[g], time, std::floor((288 - used) * 1024) * 1024 * 1024);
    }
    if (ckpt && st.writer) retained = 1.17e12;
    double used = st.activity == Activity::kIdle ? 2.1e10 : 2.05e11 + r.Normal(0, 1.2e9);
    if (st.activity == Activity::kInit && s_.first_step > 0) used = 2.49e11;
    used += retained;
    if (double ramp = FaultOn(st, "host_mem_ramp"); ramp > 0) used += ramp * total * st.fault_progress["host_mem_ramp"];
    used = std::min(used, total * 0.995);
    if (FaultOn(st, "host_oom") > 0) used = total * r.Uniform(0.97, 0.995);
    set.Gauge(mem_used, time, std::floor(used));
    set.Gauge(mem_total, time, total);
    set.Gauge(mem_avail, time, std::floor(total - used - 4e10));
    double cpu_pct = Active(st) ? r.Uniform(24, 27) : (st.activity == Activity::kHang ? r.Uniform(12, 14) : r.Uniform(1, 4));
    set.Gauge(cpu, time, std::round(cpu_pct * 10) / 10);
    set.Gauge(cpu_count, time, 256);
    disk_read += (ckpt ? 2e8 : 2e6) * dt * r.Uniform(0.5, 1.5);
    disk_write += (ckpt && st.writer ? 1.3e9 : 4e6) * dt * r.Uniform(0.5, 1.5);
    set.Gauge(disk_r, time, std::floor(disk_read));
    set.Gauge(disk_w, time, std::floor(disk_write));
  }
  return set.Flush(sink, stats);
}

Status MetricModel::Tensorboard(const SeriesSink& sink, MetricStats* stats) {
  if (t_.steps.empty()) return Status::Ok();
  const std::string& host = s_.hosts[0];
  Labels base = Base(0, "node_hw", 9400);
  base = With(base, {{"host", HostLabel(host)}});
  SeriesSet set;
  std::vector<std::string> names = {"tb_step",
                                    "tb_learning_loss",
                                    "tb_learning_grad_norm",
                                    "tb_learning_raw_grad_norm",
                                    "tb_learning_param_norm",
                                    "tb_learning_current_learning_rate",
                                    "tb_learning_total_weights",
                                    "tb_perf_step_time_seconds",
                                    "tb_perf_per_device_tflops",
                                    "tb_perf_per_device_tflops_per_sec",
                                    "tb_perf_per_device_tokens",
                                    "tb_perf_per_device_tokens_per_sec",
                                    "tb_metrics_plugin_staleness_fill"};
  if (s_.moe) names.push_back("tb_learning_moe_lb_loss");
  std::map<std::string, size_t> idx;
  for (const auto& n : names) idx[n] = set.Add(With(base, {{"__name__", n}}));
  auto emit = [&](double ts, const StepRecord& r, double fill) {
    double ms = std::round(ts * 1000) / 1000;
    set.Gauge(idx["tb_step"], ms, static_cast<double>(r.step));
    set.Gauge(idx["tb_learning_loss"], ms, r.loss);
    set.Gauge(idx["tb_learning_grad_norm"], ms, r.grad_norm);
    set.Gauge(idx["tb_learning_raw_grad_norm"], ms, r.raw_grad_norm);
    set.Gauge(idx["tb_learning_param_norm"], ms, 2210.5 + r.step * 0.013);
    set.Gauge(idx["tb_learning_current_learning_rate"], ms, r.learning_rate);
    set.Gauge(idx["tb_learning_total_weights"], ms, static_cast<double>(r.total_weights));
    set.Gauge(idx["tb_perf_step_time_seconds"], ms, r.seconds);
    set.Gauge(idx["tb_perf_per_device_tflops"], ms, r.tflops * r.seconds);
    set.Gauge(idx["tb_perf_per_device_tflops_per_sec"], ms, r.tflops);
    set.Gauge(idx["tb_perf_per_device_tokens"], ms, t_.tokens_per_step);
    set.Gauge(idx["tb_perf_per_device_tokens_per_sec"], ms, r.tgs);
    set.Gauge(idx["tb_metrics_plugin_staleness_fill"], ms, fill);
    if (s_.moe) set.Gauge(idx["tb_learning_moe_lb_loss"], ms, r.lb_loss);
  };
  constexpr double kFillEvery = 150;
  // Only process 0 writes events; the first event appears after step 0.
  for (size_t i = 0; i < t_.steps.size(); ++i) {
    const StepRecord& r = t_.steps[i];
    if (r.end > metrics_end_) break;
    // a gap (plugin down, events file unreadable): neither real samples nor fills for these steps
    if (s_.tb_gap && s_.tb_gap->Contains(r.step)) continue;
    emit(r.end, r, 0);
    double next = i + 1 < t_.steps.size() ? t_.steps[i + 1].end : metrics_end_;
    // idle: the plugin re-emits the last step every 150 s with staleness_fill=1
    for (double fill = r.end + kFillEvery; fill < next && fill <= metrics_end_; fill += kFillEvery) emit(fill, r, 1);
  }
  return set.Flush(sink, stats);
}

}  // namespace

StatusOr<MetricStats> GenerateMetrics(const Scenario& scenario, const Timeline& timeline, const SeriesSink& sink) {
  MetricModel model(scenario, timeline);
  return model.Run(sink);
}

}  // namespace diagnose::fixturegen
