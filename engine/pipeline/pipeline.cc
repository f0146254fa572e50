#include "engine/pipeline/pipeline.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "engine/discovery/discovery.h"
#include "engine/job/job_location.h"
#include "engine/triage/signature_table.h"
#include "engine/triage/triage.h"
#include "engine/tsdb/http_query_client.h"
#include "engine/tsdb/private_prometheus.h"

namespace diagnose {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One job of the report (subject or baseline) with everything opened for it. Members are
// destroyed in reverse order: the client before the server that serves it.
struct JobContext {
  JobLocation location;
  JobFacts facts;
  std::string role;
  TsdbState tsdb;
  std::unique_ptr<PrivatePrometheus> server;
  std::unique_ptr<HttpQueryClient> remote;
  std::optional<Discovery> discovery;
  QueryClient* client = nullptr;   // server->client() or remote, whichever is open
};

JobEntry MakeJobEntry(const JobContext& job) {
  JobEntry entry;
  entry.id = job.facts.id.empty() ? job.location.id : job.facts.id;
  entry.role = job.role;
  entry.dir = job.location.job_dir.value_or(job.location.log_path.value_or(""));
  entry.status = job.facts.status;
  entry.failure_class = job.facts.failure_class;
  entry.hosts = job.facts.header.hosts;
  entry.first_step = job.facts.progress.first_step;
  entry.last_step = job.facts.progress.last_step;
  entry.total_steps = job.facts.progress.total_steps;
  return entry;
}

StatusOr<JobContext> LocateAndTriage(const std::string& ref, const std::string& outputs_dir,
                                     const std::string& role, const DiagnoseOptions& options) {
  JobContext job;
  job.role = role;
  ASSIGN_OR_RETURN(job.location, ResolveJob(ref, outputs_dir));
  TriageOptions triage_options;
  triage_options.rules_dir = (fs::path(options.data_dir) / "rules").string();
  triage_options.now = options.now;
  auto facts = TriageJob(job.location, triage_options);
  if (!facts.ok()) return facts.status().WithContext("job " + ref);
  job.facts = std::move(facts).value();
  return job;
}

// The window the log knows the job ran in, to narrow discovery on a TSDB that holds other jobs.
std::optional<TimeRange> LogWindow(const JobFacts& facts) {
  if (!facts.heartbeat.crash_time) return std::nullopt;
  double end = static_cast<double>(facts.heartbeat.crash_time->epoch);
  double span = facts.progress.sum_step_seconds + 3600;
  return TimeRange{end - span, end + 600};
}

void Discover(JobContext& job, const DiscoveryRules& rules, const DiscoveryInputs& base_inputs) {
  DiscoveryInputs inputs = base_inputs;
  inputs.expected_hosts = job.facts.header.hosts;
  inputs.log_last_step = job.facts.progress.last_step;
  auto discovery = diagnose::Discover(*job.client, inputs, rules);
  if (!discovery.ok()) {
    job.tsdb.gaps.push_back("discovery failed: " + discovery.status().message());
    return;
  }
  job.discovery = std::move(discovery).value();
  job.tsdb.discovery = job.discovery->ToJson();
  for (auto& sentence : job.discovery->GapSentences()) job.tsdb.gaps.push_back(std::move(sentence));
}

// Opens the job's metrics: --prometheus URL, else a private Prometheus on a copy of the snapshot.
// Any failure leaves tsdb.state "unavailable" with the reason; the report then falls back to logs.
void OpenTsdb(JobContext& job, const DiagnoseOptions& options, const DiscoveryRules& rules) {
  if (!options.remote.url.empty()) {
    job.tsdb.mode = "remote";
    job.tsdb.source = options.remote.url;
    auto client = HttpQueryClient::Create(options.remote, "endpoint " + options.remote.url);
    if (!client.ok()) {
      job.tsdb.state = "unavailable";
      job.tsdb.reason = client.status().message();
      return;
    }
    job.remote = std::move(client).value();
    job.client = job.remote.get();
    job.tsdb.state = "remote";
    Discover(job, rules, DiscoveryInputs{.search_window = LogWindow(job.facts)});
    return;
  }
  job.tsdb.mode = "private-copy";
  if (!job.location.prometheus_dir) {
    job.tsdb.state = "unavailable";
    job.tsdb.reason = "no prometheus/ directory in " +
                      job.location.job_dir.value_or(job.location.log_path.value_or(job.location.id)) +
                      " (RAY=0 job, or the TSDB was never written)";
    return;
  }
  job.tsdb.source = *job.location.prometheus_dir;
  PrivatePrometheusOptions server_options;
  server_options.blocks_only = options.blocks_only;
  auto server = PrivatePrometheus::Start(*job.location.prometheus_dir, server_options);
  if (!server.ok()) {
    job.tsdb.state = "unavailable";
    job.tsdb.reason = server.status().message();
    return;
  }
  job.server = std::move(server).value();
  job.client = &job.server->client();
  job.tsdb.state = "served";
  for (const auto& caveat : job.server->caveats()) job.tsdb.gaps.push_back(caveat);
  Discover(job, rules, InputsForSnapshot(job.server->inventory(), LogWindow(job.facts)));
}

// What the logs alone decide (the signature table's log-only verdicts), before any playbook.
void ApplyLogVerdict(const JobFacts& facts, const SignatureTable& signatures, Report& report) {
  const FailureSignature* primary =
      facts.failure_class.empty() ? nullptr : signatures.Find(facts.failure_class);
  if (primary != nullptr && primary->verdict) {
    report.verdict.root_cause = primary->verdict->root_cause;
    report.verdict.confidence = primary->verdict->confidence;
    report.verdict.domain = DomainOfRootCause(primary->verdict->root_cause);
    report.verdict.summary = primary->summary;
    report.decision.action = primary->verdict->action;
    return;
  }
  if (facts.failure_class.empty() && (facts.status == "completed" || facts.status == "running")) {
    report.verdict.root_cause = "none";
    report.verdict.domain = "none";
    report.verdict.confidence = "likely";
    report.verdict.summary = "The logs show no failure" +
                             std::string(facts.status == "running" ? " so far." : ".");
    report.decision.action = "none";
    return;
  }
  report.verdict.root_cause = "unknown";
  report.verdict.domain = "none";
  report.verdict.confidence = "insufficient-evidence";
  report.verdict.summary = primary != nullptr ? primary->summary
                                              : "The logs alone do not name a cause.";
  report.decision.action = "none";
  if (primary != nullptr)
    for (const auto& question : primary->tsdb_questions)
      report.decision.notes.push_back("TSDB question: " + question);
}

}  // namespace

