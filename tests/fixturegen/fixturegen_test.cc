// Unit tests of the fixture generator: scenario validation, the shared timeline, the
// metric model's realism invariants, and determinism. No promtool: metrics are checked in memory.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/playbook/metric_catalogue.h"
#include "tools/fixturegen/generate.h"
#include "tools/fixturegen/log_writer.h"
#include "tools/fixturegen/metric_model.h"
#include "tools/fixturegen/scenario.h"
#include "tools/fixturegen/timeline.h"
#include "tests/support/files.h"

namespace diagnose::fixturegen {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kMinimal = R"(
job:
  id: "123"
  model: llama2-70b
  ray: true
  start: 2026-03-01T10:00:00Z
  seed: 7
  hosts: "gpu[01-03]"
  passthrough: [steps=40, per_device_batch_size=4]
training:
  last_step: 39
  phases:
    - {steps: 0-19, tgs: 1340}
    - {steps: 20-39, tgs: 1000}
metrics: {tsdb: true, node_hw_interval: 10, ray_interval: 10, missed_scrapes: 0.02}
faults:
  - {kind: rdma_retx, hosts: [gpu02], steps: 20-39, rate: 500, devices: [1]}
expect: {status: completed}
)";

Scenario MustParse(const std::string& text) {
  auto s = ParseScenario(text, "test.yaml");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : Scenario{};
}

std::string ErrorOf(const std::string& text) {
  auto s = ParseScenario(text, "bad.yaml");
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : s.status().message();
}

// ---- scenario parsing

TEST(Scenario, ParsesMinimalAndDerivesFromPassthrough) {
  Scenario s = MustParse(kMinimal);
  EXPECT_EQ(s.job_name, "JAX-llama2-70b");
  EXPECT_EQ(s.total_steps, 40);
  EXPECT_DOUBLE_EQ(s.per_device_batch_size, 4);
  EXPECT_EQ(s.hosts.size(), 3u);
  EXPECT_EQ(JobDirName(s), "123-JAX-llama2-70b");
}

TEST(Scenario, EveryBrokenSectionIsReportedWithItsPosition) {
  // A fault on a host the job does not have, and a malformed node_exits entry (a yaml-cpp
  // conversion error, caught inside the reader): both reported, each at its own line.
  std::string text = kMinimal;
  text.replace(text.find("hosts: [gpu02]"), 14, "hosts: [gpu09]");
  text += "node_exits: {one: 1}\n";
  const std::string error = ErrorOf(text);
  EXPECT_THAT(error, HasSubstr("bad.yaml:17:"));
  EXPECT_THAT(error, HasSubstr("fault host 'gpu09' is not in job.hosts"));
  EXPECT_THAT(error, HasSubstr("bad.yaml:19:"));
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 1) << error;
}

TEST(Scenario, UnknownKeyNamesFileLineAndColumn) {
  std::string text = kMinimal;
  text.replace(text.find("  seed: 7"), 9, "  sede: 7");
  EXPECT_THAT(ErrorOf(text), HasSubstr("bad.yaml:7:3: unknown key 'sede' in job"));
}

TEST(Scenario, ErrorsAreSpecific) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string t = kMinimal;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  EXPECT_THAT(ErrorOf(with("2026-03-01T10:00:00Z", "yesterday")), HasSubstr("is not YYYY-MM-DDTHH:MM:SSZ"));
  EXPECT_THAT(ErrorOf(with("2026-03-01T10:00:00Z", "2026-03-01T10:00:00")), HasSubstr("must end with Z"));
  EXPECT_THAT(ErrorOf(with("kind: rdma_retx", "kind: cosmic_rays")), HasSubstr("unknown fault kind 'cosmic_rays'"));
  EXPECT_THAT(ErrorOf(with("hosts: [gpu02]", "hosts: [gpu09]")), HasSubstr("fault host 'gpu09' is not in job.hosts"));
  EXPECT_THAT(ErrorOf(with("{steps: 20-39, tgs: 1000}", "{steps: 21-39, tgs: 1000}")),
              HasSubstr("step 20 is in no phase"));
  EXPECT_THAT(ErrorOf(with("model: llama2-70b", "model: llama2-70b\n  launcher: slurmish")),
              HasSubstr("launcher must be slurm, k8s or local"));
  EXPECT_THAT(ErrorOf(with("expect: {status: completed}", "")), HasSubstr("needs an 'expect' block"));
  EXPECT_THAT(ErrorOf(with("ray: true", "ray: false")), HasSubstr("only for RAY=1"));
  EXPECT_THAT(ErrorOf(with("gpu[01-03]", "gpu[01-03],gpu02")), HasSubstr("duplicate host"));
  EXPECT_THAT(ErrorOf("job: [1, 2\n"), HasSubstr("bad.yaml:"));
  EXPECT_THAT(ErrorOf(with("gpu[01-03]", "gpu03,gpu01,gpu02")),
              HasSubstr("Slurm orders tasks by the sorted nodelist; list hosts as gpu01,gpu02,gpu03"));
}

