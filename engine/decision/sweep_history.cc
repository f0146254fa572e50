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

#include "engine/core/untrusted_json.h"

namespace diagnose {

StatusOr<SweepHistory> LoadSweepHistory(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return SweepHistory{};
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
  // dump() escapes control characters, so the line holds no raw newline.
  return DumpJson(j) + "\n";
}

std::mutex& HistoryAppendMutex() {
  static auto* mutex = new std::mutex();   // never destroyed: may be held while the process _exits
  return *mutex;
}

Status AppendHistoryEntry(const std::string& path, const HistoryEntry& entry) {
  std::string line = EncodeHistoryLine(entry);
  std::lock_guard<std::mutex> append_guard(HistoryAppendMutex());
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return PermissionDeniedError("cannot open sweep history " + path + ": " + std::strerror(errno));
  // Other diagnose processes (a sweep driver's parallel epilogs) append to the same file.
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  // A writer killed mid-line leaves a tail without '\n'; joined to it, this entry would be lost as
  // part of one malformed line. Start on a fresh line instead, so only the torn line is skipped.
  struct stat st;
  char last = '\n';
  if (::fstat(fd, &st) == 0 && st.st_size > 0 && ::pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n')
    line.insert(line.begin(), '\n');
  // One write() per line: with O_APPEND the kernel places it at the end in one piece for regular
  // files. Termination signals are held back for the duration (a fatal signal can otherwise cut a
  // multi-page write short), so SIGTERM/SIGINT land before or after the line, never inside it.
  sigset_t hold, previous;
  sigemptyset(&hold);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&hold, sig);
  pthread_sigmask(SIG_BLOCK, &hold, &previous);
  ssize_t written;
  do {
    written = ::write(fd, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  const int write_errno = errno;
  int sync_result = 0;
  if (written >= 0 && static_cast<size_t>(written) == line.size()) sync_result = ::fsync(fd);
  const int close_result = ::close(fd);   // also releases the flock
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
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
