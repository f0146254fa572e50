// `diagnose watch OUTPUTS_DIR`: follow a sweep's outputs directory, diagnose each job once when it
// ends unsuccessfully or stalls, append the sweep decision to the history, print one line per result.
#include <atomic>
#include <ctime>
#include <filesystem>
#include <set>
#include <cstdio>
#include <string>

#include "engine/alerting/alert_rules.h"
#include "engine/alerting/rule_export.h"
#include "engine/core/cleanup_registry.h"
#include "engine/core/utf8.h"
#include "engine/report/render.h"
#include "engine/tsdb/http_query_client.h"
#include "engine/decision/decision_rules.h"
#include "engine/decision/sweep_history.h"
#include "engine/job/job_location.h"
#include "engine/pipeline/pipeline.h"
#include "engine/watch/alert_watch.h"
#include "engine/watch/watcher.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {

struct WatchArgs {
  std::string outputs;
  std::string history;
  std::string sweep;
  std::string variant;
  std::string prometheus;
  double stall_seconds = 600;
  double poll_seconds = 60;
  bool once = false;
  int parallel = 0;   // 0 = DefaultParallelDiagnoses
  bool logs_only = false;
  bool alerts = false;
  std::string job;
  std::string job_label;
};

std::atomic<bool> g_stop{false};

// SIGPIPE is ignored (main.cc), so a reader that went away (`watch | head -1`, a dead log shipper)
// shows only as a write error: stop polling then instead of diagnosing for nobody; main's
// FinishStdout says so in one line and exits 1.
void FlushOrStop() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) g_stop.store(true);
}

StatusOr<std::vector<WatchedJob>> ListWithJobLocation(const std::string& outputs_dir) {
  std::vector<RefusedJob> refused;
  ASSIGN_OR_RETURN(std::vector<JobLocation> jobs, ListJobs(outputs_dir, &refused));
  // What cannot be a job (a FIFO or device named like a log, a link leading outside the dir) is
  // said once, on the scan that first meets it, and never read.
  static std::set<std::string> reported;
  for (const auto& r : refused)
    if (reported.insert(r.name).second)
      std::fprintf(stderr, "diagnose watch: job %s not followed: %s\n", OneLine(r.name).c_str(),
                   OneLine(r.status.message()).c_str());
  std::vector<WatchedJob> out;
  for (const auto& j : jobs) {
    if (!j.log_path) continue;   // no log (yet): nothing to follow
    out.push_back({j.id, j.name, *j.log_path});
  }
  return out;
}

// The job a live endpoint belongs to: --job, else the job whose log was written last.
StatusOr<std::string> LiveJob(const WatchArgs& args) {
  if (!args.job.empty()) return args.job;
  ASSIGN_OR_RETURN(std::vector<JobLocation> jobs, ListJobs(DefaultOutputsDir(args.outputs)));
  std::optional<std::pair<std::filesystem::file_time_type, std::string>> newest;
  for (const auto& j : jobs) {
    if (!j.log_path) continue;
    std::error_code ec;
    auto t = std::filesystem::last_write_time(*j.log_path, ec);
    if (!ec && (!newest || t > newest->first)) newest = {t, j.id};
  }
  if (!newest) return NotFoundError("no job log in " + DefaultOutputsDir(args.outputs) + " (name the job with --job)");
  return newest->second;
}

