#include "engine/tsdb/private_prometheus.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "engine/core/iso_time.h"
#include "engine/core/logging.h"
#include "engine/core/untrusted_json.h"
#include "engine/tsdb/web_auth.h"

namespace diagnose {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

std::string TempRoot(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir && *tmpdir ? tmpdir : "/tmp";
}

// Process start time (clock ticks since boot, /proc/<pid>/stat field 22): with the pid it tells a
// live owner from a recycled pid.
std::string ProcessStartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  std::getline(in, content);
  const size_t paren = content.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream fields(content.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return field;
  }
  return "";
}

std::string ReadTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const auto size = static_cast<size_t>(in.tellg());
  const size_t from = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string out(size - from, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

// Whether a running Prometheus holds `lock` (Prometheus flock()s it). Opened read-only: probing
// must not write to the user's directory.
bool LockHeld(const fs::path& lock_path) {
  int fd = open(lock_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  bool held = false;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    held = errno == EWOULDBLOCK;
  } else {
    flock(fd, LOCK_UN);
  }
  close(fd);
  return held;
}

// Copies (or hard-links) a tree without following symlinks anywhere in it, so nothing outside the
// snapshot is ever read through it.
// How a tree reaches the private copy, and what that cost.
struct CopyMode {
  bool hard_link = false;   // link each file (same filesystem); copy where linking is refused
  // Across filesystems (job outputs on NFS, temp dir local), a completed block's chunk segments and
  // index, which Prometheus never writes, are reached through per-file symlinks instead of being
  // copied: gigabytes become kilobytes. meta.json and tombstones stay real files of the copy.
  bool symlink_immutable = false;
};

struct CopyStats {
  int skipped_symlinks = 0;
  int64_t linked_files = 0;
  int64_t symlinked_files = 0;
  int64_t copied_bytes = 0;
  int64_t block_file_bytes = 0;   // chunk segments and indexes served, however they reached the copy
};

bool ImmutableBlockFile(const fs::path& file) {
  return file.filename() == "index" || file.parent_path().filename() == "chunks";
}

Status CopyTree(const fs::path& src, const fs::path& dst, const CopyMode& mode, CopyStats* stats) {
  std::error_code ec;
  fs::create_directories(dst, ec);
  if (ec) return UnavailableError("cannot create " + dst.string() + ": " + ec.message());
  for (fs::directory_iterator it(src, ec), end; it != end; it.increment(ec)) {
    if (ec) break;
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    const fs::path target = dst / it->path().filename();
    if (fs::is_symlink(st)) {
      ++stats->skipped_symlinks;
    } else if (fs::is_directory(st)) {
      RETURN_IF_ERROR(CopyTree(it->path(), target, mode, stats));
    } else if (fs::is_regular_file(st)) {
      if (ImmutableBlockFile(it->path())) {
        std::error_code size_ec;
        const auto size = it->file_size(size_ec);
        if (!size_ec) stats->block_file_bytes += static_cast<int64_t>(size);
      }
      if (mode.hard_link && link(it->path().c_str(), target.c_str()) == 0) {
        ++stats->linked_files;
        continue;
      }
      // EXDEV (another filesystem) or EPERM (protected_hardlinks).
      if (mode.symlink_immutable && ImmutableBlockFile(it->path())) {
        const fs::path absolute = fs::absolute(it->path(), ec);
        if (!ec && symlink(absolute.c_str(), target.c_str()) == 0) {
          ++stats->symlinked_files;
          continue;
        }
      }
      fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ec);
      if (ec) {
        return UnavailableError("cannot copy " + it->path().string() + " into the private copy " + target.string() +
                                ": " + ec.message() +
                                (ec == std::errc::no_space_on_device ? " (free space in TMPDIR, or point TMPDIR elsewhere)" : ""));
      }
      stats->copied_bytes += static_cast<int64_t>(fs::file_size(target, ec));
    }
  }
  if (ec) return UnavailableError("cannot read " + src.string() + ": " + ec.message());
  return Status::Ok();
}

