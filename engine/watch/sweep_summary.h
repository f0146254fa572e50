// `diagnose summary`: a sweep at a glance, one row per job of an outputs dir. It lives with the
// watcher rather than with the report renderers because it works on what the watcher works on: the
// jobs of one outputs dir, the cheap log follower, and the sweep history the watcher (and every
// `diagnose --history` epilog) appends to. A job the history already decided is read from there and
// never diagnosed again; only jobs missing from it go through the injected diagnosis.
//
// The job's time is its log's modification time: the launcher writes the log until the job ends,
// so for a finished job it is the end, it is known without reading the log, and it is the same
// clock for jobs with and without a history entry (an entry's own time is when it was decided).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/json.h"
#include "engine/core/status.h"
#include "engine/job/job_location.h"
#include "engine/report/report.h"

namespace diagnose {

struct SummaryRow {
  std::string id;
  std::string name;                // JOB_DIR basename
  int64_t time = 0;                // log mtime, seconds since the epoch (0 = unknown)
  std::string model;
  int nodes = 0;
  std::optional<JobStatus> status;   // none when nothing said it
  std::optional<double> tgs;       // mean Tokens/s/device of steps 5-14 (the launcher's TGS tag)
  std::string root_cause;
  DecisionAction action = DecisionAction::kNone;
  std::vector<Exclusion> exclude;
  std::string source;              // history | diagnosis | unreadable
  std::string note;                // unreadable: why; diagnosis: why it is incomplete
};

using SummaryDiagnoseFn = std::function<StatusOr<Report>(const JobLocation& job)>;

struct SummaryOptions {
  std::string outputs_dir;
  std::string history_file;              // "" = no history: every job is diagnosed
  std::optional<int64_t> since;          // leave out jobs whose time is before this (epoch seconds)
  SummaryDiagnoseFn diagnose;            // required: jobs the history has not decided
  // How many jobs are read and diagnosed at a time: `diagnose` is then called from that many
  // threads at once and must be safe to (RunDiagnosis is; each holds its own private Prometheus).
  int parallel = 1;
};

struct SweepSummary {
  std::vector<SummaryRow> rows;          // by time, then id
  std::vector<std::string> warnings;     // history lines skipped, a missing history file
};

// Reads only: nothing is written into the outputs dir or the history.
StatusOr<SweepSummary> SummarizeSweep(const SummaryOptions& options);

// The history a summary reads when none is named: $DIAGNOSE_SWEEP_HISTORY, else the file the
// example Slurm epilog appends to (tools/slurm-epilog-diagnose.sh: <outputs>/../sweep-history.jsonl)
// when it exists; "" when there is none.
std::string DefaultSummaryHistory(const std::string& outputs_dir);

// --since: an ISO-8601 date or date-time (UTC unless it carries an offset: 2026-02-24,
// 2026-02-24T19:21, 2026-02-24 19:21:00+01:00) or a duration before `now` (90m, 6h, 2d, 1w, 1d12h).
StatusOr<int64_t> ParseSince(const std::string& text, int64_t now);

// One aligned line per row: time, id, model, nodes, status, TGS, root cause, action, exclusions.
std::string FormatSummaryText(const std::vector<SummaryRow>& rows);
nlohmann::json SummaryJson(const std::vector<SummaryRow>& rows);

}  // namespace diagnose
