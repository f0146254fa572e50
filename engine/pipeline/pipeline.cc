#include "engine/pipeline/pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>

#include "engine/core/iso_time.h"
#include "engine/core/logging.h"
#include "engine/core/text.h"
#include "engine/dag/discovery_json.h"
#include "engine/dag/run_playbooks.h"
#include "engine/decision/decision_rules.h"
#include "engine/decision/refine.h"
#include "engine/discovery/discovery.h"
#include "engine/fleet/fleet_record.h"
#include "engine/playbook/loader.h"
#include "engine/job/job_location.h"
#include "engine/pipeline/assemble_report.h"
#include "engine/pipeline/logged_run.h"
#include "engine/triage/log_assessment.h"
#include "engine/triage/signature_table.h"
#include "engine/triage/triage.h"
#include "engine/tsdb/http_query_client.h"
#include "engine/tsdb/job_scoped_client.h"
#include "engine/tsdb/private_prometheus.h"
#include "engine/tsdb/source_failures.h"

namespace diagnose {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
using StartedServer = StatusOr<std::unique_ptr<PrivatePrometheus>>;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}


// One job of the report (subject or baseline) with everything opened for it. Members are
// destroyed in reverse order: the client before the server that serves it.
struct JobContext {
  JobLocation location;
  JobFacts facts;
  JobRole role = JobRole::kSubject;
  TsdbState tsdb;
  std::unique_ptr<PrivatePrometheus> server;
  std::unique_ptr<HttpQueryClient> remote;
  std::unique_ptr<JobScopedClient> scoped;   // --job-label: remote narrowed to this job's series
  // Every request goes through it, so a failure of the source is told from an answer about the job.
  std::unique_ptr<SourceFailureRecorder> recorder;
  std::optional<Discovery> discovery;
  std::string discovery_failure;        // why `discovery` is empty when a TSDB was opened
  QueryClient* client = nullptr;   // the recorder over server->client() or remote, whichever is open
  // A private server that died (at start-up or mid-run) is started again once, never more.
  bool server_restarted = false;
  // The private server started while the logs were triaged (StartServerBeforeTriage); OpenTsdb
  // keeps it only where the log, once read, chooses the same server. Destroyed unclaimed, it waits
  // for the start to end and stops what it started.
  std::future<StartedServer> early_server;

  // Whether the metrics source failed (unreachable, dead, garbage) during anything asked of it.
  bool SourceFailed() { return recorder && recorder->failures() > 0; }
  void CloseTsdb() {   // keeps server_restarted
    client = nullptr;
    discovery.reset();
    discovery_failure.clear();
    recorder.reset();
    scoped.reset();
    remote.reset();
    server.reset();   // stops the private Prometheus and removes its copy
    tsdb = TsdbState{};
  }
  // Set once the private server is handed on (ReleaseServer): what its inventory said of the clocks.
  bool server_released = false;
  std::optional<double> released_clock_skew_seconds;
  // The private server, for the caller to stop: what asked through it goes first. Null when the
  // metrics came from an endpoint or nowhere.
  std::unique_ptr<PrivatePrometheus> ReleaseServer() {
    if (!server) return nullptr;
    server_released = true;
    released_clock_skew_seconds = server->inventory().clock_skew_seconds;
    client = nullptr;
    recorder.reset();
    scoped.reset();
    return std::move(server);
  }
};

// How a job's snapshot is served; `facts` null before its logs are read.
PrivatePrometheusOptions ServerOptions(const DiagnoseOptions& options, const JobFacts* facts) {
  PrivatePrometheusOptions server_options;
  server_options.deadline = options.remote.deadline;
  server_options.blocks_only = options.blocks_only;
  if (facts == nullptr) return server_options;
  server_options.job_finished = LogShowsFinished(*facts);
  if (const std::optional<LoggedRunSpan> run = LoggedRun(*facts)) server_options.logged_run = *run;
  return server_options;
}

// The server's start-up (copy, spawn, replay) is as long as the logs' triage, and the log decides
// only two things about it: which blocks lie outside the job's run, and whether a recent WAL write
// means a live job. So it starts now on every block with the liveness check left to the log's
// answer (a held lock still refuses), and OpenTsdb keeps it only where the log confirms both.
void StartServerBeforeTriage(JobContext& job, const DiagnoseOptions& options) {
  if (options.logs_only || !options.remote.url.empty() || !job.location.prometheus_dir) return;
  PrivatePrometheusOptions early = ServerOptions(options, nullptr);
  early.job_finished = true;
  const std::string dir = *job.location.prometheus_dir;
  Stage("starting Prometheus on {} while the logs are triaged", dir);
  job.early_server = std::async(std::launch::async, [dir, early] { return PrivatePrometheus::Start(dir, early); });
}