std::string DefaultDataDir() {
  if (const char* env = std::getenv("DIAGNOSE_DATA_DIR"); env != nullptr && *env != '\0') return env;
  // Installed next to the binary (<prefix>/bin/diagnose -> <prefix>/share/diagnose), else the
  // source tree this binary was built from.
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path share = exe.parent_path().parent_path() / "share" / "diagnose";
    if (fs::is_directory(share / "rules", ec)) return share.string();
  }
  return DIAGNOSE_SOURCE_DIR;
}

StatusOr<Report> RunDiagnosis(const DiagnoseOptions& raw_options) {
  auto started = Clock::now();
  DiagnoseOptions options = raw_options;
  if (options.data_dir.empty()) options.data_dir = DefaultDataDir();
  const std::string outputs = DefaultOutputsDir(options.outputs_dir);
  const fs::path rules_dir = fs::path(options.data_dir) / "rules";

  ASSIGN_OR_RETURN(SignatureTable signatures,
                   LoadSignatureTable((rules_dir / "triage" / "failure-signatures.yaml").string()));
  std::vector<JobContext> jobs;
  {
    ASSIGN_OR_RETURN(JobContext subject, LocateAndTriage(options.job_ref, outputs, "subject", options));
    jobs.push_back(std::move(subject));
  }
  if (options.baseline_ref) {
    ASSIGN_OR_RETURN(JobContext baseline,
                     LocateAndTriage(*options.baseline_ref, outputs, "baseline", options));
    jobs.push_back(std::move(baseline));
  }
  double triage_seconds = SecondsSince(started);

  Report report;
  ApplyLogVerdict(jobs.front().facts, signatures, report);

  auto tsdb_started = Clock::now();
  if (!options.logs_only) {
    ASSIGN_OR_RETURN(DiscoveryRules discovery_rules,
                     LoadDiscoveryRules((rules_dir / "discovery.yaml").string()));
    for (auto& job : jobs) OpenTsdb(job, options, discovery_rules);
  } else {
    for (auto& job : jobs) {
      job.tsdb.state = "not-requested";
      job.tsdb.reason = "--logs-only";
    }
  }
  double tsdb_seconds = SecondsSince(tsdb_started);

  for (const auto& job : jobs) {
    report.jobs.push_back(MakeJobEntry(job));
    report.tsdb.push_back(job.tsdb);
    report.facts[report.jobs.back().id] = job.facts;
    if (job.tsdb.state == "unavailable")
      report.decision.notes.push_back("TSDB of job " + report.jobs.back().id + " unavailable: " +
                                      job.tsdb.reason + "; conclusions rest on the logs only");
  }
  report.timings = {{"triage", triage_seconds}, {"tsdb", tsdb_seconds}, {"total", SecondsSince(started)}};
  return report;
}

}  // namespace diagnose
