// A private, read-only view of a job's persisted TSDB: the engine copies the snapshot into its own
// temp dir (hard-linked immutable blocks, copied wal/ and chunks_head/), starts Debian's
// `prometheus` on 127.0.0.1:0 as its direct child, and removes both on every exit path. Prometheus
// writes into its data dir (wal/, queries.active, compaction, retention), so it never runs on the
// user's directory, which this code only reads.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/cleanup_registry.h"
#include "engine/core/clock_skew.h"
#include "engine/core/status.h"
#include "engine/core/subprocess.h"
#include "engine/tsdb/http_query_client.h"
#include "engine/tsdb/tsdb_dir.h"
#include "engine/tsdb/web_auth.h"

namespace diagnose {

// What a job's prometheus/ dir holds, read without modifying it.
struct TsdbInventory {
  std::string dir;
  std::vector<BlockMeta> blocks;           // completed blocks (ULID dirs with meta.json)
  std::vector<DamagedBlock> damaged_blocks;   // left out of the copy: their meta.json does not parse
  bool has_wal = false;                    // wal/ with at least one segment
  bool has_chunks_head = false;
  int64_t wal_bytes = 0;
  bool lock_held = false;                  // `lock` flock()ed by a running Prometheus on this host
  // Now minus the youngest mtime in wal/ or chunks_head/; negative when the file server's clock is
  // ahead of this host's, which says nothing about freshness.
  std::optional<double> newest_head_write_age_seconds;
  // How far the youngest mtime anywhere in the TSDB lies in the future of this host's clock, when
  // it does (clocks disagree); absent when every mtime is in the past.
  std::optional<double> clock_skew_seconds;
  std::vector<std::string> ignored;        // symlinks and entries that are not part of a TSDB
  // What the server replayed from wal/ into its head, as it reports it (/api/v1/status/tsdb
  // headStats), once a private server has started on a TSDB with a WAL; the only record of the time
  // a WAL-only TSDB covers (a job shorter than 2 h whose Prometheus died with it cut no block).
  std::optional<int64_t> head_min_time_ms;
  std::optional<int64_t> head_max_time_ms;
  int64_t min_time_ms() const;             // over blocks; 0 when none
  int64_t max_time_ms() const;             // exclusive (last sample + 1 ms); 0 when none
};

// kNotFound for a missing dir or one with neither blocks nor a WAL (Prometheus never started or
// never scraped), naming the dir; kDataLoss naming the file when every block is damaged and there
// is no WAL.
StatusOr<TsdbInventory> InspectTsdbDir(const std::string& dir);

struct PrivatePrometheusOptions {
  std::string prometheus_binary = "prometheus";
  // Serve only completed blocks: the fallback for a live job (its newest ~2 h, still in the WAL, is
  // missing), and never refused as live since nothing being written is copied.
  bool blocks_only = false;
  // A WAL/head written more recently than this means a Prometheus is still scraping into it.
  double live_write_window_seconds = 120;
  // What the job log says about the job's end (JOB SUMMARY, final status): a finished job's TSDB is
  // not live whatever its mtimes say. Absent when the log cannot tell.
  std::optional<bool> job_finished;
  // The job's run as its log tells it: completed blocks lying wholly outside it (BlockOutsideRun: a
  // shared TSDB's other jobs, or days of history before this one) are neither copied nor loaded by
  // the server, so its start-up and memory follow the job, not the directory. When no block lies in
  // the run, all are served: discovery then says none is the job's.
  LoggedRunSpan logged_run;
  double startup_timeout_seconds = 60;
  double query_timeout_seconds = 60;
  int max_parallel = 8;
  std::string temp_root;                   // empty: $TMPDIR, else /tmp
  // The run's deadline: start-up and every query end by then (RemoteEndpointOptions::deadline).
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// The Go runtime settings the private server gets unless this process's environment sets GOGC or
// GOMEMLIMIT itself (the user's wins). The server lives for one diagnosis, so it collects garbage
// at a quarter of Go's pace (GOGC=400). Its RSS is its Go heap plus the pages of the blocks it has
// read, which GOMEMLIMIT does not count: the soft limit is what a 1 GiB budget leaves beside the
// served blocks, and never less than 512 MiB; the whole budget when the blocks alone exceed it
// (nothing holds it then, and a tight limit only costs GC). Past that the budget holds only as far as the kernel
// may drop block pages, which it does (a memory cgroup charges them, and reclaims them before the
// heap). At 128 nodes x 24 h (863 MiB of blocks, range questions split by engine/dag/range_split.h)
// the whole budget let the heap grow to 1,014 MiB, 1,486 MiB of RSS; 512 MiB keeps it at 976 MiB for
// 9 % more of the server's CPU (without the split: 22 %; loaded machine, single runs).
struct GoMemorySettings {
  int gogc = 400;
  int64_t memory_limit_bytes = 0;
};
inline constexpr int64_t kPrivateServerMemoryBudget = int64_t{1} << 30;
inline constexpr int64_t kPrivateServerMinGoMemoryLimit = int64_t{512} << 20;
GoMemorySettings PrivateServerGoMemory(int64_t served_block_bytes);
// The estimated samples (series x steps of the range questions split on their step grid,
// engine/dag/range_split.h) the private server is asked for at once.
inline constexpr int64_t kPrivateServerSamplesInFlight = 3'000'000;

// The loopback port a Prometheus started on 127.0.0.1:0 says it listens on (its "Listening on" log
// line), once it has said so. The one reading of it: the private server and the tests' servers.
std::optional<int> ListeningPortInLog(const std::string& log_text);

// kFailedPrecondition when the TSDB is being written by a running Prometheus, with the two ways out.
// Evidence that does not depend on two clocks agreeing comes first: a held `lock` means live, a
// job the log shows finished is not. Only then is a recent WAL write taken as a sign of life, and
// a write "in the future" (clock skew) never is.
Status CheckNotLive(const TsdbInventory& inventory, double live_write_window_seconds,
                    std::optional<bool> job_finished = std::nullopt);

class PrivatePrometheus {
 public:
  // Removes stale copies of dead runs, validates, copies, spawns, waits for ready, checks the
  // server sees metric names. Every failure cleans up what was made so far.
  static StatusOr<std::unique_ptr<PrivatePrometheus>> Start(const std::string& tsdb_dir,
                                                            const PrivatePrometheusOptions& options = {});
  ~PrivatePrometheus();  // Stop()
  PrivatePrometheus(const PrivatePrometheus&) = delete;
  PrivatePrometheus& operator=(const PrivatePrometheus&) = delete;