StatusOr<JobContext> Locate(const std::string& ref, const std::string& outputs_dir, JobRole role,
                            const DiagnoseOptions& options) {
  JobContext job;
  job.role = role;
  Stage("locating {} in {}", ref, outputs_dir);
  ASSIGN_OR_RETURN(job.location, ResolveJob(ref, outputs_dir));
  StartServerBeforeTriage(job, options);
  return job;
}

Status Triage(JobContext& job, const std::string& ref, const SignatureTable& signatures,
              const DiagnoseOptions& options) {
  const size_t logs = (job.location.log_path ? 1 : 0) + job.location.rank_logs.size();
  Stage("triage {} ({} log{}, {} worker log{})", job.location.id, logs, logs == 1 ? "" : "s",
        job.location.ray_worker_logs.size(), job.location.ray_worker_logs.size() == 1 ? "" : "s");
  TriageOptions triage_options;
  triage_options.signatures = &signatures;
  triage_options.now = options.now;
  triage_options.deadline = options.remote.deadline;
  auto facts = TriageJob(job.location, triage_options);
  if (!facts.ok()) return facts.status().WithContext("job " + ref);
  job.facts = std::move(facts).value();
  Log().debug("triage {}: status {}, failure class '{}', last step {}", job.facts.id, ToString(job.facts.status),
              job.facts.failure_class, job.facts.progress.last_step.value_or(-1));
  return Status::Ok();
}

// rules/ and playbooks/ parsed on a thread, unless the caller shares a parsed rulebook: the
// playbooks take longer to parse than the logs to triage, and neither triage nor discovery needs
// them; what they need is handed over as soon as it is parsed.
class RulebookLoading {
 public:
  explicit RulebookLoading(const DiagnoseOptions& options) {
    if (options.rulebook) {
      rules_ = {{options.rulebook, &options.rulebook->signatures}, {options.rulebook, &options.rulebook->discovery}};
      book_ = options.rulebook;
      return;
    }
    auto parsed = std::make_shared<std::promise<RulesBeforePlaybooks>>();
    rules_parsed_ = parsed->get_future();
    loading_ = std::async(std::launch::async, [parsed, data_dir = options.data_dir, dirs = options.playbook_dirs] {
      bool handed_over = false;
      // A load that fails (or throws) before those rules hands over none: the waiter then asks why.
      struct HandOverNone {
        std::promise<RulesBeforePlaybooks>& promise;
        bool& handed_over;
        ~HandOverNone() {
          if (!handed_over) promise.set_value({});
        }
      } hand_over_none{*parsed, handed_over};
      auto book = LoadRulebook(data_dir, dirs, [&](const RulesBeforePlaybooks& rules) {
        parsed->set_value(rules);
        handed_over = true;
      });
      Log().debug("rulebook parsed (rules/ and playbooks/)");
      return book;
    });
  }
  // Null pointers when the rulebook failed to load before them (Finish says why).
  const RulesBeforePlaybooks& Rules() {
    if (!rules_.signatures && rules_parsed_.valid()) rules_ = rules_parsed_.get();
    return rules_;
  }
  StatusOr<std::shared_ptr<const Rulebook>> Finish() {
    if (loading_.valid()) {
      const auto waiting_from = std::chrono::steady_clock::now();
      book_ = loading_.get();
      // On the critical path when the logs and discovery were done before the playbooks (-vv).
      Log().debug("waited {:.3f} s for the rulebook to parse",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting_from).count());
    }
    return book_;
  }

 private:
  RulesBeforePlaybooks rules_;
  std::future<RulesBeforePlaybooks> rules_parsed_;
  std::future<StatusOr<std::shared_ptr<const Rulebook>>> loading_;
  StatusOr<std::shared_ptr<const Rulebook>> book_ = std::shared_ptr<const Rulebook>();
};

// The jobs triaged, with the rules triage and discovery read; the playbooks may still be loading
// (options.rulebook is set by FinishRulebook).
struct TriagedJobs {
  DiagnoseOptions options;
  std::vector<JobContext> jobs;
  RulebookLoading loading;
  RulesBeforePlaybooks rules;

  Status FinishRulebook() {
    ASSIGN_OR_RETURN(options.rulebook, loading.Finish());
    return Status::Ok();
  }
};