TEST(Scenario, LabelWidthFollowsDigitsOfLastTask) {
  EXPECT_EQ(TaskLabelWidth(1), 1);
  EXPECT_EQ(TaskLabelWidth(10), 1);
  EXPECT_EQ(TaskLabelWidth(11), 2);
  EXPECT_EQ(TaskLabelWidth(100), 2);
  EXPECT_EQ(TaskLabelWidth(101), 3);
}

// ---- timeline

TEST(Timeline, StepsAreContiguousAndConsistentWithTgs) {
  Scenario s = MustParse(kMinimal);
  auto t = BuildTimeline(s);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->steps.size(), 40u);
  for (size_t i = 1; i < t->steps.size(); ++i) {
    const StepRecord& r = t->steps[i];
    EXPECT_DOUBLE_EQ(r.begin, t->steps[i - 1].end);
    EXPECT_NEAR(r.end - r.begin, r.seconds, 1e-6);  // epoch-scale doubles
    EXPECT_NEAR(r.tgs * r.seconds, t->tokens_per_step, 1e-6);
  }
  EXPECT_NEAR(t->steps[10].tgs, 1340, 15);
  EXPECT_NEAR(t->steps[30].tgs, 1000, 12);
  EXPECT_GT(t->job_end, t->steps.back().end);
}

TEST(Timeline, HeartbeatCrashLandsInsideTheStepAfterTheLastOne) {
  std::string text = kMinimal;
  text += "heartbeat: {time: 2026-03-01T12:00:00Z, accused: [1], own_death: [1]}\n";
  Scenario s = MustParse(text);
  auto t = BuildTimeline(s);
  ASSERT_TRUE(t.ok());
  double crash = s.heartbeat->time;
  EXPECT_GT(crash, t->steps.back().end);
  EXPECT_LT(crash, t->steps.back().end + t->steps.back().seconds);
}

TEST(StepLine, ExactUpstreamFormat) {
  StepRecord r;
  r.step = 71;
  r.seconds = 30.309;
  r.tflops = 207.973;
  r.mfu = 8.319;
  r.tgs = 3243.4;
  r.total_weights = 18874368;
  r.loss = 7.25;
  EXPECT_EQ(FormatStepLine(r),
            "completed step: 71, seconds: 30.309, TFLOP/s/device: 207.973, MFU: 8.32%, Tokens/s/device: 3243.400, "
            "total_weights: 18874368, loss: 7.250");
  EXPECT_EQ(FormatWall(3725), "1h 2m 5s");
  EXPECT_EQ(FormatWall(65), "1m 5s");
  EXPECT_EQ(FormatWall(9), "9s");
}

// ---- metric model

std::vector<Series> Metrics(const Scenario& s) {
  auto t = BuildTimeline(s);
  EXPECT_TRUE(t.ok());
  std::vector<Series> out;
  auto stats = GenerateMetrics(s, *t, [&](Series series) {
    out.push_back(std::move(series));
    return Status::Ok();
  });
  EXPECT_TRUE(stats.ok());
  return out;
}

TEST(Metrics, SeriesAreStrictlyIncreasingAndUniquelyLabelled) {
  auto series = Metrics(MustParse(kMinimal));
  ASSERT_FALSE(series.empty());
  std::set<Labels> seen;
  for (const Series& s : series) {
    EXPECT_TRUE(seen.insert(s.labels).second) << "duplicate series " << s.labels.at("__name__");
    for (size_t i = 1; i < s.samples.size(); ++i)
      ASSERT_GT(s.samples[i].t, s.samples[i - 1].t) << s.labels.at("__name__");
  }
}

TEST(Metrics, LabelShapesMatchTheExporters) {
  auto series = Metrics(MustParse(kMinimal));
  bool saw_ray_gpu = false, saw_hw = false, saw_tb = false;
  for (const Series& s : series) {
    const std::string& name = s.labels.at("__name__");
    ASSERT_TRUE(s.labels.count("job") && s.labels.count("instance")) << name;
    if (name.rfind("ray_", 0) == 0) {
      EXPECT_EQ(s.labels.count("host"), 0u) << name << " must identify the node by ip/instance only";
      EXPECT_EQ(s.labels.at("job"), "ray");
      EXPECT_THAT(s.labels.at("instance"), HasSubstr(":55080"));
      EXPECT_TRUE(s.labels.count("ip") && s.labels.count("SessionName") && s.labels.count("IsHeadNode"));
      if (name == "ray_node_gpus_utilization") {
        saw_ray_gpu = true;
        EXPECT_TRUE(s.labels.count("GpuIndex") && s.labels.count("GpuDeviceName"));
      }
    } else if (name.rfind("hw_", 0) == 0) {
      saw_hw = true;
      EXPECT_EQ(s.labels.at("job"), "node_hw");
      EXPECT_EQ(s.labels.at("instance"), s.labels.at("host") + ":9400");
    } else if (name.rfind("tb_", 0) == 0) {
      saw_tb = true;
      EXPECT_EQ(s.labels.at("host"), "gpu01") << "tb_* series exist only for the head host";
    }
  }
  EXPECT_TRUE(saw_ray_gpu && saw_hw && saw_tb);
}

