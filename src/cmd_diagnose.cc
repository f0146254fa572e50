// `diagnose JOB [...]`: the contract's main command (shared/reference/diagnose-contract.md).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "engine/core/cleanup_registry.h"
#include "engine/core/logging.h"
#include "engine/pipeline/pipeline.h"
#include "engine/tsdb/endpoint_options.h"
#include "engine/tsdb/job_scoped_client.h"
#include "engine/report/render.h"
#include "src/commands.h"
#include "src/exit_status.h"

namespace diagnose::cli {

namespace {

struct DiagnoseArgs {
  DiagnoseOptions options;
  std::string baseline;
  std::string format;
  std::vector<std::string> headers;
  std::string window;
  int64_t now = 0;
  bool verbose = false;
};

int RunDiagnose(DiagnoseArgs& args) {
  if (args.options.job_ref.empty()) {
    std::fprintf(stderr, "diagnose: no job given (try `diagnose --help`)\n");
    return 2;
  }
  if (!args.baseline.empty()) args.options.baseline_ref = args.baseline;
  if (args.now > 0) args.options.now = args.now;
  for (const auto& raw : args.headers) {
    std::string name, value;
    if (!SplitHeader(raw, &name, &value)) {
      PrintError("diagnose", "--header '" + raw + "' is not of the form 'Name: value'");
      return 2;
    }
    args.options.remote.headers[name] = value;
  }
  if (Status headers = CheckRequestHeaders(args.options.remote); !headers.ok()) {
    PrintError("diagnose", headers.message());
    return 2;
  }
  if (!args.window.empty()) {
    StatusOr<TimeRange> window = ParseTimeRange(args.window);
    if (!window.ok()) {
      PrintError("diagnose", "--window " + window.status().message() +
                                 " (e.g. 2026-02-19T05:58Z..2026-02-19T10:05Z, or epoch seconds)");
      return 2;
    }
    if (args.options.remote.url.empty()) {
      PrintError("diagnose", "--window needs --prometheus: a job's own snapshot knows its time range");
      return 2;
    }
    args.options.window = *window;
  }
  if (!args.options.job_label.empty()) {
    if (args.options.remote.url.empty()) {
      PrintError("diagnose", "--job-label needs --prometheus: a job's own snapshot holds only that job");
      return 2;
    }
    if (StatusOr<std::string> matcher = JobMatcher(args.options.job_label, "x"); !matcher.ok()) {
      PrintError("diagnose", "--job-label " + matcher.status().message());
      return 2;
    }
  }
  std::string format = args.format;
  if (format.empty()) format = isatty(STDOUT_FILENO) ? "text" : "json";
  if (args.options.data_dir.empty()) args.options.data_dir = DefaultDataDir();
  args.options.remote.identify_prometheus = true;

  // Declared before the report: the private server closes while the report is rendered and written.
  // What the diagnosis no longer reads is left to the exit, which follows the report.
  BackgroundWork closing;
  closing.LeaveDiscardsToTheExit();
  args.options.closing = &closing;
  auto report = RunDiagnosis(args.options);
  if (!report.ok()) {
    PrintError("diagnose", report.status().message());
    return 1;
  }
  RenderOptions render_options;
  render_options.color = format == "text" && WantsColor(RequestedColorMode(), STDOUT_FILENO);
  render_options.verbose = args.verbose;
  auto rendered = RenderReport(*report, format, render_options);
  if (!rendered.ok()) {
    PrintError("diagnose", rendered.status().message());
    return 1;
  }
  WriteWholeReport(stdout, *rendered);
  // The end of the time line (-vv): what follows the report is the private server's closing.
  Log().debug("report rendered and handed to stdout ({} bytes)", rendered->size());
  const std::optional<std::string> incomplete = report->incomplete;
  // Left for the process's exit to take back with all its pages at once: freeing its JSON node by
  // node (every range answer's points) cost more than rendering it (85 M instructions on 8308).
  closing.Discard(std::move(report).value());
  const auto closing_from = std::chrono::steady_clock::now();
  closing.Wait();
  Log().debug("waited {:.3f} s after the report for what was left to close (the private server, its copy)",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - closing_from).count());
  if (incomplete) {
    PrintError("diagnose", "job " + args.options.job_ref + ": " + *incomplete);
    return kExitIncomplete;
  }
  return 0;   // main checks that stdout was written and closed
}

}  // namespace