// The subject, then the baseline when there is one (and `with_baseline`), located and triaged.
// Their private servers start as each is located and the rulebook loads meanwhile; what fails is
// reported as it would be one stage after the other: the rulebook first, then the subject's
// location and triage, then the baseline's.
StatusOr<TriagedJobs> ResolveAndTriage(const DiagnoseOptions& raw_options, bool with_baseline = true) {
  DiagnoseOptions options = raw_options;
  if (options.data_dir.empty()) options.data_dir = DefaultDataDir();
  RulebookLoading loading(options);
  const std::string outputs = DefaultOutputsDir(options.outputs_dir);
  StatusOr<JobContext> subject = Locate(options.job_ref, outputs, JobRole::kSubject, options);
  std::optional<StatusOr<JobContext>> baseline;
  if (with_baseline && options.baseline_ref)
    baseline = Locate(*options.baseline_ref, outputs, JobRole::kBaseline, options);
  const RulesBeforePlaybooks rules = loading.Rules();
  if (!rules.signatures) {
    StatusOr<std::shared_ptr<const Rulebook>> book = loading.Finish();
    return book.ok() ? InternalError("the rulebook loaded without handing over its rules") : book.status();
  }
  Status triaged = subject.status();
  if (triaged.ok()) triaged = Triage(*subject, options.job_ref, *rules.signatures, options);
  if (triaged.ok() && baseline) {
    triaged = baseline->status();
    if (triaged.ok()) triaged = Triage(**baseline, *options.baseline_ref, *rules.signatures, options);
  }
  if (!triaged.ok()) {
    RETURN_IF_ERROR(loading.Finish().status());
    return triaged;
  }
  std::vector<JobContext> jobs;
  jobs.push_back(std::move(subject).value());
  if (baseline) jobs.push_back(std::move(*baseline).value());
  return TriagedJobs{std::move(options), std::move(jobs), std::move(loading), rules};
}

// The window the log knows the job ran in, to narrow discovery on a TSDB that holds other jobs.
std::optional<TimeRange> LogWindow(const JobFacts& facts) {
  if (!facts.heartbeat.crash_time) return std::nullopt;
  double end = static_cast<double>(facts.heartbeat.crash_time->epoch);
  double span = facts.progress.sum_step_seconds + 3600;
  return TimeRange{end - span, end + 600};
}

std::string FormatRange(const TimeRange& r) {
  return IsoUtc(r.start) + ".." + IsoUtc(r.end);
}

// What discovery found through a failing source is not about the job: drop it with the state.
void MarkFailed(JobContext& job, std::string reason) {
  job.tsdb.state = TsdbAvailability::kFailed;
  job.tsdb.reason = std::move(reason);
  job.tsdb.discovery = nullptr;
  job.tsdb.gaps.clear();
}

// What an endpoint that holds more than this job is asked about: --window for the subject, else
// the log's run window, padded for the scrapes before the first step and the flush after the end.
// An end missing from the log is estimated from the steps' total time plus an hour of setup.
std::optional<TimeRange> RemoteSearchWindow(const JobContext& job, const DiagnoseOptions& options,
                                            std::string* provenance) {
  if (job.role == JobRole::kSubject && options.window) {
    *provenance = "--window " + FormatRange(*options.window);
    return options.window;
  }
  const RunWindow& w = job.facts.run_window;
  const double pad = 600, span = job.facts.progress.sum_step_seconds + 3600;
  std::optional<TimeRange> range;
  if (w.start && w.end) range = TimeRange{static_cast<double>(*w.start), static_cast<double>(*w.end)};
  else if (w.end) range = TimeRange{static_cast<double>(*w.end) - span, static_cast<double>(*w.end)};
  else if (w.start) range = TimeRange{static_cast<double>(*w.start), static_cast<double>(*w.start) + span};
  if (!range) return std::nullopt;
  range->start -= pad;
  range->end += pad;
  *provenance = "asked about " + FormatRange(*range) + ", the job's run from its log (start: " +
                (w.start ? w.start_source : "end minus the steps' time") +
                ", end: " + (w.end ? w.end_source : "start plus the steps' time") +
                ") with 10 minutes either side; --window START..END overrides it";
  return range;
}

void Discover(JobContext& job, const DiscoveryRules& rules, const DiscoveryInputs& base_inputs,
              std::optional<std::chrono::steady_clock::time_point> deadline) {
  DiscoveryInputs inputs = base_inputs;
  inputs.deadline = deadline;
  inputs.expected_hosts = job.facts.header.hosts;
  inputs.logged_addresses = job.facts.header.node_addresses;
  inputs.log_last_step = job.facts.progress.last_step;
  auto discovery = diagnose::Discover(*job.client, inputs, rules);
  if (!discovery.ok()) {
    job.discovery_failure = "discovery failed: " + discovery.status().message();
    // Blocks that all lie outside the job's run are the job's own TSDB telling nothing of it. Any
    // other failure (the source down, an answer it refused to diagnose's own question, no window to
    // ask about) says nothing about the job: its metrics were not read.
    if (inputs.untrusted.empty()) MarkFailed(job, job.discovery_failure);
    else job.tsdb.gaps.push_back(job.discovery_failure);
    return;
  }
  job.discovery = std::move(discovery).value();
  job.tsdb.discovery = job.discovery->ToJson();
  for (auto& sentence : job.discovery->GapSentences()) job.tsdb.gaps.push_back(std::move(sentence));
}