// node_hw_names: instance drops node_hw's host label (the node named by its target, as Ray's series
// name theirs); ip also scrapes node_hw by address, and only Ray's series tie that address to a name.
TEST(Metrics, NodeHwNamedByInstanceOrAddressCarriesNoHostLabel) {
  for (const std::string names : {"instance", "ip"}) {
    SCOPED_TRACE(names);
    std::string text = kMinimal;
    const std::string metrics = "missed_scrapes: 0.02}";
    text.replace(text.find(metrics), metrics.size(), "missed_scrapes: 0.02, node_hw_names: " + names + "}");
    std::map<std::string, std::string> ray_ip_of_instance;
    std::set<std::string> hw_instances;
    for (const Series& s : Metrics(MustParse(text))) {
      const std::string& name = s.labels.at("__name__");
      if (s.labels.at("job") == "ray" && s.labels.count("ip"))
        ray_ip_of_instance[s.labels.at("instance")] = s.labels.at("ip");
      if (s.labels.at("job") != "node_hw") continue;
      EXPECT_EQ(s.labels.count("host"), 0u) << name;
      hw_instances.insert(s.labels.at("instance"));
    }
    std::set<std::string> want;
    for (const std::string host : {"gpu01", "gpu02", "gpu03"})
      want.insert((names == "ip" ? ray_ip_of_instance.at(host + ":55080") : host) + ":9400");
    EXPECT_EQ(hw_instances, want);
  }
  std::string bad = kMinimal;
  bad.replace(bad.find("missed_scrapes: 0.02}"), 21, "missed_scrapes: 0.02, node_hw_names: hostname}");
  EXPECT_THAT(ErrorOf(bad), HasSubstr("node_hw_names"));
}

// ray_metrics: false leaves Ray's series (and its target's up) out: with node_hw scraped by
// address, nothing in the TSDB names a node; the log's bind= lines still carry each task's address.
TEST(Metrics, WithoutRayMetricsNoSeriesNamesAnAddress) {
  std::string text = kMinimal;
  const std::string metrics = "missed_scrapes: 0.02}";
  text.replace(text.find(metrics), metrics.size(), "missed_scrapes: 0.02, node_hw_names: ip, ray_metrics: false}");
  std::set<std::string> hw_instances;
  int ray_series = 0;
  for (const Series& s : Metrics(MustParse(text))) {
    if (s.labels.count("job") && s.labels.at("job") == "ray") ++ray_series;
    if (s.labels.count("job") && s.labels.at("job") == "node_hw") hw_instances.insert(s.labels.at("instance"));
  }
  EXPECT_EQ(ray_series, 0);
  ASSERT_EQ(hw_instances.size(), 3u);
  for (const auto& instance : hw_instances) EXPECT_EQ(instance.rfind("10.", 0), 0u) << instance;
}

// tsdb_end_step: no series of any job holds a sample after that step's end (+10 s); before it the
// snapshot is what it would have been.
TEST(Metrics, TsdbEndStepCutsEverySeriesThere) {
  std::string text = kMinimal;
  const std::string metrics = "missed_scrapes: 0.02}";
  text.replace(text.find(metrics), metrics.size(), "missed_scrapes: 0.02, tsdb_end_step: 25}");
  Scenario cut = MustParse(text);
  ASSERT_EQ(cut.tsdb_end_step, std::optional<int64_t>(25));
  auto t = BuildTimeline(cut);
  ASSERT_TRUE(t.ok());
  const double end = t->FindStep(25)->end + 10;
  std::map<std::string, size_t> before;
  for (const Series& s : Metrics(MustParse(kMinimal)))
    for (const auto& sample : s.samples) before[s.labels.at("__name__")] += sample.t <= end;
  std::map<std::string, size_t> after;
  for (const Series& s : Metrics(cut)) {
    for (const auto& sample : s.samples) EXPECT_LE(sample.t, end) << s.labels.at("__name__");
    after[s.labels.at("__name__")] += s.samples.size();
  }
  EXPECT_EQ(after, before);
  EXPECT_GT(after["tb_step"], 0u);
  text.replace(text.find("tsdb_end_step: 25"), 17, "tsdb_end_step: -3");
  EXPECT_THAT(ErrorOf(text), HasSubstr("tsdb_end_step"));
}

// exporter_down: node_hw's target is down on that host (up 0, no hw_* sample; Prometheus' own
// per-target series remain), its Ray series stay.
TEST(Metrics, ExporterDownSilencesOnlyNodeHw) {
  std::string text = kMinimal;
  const std::string fault = "  - {kind: rdma_retx, hosts: [gpu02], steps: 20-39, rate: 500, devices: [1]}\n";
  text.replace(text.find(fault), fault.size(), fault + "  - {kind: exporter_down, hosts: [gpu03]}\n");
  int hw_samples = 0, ray_samples = 0, up_samples = 0;
  for (const Series& s : Metrics(MustParse(text))) {
    const std::string& instance = s.labels.at("instance");
    if (instance.rfind("gpu03", 0) != 0) continue;
    const std::string& name = s.labels.at("__name__");
    if (name == "up") {
      for (const auto& sample : s.samples) up_samples += sample.v == (s.labels.at("job") == "node_hw" ? 0 : 1);
      continue;
    }
    if (name.rfind("hw_", 0) == 0) hw_samples += static_cast<int>(s.samples.size());
    if (name.rfind("ray_", 0) == 0) ray_samples += static_cast<int>(s.samples.size());
  }
  EXPECT_EQ(hw_samples, 0);
  EXPECT_GT(ray_samples, 100);
  EXPECT_GT(up_samples, 100);
}

