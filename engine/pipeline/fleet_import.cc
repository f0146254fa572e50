#include "engine/pipeline/fleet_import.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <thread>

#include "engine/core/iso_time.h"
#include "engine/core/ordered_parallel.h"
#include "engine/fleet/fleet_record.h"
#include "engine/fleet/raw_export.h"
#include "engine/pipeline/logged_run.h"
#include "engine/tsdb/job_scoped_client.h"
#include "engine/tsdb/private_prometheus.h"
#include "engine/tsdb/prometheus_api.h"
#include "engine/tsdb/promql_escape.h"
#include "engine/triage/triage.h"

namespace diagnose {

namespace {

using Clock = std::chrono::steady_clock;

// Where the snapshot's samples lie: the blocks' meta.json bound what is on disk in blocks, the
// head (the WAL, replayed by the private server) extends it; /api/v1/status/tsdb reports the head.
StatusOr<TimeRange> SnapshotRange(PrivatePrometheus& server) {
  // Over the blocks the server was given: another job's blocks in the same directory are not this job's.
  const std::vector<std::string>& unserved = server.unserved_blocks();
  double start = INFINITY, end = -INFINITY;
  for (const BlockMeta& block : server.inventory().blocks) {
    if (std::find(unserved.begin(), unserved.end(), block.ulid) != unserved.end()) continue;
    start = std::min(start, block.min_time_ms / 1000.0);
    end = std::max(end, (block.max_time_ms - 1) / 1000.0);
  }
  auto status = server.client().Get("/api/v1/status/tsdb", 30);
  if (status.ok() && status->http_code == 200) {
    // An endpoint answer like any other: parsed as untrusted, each field taken only when it is an
    // integer (a float beyond int64 or a string would otherwise throw or be undefined behaviour).
    const ApiEnvelope envelope = ParseApiEnvelope(status->body);
    const nlohmann::json* head = nullptr;
    if (envelope.data.is_object())
      if (auto it = envelope.data.find("headStats"); it != envelope.data.end() && it->is_object()) head = &*it;
    auto field = [&](const char* key) -> int64_t {
      if (!head) return 0;
      auto it = head->find(key);
      return it != head->end() && it->is_number_integer() ? it->get<int64_t>() : 0;
    };
    const int64_t series = field("numSeries"), min_ms = field("minTime"), max_ms = field("maxTime");
    if (series > 0 && min_ms > 0 && max_ms >= min_ms) {
      start = std::min(start, min_ms / 1000.0);
      end = std::max(end, max_ms / 1000.0);
    }
  }
  if (!std::isfinite(start) || !std::isfinite(end)) {
    return NotFoundError("the TSDB at " + server.inventory().dir + " holds no samples (no blocks, empty head)");
  }
  return TimeRange{start, end};
}

// Per metric name: Prometheus refuses one count_over_time over every name, whose results differ
// only by the name it drops ("vector cannot contain metrics with the same labelset").
StatusOr<int64_t> SnapshotSampleCount(QueryClient& source, TimeRange range) {
  auto names = source.LabelValues("__name__", {}, range.start, range.end + 1);
  if (!names.ok()) return names.status();
  std::vector<Query> queries;
  for (const auto& name : *names)
    queries.push_back(SampleCountQuery("{__name__=\"" + EscapePromqlString(name) + "\"}", range, "fleet:source-count"));
  int64_t total = 0;
  for (auto& result : source.RunBatch(queries)) {
    if (!result.ok()) return result.status();
    total += SampleCountOf(*result);
  }
  return total;
}

void Record(JobImport& out, const Report& report) {
  out.root_cause = ActedOnRootCause(report);
  out.action = report.decision.action;
  for (const auto& x : report.decision.exclude) out.excluded.push_back(x.host);
}

// Stamped with the end of the job's samples when it has a TSDB, else with the end its log shows.
// Returns the samples written (one per record series).
StatusOr<int64_t> WriteRecord(VictoriaMetricsStore& store, const Report& report, const std::string& id,
                              const Labels& job_labels, std::optional<double> samples_end) {
  double at = samples_end.value_or(0);
  if (!(at > 0)) {
    if (const JobFacts* facts = FactsOf(report, id)) at = static_cast<double>(facts->run_window.end.value_or(0));
  }
  if (!(at > 0)) return FailedPreconditionError("job " + id + ": its end time is unknown, so its record has no time");
  int64_t written = 0;
  RETURN_IF_ERROR(store.Import(VictoriaMetricsImportLines(VerdictRecordSeries(report, at), job_labels, &written, nullptr)));
  return written;
}

}  // namespace

JobImport ImportJob(VictoriaMetricsStore& store, const JobLocation& job, const std::string& outputs_dir,
                    const FleetImportOptions& options) {
  const auto started = Clock::now();
  JobImport out;
  out.job = job.id;
  auto finish = [&](std::string outcome, std::string detail) {
    out.outcome = std::move(outcome);
    out.detail = std::move(detail);
    out.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return out;
  };
  auto matcher = JobMatcher(options.job_label, job.id);
  if (!matcher.ok()) return finish("failed", matcher.status().message());
  const std::string selector = "{" + *matcher + "}";
  const Labels job_labels{{options.job_label, job.id}};

  DiagnoseOptions diagnose = options.diagnose;
  diagnose.job_ref = job.job_dir.value_or(job.log_path.value_or(job.id));
  diagnose.outputs_dir = outputs_dir;
  StatusOr<Report> report = RunDiagnosis(diagnose);
  if (!report.ok()) return finish("failed", "diagnosing job " + job.id + ": " + report.status().message());
  Record(out, *report);

  if (!job.prometheus_dir) {
    auto record = WriteRecord(store, *report, job.id, job_labels, std::nullopt);
    if (!record.ok()) return finish("failed", record.status().message());
    out.samples = *record;
    return finish("record-only", "no persisted TSDB (RAY=0 job, or never written): only diagnose's record imported");
  }
  PrivatePrometheusOptions server_options;
  server_options.prometheus_binary = options.prometheus_binary;
  server_options.deadline = options.diagnose.remote.deadline;
  if (const JobFacts* facts = FactsOf(*report, job.id)) {
    server_options.job_finished = LogShowsFinished(*facts);
    if (const std::optional<LoggedRunSpan> run = LoggedRun(*facts)) server_options.logged_run = *run;
  }
  auto server = PrivatePrometheus::Start(*job.prometheus_dir, server_options);
  if (!server.ok() && server.status().code() == StatusCode::kNotFound) {   // a TSDB dir with nothing in it
    auto record = WriteRecord(store, *report, job.id, job_labels, std::nullopt);
    if (!record.ok()) return finish("failed", record.status().message());
    out.samples = *record;
    return finish("record-only", server.status().message() + ": only diagnose's record imported");
  }
  if (!server.ok()) return finish("failed", server.status().message());
  auto range = SnapshotRange(**server);
  if (!range.ok()) return finish("failed", range.status().message());

  auto held = store.SampleCount(selector, *range);
  if (!held.ok()) return finish("failed", held.status().message());
  // The source's own count decides whether the store holds the job completely.
  auto in_source = SnapshotSampleCount((*server)->client(), *range);
  if (!in_source.ok()) return finish("failed", in_source.status().message());
  // The record is part of a complete import: one sample per host and one for the job. A record
  // that changed since (another diagnose version) makes the count differ, and the job is replaced.
  const int64_t record_samples = static_cast<int64_t>(VerdictRecordSeries(*report, range->end).size());
  std::string outcome = "imported";
  if (*held > 0) {
    if (*held == *in_source + record_samples && !options.force) {
      out.stored_samples = *held;
      out.samples = *held;
      return finish("already-present", "the store holds all " + std::to_string(*in_source) + " samples of job " +
                                           job.id + " (--force re-imports)");
    }
    if (Status s = store.DeleteSeries(selector); !s.ok()) return finish("failed", s.message());
    outcome = "replaced";
  }
  ExportStats stats;
  Status exported = ExportRawSamples(
      (*server)->client(), *range, options.chunk_seconds,
      [&](const std::vector<Series>& chunk) {
        return store.Import(VictoriaMetricsImportLines(chunk, job_labels, &out.samples, &out.non_finite_samples));
      },
      &stats);
  out.series = stats.series;
  out.metric_names = static_cast<int>(stats.metric_names.size());
  if (!exported.ok()) return finish("failed", exported.message());
  auto record = WriteRecord(store, *report, job.id, job_labels, range->end);
  if (!record.ok()) return finish("failed", record.status().message());
  out.samples += *record;
  // A loaded store can take a while to make new series searchable even after a flush (a CI run
  // saw none of a job's samples 5 s after it): the count is asked again for up to 30 s, backing
  // off, before it counts as a loss.
  for (int attempt = 0; attempt < 40; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(attempt < 20 ? 250 : 1250));
    if (Status s = store.MakeSearchable(); !s.ok()) return finish("failed", s.message());
    auto stored = store.SampleCount(selector, *range);
    if (!stored.ok()) return finish("failed", stored.status().message());
    out.stored_samples = *stored;
    if (out.stored_samples >= out.samples) break;
  }
  if (out.stored_samples != out.samples) {
    return finish("failed", "the store holds " + std::to_string(out.stored_samples) + " of the " +
                                std::to_string(out.samples) + " samples written for job " + job.id +
                                " (is -retentionPeriod long enough for " + IsoUtc(range->start) + "?)");
  }
  return finish(outcome, std::to_string(out.samples) + " samples of " + std::to_string(out.series) + " series, " +
                             IsoUtc(range->start) + " to " + IsoUtc(range->end));
}

std::vector<JobImport> ImportJobs(VictoriaMetricsStore& store, const std::vector<JobLocation>& jobs,
                                  const std::string& outputs_dir, const FleetImportOptions& options, int parallel,
                                  const std::function<void(const JobImport&)>& on_result) {
  return RunInOrder<JobImport>(
      jobs.size(), parallel, [&](size_t i) { return ImportJob(store, jobs[i], outputs_dir, options); },
      [&](size_t, const JobImport& r) {
        if (on_result) on_result(r);
      });
}

}  // namespace diagnose