// Now minus the youngest mtime under `dir` (symlinks not followed); negative for mtimes in the future.
std::optional<double> NewestMtimeAge(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || fs::is_symlink(dir, ec)) return std::nullopt;
  std::optional<fs::file_time_type> newest;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    auto t = it->last_write_time(ec);
    if (!ec && (!newest || t > *newest)) newest = t;
  }
  if (!newest) return std::nullopt;
  return std::chrono::duration<double>(fs::file_time_type::clock::now() - *newest).count();
}

// The (pid, start time) of whoever owns a private copy; kept inside it.
constexpr const char* kOwnerFile = "owner.pid";

void KillAndReap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 300; ++i) {  // Prometheus exits within milliseconds of SIGTERM
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

int64_t TsdbInventory::min_time_ms() const {
  int64_t v = 0;
  for (const auto& b : blocks) v = (v == 0 || b.min_time_ms < v) ? b.min_time_ms : v;
  return v;
}

int64_t TsdbInventory::max_time_ms() const {
  int64_t v = 0;
  for (const auto& b : blocks) v = std::max(v, b.max_time_ms);
  return v;
}

namespace {

// The entries of `dir` among `names` that are symlinks (a TSDB's are never followed).
std::vector<std::string> SymlinksAmong(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<std::string> symlinks;
  std::error_code ec;
  for (const auto& name : names)
    if (fs::is_symlink(fs::symlink_status(fs::path(dir) / name, ec))) symlinks.push_back(name);
  return symlinks;
}

}  // namespace

StatusOr<TsdbInventory> InspectTsdbDir(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (ec || !fs::exists(st)) return NotFoundError("TSDB dir " + dir + " does not exist");
  if (!fs::is_directory(st)) return InvalidArgumentError("TSDB path " + dir + " is not a directory");
  TsdbInventory inv;
  inv.dir = dir;
  ASSIGN_OR_RETURN(inv.blocks, ListBlockDirs(dir, &inv.damaged_blocks));
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool symlink = it->is_symlink(ec);
    if (name == "wal" && !symlink && it->is_directory(ec)) {
      for (fs::recursive_directory_iterator w(it->path(), ec), wend; !ec && w != wend; w.increment(ec)) {
        if (w->is_regular_file(ec)) {
          inv.has_wal = true;
          inv.wal_bytes += static_cast<int64_t>(w->file_size(ec));
        }
      }
    } else if (name == "chunks_head" && !symlink && it->is_directory(ec)) {
      inv.has_chunks_head = true;
    } else if (name == "lock") {
      inv.lock_held = LockHeld(it->path());
    } else if (symlink || (IsUlid(name) && std::none_of(inv.blocks.begin(), inv.blocks.end(),
                                                         [&](const BlockMeta& b) { return b.ulid == name; }))) {
      inv.ignored.push_back(name);
    }
  }
  if (ec) return UnavailableError("cannot list TSDB dir " + dir + ": " + ec.message());
  auto wal_age = NewestMtimeAge(fs::path(dir) / "wal");
  auto head_age = NewestMtimeAge(fs::path(dir) / "chunks_head");
  if (wal_age || head_age) {
    inv.newest_head_write_age_seconds = std::min(wal_age.value_or(1e18), head_age.value_or(1e18));
  }
  if (auto newest_age = NewestMtimeAge(dir); newest_age && -*newest_age > kClockSkewToleranceSeconds) {
    inv.clock_skew_seconds = -*newest_age;
  }
  if (inv.blocks.empty() && !inv.has_wal && !inv.damaged_blocks.empty()) {
    const size_t more = inv.damaged_blocks.size() - 1;
    return DataLossError(inv.damaged_blocks.front().why +
                         (more > 0 ? " (and " + std::to_string(more) + " more damaged block(s))" : "") +
                         ": no block of " + dir + " can be read, and there is no WAL");
  }
  if (inv.blocks.empty() && !inv.has_wal) {
    std::string symlinks;
    for (const auto& name : SymlinksAmong(dir, inv.ignored)) symlinks += (symlinks.empty() ? "" : ", ") + name;
    return NotFoundError("TSDB dir " + dir +
                         " holds no blocks (ULID dirs with meta.json) and no WAL: Prometheus never started "
                         "or never scraped for this job" +
                         (symlinks.empty() ? "" : " (symlinks, not followed: " + symlinks + ")"));
  }
  return inv;
}