// ipv6: nodes addressed by IPv6; a target scraped by address is [<ip>]:<port>, Ray's `ip` label the
// bare address, so the two can be tied together.
TEST(Metrics, Ipv6AddressesAreBracketedInTargets) {
  std::string text = kMinimal;
  const std::string metrics = "missed_scrapes: 0.02}";
  text.replace(text.find(metrics), metrics.size(), "missed_scrapes: 0.02, node_hw_names: ip, ipv6: true}");
  std::set<std::string> hw_instances, ray_ips;
  for (const Series& s : Metrics(MustParse(text))) {
    if (s.labels.count("job") && s.labels.at("job") == "node_hw") hw_instances.insert(s.labels.at("instance"));
    if (s.labels.count("ip")) ray_ips.insert(s.labels.at("ip"));
  }
  ASSERT_EQ(hw_instances.size(), 3u);
  ASSERT_EQ(ray_ips.size(), 3u);
  for (const auto& ip : ray_ips) EXPECT_TRUE(hw_instances.count("[" + ip + "]:9400")) << ip;
  for (const auto& ip : ray_ips) EXPECT_EQ(ip.rfind("fd00:", 0), 0u) << ip;
}

// node_hw_interval_from: node_hw's samples are 10 s apart before that step ends and 60 s after it;
// Ray's keep their own interval.
TEST(Metrics, NodeHwIntervalChangesAfterTheStep) {
  std::string text = kMinimal;
  const std::string metrics = "missed_scrapes: 0.02}";
  text.replace(text.find(metrics), metrics.size(),
               "missed_scrapes: 0, node_hw_interval_from: {step: 20, interval: 60}}");
  Scenario s = MustParse(text);
  auto t = BuildTimeline(s);
  ASSERT_TRUE(t.ok());
  const double change = t->FindStep(20)->end;
  for (const Series& x : Metrics(s)) {
    const std::string& name = x.labels.at("__name__");
    if (name != "hw_scrape_duration_seconds" && name != "ray_node_mem_used") continue;
    const bool hw = x.labels.at("job") == "node_hw";
    for (size_t i = 1; i < x.samples.size(); ++i) {
      const double gap = x.samples[i].t - x.samples[i - 1].t;
      EXPECT_NEAR(gap, hw && x.samples[i - 1].t >= change ? 60 : 10, 0.01) << name << " at " << i;
    }
  }
  text.replace(text.find("interval: 60}"), 13, "interval: 0}");
  EXPECT_THAT(ErrorOf(text), HasSubstr("node_hw_interval_from"));
}

TEST(Metrics, CountersAreMonotonicWithLargeStartsAndRetxOnlyOnFaultedHostInWindow) {
  Scenario s = MustParse(kMinimal);
  auto t = BuildTimeline(s);
  ASSERT_TRUE(t.ok());
  double fault_begin = t->FindStep(20)->begin, fault_end = t->FindStep(39)->end;
  auto series = Metrics(s);
  int large_starts = 0;
  for (const Series& x : series) {
    const std::string& name = x.labels.at("__name__");
    if (name.size() < 6 || name.substr(name.size() - 6) != "_total") continue;
    for (size_t i = 1; i < x.samples.size(); ++i) ASSERT_GE(x.samples[i].v, x.samples[i - 1].v) << name;
    if (name == "hw_rdma_tx_bytes_total" && x.samples.front().v > 1e12) ++large_starts;
    if (name != "hw_rdma_tx_retx_pkts_total") continue;
    double inside = 0, outside = 0;
    for (size_t i = 1; i < x.samples.size(); ++i) {
      double d = x.samples[i].v - x.samples[i - 1].v;
      (x.samples[i].t > fault_begin + 30 && x.samples[i].t < fault_end ? inside : outside) += d;
    }
    bool faulted = x.labels.at("host") == "gpu02" && x.labels.at("device") == "ionic_1";
    if (faulted) EXPECT_GT(inside, 1000);
    else EXPECT_EQ(inside, 0) << x.labels.at("host") << " " << x.labels.at("device");
    EXPECT_LT(outside, faulted ? 500 * 35 : 1);
  }
  EXPECT_GE(large_starts, 20);
}