void RegisterDiagnose(CLI::App& app, CommandRegistry& registry) {
  static DiagnoseArgs args;
  auto& o = args.options;
  app.add_option("job", o.job_ref, "Slurm/k8s/local job id, job directory or job log file");
  app.add_option("--outputs", o.outputs_dir, "where job outputs live (default: $DIAGNOSE_OUTPUTS, else ./outputs)");
  app.add_option("--baseline", args.baseline, "a second job to compare against (restore vs fresh, before vs after)");
  // The check is also what shell completion and the man page offer as values.
  app.add_option("--format", args.format, "text|md|json|html (default: text on a terminal, else json)")
      ->check(CLI::IsMember({"text", "md", "json", "html"}));
  app.add_flag("--verbose", args.verbose, "text/md: after the first screen, every check with its evidence");
  app.add_option("--prometheus", o.remote.url,
                 "query this Prometheus-compatible endpoint (live job, Thanos, Mimir, VictoriaMetrics) "
                 "instead of a private Prometheus on the job's snapshot");
  app.add_option("--window", args.window,
                 "with --prometheus: the job's time range START..END (ISO-8601, UTC unless an offset is given, or "
                 "epoch seconds) instead of the one its log gives (artifact id, JOB SUMMARY wall time, log time)");
  app.add_option("--job-label", o.job_label,
                 "with --prometheus: the label that names the job in a store holding many jobs (e.g. slurm_job_id, as "
                 "`diagnose fleet import` writes it); every selector sent gets LABEL=\"<job id>\"");
  app.add_option("--header", args.headers, "extra HTTP header for --prometheus, 'Name: value' (repeatable)");
  app.add_option("--tenant", o.remote.tenant, "X-Scope-OrgID for Mimir/Cortex");
  app.add_flag("--thanos", o.remote.thanos, "Thanos querier: partial_response=false, warnings surfaced");
  app.add_flag("--ask-as-written", o.remote.ask_as_written,
               "with --prometheus: send every question to the endpoint as written. Without it, an endpoint that "
               "identifies as Prometheus 2.42 (/api/v1/status/buildinfo) is asked each shared part once and the "
               "engine computes the rest, as the private server is; use it for a proxy that forwards Prometheus' "
               "build information but rewrites or caches queries");
  app.add_flag("--insecure", o.remote.insecure_skip_verify,
               "do not verify the endpoint's TLS certificate: DANGEROUS, whoever intercepts the connection reads "
               "the Authorization header and can feed made-up metrics; prefer --cacert");
  app.add_option("--cacert", o.remote.ca_file, "CA bundle (PEM) that signed the endpoint's TLS certificate");
  app.add_option("--query-timeout", o.remote.timeout_seconds, "per-request timeout in seconds")->check(Seconds(false));
  o.deadline_seconds = kDefaultDeadlineSeconds;
  app.add_option("--deadline", o.deadline_seconds,
                 "seconds the whole run may spend reaching metrics before it reports the diagnosis incomplete "
                 "(exit 3); 0 = no deadline (default 60)")
      ->check(Seconds(true));
  app.add_flag("--logs-only", o.logs_only, "triage the logs only; do not open the TSDB");
  app.add_flag("--blocks-only", o.blocks_only,
               "serve only the completed blocks of a live job's TSDB (the newest ~2h are missing)");
  app.add_option("--playbook", o.forced_playbooks, "run this playbook whatever its triggers say (repeatable)");
  app.add_option("--data-dir", o.data_dir, "where rules/ and playbooks/ live (default: $DIAGNOSE_DATA_DIR or the source tree)");
  app.add_option("--playbooks", o.playbook_dirs,
                 "a directory of playbooks of one's own, run on top of the data dir's (repeatable)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--history", o.history_file, "sweep history (JSON lines): decisions honour its limits and the decision is appended");
  app.add_option("--now", args.now, "treat this epoch second as now (running/hanging decisions; for tests)");
  registry.Add(nullptr, [] { return RunDiagnose(args); });
}

}  // namespace diagnose::cli
