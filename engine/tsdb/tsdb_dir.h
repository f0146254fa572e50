// What a Prometheus TSDB directory holds, read from disk without a server: block dirs (ULID names
// with a meta.json) and the WAL. Used to validate a job's snapshot before serving it, to take the
// data time range from block metadata, and to verify blocks written by promtool.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace diagnose {

struct BlockMeta {
  std::string ulid;             // directory name
  int64_t min_time_ms = 0;      // first sample
  int64_t max_time_ms = 0;      // last sample + 1 ms (exclusive end)
  int64_t num_samples = 0;
  int64_t num_series = 0;
};

// How far outside a job's logged run a block may lie and still be the job's: log stamps without a
// zone, and a TSDB kept running a while after the job, move it by hours, never by days.
inline constexpr double kRunWindowToleranceSeconds = 86400;

// The run as the job's log tells it, in epoch seconds. An end the log does not give is infinite, and
// so is a start it gives only through the log's mtime (which moves with every copy of the job dir).
// `length_seconds`, the run's wall time when the log gives it, bounds the start from the data itself.
struct LoggedRunSpan {
  double start = -std::numeric_limits<double>::infinity();
  double end = std::numeric_limits<double>::infinity();
  std::optional<double> length_seconds;
};

// The span the blocks are judged against: with the run's length, its start is raised to the end of
// the newest block not after the run's end, minus that length. The job's own data cannot start
// earlier (that block ends no later than the job did), so what lies before is an older job's data in
// a shared directory, however far the log's mtime has moved. Without blocks or a length: `run`.
LoggedRunSpan AnchoredRun(const std::vector<BlockMeta>& blocks, const LoggedRunSpan& run);

// True when the block's data lies more than kRunWindowToleranceSeconds before the span's start or
// after its end (pass the AnchoredRun): clock skew when it was written, or another job's block.
bool BlockOutsideRun(const BlockMeta& block, const LoggedRunSpan& run);

// The blocks (ULIDs) a private server is not given for a job whose log tells `logged_run`: those
// outside its AnchoredRun, or none when no block lies in the run (discovery then says none is the
// job's). The one choice of them, made by the server and checked by a start that preceded the log.
std::vector<std::string> BlocksOutsideLoggedRun(const std::vector<BlockMeta>& blocks, const LoggedRunSpan& logged_run);

// True for a 26-character Crockford base32 ULID, the name Prometheus gives block directories.
bool IsUlid(const std::string& name);
// When the ULID was made, in epoch seconds (its first 48 bits): when Prometheus cut the block, after
// the last sample it holds.
double UlidSeconds(const std::string& ulid);

// One block's meta.json (`file` names it in errors): minTime and maxTime are required integers;
// anything else malformed is kDataLoss naming the file.
StatusOr<BlockMeta> ParseBlockMeta(std::string_view text, const std::string& ulid, const std::string& file);

// A block directory whose meta.json does not parse (truncated, cut by a full disk, overwritten).
struct DamagedBlock {
  std::string ulid;
  std::string why;   // the parse error, naming the file
};

// Block directories (real directories only; symlinks are ignored, as Prometheus ignores them) whose
// meta.json parses. A meta.json that does not parse is kDataLoss naming the file; with `damaged`,
// it is listed there instead and the other blocks are returned (one damaged block need not hide the rest).
StatusOr<std::vector<BlockMeta>> ListBlockDirs(const std::string& tsdb_dir, std::vector<DamagedBlock>* damaged = nullptr);

}  // namespace diagnose