TEST(Metrics, MissedScrapesWriteUpZeroAndNoSamples) {
  auto series = Metrics(MustParse(kMinimal));
  std::map<std::string, std::set<double>> down;   // instance -> times with up == 0
  for (const Series& x : series)
    if (x.labels.at("__name__") == "up")
      for (const Sample& p : x.samples)
        if (p.v == 0) down[x.labels.at("instance")].insert(p.t);
  ASSERT_FALSE(down.empty()) << "2% missed scrapes should produce some up == 0";
  for (const Series& x : series) {
    if (x.labels.at("__name__") == "up" || x.labels.at("__name__").rfind("scrape_", 0) == 0 ||
        x.labels.at("__name__").rfind("tb_", 0) == 0)
      continue;
    const auto& times = down[x.labels.at("instance")];
    for (const Sample& p : x.samples) ASSERT_EQ(times.count(p.t), 0u) << x.labels.at("__name__");
  }
}

TEST(Metrics, TensorboardSamplesSitAtStepWallTimesWithStalenessFills) {
  std::string text = kMinimal;
  text.replace(text.find("passthrough: [steps=40, per_device_batch_size=4]"), 48,
               "passthrough: [steps=40, per_device_batch_size=4, enable_checkpointing=true, checkpoint_period=10]");
  Scenario s = MustParse(text);
  auto t = BuildTimeline(s);
  ASSERT_TRUE(t.ok());
  std::set<double> step_ends;
  for (const auto& r : t->steps) step_ends.insert(std::round(r.end * 1000) / 1000);
  auto series = Metrics(s);
  const Series* step = nullptr;
  const Series* fill = nullptr;
  for (const Series& x : series) {
    if (x.labels.at("__name__") == "tb_step") step = &x;
    if (x.labels.at("__name__") == "tb_metrics_plugin_staleness_fill") fill = &x;
  }
  ASSERT_TRUE(step && fill);
  int fills = 0;
  for (size_t i = 0; i < fill->samples.size(); ++i) {
    if (fill->samples[i].v == 1) {
      ++fills;
      EXPECT_EQ(step_ends.count(fill->samples[i].t), 0u);
    } else {
      EXPECT_EQ(step_ends.count(fill->samples[i].t), 1u) << "real tb samples carry the step's wall time";
    }
  }
  EXPECT_GT(fills, 0) << "the slow post-checkpoint steps are idle periods > 150 s";
  EXPECT_EQ(step->samples.size(), fill->samples.size());
}

TEST(Scenario, TrainingDynamicsKeysAreValidated) {
  auto training = [](const std::string& extra) {
    std::string t = kMinimal;
    t.replace(t.find("  last_step: 39\n"), 15, "  last_step: 39\n" + extra);
    return t;
  };
  EXPECT_THAT(ErrorOf(training("  loss_diverge_rate: -0.1\n")), HasSubstr("loss_diverge_rate must be positive"));
  EXPECT_THAT(ErrorOf(training("  grad_spikes: {steps: [3], factor: 1}\n")), HasSubstr("grad_spikes.factor must be > 1"));
  EXPECT_THAT(ErrorOf(training("  grad_spikes: {steps: []}\n")), HasSubstr("grad_spikes needs steps"));
  EXPECT_THAT(ErrorOf(training("  loss_nan_at: soon\n")), HasSubstr("bad.yaml:12:16: 'loss_nan_at' has the wrong type"));
}

// Divergence grows the loss and the raw grad norm, clipping caps the logged norm, spikes hit only
// their steps, NaN starts where asked; a scenario without these keys keeps raw = 1.02 x clipped.
TEST(Timeline, TrainingDynamics) {
  std::string text = kMinimal;
  text.replace(text.find("  last_step: 39\n"), 15,
               "  last_step: 39\n  loss_diverge_at: 20\n  loss_diverge_rate: 0.05\n  loss_nan_at: 35\n"
               "  grad_spikes: {steps: [12], factor: 30}\n  grad_clip: 1.0\n");
  auto plain = BuildTimeline(MustParse(kMinimal));
  auto t = BuildTimeline(MustParse(text));
  ASSERT_TRUE(plain.ok() && t.ok());
  for (const auto& r : plain->steps) EXPECT_DOUBLE_EQ(r.raw_grad_norm, r.grad_norm * 1.02);
  for (size_t i = 0; i < t->steps.size(); ++i) {
    const StepRecord& r = t->steps[i];
    const StepRecord& base = plain->steps[i];
    if (r.step >= 35) {
      EXPECT_TRUE(std::isnan(r.loss) && std::isnan(r.raw_grad_norm) && std::isnan(r.grad_norm)) << r.step;
      continue;
    }
    EXPECT_LE(r.grad_norm, 1.0) << r.step;
    if (r.step < 20) EXPECT_DOUBLE_EQ(r.loss, base.loss) << r.step;
    else EXPECT_NEAR(r.loss, base.loss * std::exp(0.05 * static_cast<double>(r.step - 19)), 1e-9) << r.step;
    if (r.step == 12) EXPECT_NEAR(r.raw_grad_norm, 30 * base.raw_grad_norm, 1e-9);
    else if (r.step < 20) EXPECT_DOUBLE_EQ(r.raw_grad_norm, base.raw_grad_norm) << r.step;
    else EXPECT_GT(r.raw_grad_norm, base.raw_grad_norm) << r.step;
  }
}