Status CheckNotLive(const TsdbInventory& inv, double live_write_window_seconds, std::optional<bool> job_finished) {
  std::string why;
  const bool written_in_the_future =
      inv.newest_head_write_age_seconds && *inv.newest_head_write_age_seconds < -kClockSkewToleranceSeconds;
  if (inv.lock_held) {
    why = "its lock file is held by a running Prometheus";
  } else if (job_finished == true || written_in_the_future) {
    // The log's end state outranks mtimes, and a future mtime is clock skew, not freshness.
  } else if (inv.newest_head_write_age_seconds && *inv.newest_head_write_age_seconds < live_write_window_seconds) {
    why = "its WAL was written " + std::to_string(static_cast<int>(*inv.newest_head_write_age_seconds)) +
          " s ago";
  }
  if (why.empty()) return Status::Ok();
  return FailedPreconditionError(
      "TSDB " + inv.dir + " belongs to a live job (" + why +
      "); a copy would be inconsistent. Either serve only its completed blocks (blocks-only: the newest ~2 h, "
      "still in the WAL, will be missing) or query the job's own Prometheus with --prometheus URL");
}

int RemoveStalePrivateCopies(const std::string& temp_root) {
  const fs::path root = TempRoot(temp_root);
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kPrivateCopyPrefix, 0) != 0 || it->is_symlink(ec) || !it->is_directory(ec)) continue;
    struct stat st;
    if (lstat(it->path().c_str(), &st) != 0 || st.st_uid != geteuid()) continue;
    std::ifstream owner(it->path() / kOwnerFile);
    pid_t pid = 0;
    std::string start_time;
    if (!(owner >> pid >> start_time)) {
      // Being created right now by another run (owner file not yet written): leave it unless old.
      if (std::chrono::duration<double>(fs::file_time_type::clock::now() - it->last_write_time(ec)).count() < 60) {
        continue;
      }
    } else if (ProcessStartTime(pid) == start_time) {
      continue;  // its owner is alive
    }
    std::error_code rm;
    fs::remove_all(it->path(), rm);  // does not follow symlinks inside
    if (!rm) ++removed;
  }
  return removed;
}

StatusOr<std::unique_ptr<PrivatePrometheus>> PrivatePrometheus::Start(const std::string& tsdb_dir,
                                                                      const PrivatePrometheusOptions& options) {
  RemoveStalePrivateCopies(options.temp_root);
  ASSIGN_OR_RETURN(TsdbInventory inventory, InspectTsdbDir(tsdb_dir));
  std::unique_ptr<PrivatePrometheus> server(new PrivatePrometheus());
  server->inventory_ = std::move(inventory);
  RETURN_IF_ERROR(server->CheckServable(tsdb_dir, options));
  const std::string binary = FindExecutable(options.prometheus_binary);
  if (binary.empty()) {
    // Not the job's fault: this machine lacks a tool diagnose needs.
    return UnavailableError("'" + options.prometheus_binary + "' not found in PATH (Debian package 'prometheus')");
  }
  // A signal waits until the copy is made and the server that serves it is registered, then
  // removes both.
  std::optional<AcquisitionScope> acquiring;
  acquiring.emplace();
  RETURN_IF_ERROR(server->MakePrivateCopy(tsdb_dir, options));
  ASSIGN_OR_RETURN(const WebCredentials credentials, server->WriteServerConfig());
  server->authorization_ = BasicAuthorization(credentials.user, credentials.password);
  const auto spawned = Clock::now();
  RETURN_IF_ERROR(server->SpawnServer(binary));
  acquiring.reset();
  RETURN_IF_ERROR(server->WaitUntilReady(tsdb_dir, options, credentials, spawned));
  server->startup_seconds_ = std::chrono::duration<double>(Clock::now() - spawned).count();
  // Where the start-up's time went, on the critical path of every diagnosis (-vv's time line).
  Log().debug("private Prometheus ready: copy {:.3f} s, spawn to its port {:.3f} s, to /-/ready {:.3f} s",
              server->copy_seconds_, server->listening_seconds_, server->startup_seconds_);
  if (server->inventory_.has_wal) server->ReadHeadRange();
  RETURN_IF_ERROR(server->CheckLoaded(tsdb_dir));
  return server;
}

