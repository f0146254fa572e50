#include "engine/decision/sweep_history.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/core/cleanup_registry.h"
#include "engine/core/regular_file.h"
#include "engine/core/untrusted_json.h"

namespace diagnose {

StatusOr<SweepHistory> LoadSweepHistory(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return SweepHistory{};
  RETURN_IF_ERROR(RequireRegularFile(path));
  std::ifstream in(path);
  if (!in) return PermissionDeniedError("cannot read sweep history " + path);
  return ParseSweepHistory(in, path);
}

SweepHistory ParseSweepHistory(std::istream& in, const std::string& source) {
  SweepHistory history;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const bool complete = !in.eof();   // getline hit '\n'; a last line without one is torn or in flight
    nlohmann::json j = ParseUntrustedJson(line);
    if (j.is_discarded() || !j.is_object()) {
      history.warnings.push_back(source + ":" + std::to_string(line_no) + ": skipped malformed history line" +
                                 (complete ? "" : " (unterminated tail)"));
      continue;
    }
    try {
      history.entries.push_back(j.get<HistoryEntry>());
    } catch (const nlohmann::json::exception& e) {
      history.warnings.push_back(source + ":" + std::to_string(line_no) + ": skipped history line: " + e.what());
    }
  }
  return history;
}

std::string EncodeHistoryLine(const HistoryEntry& entry) {
  nlohmann::json j = entry;
  if (!entry.retry_of) j.erase("retry_of");
  if (entry.found.empty()) j.erase("found");
  // dump() escapes control characters, so the line holds no raw newline.
  return DumpJson(j) + "\n";
}

std::mutex& HistoryAppendMutex() {
  static auto* mutex = new std::mutex();   // never destroyed: may be held while the process _exits
  return *mutex;
}

namespace {

// Termination signals held back in this thread while a history write is in flight (a fatal
// signal can otherwise cut a multi-page write short).
class HeldSignals {
 public:
  HeldSignals() {
    sigset_t hold;
    sigemptyset(&hold);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&hold, sig);
    pthread_sigmask(SIG_BLOCK, &hold, &previous_);
  }
  ~HeldSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

 private:
  sigset_t previous_;
};

// The history file opened and flock'ed. A rewrite renames a new file over the path while others
// wait for the old one's lock: whoever then gets a lock on a file no longer at the path opens again.
StatusOr<int> OpenLockedHistory(const std::string& path) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0) return PermissionDeniedError("cannot open sweep history " + path + ": " + std::strerror(errno));
    struct stat held {}, named {};
    if (::fstat(fd, &held) != 0 || !S_ISREG(held.st_mode)) {
      ::close(fd);
      return FailedPreconditionError("sweep history " + path + " is not a regular file");
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    if (::stat(path.c_str(), &named) == 0 && named.st_ino == held.st_ino && named.st_dev == held.st_dev) return fd;
    ::close(fd);
  }
  return UnavailableError("sweep history " + path + " kept being replaced while waiting for its lock");
}

StatusOr<std::string> ReadAll(int fd, const std::string& path) {
  std::string text;
  char buf[64 * 1024];
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InternalError("cannot read sweep history " + path + ": " + std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
    offset += n;
  }
}

// Whether `line` is a well-formed entry of (sweep, job).
bool IsLineOf(std::string_view line, const std::string& sweep, const std::string& job) {
  if (line.find(job) == std::string_view::npos) return false;   // most lines, without parsing them
  const nlohmann::json j = ParseUntrustedJson(line);
  if (!j.is_object()) return false;
  const auto s = j.find("sweep"), o = j.find("job");
  return s != j.end() && o != j.end() && s->is_string() && o->is_string() && *s == sweep && *o == job;
}

Status WriteWhole(int fd, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return DataLossError("cannot write sweep history " + path + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return DataLossError("sweep history " + path + " was written but not synced: " + std::strerror(errno));
  return Status::Ok();
}

// `kept` (whole lines) plus `line` into PATH.tmp.<pid>, renamed over PATH; `locked` is the file
// whose lock is held, whose mode the new file takes.
Status ReplaceHistory(int locked, const std::string& path, const std::string& kept, const std::string& line) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  // A signal mid-rewrite must not leave the temp file beside the history.
  const CleanupRegistry::Id cleanup =
      CleanupRegistry::Instance().Register("sweep history rewrite " + tmp, [tmp] { ::unlink(tmp.c_str()); });
  struct CleanupGuard {
    CleanupRegistry::Id id;
    std::string tmp;
    bool renamed = false;
    ~CleanupGuard() {
      if (!renamed) ::unlink(tmp.c_str());
      CleanupRegistry::Instance().Unregister(id);
    }
  } guard{cleanup, tmp};
  struct stat st {};
  const mode_t mode = ::fstat(locked, &st) == 0 ? (st.st_mode & 07777) : 0644;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return PermissionDeniedError("cannot rewrite sweep history " + path + " (" + tmp + "): " + std::strerror(errno));
  ::fchmod(fd, mode);
  Status written = WriteWhole(fd, kept + line, path);
  ::close(fd);
  RETURN_IF_ERROR(written);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return InternalError("cannot replace sweep history " + path + ": " + std::strerror(errno));
  guard.renamed = true;
  // The rename itself made durable, so a crash cannot bring back the old line.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return Status::Ok();
}

}  // namespace