// The driver fault: on its host every other node_hw cycle takes ~12 s and carries no GPU series, the
// others take under 3 s; dmesg GPU errors grow there only. A tb gap leaves no tb sample at all.
TEST(Metrics, DriverFaultAlternatesCyclesAndDropsGpuSeriesAndTbGapIsEmpty) {
  std::string text = kMinimal;
  text.replace(text.find("  - {kind: rdma_retx"), std::string::npos,
               "  - {kind: driver_fault, hosts: [gpu03], steps: 5-39, rate: 0.05}\nexpect: {status: completed}\n");
  text.replace(text.find("missed_scrapes: 0.02"), 20, "missed_scrapes: 0, tb_gap: 30-39");
  Scenario s = MustParse(text);
  auto t = BuildTimeline(s);
  ASSERT_TRUE(t.ok());
  double begin = t->FindStep(5)->begin, end = t->FindStep(39)->end;
  std::map<std::string, std::vector<Sample>> cycles;
  std::map<std::string, std::set<double>> gpu_times;
  std::map<std::string, double> dmesg_growth;
  for (const Series& x : Metrics(s)) {
    const std::string& name = x.labels.at("__name__");
    if (name == "hw_scrape_duration_seconds") cycles[x.labels.at("host")] = x.samples;
    if (name == "hw_gpu_power_watts" && x.labels.at("gpu") == "0")
      for (const Sample& p : x.samples) gpu_times[x.labels.at("host")].insert(p.t);
    if (name == "hw_dmesg_gpu_errors_total") dmesg_growth[x.labels.at("host")] = x.samples.back().v - x.samples.front().v;
    if (name == "tb_step")
      for (const Sample& p : x.samples) EXPECT_LT(p.t, t->FindStep(30)->end) << "nothing in the tb gap";
  }
  int slow = 0, fast = 0;
  for (const Sample& p : cycles["gpu03"]) {
    if (p.t < begin || p.t > end) continue;
    (p.v > 10 ? slow : fast)++;
    EXPECT_TRUE(p.v > 12 || p.v < 3) << p.v;
    EXPECT_EQ(gpu_times["gpu03"].count(p.t), p.v > 10 ? 0u : 1u) << "a killed cycle has no GPU series";
  }
  EXPECT_GT(slow, 30);
  EXPECT_NEAR(slow, fast, 1);
  for (const std::string host : {"gpu01", "gpu02"}) {
    for (const Sample& p : cycles[host]) EXPECT_LT(p.v, 0.2) << host;
    EXPECT_EQ(dmesg_growth[host], 0) << host;
  }
  EXPECT_GT(dmesg_growth["gpu03"], 10);
}

TEST(Metrics, DeterministicFromTheSeed) {
  Scenario s = MustParse(kMinimal);
  auto a = Metrics(s), b = Metrics(s);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].labels, b[i].labels);
    ASSERT_EQ(a[i].samples.size(), b[i].samples.size());
    for (size_t k = 0; k < a[i].samples.size(); ++k) {
      ASSERT_EQ(a[i].samples[k].t, b[i].samples[k].t);
      ASSERT_EQ(a[i].samples[k].v, b[i].samples[k].v);
    }
  }
  s.seed = 8;
  auto c = Metrics(s);
  bool differs = false;
  for (size_t i = 0; i < a.size() && !differs; ++i)
    differs = a[i].samples.size() != c[i].samples.size() || a[i].samples.front().v != c[i].samples.front().v;
  EXPECT_TRUE(differs);
}

TEST(Metrics, NicVendorDecidesDeviceNamesAndCounterFamilies) {
  std::string text = kMinimal;
  text.replace(text.find("missed_scrapes: 0.02}"), 21, "missed_scrapes: 0.02, nic_vendor: mlx5}");
  text.replace(text.find("faults:"), std::string::npos, "expect: {status: completed}\n");
  std::set<std::string> rdma_names, devices;
  for (const Series& series : Metrics(MustParse(text))) {
    const std::string& name = series.labels.at("__name__");
    if (name.rfind("hw_rdma_", 0) != 0) continue;
    rdma_names.insert(name);
    devices.insert(series.labels.at("device"));
  }
  EXPECT_EQ(rdma_names, (std::set<std::string>{"hw_rdma_rx_bytes_total", "hw_rdma_tx_bytes_total", "hw_rdma_rx_pkts_total",
                                               "hw_rdma_tx_pkts_total", "hw_rdma_port_state"}));
  EXPECT_TRUE(devices.count("mlx5_0"));
  // a retransmit fault on a NIC that exports no retransmit counters would be invisible: an error
  std::string bad = kMinimal;
  bad.replace(bad.find("missed_scrapes: 0.02}"), 21, "missed_scrapes: 0.02, nic_vendor: bnxt_re}");
  EXPECT_THAT(ErrorOf(bad), HasSubstr("bnxt_re NICs do not export"));
}