// Clocks that disagree are reported, with what was done about them, whichever of the job's files
// (TSDB or log) showed it.
void NoteClockSkew(JobContext& job) {
  std::optional<double> tsdb_skew_seconds = job.released_clock_skew_seconds;
  if (job.server) tsdb_skew_seconds = job.server->inventory().clock_skew_seconds;
  const double skew = std::max(tsdb_skew_seconds.value_or(0), job.facts.log_clock_skew_seconds);
  if (skew <= 0) return;
  job.tsdb.clock_skew_seconds = skew;
  const std::optional<bool> finished = LogShowsFinished(job.facts);
  char hours[32];
  std::snprintf(hours, sizeof hours, "%.1f h", skew / 3600);
  job.tsdb.notes.push_back(
      "clocks disagree: files of job " + job.facts.id + " carry mtimes up to " + std::to_string(std::lround(skew)) +
      " s (" + hours + ") in the future of this host's clock; file ages were not taken as signs of life, only " +
      (finished == true ? std::string("the job log's end state (finished) and the TSDB lock")
                        : std::string("the TSDB lock (the log shows no end)")));
}

// A private server that would not start for a reason of ours (killed, no port, not ready in time,
// no prometheus binary), not because of the job's data.
bool IsServerStartFailure(const Status& status) {
  return status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded ||
         status.code() == StatusCode::kInternal;
}

// The server started before triage, when it is the one the log now chooses: the blocks the
// log's run leaves out are the ones it left out, and the log's end state does not make the TSDB
// live. A start that failed for a reason of ours is the first start, as it would have been; one
// that failed on the job's data, or a server the log would not have started, is dropped (stopped
// and removed), and nullopt has the log's own choice started.
std::optional<StartedServer> ClaimEarlyServer(JobContext& job, const PrivatePrometheusOptions& chosen) {
  if (!job.early_server.valid()) return std::nullopt;
  StartedServer early = job.early_server.get();
  if (!early.ok()) {
    if (IsServerStartFailure(early.status())) return early;
    return std::nullopt;
  }
  const PrivatePrometheus& server = **early;
  const bool same_blocks = BlocksOutsideLoggedRun(server.inventory().blocks, chosen.logged_run) == server.unserved_blocks();
  const bool servable =
      chosen.blocks_only || CheckNotLive(server.inventory(), chosen.live_write_window_seconds, chosen.job_finished).ok();
  if (same_blocks && servable) return early;
  Log().debug("the Prometheus started before triage serves {}; starting the one the log chooses",
              same_blocks ? "a TSDB the log shows live" : "blocks outside the job's logged run");
  return std::nullopt;
}

// Opens the job's metrics: --prometheus URL, else a private Prometheus on a copy of the snapshot.
// What the job lacks (no prometheus/ dir, an empty or unreadable TSDB, a live one) leaves
// tsdb.state "unavailable" with the reason, and the report falls back to the logs. What diagnose
// failed to do (start a server, reach the endpoint) leaves it "failed": never a fact about the job.
// Returns an error only for what the user must fix first (a malformed URL, a missing CA file).
Status OpenTsdb(JobContext& job, const DiagnoseOptions& options, const DiscoveryRules& rules) {
  if (!options.remote.url.empty()) {
    job.tsdb.mode = TsdbMode::kRemote;
    job.tsdb.source = ShownUrl(options.remote.url);
    Stage("querying {} for job {}", job.tsdb.source, job.facts.id);
    auto client = HttpQueryClient::Create(options.remote, "endpoint " + job.tsdb.source);
    if (!client.ok()) return client.status();
    job.remote = std::move(client).value();
    QueryClient* source = job.remote.get();
    if (!options.job_label.empty()) {
      ASSIGN_OR_RETURN(std::string matcher, JobMatcher(options.job_label, job.facts.id));
      job.scoped = std::make_unique<JobScopedClient>(*job.remote, matcher);
      source = job.scoped.get();
      job.tsdb.scope = matcher;
    }
    job.recorder = std::make_unique<SourceFailureRecorder>(*source);
    job.client = job.recorder.get();
    job.tsdb.state = TsdbAvailability::kRemote;
    std::string provenance;
    std::optional<TimeRange> window = RemoteSearchWindow(job, options, &provenance);
    job.tsdb.window = provenance;
    Discover(job, rules, DiscoveryInputs{.search_window = window}, options.remote.deadline);
    return Status::Ok();
  }
  job.tsdb.mode = TsdbMode::kPrivateCopy;
  if (!job.location.prometheus_dir) {
    job.tsdb.state = TsdbAvailability::kUnavailable;
    job.tsdb.reason = "no prometheus/ directory in " +
                      job.location.job_dir.value_or(job.location.log_path.value_or(job.location.id)) +
                      " (RAY=0 job, or the TSDB was never written)";
    return Status::Ok();
  }
  job.tsdb.source = *job.location.prometheus_dir;
  const PrivatePrometheusOptions server_options = ServerOptions(options, &job.facts);
  std::optional<StartedServer> claimed = ClaimEarlyServer(job, server_options);
  if (!claimed) {
    Stage("starting Prometheus on {}", *job.location.prometheus_dir);
    claimed = PrivatePrometheus::Start(*job.location.prometheus_dir, server_options);
  }
  StartedServer server = std::move(*claimed);
  if (!server.ok() && IsServerStartFailure(server.status()) && !job.server_restarted) {   // it may have been killed
    job.server_restarted = true;
    server = PrivatePrometheus::Start(*job.location.prometheus_dir, server_options);
  }
  if (!server.ok()) {
    if (IsServerStartFailure(server.status())) {
      MarkFailed(job, "the private Prometheus failed after one restart: " + server.status().message());
    } else {
      job.tsdb.state = TsdbAvailability::kUnavailable;
      job.tsdb.reason = server.status().message();
    }
    return Status::Ok();
  }
  job.server = std::move(server).value();
  if (const auto& unserved = job.server->unserved_blocks(); !unserved.empty()) {
    Stage("served {} of {} blocks: {} outside the job's logged run (by more than a day) were not loaded",
          job.server->inventory().blocks.size() - unserved.size(), job.server->inventory().blocks.size(),
          unserved.size());
  }
  job.recorder = std::make_unique<SourceFailureRecorder>(job.server->client());
  job.client = job.recorder.get();
  job.tsdb.state = TsdbAvailability::kServed;
  for (const auto& caveat : job.server->caveats()) job.tsdb.gaps.push_back(caveat);
  Discover(job, rules, InputsForSnapshot(job.server->inventory(), LogWindow(job.facts), LoggedRun(job.facts)),
           options.remote.deadline);
  return Status::Ok();
}