namespace {

// A block left out, said with the time it most likely held: Prometheus cuts a block after its last
// sample (the ULID's time) and the blocks of one TSDB do not overlap, so its data lie between the
// served block before that time and that time.
std::string DamagedBlockCaveat(const DamagedBlock& damaged, const std::vector<BlockMeta>& served) {
  const double cut = UlidSeconds(damaged.ulid);
  std::optional<double> after;
  for (const auto& block : served)
    if (block.max_time_ms / 1000.0 <= cut) after = std::max(after.value_or(0), block.max_time_ms / 1000.0);
  const std::string span = after ? "from " + IsoUtc(*after) + " (the end of the served block before it) to " + IsoUtc(cut)
                                 : "up to " + IsoUtc(cut);
  return "block " + damaged.ulid + " was left out (" + damaged.why + "): the samples it holds are missing, most likely " +
         span + " (when it was cut, its ULID's time); a gap there is that block, not the job";
}

}  // namespace

Status PrivatePrometheus::CheckServable(const std::string& tsdb_dir, const PrivatePrometheusOptions& options) {
  for (const auto& damaged : inventory_.damaged_blocks) caveats_.push_back(DamagedBlockCaveat(damaged, inventory_.blocks));
  for (const auto& name : SymlinksAmong(tsdb_dir, inventory_.ignored))
    caveats_.push_back(tsdb_dir + "/" + name + " is a symlink and was not followed (nothing outside the snapshot is "
                       "read): what it holds is not served");
  if (!options.blocks_only) return CheckNotLive(inventory_, options.live_write_window_seconds, options.job_finished);
  if (inventory_.blocks.empty()) {
    return NotFoundError("TSDB dir " + tsdb_dir + " has no completed blocks to serve blocks-only (only a WAL)");
  }
  if (inventory_.has_wal) {
    caveats_.push_back("blocks-only: the WAL of " + tsdb_dir + " was not served, so the newest ~2 h of data are missing");
  }
  return Status::Ok();
}

