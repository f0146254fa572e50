// Sweep history: one JSON object per decision, one line per (sweep, job) (JSON lines), written by
// the engine. A new job's line is a single O_APPEND write() of one complete line followed by fsync;
// a re-run of a job already in the history replaces its line (the file rewritten beside it and
// renamed over it), so an epilog run twice does not count the job twice against the sweep's retry
// and exclusion limits. Either way a reader never sees half a record; a reader skips a malformed
// line (e.g. a torn tail from a crashed non-conforming writer) with a warning instead of failing.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <istream>
#include <string>
#include <vector>

#include "engine/core/json.h"
#include "engine/core/status.h"
#include "engine/decision/exclude_scope.h"
#include "engine/report/report.h"

namespace diagnose {

// What makes two jobs "the same job" for retry accounting: the model and its passthrough args.
struct SweepConfig {
  std::string model;
  std::map<std::string, std::string> args;
  bool operator==(const SweepConfig&) const = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SweepConfig, model, args)

struct HistoryEntry {
  int64_t time = 0;                      // seconds since the epoch, UTC
  std::string sweep;
  std::string job;
  SweepConfig config;
  std::vector<std::string> nodes;        // hosts the job ran on
  JobStatus status = JobStatus::kUnknownDeath;   // at decision time
  DecisionAction action = DecisionAction::kNone;
  std::vector<Exclusion> exclude;
  ExcludeScope exclude_scope = ExcludeScope::kJob;   // kSweep: never re-admit these hosts
  // Hosts the decision found at fault but did not exclude because the action is not
  // retry-excluding-nodes (e.g. stop-sweep once the sweep's exclusion limit is passed): a driver
  // reading the history still learns which hosts were bad.
  std::vector<Exclusion> found;
  std::map<std::string, std::string> changes;
  std::string root_cause;
  std::string failure_class;
  std::string rule;                      // sweep rule id that decided ("" = the diagnosis's decision)
  std::optional<std::string> retry_of;   // job id this job retried
  std::string variant;                   // model sweeps: candidate | baseline (free text)
  std::string oom_allocation;            // "221.71GiB" when an OOM named it
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HistoryEntry, time, sweep, job, config, nodes, status, action,
                                                exclude, exclude_scope, found, changes, root_cause, failure_class,
                                                rule, retry_of, variant, oom_allocation)

struct SweepHistory {
  std::vector<HistoryEntry> entries;     // file order
  std::vector<std::string> warnings;     // "history.jsonl:7: skipped malformed line (...)"
};

// A missing file is an empty history (the first job of a sweep). Malformed lines become warnings.
StatusOr<SweepHistory> LoadSweepHistory(const std::string& path);

// The same over text already read; `source` names it in warnings ("history.jsonl:7: ...").
SweepHistory ParseSweepHistory(std::istream& in, const std::string& source);

// One line, no embedded newline, terminated by '\n'.
std::string EncodeHistoryLine(const HistoryEntry& entry);

// Records one entry under an exclusive flock of the file (other diagnose processes, a sweep's
// parallel epilogs, write the same history). When the file holds no line of the entry's (sweep,
// job): open(O_APPEND|O_CREAT), one write() of the whole line, fsync, close. When it does, the file
// is rewritten without those lines plus this one into PATH.tmp.<pid> and renamed over PATH, so a
// reader sees the old file or the new one, never a mix. Malformed lines are kept as they are.
// Creates the file (0644) if needed.
Status AppendHistoryEntry(const std::string& path, const HistoryEntry& entry);

// Held by AppendHistoryEntry for the duration of an append. A shutdown path (the termination
// thread, before it _exits) takes it and never gives it back: an append in flight completes, no new
// one starts.
std::mutex& HistoryAppendMutex();

// The sweep id used when none is given: the history file's name without directory and extension.
std::string DefaultSweepId(const std::string& history_path);

// The earlier decision this job is a retry of: the latest entry of the same sweep (other job) with
// the same config, a retry action, a node set that overlaps this job's (or either unknown), and no
// later entry already claiming it as retry_of. Null when this job starts a new chain.
const HistoryEntry* FindRetryPredecessor(const SweepHistory& history, const std::string& sweep,
                                         const std::string& job, const SweepConfig& config,
                                         const std::vector<std::string>& nodes);

// The chain ending at `last` (oldest first), following retry_of links within the sweep.
std::vector<const HistoryEntry*> RetryChain(const SweepHistory& history, const HistoryEntry* last);

}  // namespace diagnose