// `watch --alerts --prometheus URL`: the exported alerts polled on a live endpoint (a running job's
// own Prometheus, or a fleet store with --job-label); each alert's job diagnosed through the same
// endpoint, once per root cause (engine/watch/alert_watch.h).
int RunAlertWatch(const WatchArgs& args, const std::shared_ptr<const Rulebook>& rulebook, const std::string& data_dir) {
  const std::string command = "diagnose watch --alerts";
  if (args.prometheus.empty()) {
    PrintError(command, "--alerts follows a live endpoint: give it with --prometheus URL");
    return 2;
  }
  playbook::LoadResult load;
  alerting::AlertBook book = alerting::LoadAlertBook(data_dir, rulebook->library, &load);
  if (!load.ok()) {
    for (const auto& d : load.diagnostics()) std::fprintf(stderr, "%s\n", d.ToString().c_str());
    return 1;
  }
  alerting::ExportOptions export_options;
  export_options.target = alerting::RuleTarget::kVmalert;
  // On a fleet store every aggregation keeps the job label, so an alert names its job.
  export_options.job_label = args.job_label;
  auto rules = alerting::ExportRules(book, rulebook->library, export_options);
  if (!rules.ok()) {
    PrintError(command, rules.status().message());
    return 2;
  }
  RemoteEndpointOptions endpoint;
  endpoint.url = args.prometheus;
  const std::string shown = ShownUrl(args.prometheus);
  auto client = HttpQueryClient::Create(endpoint, "endpoint " + shown);
  if (!client.ok()) {
    PrintError(command, client.status().message());
    return 2;
  }
  // One cheap question first, so an endpoint that is not there is one line, not eight queries.
  if (auto probe = (*client)->Run(Query::Instant("vector(1)", static_cast<double>(std::time(nullptr)))); !probe.ok()) {
    PrintError(command, "cannot reach " + shown + ": " + probe.status().message().substr(0, 200));
    return 1;
  }
  AlertWatchOptions options;
  options.endpoint = shown;
  options.job_label = args.job_label;
  options.poll_seconds = args.poll_seconds;
  options.once = args.once;
  options.now = [] { return static_cast<double>(std::time(nullptr)); };
  options.default_job = [&args] { return LiveJob(args); };
  options.diagnose = [&args, &rulebook, &data_dir](const std::string& job) -> StatusOr<std::string> {
    DiagnoseOptions d;
    d.job_ref = job;
    d.outputs_dir = DefaultOutputsDir(args.outputs);
    d.data_dir = data_dir;
    d.rulebook = rulebook;
    d.remote.url = args.prometheus;
    d.remote.identify_prometheus = true;
    d.job_label = args.job_label;
    ASSIGN_OR_RETURN(Report report, RunDiagnosis(d));
    return RenderText(report);
  };
  options.print = [](const std::string& text) {
    std::fputs(text.c_str(), stdout);
    FlushOrStop();
  };
  options.note = [&command](const std::string& line) { std::fprintf(stderr, "%s: %s\n", command.c_str(), line.c_str()); };
  std::fprintf(stderr, "%s: polling %zu alerts on %s every %.0f s\n", command.c_str(), rules->alerts.size(),
               shown.c_str(), args.poll_seconds);
  Status run = diagnose::RunAlertWatch(*rules, **client, options, g_stop);
  if (!run.ok()) {
    PrintError(command, run.message());
    return 1;
  }
  return 0;
}

