#include "tools/fixturegen/generate.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include "engine/fleet/raw_export.h"
#include "engine/tsdb/block_writer.h"
#include "engine/tsdb/wal_writer.h"
#include "tools/fixturegen/log_writer.h"
#include "tools/fixturegen/metric_model.h"
#include "tools/fixturegen/timeline.h"

namespace fs = std::filesystem;

namespace diagnose::fixturegen {
namespace {

int64_t TreeBytes(const fs::path& dir) {
  int64_t total = 0;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

// Data times come from the scenario, so do file times: a finished job's log is as old as its end.
// Converted exactly (not through "now"), so two generations of a fixture give the same mtimes.
void SetMtimes(const fs::path& root, const std::vector<std::string>& files, double epoch) {
  const auto since_epoch = std::chrono::duration_cast<std::chrono::system_clock::duration>(
      std::chrono::duration<double>(epoch));
  const auto when = std::chrono::file_clock::from_sys(std::chrono::system_clock::time_point(since_epoch));
  std::error_code ec;
  for (const auto& f : files) fs::last_write_time(root / f, when, ec);
}

// One JSON line per series, as generated: a live job's exporter serves them at their times.
StatusOr<MetricStats> WriteSeriesLines(const Scenario& s, const Timeline& timeline, const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return InternalError(path.string() + ": cannot write");
  auto stats = GenerateMetrics(s, timeline, [&](Series series) {
    int64_t written = 0, non_finite = 0;
    out << VictoriaMetricsImportLines({series}, {}, &written, &non_finite);
    return out ? Status::Ok() : InternalError(path.string() + ": write failed");
  });
  out.close();
  if (stats.ok() && !out) return InternalError(path.string() + ": write failed");
  return stats;
}

}  // namespace

StatusOr<GenerateReport> Generate(const Scenario& s, const GenerateOptions& options) {
  auto started = std::chrono::steady_clock::now();
  GenerateReport report;
  const fs::path out(options.out_dir);
  const std::string job_dir = JobDirName(s);
  report.job_dir = job_dir;
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return InternalError(options.out_dir + ": cannot create outputs dir: " + ec.message());
  // Only this job's own paths are replaced; other fixtures in the workspace stay.
  fs::remove_all(out / job_dir, ec);
  fs::remove(out / (job_dir + ".log"), ec);

  auto timeline = BuildTimeline(s);
  if (!timeline.ok()) return timeline.status().WithContext(s.path);
  auto files = WriteJobLogs(s, *timeline, out.string());
  if (!files.ok()) return files.status().WithContext(s.path);
  fs::create_directories(out / job_dir, ec);
  if (s.log_symlink != "none") {
    fs::create_symlink(fs::path("..") / (job_dir + ".log"), out / job_dir / "log", ec);
    if (ec) return InternalError((out / job_dir / "log").string() + ": cannot create symlink: " + ec.message());
  }
  if (s.checkpoint_period > 0 && s.training) {
    // the shared checkpoint dir (no log symlink) that checkpointing jobs write into
    fs::path ckpt = out / (s.model_alias.empty() ? s.model : s.model_alias) / (s.model + "_train_test") / "checkpoints";
    for (const auto& r : timeline->steps) {
      if (!r.checkpoint_saved) continue;
      fs::create_directories(ckpt / std::to_string(r.step), ec);
      std::ofstream(ckpt / std::to_string(r.step) / "_CHECKPOINT_METADATA") << "{\"step\": " << r.step << "}\n";
    }
  }

  if (s.tsdb && !options.series_out.empty() && timeline->prometheus_start < timeline->job_end) {
    auto metrics = WriteSeriesLines(s, *timeline, fs::path(options.series_out) / (job_dir + ".series.jsonl"));
    if (!metrics.ok()) return metrics.status().WithContext(s.path);
    report.series = metrics->series;
    report.samples = metrics->samples;
  } else if (s.tsdb && options.write_tsdb && timeline->prometheus_start < timeline->job_end && s.tsdb_format == "wal") {
    // Prometheus cuts its first block once the head spans 3 h (1.5 x the 2 h block range); a TSDB
    // left with no block is one whose Prometheus ran for less than that.
    if (timeline->job_end - timeline->prometheus_start > 2 * 3600)
      return InvalidArgumentError(s.path + ": tsdb_format wal needs a job whose Prometheus ran under 2 h, this one ran " +
                                  std::to_string(static_cast<int>(timeline->job_end - timeline->prometheus_start)) + " s");
    WalWriter writer((out / job_dir / "prometheus").string());
    auto metrics = GenerateMetrics(s, *timeline, [&](Series series) { return writer.Add(std::move(series)); });
    if (!metrics.ok()) return metrics.status().WithContext(s.path);
    auto stats = writer.Finish();
    if (!stats.ok()) return stats.status().WithContext(s.path + ": writing the WAL");
    report.series = metrics->series;
    report.samples = metrics->samples;
    report.samples_in_blocks = 0;
    report.tsdb_bytes = TreeBytes(out / job_dir / "prometheus");
  } else if (s.tsdb && options.write_tsdb && timeline->prometheus_start < timeline->job_end) {
    BlockWriteOptions bw;
    bw.output_dir = (out / job_dir / "prometheus").string();
    bw.max_block_duration = "6h";
    bw.encoder = options.block_encoder;
    bw.scratch_dir = options.scratch_dir;
    BlockWriter writer(bw);
    auto metrics = GenerateMetrics(s, *timeline, [&](Series series) { return writer.Add(std::move(series)); });
    if (!metrics.ok()) return metrics.status().WithContext(s.path);
    auto stats = writer.Finish();
    if (!stats.ok()) return stats.status().WithContext(s.path + ": building TSDB blocks");
    report.series = metrics->series;
    report.samples = metrics->samples;
    report.samples_in_blocks = stats->samples_in_blocks;
    report.blocks = stats->blocks;
    if (stats->samples_in_blocks != metrics->samples - stats->duplicates_dropped)
      return DataLossError(s.path + ": the blocks keep " + std::to_string(stats->samples_in_blocks) + " of " +
                           std::to_string(metrics->samples) + " generated samples");
    if (stats->duplicates_dropped != 0)
      return InternalError(s.path + ": generator produced " + std::to_string(stats->duplicates_dropped) +
                           " duplicate samples (series must be strictly increasing in time)");
    report.tsdb_bytes = TreeBytes(out / job_dir / "prometheus") ;
  }
  if (s.profile && s.training) {
    ProfileWindow window = *s.profile;
    window.spec.hosts = s.hosts;
    window.spec.gpus_per_host = s.gpus_per_node;
    const auto dir = out / job_dir / window.run / "tensorboard" / "plugins" / "profile" / window.timestamp;
    auto written = WriteTraceWindow(window.spec, dir.string());
    if (!written.ok()) return written.status().WithContext(s.path);
  }
  std::vector<std::string> all = *files;
  all.push_back(job_dir);
  // A running job's timeline ends at its "now"; its log was last written when the silence
  // (hang_seconds) began. Pinned mtimes make running / hanging / unknown-death reproducible with
  // the scenario's `expect.now`.
  SetMtimes(out, all,
            s.running ? timeline->job_end - std::max(0.0, s.hang_seconds) : timeline->job_end + s.mtime_skew_seconds);
  report.log_bytes = TreeBytes(out / job_dir) - report.tsdb_bytes;
  if (fs::exists(out / (job_dir + ".log"), ec)) report.log_bytes += static_cast<int64_t>(fs::file_size(out / (job_dir + ".log"), ec));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace diagnose::fixturegen