// Each job's TSDB opened (or the reason it is not) with its discovery; nothing with --logs-only.
Status OpenTsdbs(std::vector<JobContext>& jobs, const DiagnoseOptions& options, const DiscoveryRules& rules) {
  if (options.logs_only) {
    for (auto& job : jobs) {
      job.tsdb.state = TsdbAvailability::kNotRequested;
      job.tsdb.reason = "--logs-only";
    }
    return Status::Ok();
  }
  for (auto& job : jobs)
    // Only jobs never opened, or closed for a restart: a job without a TSDB is not asked twice.
    if (job.tsdb.mode == TsdbMode::kNone) RETURN_IF_ERROR(OpenTsdb(job, options, rules));
  return Status::Ok();
}

// The source of each job whose requests failed, in a sentence; a dead private server says how it died.
std::string SourceFailureReason(JobContext& job) {
  if (job.server) {
    if (Status health = job.server->Health(); !health.ok()) return health.message();
  }
  return job.recorder ? job.recorder->Summary() : job.tsdb.reason;
}

// diagnose could not read metrics it needed: the log-only view must not drive a sweep as if the
// metrics had been seen. Which jobs' metrics failed, and why; nullopt when none did.
std::optional<Incompleteness> IncompletenessOf(const std::vector<JobContext>& jobs) {
  std::string why;
  for (const auto& job : jobs) {
    if (job.tsdb.state != TsdbAvailability::kFailed) continue;
    if (!why.empty()) why += "; ";
    why += "metrics of job " + job.facts.id + ": " + job.tsdb.reason;
  }
  if (why.empty()) return std::nullopt;
  return Incompleteness{why};
}

}  // namespace

StatusOr<JobEvaluationInputs> PrepareJobInputs(const DiagnoseOptions& raw_options) {
  ASSIGN_OR_RETURN(TriagedJobs triaged, ResolveAndTriage(raw_options));
  RETURN_IF_ERROR(triaged.FinishRulebook());
  const DiagnoseOptions& options = triaged.options;
  std::vector<JobContext>& jobs = triaged.jobs;
  JobEvaluationInputs inputs;
  if (!options.logs_only) {
    for (auto& job : jobs) {
      RETURN_IF_ERROR(OpenTsdb(job, options, options.rulebook->discovery));
      if (job.SourceFailed()) MarkFailed(job, SourceFailureReason(job));
      if (job.tsdb.state == TsdbAvailability::kUnavailable || job.tsdb.state == TsdbAvailability::kFailed)
        inputs.notes.push_back(std::string(ToString(job.role)) + " TSDB " + std::string(ToString(job.tsdb.state)) + ": " + job.tsdb.reason);
    }
  }
  inputs.facts = jobs[0].facts;
  if (jobs[0].discovery) inputs.discovery = dag::PlaybookDiscoveryJson(*jobs[0].discovery);
  if (jobs.size() > 1) {
    inputs.baseline_facts = jobs[1].facts;
    if (jobs[1].discovery) inputs.baseline_discovery = dag::PlaybookDiscoveryJson(*jobs[1].discovery);
  }
  return inputs;
}