TEST(Metrics, StaleRetryExhaustionIsLargeAndFlatAndSpreadsKeepDefaultsUntouched) {
  std::string text = kMinimal;
  text.replace(text.find("faults:\n"), 8,
               "faults:\n  - {kind: rdma_stale_retry_exceeded, hosts: [gpu03], rate: 5000, devices: [2]}\n");
  for (const Series& series : Metrics(MustParse(text))) {
    if (series.labels.at("__name__") != "hw_rdma_req_tx_retry_excd_err_total" || series.labels.at("host") != "gpu03" ||
        series.labels.at("device") != "ionic_2")
      continue;
    EXPECT_EQ(series.samples.front().v, 5000);
    EXPECT_EQ(series.samples.back().v, 5000);
  }
  // zero spreads and the default jitter are the defaults: the same data as a scenario without them
  std::string explicit_defaults = kMinimal;
  explicit_defaults.replace(explicit_defaults.find("missed_scrapes: 0.02}"), 21,
                            "missed_scrapes: 0.02, power_spread_w: 0, temperature_spread_c: 0, clock_spread_mhz: 0}");
  const std::string last_step = "  last_step: 39";
  explicit_defaults.replace(explicit_defaults.find(last_step), last_step.size(), last_step + "\n  step_jitter_pct: 0.12");
  Scenario defaults = MustParse(kMinimal), explicit_scenario = MustParse(explicit_defaults);
  EXPECT_EQ(defaults.step_jitter, explicit_scenario.step_jitter);
  auto a = Metrics(defaults), b = Metrics(explicit_scenario);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].labels, b[i].labels);
    ASSERT_EQ(a[i].samples.size(), b[i].samples.size());
    for (size_t k = 0; k < a[i].samples.size(); ++k) ASSERT_EQ(a[i].samples[k].v, b[i].samples[k].v) << k;
  }
  std::string spread = kMinimal;
  spread.replace(spread.find("missed_scrapes: 0.02}"), 21, "missed_scrapes: 0.02, power_spread_w: 20}");
  std::map<std::string, double> first_power;
  for (const Series& series : Metrics(MustParse(spread)))
    if (series.labels.at("__name__") == "hw_gpu_power_watts" && series.labels.at("gpu") == "0")
      first_power[series.labels.at("host")] = series.samples.back().v;
  EXPECT_EQ(first_power.size(), 3u);
}

// A workload lighter than its GPU model (training_power_w) draws less while it trains; idle, init
// and busy-wait power stay the model's, sample for sample.
TEST(Metrics, TrainingPowerMovesOnlyTheTrainingLevel) {
  std::string light = kMinimal;
  light.replace(light.find("missed_scrapes: 0.02}"), 21, "missed_scrapes: 0.02, training_power_w: 700}");
  auto power_of = [](const Scenario& s) {
    std::vector<double> out;
    for (const Series& series : Metrics(s))
      if (series.labels.at("__name__") == "hw_gpu_power_watts" && series.labels.at("gpu") == "0" &&
          series.labels.at("host") == "gpu01")
        for (const auto& sample : series.samples) out.push_back(sample.v);
    return out;
  };
  const std::vector<double> model = power_of(MustParse(kMinimal)), workload = power_of(MustParse(light));
  ASSERT_EQ(model.size(), workload.size());
  ASSERT_FALSE(model.empty());
  EXPECT_GT(*std::max_element(model.begin(), model.end()), 880);
  EXPECT_LT(*std::max_element(workload.begin(), workload.end()), 760);
  EXPECT_GT(*std::max_element(workload.begin(), workload.end()), 640);
  EXPECT_EQ(model.front(), workload.front()) << "the idle GPU before training draws the model's power";
  EXPECT_THAT(ErrorOf(std::string(kMinimal).replace(std::string(kMinimal).find("missed_scrapes: 0.02}"), 21,
                                                    "missed_scrapes: 0.02, training_power_w: 50}")),
              HasSubstr("training_power_w must be >= 100"));
}

