#include "engine/watch/log_follow.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "engine/core/regular_file.h"
#include "engine/triage/hostlist.h"

namespace diagnose {

namespace {

constexpr size_t kReadChunk = 256 * 1024;
// Lines longer than this are cut: step lines and summaries are short, and a runaway binary line
// must not grow memory.
constexpr size_t kMaxLine = 64 * 1024;

// Drops the srun label ("0: ", " 8: "), the Ray driver prefix and ANSI colour codes.
std::string StripPrefixes(const std::string& line, int* task) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      size_t j = i + 1;
      if (j < line.size() && (line[j] == '[' || line[j] == '(')) ++j;
      while (j < line.size() && !std::isalpha(static_cast<unsigned char>(line[j]))) ++j;
      i = j;
      continue;
    }
    out.push_back(line[i]);
  }
  *task = -1;
  size_t p = 0;
  while (p < out.size() && out[p] == ' ') ++p;
  size_t d = p;
  while (d < out.size() && std::isdigit(static_cast<unsigned char>(out[d]))) ++d;
  if (d > p && d < out.size() && out[d] == ':' && (d + 1 == out.size() || out[d + 1] == ' ')) {
    *task = std::atoi(out.substr(p, d - p).c_str());
    out = out.substr(std::min(out.size(), d + 2));
  }
  if (out.rfind("(MaxTextTrainerActor", 0) == 0) {
    const size_t close = out.find(") ");
    if (close != std::string::npos) out = out.substr(close + 2);
  }
  return out;
}

std::optional<double> NumberAfter(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return std::nullopt;
  const char* start = text.c_str() + at + key.size();
  char* end = nullptr;
  const double v = std::strtod(start, &end);
  if (end == start) return std::nullopt;
  return v;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> SplitPassthrough(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string token;
  char quote = 0;
  auto flush = [&] {
    if (token.empty()) return;
    const size_t eq = token.find('=');
    if (eq == std::string::npos) out.emplace_back(token, "");
    else out.emplace_back(token.substr(0, eq), token.substr(eq + 1));
    token.clear();
  };
  for (char c : text) {
    if (quote) {
      if (c == quote) quote = 0;
      else token.push_back(c);
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      flush();
    } else {
      token.push_back(c);
    }
  }
  flush();
  return out;
}

bool LogFollower::ConsumeLine(const std::string& raw) {
  int task = -1;
  const std::string line = StripPrefixes(raw, &task);
  if (task < 0) {
    // Header keys are unlabelled and come first; the per-task env dump repeats them labelled.
    auto header = [&](const char* key, std::string* field) {
      const size_t n = std::strlen(key);
      if (field->empty() && line.compare(0, n, key) == 0) *field = line.substr(n);
    };
    header("JOB_ID=", &progress_.job_id);
    header("JOB_NAME=", &progress_.job_name);
    header("MODEL_NAME=", &progress_.model);
    if (progress_.nodelist.empty() && line.rfind("JOB_NODELIST=", 0) == 0) {
      progress_.nodelist = line.substr(13);
      StatusOr<std::vector<std::string>> hosts = ExpandHostlist(progress_.nodelist);
      if (hosts.ok()) progress_.hosts = std::move(hosts).value();
    }
    if (progress_.nnodes == 0 && line.rfind("NNODES=", 0) == 0) progress_.nnodes = std::atoi(line.c_str() + 7);
    if (progress_.passthrough.empty() && line.rfind("PASSTHROUGH_ARGS=", 0) == 0) {
      std::string v = line.substr(17);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      progress_.passthrough = v;
    }
    if (line.find("JOB SUMMARY") != std::string::npos && line.rfind("===", 0) == 0) {
      in_summary_ = true;
      return false;
    }
    if (in_summary_) {
      const size_t at = line.find("Status:");
      if (at != std::string::npos) {
        const std::string rest = line.substr(at + 7);
        progress_.summary_seen = true;
        progress_.summary_status = rest.find("SUCCESS") != std::string::npos ? "SUCCESS" : "FAILED";
        if (auto code = NumberAfter(rest, "(exit ")) progress_.exit_code = static_cast<int>(*code);
        const std::string dash = "\xE2\x80\x94";   // em dash before the reason
        const size_t r = rest.find(dash);
        if (r != std::string::npos) {
          progress_.reason = rest.substr(r + dash.size());
          while (!progress_.reason.empty() && progress_.reason.front() == ' ') progress_.reason.erase(0, 1);
        }
        in_summary_ = false;
        return true;
      }
    }
  }
  const size_t at = line.find("completed step:");
  if (at == std::string::npos) return false;
  const auto step = NumberAfter(line.substr(at), "completed step:");
  if (!step) return false;
  ++progress_.step_lines;
  const auto n = static_cast<int64_t>(*step);
  bool advanced = false;
  if (!progress_.last_step || n > *progress_.last_step) {
    progress_.last_step = n;
    advanced = true;
  }
  // Steady window from the first record of each step (batch-sweep: rank 0, steps 5-14; every task
  // prints identical metrics, so the first seen is as good as task 0's).
  if (n >= 5 && n <= 14 && std::find(steady_seen_.begin(), steady_seen_.end(), n) == steady_seen_.end()) {
    if (auto tgs = NumberAfter(line, "Tokens/s/device:")) {
      steady_seen_.push_back(n);
      progress_.steady_tgs_sum += *tgs;
      ++progress_.steady_steps;
      if (auto mfu = NumberAfter(line, "MFU:")) {
        progress_.steady_mfu_sum += *mfu;
        ++progress_.steady_mfu_steps;
      }
    }
  }
  return advanced;
}

StatusOr<bool> LogFollower::Poll() {
  StatusOr<int> opened = OpenRegularFileForReading(path_);
  if (!opened.ok()) {
    if (opened.status().code() == StatusCode::kNotFound) return NotFoundError("job log " + path_ + " disappeared");
    if (opened.status().code() == StatusCode::kFailedPrecondition) return opened.status();
    return PermissionDeniedError("cannot read job log " + opened.status().message());
  }
  const int fd = *opened;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return InternalError("cannot stat job log " + path_);
  }
  // A replaced or truncated log starts over (the launcher re-created it).
  if ((inode_ != 0 && inode_ != static_cast<uint64_t>(st.st_ino)) || static_cast<uint64_t>(st.st_size) < offset_) {
    offset_ = 0;
    carry_.clear();
    in_summary_ = false;
    steady_seen_.clear();
    progress_ = LogProgress{};
  }
  inode_ = static_cast<uint64_t>(st.st_ino);
  bool progressed = false;
  std::string buffer(kReadChunk, '\0');
  while (true) {
    const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(offset_));
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return InternalError("cannot read job log " + path_ + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    offset_ += static_cast<uint64_t>(n);
    size_t start = 0;
    auto append_capped = [&](size_t from, size_t len) {
      carry_.append(buffer, from, std::min(len, kMaxLine - std::min(kMaxLine, carry_.size())));
    };
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (buffer[i] != '\n') continue;
      append_capped(start, i - start);
      if (!carry_.empty() && carry_.back() == '\r') carry_.pop_back();
      progressed = ConsumeLine(carry_) || progressed;
      carry_.clear();
      start = i + 1;
    }
    append_capped(start, static_cast<size_t>(n) - start);
  }
  ::close(fd);
  return progressed;
}

}  // namespace diagnose
