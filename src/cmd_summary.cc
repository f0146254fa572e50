// `diagnose summary OUTPUTS`: a sweep at a glance, one line per job (engine/watch/sweep_summary.h).
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "engine/core/json.h"
#include "engine/core/logging.h"
#include "engine/pipeline/pipeline.h"
#include "engine/watch/sweep_summary.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {

struct SummaryArgs {
  std::string outputs;
  std::string since;
  std::string format = "text";
  std::string history;
  std::string prometheus;
  bool logs_only = false;
  int parallel = 0;   // 0 = DefaultParallelDiagnoses
  double deadline_seconds = kDefaultDeadlineSeconds;
  int64_t now = 0;
};

int RunSummary(const SummaryArgs& args) {
  SummaryOptions options;
  options.outputs_dir = DefaultOutputsDir(args.outputs);
  options.history_file = args.history.empty() ? DefaultSummaryHistory(options.outputs_dir) : args.history;
  const int64_t now = args.now > 0 ? args.now : static_cast<int64_t>(std::time(nullptr));
  if (!args.since.empty()) {
    StatusOr<int64_t> since = ParseSince(args.since, now);
    if (!since.ok()) {
      PrintError("diagnose summary", since.status().message());
      return 2;
    }
    options.since = *since;
  }
  const std::string data_dir = DefaultDataDir();
  // Parsed once for every job the summary diagnoses.
  StatusOr<std::shared_ptr<const Rulebook>> rulebook = LoadRulebook(data_dir);
  if (!rulebook.ok()) {
    PrintError("diagnose summary", rulebook.status().message());
    return 2;
  }
  // The pipeline of `diagnose JOB`, without --history: a summary only reads; the decision of a job
  // missing from the history is the diagnosis's own, not recorded anywhere.
  options.diagnose = [&](const JobLocation& job) {
    DiagnoseOptions d;
    d.job_ref = job.job_dir.value_or(job.log_path.value_or(job.id));
    d.outputs_dir = options.outputs_dir;
    d.data_dir = data_dir;
    d.rulebook = *rulebook;
    d.remote.url = args.prometheus;
    d.remote.identify_prometheus = true;
    d.logs_only = args.logs_only;
    d.deadline_seconds = args.deadline_seconds;
    if (args.now > 0) d.now = args.now;
    return RunDiagnosis(d);
  };
  options.parallel = ParallelDiagnoses(args.parallel, "summary");
  if (!options.history_file.empty()) Stage("summary: reading the sweep history {}", options.history_file);
  StatusOr<SweepSummary> summary = SummarizeSweep(options);
  if (!summary.ok()) {
    PrintError("diagnose summary", summary.status().message());
    return 1;
  }
  for (const auto& warning : summary->warnings) Log().warn("{}", warning);
  const std::string out =
      args.format == "json" ? DumpJson(SummaryJson(summary->rows), 2) + "\n" : FormatSummaryText(summary->rows);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;   // main checks that stdout was written and closed
}

}  // namespace

void RegisterSummary(CLI::App& app, CommandRegistry& registry) {
  static SummaryArgs args;
  CLI::App* sub = app.add_subcommand(
      "summary", "A sweep at a glance: one line per job (time, id, model, nodes, status, TGS, root cause, action, "
                 "exclusions); jobs in the sweep history are not diagnosed again");
  sub->add_option("outputs", args.outputs, "outputs directory (default $DIAGNOSE_OUTPUTS, else ./outputs)");
  sub->add_option("--since", args.since,
                  "only jobs whose log was last written at or after this: ISO-8601 (2026-02-24, "
                  "2026-02-24T19:21Z; UTC unless an offset is given) or a duration before now (6h, 2d, 1w)");
  sub->add_option("--format", args.format, "text (one aligned line per job) | json (an array)")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--history", args.history,
                  "sweep history (JSON lines) to read decisions from (default $DIAGNOSE_SWEEP_HISTORY, else "
                  "OUTPUTS/../sweep-history.jsonl when it exists); never written");
  sub->add_option("--prometheus", args.prometheus,
                  "jobs not in the history: query this endpoint instead of each job's persisted TSDB");
  sub->add_flag("--logs-only", args.logs_only, "jobs not in the history: diagnose from logs only (no TSDB; fast)");
  sub->add_option("--deadline", args.deadline_seconds,
                  "per diagnosed job: seconds it may spend reaching metrics (default 60; 0 = none)")
      ->check(Seconds(true));
  AddParallelDiagnosesOption(sub, &args.parallel, "jobs not in the history");
  sub->add_option("--now", args.now, "treat this epoch second as now (--since durations, running jobs; for tests)");
  registry.Add(sub, [] { return RunSummary(args); });
}

}  // namespace diagnose::cli