namespace {
class OpenedJob : public OpenedJobMetrics {
 public:
  explicit OpenedJob(JobContext job) : job_(std::move(job)) {}
  QueryClient* client() override { return job_.discovery && job_.tsdb.state != TsdbAvailability::kFailed ? job_.client : nullptr; }
  std::optional<TimeRange> range() const override {
    if (!job_.discovery) return std::nullopt;
    return job_.discovery->range;
  }
  std::string unavailable_reason() const override {
    if (!job_.tsdb.reason.empty()) return job_.tsdb.reason;
    if (!job_.discovery_failure.empty()) return job_.discovery_failure;
    return "no TSDB (" + std::string(ToString(job_.tsdb.state)) + ")";
  }
  std::string source() const override { return job_.tsdb.source; }
  const JobFacts& facts() const override { return job_.facts; }

 private:
  JobContext job_;
};
}  // namespace

StatusOr<std::unique_ptr<OpenedJobMetrics>> OpenJobMetrics(const DiagnoseOptions& raw_options) {
  ASSIGN_OR_RETURN(TriagedJobs triaged, ResolveAndTriage(raw_options, /*with_baseline=*/false));
  RETURN_IF_ERROR(triaged.FinishRulebook());
  const DiagnoseOptions& options = triaged.options;
  JobContext& job = triaged.jobs.front();
  RETURN_IF_ERROR(OpenTsdb(job, options, options.rulebook->discovery));
  if (job.SourceFailed()) MarkFailed(job, SourceFailureReason(job));
  return std::unique_ptr<OpenedJobMetrics>(std::make_unique<OpenedJob>(std::move(job)));
}

// A store of many jobs (--job-label) also holds what diagnose concluded about the earlier ones
// (`diagnose fleet import`): the decision cites their exclusions of this job's hosts. The store is
// asked outside the job's scope, and a failure to ask costs a note, never the report.
FleetCitation CiteFleetRecord(JobContext& subject, const DiagnoseOptions& options, const Decision& decision) {
  FleetCitation citation;
  if (options.job_label.empty() || !subject.remote || !subject.discovery) return citation;
  constexpr double kLookbackSeconds = 90 * 86400;
  std::vector<std::string> excluded;
  for (const auto& x : decision.exclude) excluded.push_back(x.host);
  auto notes = FleetRecordNotes(*subject.remote, options.job_label, subject.facts.id, subject.facts.header.hosts,
                                excluded, subject.discovery->range.end, kLookbackSeconds);
  if (!notes.ok()) {
    citation.notes.push_back("fleet record not read: " + notes.status().message());
    return citation;
  }
  citation.notes = std::move(notes).value();
  return citation;
}

StatusOr<Report> RunDiagnosis(const DiagnoseOptions& options) {
  ASSIGN_OR_RETURN(DecidedReport decided, RunDecidedDiagnosis(options));
  return std::move(decided.report);
}

// Samples the jobs' private servers said their query answers read so far; absent when no job has one.
std::optional<int64_t> PrivateServerSamplesRead(std::vector<JobContext>& jobs) {
  std::optional<int64_t> total;
  for (auto& job : jobs)
    if (job.server) total = total.value_or(0) + job.server->client().samples_read();
  return total;
}

// The profile drill's finding, and its verdict over the diagnosis: against the baseline job's
// profile when a baseline is given, else against the job's own healthy level.
void ApplyProfileDrill(const std::vector<JobContext>& jobs, const DiagnoseOptions& options, ReportParts& parts) {
  if (!parts.profile) return;
  if (jobs.size() > 1) {
    const std::optional<JobProfile> baseline_profile =
        DrillJobProfile(jobs[1].facts, options.data_dir, options.remote.deadline);
    if (auto finding = ProfileRegressionFinding(jobs.front().facts, *parts.profile, jobs[1].facts,
                                                baseline_profile ? &*baseline_profile : nullptr)) {
      parts.diagnosis = WithProfileVerdict(std::move(parts.diagnosis), *finding, kAgainstBaseline, jobs.front().facts.status);
      parts.profile_findings.push_back(std::move(*finding));
    }
  } else if (auto finding = SlowPhaseProfileFinding(jobs.front().facts, *parts.profile)) {
    if (finding->status == FindingStatus::kFired)
      parts.diagnosis = WithProfileVerdict(std::move(parts.diagnosis), *finding, kAgainstOwnHealthyLevel, jobs.front().facts.status);
    parts.profile_findings.push_back(std::move(*finding));
  }
}