Status PrivatePrometheus::MakePrivateCopy(const std::string& tsdb_dir, const PrivatePrometheusOptions& options) {
  const auto copy_started = Clock::now();
  std::string pattern = TempRoot(options.temp_root) + "/" + kPrivateCopyPrefix + "XXXXXX";
  if (!mkdtemp(pattern.data())) {
    return UnavailableError("cannot create a private TSDB copy dir under " + TempRoot(options.temp_root) + ": " +
                            std::strerror(errno));
  }
  copy_dir_ = pattern;
  const std::string copy = copy_dir_;
  // From here on the dir is ours to remove on every path, including a signal during the copy.
  cleanup_id_ = CleanupRegistry::Instance().Register("private TSDB copy " + copy, [copy] {
    std::error_code ec;
    fs::remove_all(copy, ec);
  });
  {
    std::ofstream owner(fs::path(copy) / kOwnerFile);
    owner << getpid() << ' ' << ProcessStartTime(getpid()) << '\n';
    if (!owner) return UnavailableError("cannot write " + copy + "/" + kOwnerFile);
  }
  const fs::path data = fs::path(copy) / "data";
  CopyStats stats;
  unserved_blocks_ = BlocksOutsideLoggedRun(inventory_.blocks, options.logged_run);
  for (const auto& block : inventory_.blocks) {
    if (std::find(unserved_blocks_.begin(), unserved_blocks_.end(), block.ulid) != unserved_blocks_.end()) continue;
    RETURN_IF_ERROR(CopyTree(fs::path(tsdb_dir) / block.ulid, data / block.ulid,
                             CopyMode{.hard_link = true, .symlink_immutable = true}, &stats));
  }
  if (!options.blocks_only) {
    // The head is written in place by Prometheus, so it is copied, never linked.
    for (const char* head : {"wal", "chunks_head"}) {
      const fs::path src = fs::path(tsdb_dir) / head;
      std::error_code ec;
      if (fs::is_directory(fs::symlink_status(src, ec))) {
        RETURN_IF_ERROR(CopyTree(src, data / head, CopyMode{}, &stats));
      }
    }
  }
  if (stats.skipped_symlinks > 0) {
    caveats_.push_back(std::to_string(stats.skipped_symlinks) + " symlink(s) inside " + tsdb_dir + " were not followed");
  }
  linked_files_ = stats.linked_files;
  symlinked_files_ = stats.symlinked_files;
  copied_bytes_ = stats.copied_bytes;
  served_block_bytes_ = stats.block_file_bytes;
  copy_seconds_ = std::chrono::duration<double>(Clock::now() - copy_started).count();
  return Status::Ok();
}