int RunWatch(const WatchArgs& args) {
  const std::string data_dir = DefaultDataDir();
  // Parsed once for every job the watcher diagnoses.
  StatusOr<std::shared_ptr<const Rulebook>> rulebook = LoadRulebook(data_dir);
  if (!rulebook.ok()) {
    PrintError("diagnose watch", rulebook.status().message());
    return 2;
  }
  if (args.alerts) return RunAlertWatch(args, *rulebook, data_dir);
  WatchOptions options;
  options.outputs_dir = DefaultOutputsDir(args.outputs);
  options.history_file = args.history;
  options.sweep = args.sweep;
  options.variant = args.variant;
  options.stall_seconds = args.stall_seconds;
  options.poll_seconds = args.poll_seconds;
  options.include_already_ended = args.once;
  options.parallel = ParallelDiagnoses(args.parallel, "watch");
  options.rules = &(*rulebook)->decisions;
  options.list_jobs = ListWithJobLocation;
  // By value: `options` is moved into the watcher below, and a reference would then read it empty.
  options.diagnose = [&args, outputs_dir = options.outputs_dir, data_dir,
                      book = *rulebook](const WatchEvent& event, const SweepContext& sweep,
                                        const std::string& history_file,
                                        const AwaitEarlierFn& await_turn_to_decide) -> StatusOr<DecidedReport> {
    DiagnoseOptions d;
    d.job_ref = event.job.log_path;
    d.outputs_dir = outputs_dir;
    d.data_dir = data_dir;
    d.rulebook = book;
    d.remote.url = args.prometheus;
    d.remote.identify_prometheus = true;
    d.logs_only = args.logs_only;
    // The diagnosis decides with the watcher's sweep context and appends to the history, once per job.
    d.sweep = sweep;
    d.history_file = history_file;
    d.before_deciding = await_turn_to_decide;
    return RunDecidedDiagnosis(d);
  };
  options.on_result = [](const WatchResult& result) {
    std::printf("%s\n", result.line.c_str());
    FlushOrStop();
    if (!result.status.ok())
      std::fprintf(stderr, "diagnose watch: job %s: %s\n", result.event.job.id.c_str(),
                   result.status.message().c_str());
  };
  if (!args.once) {
    options.on_first_scan = [dir = options.outputs_dir](size_t followed, size_t skipped) {
      std::fprintf(stderr, "diagnose watch: following %s: %zu running job(s), %zu already ended or decided (skipped)\n",
                   dir.c_str(), followed, skipped);
    };
  }
  StatusOr<std::unique_ptr<Watcher>> watcher = Watcher::Create(std::move(options));
  if (!watcher.ok()) {
    PrintError("diagnose watch", watcher.status().message());
    return 2;
  }
  if (args.once) {
    StatusOr<std::vector<WatchResult>> results = (*watcher)->PollOnce();
    if (!results.ok()) {
      PrintError("diagnose watch", results.status().message());
      return 1;
    }
    return 0;
  }
  // SIGINT/SIGTERM/SIGHUP go to the process-wide termination thread (main.cc), which runs the
  // registered cleanups newest first (private Prometheus servers of a diagnosis in flight) and then
  // _exits 128+signal. This one runs last: it lets a history append in flight finish and keeps any
  // new one from starting, so the history stays whole lines; per-job state needs no saving (jobs in
  // the history are skipped on restart, jobs that end meanwhile are picked up from their mtime).
  Watcher* running = watcher->get();
  const CleanupRegistry::Id stop_cleanup = CleanupRegistry::Instance().Register("watch: stop", [] {
    g_stop.store(true);
    HistoryAppendMutex().lock();   // released by _exit
  });
  SetTerminationLine([running](const std::string& signal_name) {
    return "diagnose watch: stopped by " + signal_name + " (" + std::to_string(running->results()) + " result(s))";
  });
  Status run = (*watcher)->Run(g_stop);
  CleanupRegistry::Instance().Unregister(stop_cleanup);
  SetTerminationLine(nullptr);
  if (!run.ok()) {
    PrintError("diagnose watch", run.message());
    return 1;
  }
  if (std::ferror(stdout)) return 0;   // main's FinishStdout names the failed write and exits 1
  std::fprintf(stderr, "diagnose watch: stopped (%zu result(s))\n", (*watcher)->results());
  return 0;
}

}  // namespace

void RegisterWatch(CLI::App& app, CommandRegistry& registry) {
  static WatchArgs args;
  CLI::App* sub = app.add_subcommand(
      "watch", "Follow a sweep's outputs dir; diagnose each job once when it fails or stalls, append decisions");
  sub->add_option("outputs", args.outputs, "outputs directory to follow (default $DIAGNOSE_OUTPUTS, else ./outputs)");
  sub->add_option("--history", args.history, "sweep history file (JSON lines) to read limits from and append to");
  sub->add_option("--sweep", args.sweep, "sweep id recorded in the history (default: history file name)");
  sub->add_option("--variant", args.variant, "model sweeps: which commit these jobs run (candidate | baseline)");
  sub->add_option("--stall-seconds", args.stall_seconds, "no new step for this long = stalled (default 600)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--poll-seconds", args.poll_seconds, "scan interval (default 60)")->check(CLI::PositiveNumber);
  sub->add_option("--prometheus", args.prometheus, "query this endpoint instead of each job's persisted TSDB");
  sub->add_flag("--logs-only", args.logs_only, "diagnose from logs only (no TSDB)");
  sub->add_flag("--alerts", args.alerts,
                "with --prometheus (a running job's own Prometheus): poll the exported alerts there and diagnose the "
                "job the moment one fires, once per root cause");
  sub->add_option("--job", args.job, "with --alerts: the job the endpoint serves (default: the newest job log)");
  sub->add_option("--job-label", args.job_label,
                  "with --alerts on a fleet store: the label naming each series' job; alerts keep it and name the "
                  "job to diagnose");
  AddParallelDiagnosesOption(sub, &args.parallel, "jobs that end or stall in the same scan");
  sub->add_flag("--once", args.once, "scan once: handle jobs that have ended and are not in the history, then exit");
  registry.Add(sub, [] { return RunWatch(args); });
}

}  // namespace diagnose::cli