  HttpQueryClient& client() { return *client_; }
  // The Authorization header value the server's port requires: for a second client of the same
  // server (diagnose_e2e_bench --remote hands it to `diagnose --prometheus`).
  const std::string& authorization() const { return authorization_; }
  const TsdbInventory& inventory() const { return inventory_; }
  const std::string& url() const { return url_; }
  const std::string& copy_dir() const { return copy_dir_; }
  int pid() const { return child_ ? child_->pid() : -1; }
  double startup_seconds() const { return startup_seconds_; }   // spawn -> /-/ready
  double copy_seconds() const { return copy_seconds_; }
  // How the snapshot reached the copy: hard links (same filesystem), per-file symlinks to completed
  // blocks' chunks and index (another filesystem), and the bytes actually copied (WAL, meta.json).
  int64_t linked_files() const { return linked_files_; }
  int64_t symlinked_files() const { return symlinked_files_; }
  int64_t copied_bytes() const { return copied_bytes_; }
  // The completed blocks' chunk segments and indexes the server was given, in bytes.
  int64_t served_block_bytes() const { return served_block_bytes_; }
  const GoMemorySettings& go_memory() const { return go_memory_; }
  // Completed blocks of the snapshot left out of the copy as outside the job's logged run.
  const std::vector<std::string>& unserved_blocks() const { return unserved_blocks_; }
  const std::vector<std::string>& caveats() const { return caveats_; }
  // kUnavailable naming the exit code and the log tail once the server has died.
  Status Health();
  // SIGTERM, wait, SIGKILL if needed, remove the private copy. Idempotent.
  void Stop();

 private:
  PrivatePrometheus() = default;
  // The steps of Start, in order; each failure leaves what was made to Stop().
  Status CheckServable(const std::string& tsdb_dir, const PrivatePrometheusOptions& options);
  Status MakePrivateCopy(const std::string& tsdb_dir, const PrivatePrometheusOptions& options);
  StatusOr<WebCredentials> WriteServerConfig();
  Status SpawnServer(const std::string& binary);
  Status WaitUntilReady(const std::string& tsdb_dir, const PrivatePrometheusOptions& options,
                        const WebCredentials& credentials, std::chrono::steady_clock::time_point spawned);
  Status CheckLoaded(const std::string& tsdb_dir);
  Status StartupFailure(const std::string& tsdb_dir, const std::string& what) const;
  void ReadHeadRange();
  TsdbInventory inventory_;
  std::string copy_dir_;
  std::string url_;
  std::optional<ChildProcess> child_;
  std::unique_ptr<HttpQueryClient> client_;
  std::optional<CleanupRegistry::Id> cleanup_id_;
  double startup_seconds_ = 0;
  double listening_seconds_ = 0;   // spawn -> the port in its log
  double copy_seconds_ = 0;
  int64_t linked_files_ = 0;
  int64_t symlinked_files_ = 0;
  int64_t copied_bytes_ = 0;
  int64_t served_block_bytes_ = 0;
  GoMemorySettings go_memory_;
  std::vector<std::string> unserved_blocks_;
  std::string authorization_;
  std::vector<std::string> caveats_;
};

// Removes /tmp/diagnose-prom-* dirs whose owner (pid file inside) is no longer running, as left by
// a SIGKILLed run. Returns how many were removed.
int RemoveStalePrivateCopies(const std::string& temp_root = "");

// Prefix of every private copy's directory name under the temp root.
inline constexpr const char* kPrivateCopyPrefix = "diagnose-prom-";

}  // namespace diagnose