StatusOr<WebCredentials> PrivatePrometheus::WriteServerConfig() {
  const std::string config = copy_dir_ + "/prometheus.yml";
  {
    std::ofstream cfg(config);
    cfg << "global:\n  scrape_interval: 1h\nscrape_configs: []\n";
    if (!cfg) return UnavailableError("cannot write " + config);
  }
  // Basic auth from a per-run secret: the loopback port is reachable by every local user. The
  // admin and lifecycle APIs stay off (no --web.enable-admin-api / --web.enable-lifecycle).
  ASSIGN_OR_RETURN(WebCredentials credentials, NewWebCredentials());
  const std::string web_config = copy_dir_ + "/web.yml";
  {
    std::ofstream web(web_config);
    web << WebConfigYaml(credentials);
    if (!web) return UnavailableError("cannot write " + web_config);
  }
  fs::permissions(web_config, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  return credentials;
}

Status PrivatePrometheus::SpawnServer(const std::string& binary) {
  // Retention is measured from the newest block, so an old job's blocks would be deleted at
  // startup under the 15d default; 2h max block duration keeps compaction from rewriting the copy
  // while we query.
  const std::string copy = copy_dir_;
  const std::string log = copy + "/prometheus.log";
  SpawnOptions spawn;
  spawn.argv = {binary,
                "--config.file=" + copy + "/prometheus.yml",
                "--web.config.file=" + copy + "/web.yml",
                "--storage.tsdb.path=" + (fs::path(copy) / "data").string(),
                "--web.listen-address=127.0.0.1:0",
                "--storage.tsdb.retention.time=100y",
                "--storage.tsdb.max-block-duration=2h"};
  spawn.stdout_path = log;
  spawn.stderr_path = log;
  go_memory_ = PrivateServerGoMemory(served_block_bytes_);
  spawn.default_environment = {"GOGC=" + std::to_string(go_memory_.gogc),
                               "GOMEMLIMIT=" + std::to_string(go_memory_.memory_limit_bytes)};
  for (const char* name : {"GOGC", "GOMEMLIMIT"}) {
    if (const char* own = std::getenv(name)) Stage("private Prometheus: {}={} as this environment sets it", name, own);
  }
  Log().debug("private Prometheus: GOGC={} GOMEMLIMIT={} MiB unless this environment sets them ({} MiB of blocks served)",
              go_memory_.gogc, go_memory_.memory_limit_bytes >> 20, served_block_bytes_ >> 20);
  auto child = ChildProcess::Spawn(spawn);
  if (!child.ok()) return child.status();
  child_.emplace(std::move(child).value());
  const pid_t pid = child_->pid();
  CleanupRegistry::Instance().Unregister(*cleanup_id_);
  cleanup_id_ = CleanupRegistry::Instance().Register("private Prometheus " + std::to_string(pid), [pid, copy] {
    KillAndReap(pid);
    std::error_code ec;
    fs::remove_all(copy, ec);
  });
  return Status::Ok();
}

Status PrivatePrometheus::StartupFailure(const std::string& tsdb_dir, const std::string& what) const {
  const std::string tail = ReadTail(copy_dir_ + "/prometheus.log", 1500);
  const std::string message = "private Prometheus for " + tsdb_dir + " " + what + "; log tail: " + tail;
  // The job's data could not be opened (corrupt blocks, a broken WAL): a fact about its TSDB.
  // Anything else (killed, no port, too slow) is ours, and worth one more start.
  if (tail.find("opening storage failed") != std::string::npos) return DataLossError(message);
  return UnavailableError(message);
}

GoMemorySettings PrivateServerGoMemory(int64_t served_block_bytes) {
  GoMemorySettings settings;
  const int64_t blocks = std::max<int64_t>(served_block_bytes, 0);
  // Blocks past the whole budget: no heap limit can hold it, and a tight one only burns the
  // server's CPU collecting garbage (1,024 nodes x 6 h, 1.76 GB of blocks: 27 % slower at 512 MiB).
  if (blocks > kPrivateServerMemoryBudget) {
    settings.memory_limit_bytes = kPrivateServerMemoryBudget;
    return settings;
  }
  settings.memory_limit_bytes = std::max(kPrivateServerMemoryBudget - blocks, kPrivateServerMinGoMemoryLimit);
  return settings;
}

std::optional<int> ListeningPortInLog(const std::string& log_text) {
  static const std::regex kListening(R"(msg="Listening on" address=127\.0\.0\.1:(\d+))");
  std::smatch m;
  if (!std::regex_search(log_text, m, kListening)) return std::nullopt;
  return std::stoi(m[1].str());
}

Status PrivatePrometheus::WaitUntilReady(const std::string& tsdb_dir, const PrivatePrometheusOptions& options,
                                         const WebCredentials& credentials, Clock::time_point spawned) {
  auto deadline = spawned + std::chrono::milliseconds(static_cast<int64_t>(options.startup_timeout_seconds * 1000));
  if (options.deadline && *options.deadline < deadline) deadline = *options.deadline;
  const std::string log = copy_dir_ + "/prometheus.log";
  int port = 0;
  while (port == 0) {
    if (const std::optional<int> listening = ListeningPortInLog(ReadTail(log, 1 << 20))) {
      port = *listening;
      listening_seconds_ = std::chrono::duration<double>(Clock::now() - spawned).count();
      break;
    }
    if (!child_->Running()) {
      return StartupFailure(tsdb_dir, "exited with code " + std::to_string(child_->ExitCode().value_or(-1)) +
                                          " before listening");
    }
    if (Clock::now() > deadline) return StartupFailure(tsdb_dir, "did not report its port within the startup deadline");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  url_ = "http://127.0.0.1:" + std::to_string(port);
  RemoteEndpointOptions endpoint;
  endpoint.url = url_;
  endpoint.headers["Authorization"] = BasicAuthorization(credentials.user, credentials.password);
  endpoint.timeout_seconds = options.query_timeout_seconds;
  endpoint.max_parallel = options.max_parallel;
  endpoint.deadline = options.deadline;
  endpoint.compressed_answers = false;   // loopback
  endpoint.query_stats = true;
  endpoint.is_prometheus = true;
  endpoint.max_estimated_samples_in_flight = kPrivateServerSamplesInFlight;
  ASSIGN_OR_RETURN(client_, HttpQueryClient::Create(endpoint, "private Prometheus on a copy of " + tsdb_dir +
                                                                  " (127.0.0.1:" + std::to_string(port) + ")"));
  while (true) {
    auto ready = client_->Get("/-/ready", 2);
    if (ready.ok() && ready->http_code == 200) return Status::Ok();
    if (!child_->Running()) {
      return StartupFailure(tsdb_dir, "exited with code " + std::to_string(child_->ExitCode().value_or(-1)) +
                                          " before it was ready");
    }
    if (Clock::now() > deadline) return StartupFailure(tsdb_dir, "was not ready within the startup deadline");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Status PrivatePrometheus::CheckLoaded(const std::string& tsdb_dir) {
  // A dir it could not read is served empty without error: make sure it actually loaded data.
  const double start = inventory_.blocks.empty() ? 0 : inventory_.min_time_ms() / 1000.0;
  const double end = inventory_.blocks.empty() || inventory_.has_wal ? 4102444800.0  // 2100-01-01
                                                                     : inventory_.max_time_ms() / 1000.0;
  auto names = client_->LabelValues("__name__", {}, start, end);
  if (!names.ok()) return names.status().WithContext("checking what the private Prometheus loaded");
  if (names->empty()) {
    return DataLossError("private Prometheus on a copy of " + tsdb_dir +
                         " started but serves no metric names; the blocks/WAL could not be loaded. Log tail: " +
                         ReadTail(copy_dir_ + "/prometheus.log", 1500));
  }
  return Status::Ok();
}

Status PrivatePrometheus::Health() {
  if (!child_) return UnavailableError("private Prometheus for " + inventory_.dir + " is stopped");
  if (child_->Running()) return Status::Ok();
  return UnavailableError("private Prometheus (pid " + std::to_string(child_->pid()) + ") for " + inventory_.dir +
                          " exited with code " + std::to_string(child_->ExitCode().value_or(-1)) +
                          "; log tail: " + ReadTail(copy_dir_ + "/prometheus.log", 1000));
}

void PrivatePrometheus::Stop() {
  // A signal during the teardown waits for it rather than racing it: two remove_all of one tree at
  // once each stop at the first entry the other removed, and the copy is left half there.
  AcquisitionScope releasing;
  client_.reset();
  if (child_) {
    // Killed outright: its data dir is the private copy removed next, so what a graceful shutdown
    // would close and flush is thrown away, and on a busy machine that shutdown took 0.1-0.2 s at
    // the end of every diagnosis.
    child_->Terminate(std::chrono::milliseconds(0));
    child_.reset();
  }
  if (!copy_dir_.empty()) {
    std::error_code ec;
    fs::remove_all(copy_dir_, ec);
    copy_dir_.clear();
  }
  if (cleanup_id_) {
    CleanupRegistry::Instance().Unregister(*cleanup_id_);
    cleanup_id_.reset();
  }
}

PrivatePrometheus::~PrivatePrometheus() { Stop(); }

void PrivatePrometheus::ReadHeadRange() {
  auto status = client_->Get("/api/v1/status/tsdb", 5);
  if (!status.ok() || status->http_code != 200) return;   // the range stays unknown; discovery searches
  const nlohmann::json doc = ParseUntrustedJson(status->body);
  if (!doc.is_object() || !doc.contains("data") || !doc["data"].is_object()) return;
  const nlohmann::json& head = doc["data"].value("headStats", nlohmann::json());
  if (!head.is_object() || !head.value("minTime", nlohmann::json()).is_number_integer() ||
      !head.value("maxTime", nlohmann::json()).is_number_integer())
    return;
  const int64_t min_ms = head["minTime"].get<int64_t>(), max_ms = head["maxTime"].get<int64_t>();
  // An empty head reports minTime = MaxInt64 and maxTime = MinInt64.
  if (min_ms > max_ms) return;
  inventory_.head_min_time_ms = min_ms;
  inventory_.head_max_time_ms = max_ms;
}

}  // namespace diagnose