// The metric catalogue lint checks queries against (rules/metrics.yaml) holds every series name any
// fixture scenario's TSDB gets, so a generator change that adds a family must add it there too.
TEST(Metrics, EveryGeneratedNameIsInTheMetricCatalogue) {
  auto catalogue = playbook::MetricCatalogue::Load(std::string(DIAGNOSE_SOURCE_DIR) + "/rules/metrics.yaml");
  ASSERT_TRUE(catalogue.ok()) << catalogue.status().ToString();
  std::set<std::string> names;
  int scenarios = 0;
  for (const auto& entry : fs::directory_iterator(std::string(DIAGNOSE_SOURCE_DIR) + "/fixtures/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    auto scenario = LoadScenario(entry.path().string());
    ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
    if (!scenario->tsdb) continue;
    auto timeline = BuildTimeline(*scenario);
    ASSERT_TRUE(timeline.ok()) << entry.path();
    ++scenarios;
    auto stats = GenerateMetrics(*scenario, *timeline, [&](Series series) {
      names.insert(series.labels.at("__name__"));
      return Status::Ok();
    });
    ASSERT_TRUE(stats.ok()) << entry.path() << ": " << stats.status().ToString();
  }
  EXPECT_GT(scenarios, 0);
  EXPECT_GT(names.size(), 50u);
  for (const auto& name : names) EXPECT_TRUE(catalogue->Contains(name)) << name << " is generated but not in rules/metrics.yaml";
}

// ---- job directory

TEST(Generate, MtimeSkewMovesAFinishedJobsFileTimesPastItsEnd) {
  Scenario s = MustParse(std::string(kMinimal) + "mtime_skew_seconds: 21600\n");
  auto timeline = BuildTimeline(s);
  ASSERT_TRUE(timeline.ok());
  fs::path base = fs::temp_directory_path() / ("fixturegen-skew-" + std::to_string(::getpid()));
  GenerateOptions options;
  options.write_tsdb = false;
  options.out_dir = base.string();
  ASSERT_TRUE(Generate(s, options).ok());
  auto mtime = fs::last_write_time(base / "123-JAX-llama2-70b.log");
  double epoch = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() +
                 std::chrono::duration<double>(mtime - fs::file_time_type::clock::now()).count();
  EXPECT_NEAR(epoch, timeline->job_end + 21600, 2);
  fs::remove_all(base);
}

// training.log_gap: the trainers print no step line for the gap's steps (those around it as usual);
// the steps still run, so the step after the gap starts where the lost ones ended.
TEST(Generate, LogGapDropsOnlyTheGapsStepLines) {
  std::string text = kMinimal;
  text.replace(text.find("  last_step: 39\n"), 16, "  last_step: 39\n  log_gap: 10-14\n");
  Scenario s = MustParse(text);
  ASSERT_TRUE(s.log_gap);
  EXPECT_EQ(s.log_gap->first, 10);
  fs::path base = fs::temp_directory_path() / ("fixturegen-gap-" + std::to_string(::getpid()));
  GenerateOptions options;
  options.write_tsdb = false;
  options.out_dir = base.string();
  ASSERT_TRUE(Generate(s, options).ok());
  const std::string log = testing::ReadFileOrEmpty(base / "123-JAX-llama2-70b.log");
  for (int step : {10, 12, 14}) EXPECT_EQ(log.find("completed step: " + std::to_string(step) + ","), std::string::npos) << step;
  for (int step : {9, 15}) EXPECT_NE(log.find("completed step: " + std::to_string(step) + ","), std::string::npos) << step;
  fs::remove_all(base);
  EXPECT_THAT(ErrorOf(std::string(kMinimal).replace(std::string(kMinimal).find("  last_step: 39\n"), 16,
                                                     "  last_step: 39\n  log_gap: ten\n")),
              HasSubstr("step range 'ten'"));
}

TEST(Generate, LauncherLayoutAndByteIdenticalLogs) {
  Scenario s = MustParse(kMinimal);
  fs::path base = fs::temp_directory_path() / ("fixturegen-test-" + std::to_string(::getpid()));
  GenerateOptions options;
  options.write_tsdb = false;
  options.out_dir = (base / "a").string();
  ASSERT_TRUE(Generate(s, options).ok());
  options.out_dir = (base / "b").string();
  ASSERT_TRUE(Generate(s, options).ok());
  fs::path a = base / "a", b = base / "b";
  EXPECT_EQ(fs::read_symlink(a / "123-JAX-llama2-70b" / "log"), fs::path("../123-JAX-llama2-70b.log"));
  std::string log = testing::ReadFileOrEmpty(a / "123-JAX-llama2-70b.log");
  EXPECT_EQ(log, testing::ReadFileOrEmpty(b / "123-JAX-llama2-70b.log"));
  EXPECT_THAT(log, HasSubstr("JOB_NODELIST=gpu[01-03]\n"));
  EXPECT_THAT(log, HasSubstr("2: NODELIST_EXPANDED=gpu01,gpu02,gpu03\n"));
  EXPECT_THAT(log, HasSubstr("1: \x1b[36m(MaxTextTrainerActor pid="));
  EXPECT_THAT(log, HasSubstr("  Status: SUCCESS (exit 0)\n"));
  // every task prints every step
  size_t count = 0;
  for (size_t pos = 0; (pos = log.find("completed step: 39,", pos)) != std::string::npos; ++pos) ++count;
  EXPECT_EQ(count, 3u);
  int workers = 0;
  for (const auto& e : fs::directory_iterator(a / "123-JAX-llama2-70b" / "ray_logs" / "gpu02")) {
    std::string name = e.path().filename().string();
    if (name.rfind("worker-", 0) == 0 && e.path().extension() == ".out") {
      ++workers;
      std::string out = testing::ReadFileOrEmpty(e.path());
      EXPECT_THAT(out, HasSubstr("\ncompleted step: 39, seconds: "));
      EXPECT_EQ(out.find("\x1b["), std::string::npos) << "worker logs hold the trainer's verbatim output";
    }
  }
  EXPECT_EQ(workers, 1);
  EXPECT_TRUE(fs::exists(a / "123-JAX-llama2-70b" / "prometheus" / "ray_prometheus.yml"));
  EXPECT_TRUE(fs::exists(a / "123-JAX-llama2-70b" / "metrics_exporter" / "gpu03.log"));
  fs::remove_all(base);
}

}  // namespace
}  // namespace diagnose::fixturegen