namespace {

// Hands on the private servers once every job's server answered every question (no failure recorded)
// before the run's deadline: nothing more is asked of them, so they close while the last rules are
// judged. When any job's source failed, all stay open: its restart asks every job everything again.
void CloseAnsweredServers(std::vector<JobContext>& jobs, const DiagnoseOptions& options, BackgroundWork& closing) {
  if (options.remote.deadline && Clock::now() >= *options.remote.deadline) return;
  if (std::any_of(jobs.begin(), jobs.end(), [](JobContext& job) { return job.SourceFailed(); })) return;
  for (auto& job : jobs)
    if (std::shared_ptr<PrivatePrometheus> server = job.ReleaseServer()) closing.Run([server] { server->Stop(); });
}

// After the playbooks ran: a job whose private server died under it (killed, crashed) gets it
// restarted once, and true asks for everything again; a second failure, a remote endpoint's failure
// or a passed deadline marks the job's metrics failed instead.
bool RestartFailedServersOnce(std::vector<JobContext>& jobs, const DiagnoseOptions& options) {
  const bool deadline_passed = options.remote.deadline && Clock::now() >= *options.remote.deadline;
  bool restarted = false;
  for (auto& job : jobs) {
    // Past the deadline the evaluation skipped what it had not reached: as incomplete as a failure.
    const bool out_of_time = deadline_passed && (job.client != nullptr || job.server_released);
    if (!job.SourceFailed() && !out_of_time) continue;
    std::string reason = job.SourceFailed() ? SourceFailureReason(job) : "rules of its playbooks were left unevaluated";
    if (deadline_passed) {
      const double d = options.deadline_seconds;
      const std::string shown = d == std::floor(d) ? std::to_string(static_cast<int64_t>(d)) : FixedDecimal(d, 1);
      reason = "the run's deadline of " + shown + " s (--deadline) passed before the metrics were read; " + reason;
    } else if (job.server && !job.server_restarted && !job.recorder->limit_hit()) {
      Log().warn("the private Prometheus of job {} failed ({}); restarting it and asking again", job.facts.id, reason);
      job.CloseTsdb();
      job.server_restarted = true;
      restarted = true;
      continue;
    }
    MarkFailed(job, reason);
  }
  return restarted;
}

// --deadline from `started`, saturated at about 31 years (what a request without a deadline waits at
// most): 1e300 s must not overflow the clock into the past.
Clock::time_point DeadlineAfter(Clock::time_point started, double seconds) {
  constexpr double kLongestDeadlineSeconds = 1e9;
  return started + std::chrono::milliseconds(static_cast<int64_t>(std::min(seconds, kLongestDeadlineSeconds) * 1000));
}

}  // namespace