Status AppendHistoryEntry(const std::string& path, const HistoryEntry& entry) {
  std::string line = EncodeHistoryLine(entry);
  std::lock_guard<std::mutex> append_guard(HistoryAppendMutex());
  ASSIGN_OR_RETURN(const int fd, OpenLockedHistory(path));
  HeldSignals held;
  StatusOr<std::string> text = ReadAll(fd, path);
  if (!text.ok()) {
    ::close(fd);
    return text.status();
  }
  // The lines kept if this job is already recorded, each ending in '\n' (a torn tail gets one, so
  // only it is skipped by readers, never the line after it).
  std::string kept;
  bool replaces = false;
  for (size_t at = 0; at < text->size();) {
    size_t nl = text->find('\n', at);
    const size_t end = nl == std::string::npos ? text->size() : nl;
    const std::string_view current(text->data() + at, end - at);
    if (!current.empty() && IsLineOf(current, entry.sweep, entry.job)) replaces = true;
    else if (!current.empty()) kept.append(current).push_back('\n');
    at = end + 1;
  }
  if (replaces) {
    Status replaced = ReplaceHistory(fd, path, kept, line);
    ::close(fd);   // releases the flock; waiters find the new file at the path
    return replaced;
  }
  // A writer killed mid-line leaves a tail without '\n'; joined to it, this entry would be lost as
  // part of one malformed line. Start on a fresh line instead, so only the torn line is skipped.
  if (!text->empty() && text->back() != '\n') line.insert(line.begin(), '\n');
  // One write() per line: with O_APPEND the kernel places it at the end in one piece for regular
  // files, and the held signals land before or after the line, never inside it.
  ssize_t written;
  do {
    written = ::write(fd, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  const int write_errno = errno;
  int sync_result = 0;
  if (written >= 0 && static_cast<size_t>(written) == line.size()) sync_result = ::fsync(fd);
  const int close_result = ::close(fd);   // also releases the flock
  if (written < 0) return InternalError("cannot append to sweep history " + path + ": " + std::strerror(write_errno));
  if (static_cast<size_t>(written) != line.size())
    return DataLossError("short write to sweep history " + path + " (" + std::to_string(written) + " of " +
                         std::to_string(line.size()) + " bytes; disk full?)");
  if (sync_result != 0 || close_result != 0)
    return DataLossError("sweep history " + path + " was written but not synced to disk: " + std::strerror(errno));
  return Status::Ok();
}

std::string DefaultSweepId(const std::string& history_path) {
  return std::filesystem::path(history_path).stem().string();
}

namespace {

bool Overlaps(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.empty() || b.empty()) return true;
  for (const auto& x : a)
    for (const auto& y : b)
      if (x == y) return true;
  return false;
}

// A retry-with-changes run carries the changed parameters; compare the rest.
bool SameConfigModuloChanges(const SweepConfig& earlier, const std::map<std::string, std::string>& changes,
                             const SweepConfig& now) {
  if (earlier.model != now.model) return false;
  auto strip = [&](const std::map<std::string, std::string>& args) {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : args)
      if (!changes.count(k)) out.emplace(k, v);
    return out;
  };
  return strip(earlier.args) == strip(now.args);
}

}  // namespace

const HistoryEntry* FindRetryPredecessor(const SweepHistory& history, const std::string& sweep,
                                         const std::string& job, const SweepConfig& config,
                                         const std::vector<std::string>& nodes) {
  std::set<std::string> claimed;
  for (const auto& e : history.entries)
    if (e.sweep == sweep && e.retry_of && e.job != job) claimed.insert(*e.retry_of);
  for (auto it = history.entries.rbegin(); it != history.entries.rend(); ++it) {
    const HistoryEntry& e = *it;
    if (e.sweep != sweep || e.job == job) continue;
    if (!IsRetry(e.action) || claimed.count(e.job)) continue;
    if (!SameConfigModuloChanges(e.config, e.changes, config)) continue;
    if (!Overlaps(e.nodes, nodes)) continue;
    return &e;
  }
  return nullptr;
}

std::vector<const HistoryEntry*> RetryChain(const SweepHistory& history, const HistoryEntry* last) {
  std::vector<const HistoryEntry*> chain;
  std::set<std::string> seen;   // guards against a retry_of cycle in a hand-edited file
  while (last != nullptr && seen.insert(last->job).second) {
    chain.insert(chain.begin(), last);
    const HistoryEntry* previous = nullptr;
    if (last->retry_of) {
      for (auto it = history.entries.rbegin(); it != history.entries.rend(); ++it)
        if (it->sweep == last->sweep && it->job == *last->retry_of) {
          previous = &*it;
          break;
        }
    }
    last = previous;
  }
  return chain;
}

}  // namespace diagnose
