// When a job ran as its log tells it, in the form a TSDB's blocks are judged against: by discovery
// (which blocks are the job's) and by the private server (which blocks it is given).
#pragma once

#include <optional>

#include "engine/triage/triage.h"
#include "engine/tsdb/tsdb_dir.h"

namespace diagnose {

// When the log says the job ran, what a TSDB's blocks are checked against. A start counts only
// when the log's text gives it (the artifact id's submit time): one derived from the log's mtime
// moves to the copy time with every copy of the job dir, which leaves older blocks before it; no
// block can hold data from after the log's last write, whatever the end rests on. The JOB SUMMARY's
// wall time is the run's length, which anchors the start on the data (AnchoredRun).
std::optional<LoggedRunSpan> LoggedRun(const JobFacts& facts);

}  // namespace diagnose