StatusOr<DecidedReport> RunDecidedDiagnosis(const DiagnoseOptions& raw_options) {
  auto started = Clock::now();
  DiagnoseOptions timed_options = raw_options;
  if (timed_options.deadline_seconds > 0) timed_options.remote.deadline = DeadlineAfter(started, timed_options.deadline_seconds);
  ASSIGN_OR_RETURN(TriagedJobs triaged, ResolveAndTriage(timed_options));
  DiagnoseOptions& options = triaged.options;
  std::vector<JobContext>& jobs = triaged.jobs;
  std::vector<LogAssessment> assessments;
  for (const auto& job : jobs) assessments.push_back(AssessLogs(job.facts, *triaged.rules.signatures, job.role));
  double triage_seconds = SecondsSince(started);

  // Metrics, then playbooks. A private server that died under us (killed, crashed) is restarted
  // once and everything asked again; a second failure, or any failure of a remote endpoint, makes
  // the diagnosis incomplete rather than letting missing answers pass for facts about the job.
  ReportParts parts;
  double tsdb_seconds = 0, playbooks_seconds = 0;
  // Over every attempt, a restart's included.
  int64_t playbook_requests = 0, playbook_points = 0, playbook_derived = 0;
  std::optional<int64_t> playbook_samples;              // what the private servers read for them
  bool playbooks_loaded = false;
  BackgroundWork closing_here;
  BackgroundWork& closing = options.closing ? *options.closing : closing_here;
  while (true) {
    auto tsdb_started = Clock::now();
    const Status opened = OpenTsdbs(jobs, options, *triaged.rules.discovery);
    tsdb_seconds += SecondsSince(tsdb_started);
    if (!playbooks_loaded) {   // they loaded while the metrics were opened; their errors come first
      RETURN_IF_ERROR(triaged.FinishRulebook());
      for (const auto& id : options.forced_playbooks)
        if (options.rulebook->library.FindPlaybook(id) == nullptr)
          return InvalidArgumentError("--playbook " + id + ": no such playbook");
      playbooks_loaded = true;
    }
    RETURN_IF_ERROR(opened);
    const playbook::Library& library = options.rulebook->library;

    auto playbooks_started = Clock::now();
    dag::EvaluationContext ctx;
    ctx.facts = jobs.front().facts;
    ctx.facts["tsdb_requested"] = !options.logs_only;   // --logs-only: a missing TSDB is not a gap
    // "failed": diagnose could not read the metrics, which is no fact about the job (not a gap either).
    ctx.facts["tsdb_state"] = std::string(ToString(jobs.front().tsdb.state));
    ctx.requested_playbooks = options.forced_playbooks;
    ctx.deadline = options.remote.deadline;
    if (jobs.front().discovery) ctx.discovery = dag::PlaybookDiscoveryJson(*jobs.front().discovery);
    else ctx.discovery_failure = jobs.front().discovery_failure;
    ctx.subject = jobs.front().client;
    if (jobs.size() > 1) {
      ctx.baseline_facts = jobs[1].facts;
      if (jobs[1].discovery) ctx.baseline_discovery = dag::PlaybookDiscoveryJson(*jobs[1].discovery);
      ctx.baseline = jobs[1].client;
    }
    Stage("running playbooks");
    const std::optional<int64_t> samples_before = PrivateServerSamplesRead(jobs);
    std::optional<int64_t> samples_when_closed;
    ctx.on_last_query_answered = [&] {
      samples_when_closed = PrivateServerSamplesRead(jobs);
      CloseAnsweredServers(jobs, options, closing);
    };
    auto run = dag::RunPlaybooks(library, ctx);
    if (const auto samples_after = samples_when_closed ? samples_when_closed : PrivateServerSamplesRead(jobs))
      playbook_samples = playbook_samples.value_or(0) + *samples_after - samples_before.value_or(0);
    if (!run.ok()) return run.status().WithContext("compiling the playbooks");
    Stage("playbooks: {} selected, {} queries in {} batches ({} rules shared a request, {} answers computed from "
          "another's, {} points returned), {} fired",
          run->selection.selected.size(), run->evaluation.queries_run, run->evaluation.batches,
          run->evaluation.queries_shared, run->evaluation.queries_derived, run->evaluation.points_returned,
          std::count_if(run->evaluation.findings.begin(), run->evaluation.findings.end(),
                        [](const Finding& f) { return f.status == FindingStatus::kFired; }));
    parts.playbooks = dag::OutcomeOf(*run);
    playbooks_seconds += SecondsSince(playbooks_started);
    playbook_requests += run->evaluation.queries_run;
    playbook_points += run->evaluation.points_returned;
    playbook_derived += run->evaluation.queries_derived;
    // What a diagnosis no longer reads goes to `closing`: freeing a run's answers, rules' values and
    // report parts took ~3 ms at the end of every diagnosis, before its report could be written.
    closing.Discard(std::move(run));
    closing.Discard(std::move(ctx));

    if (!RestartFailedServersOnce(jobs, options)) break;
  }

  for (size_t i = 0; i < jobs.size(); ++i) {
    NoteClockSkew(jobs[i]);
    AssessedJob assessed{jobs[i].facts, std::move(assessments[i]), jobs[i].tsdb, {}};
    if (jobs[i].discovery)
      for (const auto& st : jobs[i].discovery->step_times) assessed.step_times.emplace_back(st.step, st.time);
    parts.jobs.push_back(std::move(assessed));
  }
  // Nothing more is asked of the private servers still open: they close while the verdict is reached.
  for (auto& job : jobs) {
    if (std::shared_ptr<PrivatePrometheus> server = job.ReleaseServer()) closing.Run([server] { server->Stop(); });
  }
  parts.profile = DrillJobProfile(jobs.front().facts, options.data_dir, options.remote.deadline);
  parts.diagnosis = Diagnose(parts.jobs.front().logs, parts.playbooks, MetricsNotes(parts.jobs));
  ApplyProfileDrill(jobs, options, parts);
  parts.incompleteness = IncompletenessOf(jobs);
  if (!parts.incompleteness) {
    SweepContext sweep_context = options.sweep.value_or(SweepContext{});
    if (!options.sweep) sweep_context.now = options.now.value_or(static_cast<int64_t>(std::time(nullptr)));
    if (options.before_deciding) options.before_deciding();
    ASSIGN_OR_RETURN(parts.sweep, DecideSweep(options.rulebook->decisions, options.history_file, sweep_context,
                                              parts.diagnosis, jobs.front().facts));
    parts.fleet = CiteFleetRecord(jobs.front(), options, parts.sweep->decision);
  }

  DecidedReport decided{AssembleReport(parts), std::move(parts.sweep)};
  decided.report.timings = {{"triage", triage_seconds},
                            {"tsdb", tsdb_seconds},
                            {"playbooks", playbooks_seconds},
                            {"total", SecondsSince(started)},
                            {"playbook_requests", playbook_requests},
                            {"playbook_points_returned", playbook_points},
                            {"playbook_answers_derived", playbook_derived}};
  if (playbook_samples) decided.report.timings["playbook_samples_read"] = *playbook_samples;
  closing.Discard(std::move(parts));
  closing.Discard(std::move(triaged));   // the rulebook too, unless the caller shares it
  return decided;
}

}  // namespace diagnose
