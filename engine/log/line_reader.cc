#include "engine/log/line_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/core/limits.h"
#include "engine/core/regular_file.h"

namespace diagnose {

LineReader::LineReader(LineReaderOptions options) : options_(options) {
  if (options_.block_bytes < 4096) options_.block_bytes = 4096;
  if (options_.max_line_bytes == 0) options_.max_line_bytes = static_cast<size_t>(GetLimit(LimitId::kLogLineBytes));
  if (options_.max_line_bytes < 256) options_.max_line_bytes = 256;
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status LineReader::Open(const std::string& path, int64_t begin, int64_t end) {
  if (fd_ >= 0) ::close(fd_);
  path_ = path;
  fd_ = -1;
  ASSIGN_OR_RETURN(fd_, OpenRegularFileForReading(path));
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  buf_.resize(options_.block_bytes);
  pos_ = len_ = 0;
  eof_ = false;
  end_ = end;
  line_number_ = 0;
  truncated_lines_ = 0;
  bytes_since_clock_ = 0;
  status_ = Status::Ok();
  file_offset_ = 0;
  if (begin > 0) {
    // Start at begin-1 so that a range starting exactly at a line start keeps that line: the
    // partial line up to and including the '\n' at begin-1 is skipped.
    if (::lseek(fd_, begin - 1, SEEK_SET) < 0) return DataLossError(path + ": seek failed");
    file_offset_ = begin - 1;
    std::string_view skipped;
    if (!Next(&skipped)) return Status::Ok();
    line_number_ = 0;
  }
  return Status::Ok();
}

bool LineReader::Fill() {
  if (eof_) return false;
  // Keep nothing: callers copy straddling data into long_line_ before refilling.
  file_offset_ += static_cast<int64_t>(len_);
  pos_ = len_ = 0;
  while (true) {
    ssize_t n = ::read(fd_, buf_.data(), buf_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status_ = DataLossError(path_ + ": read failed: " + std::strerror(errno));
      eof_ = true;
      return false;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    len_ = static_cast<size_t>(n);
    bytes_since_clock_ += n;
    if (options_.deadline && bytes_since_clock_ >= kDeadlineCheckBytes) {
      bytes_since_clock_ = 0;
      if (std::chrono::steady_clock::now() >= *options_.deadline) {
        status_ = DeadlineExceededError("the run's deadline passed while reading " + path_ + " (at byte " +
                                        std::to_string(file_offset_ + n) + ")");
        eof_ = true;
        len_ = 0;
        return false;
      }
    }
    return true;
  }
}

bool LineReader::Next(std::string_view* line) {
  if (fd_ < 0) return false;
  // A line belongs to the range that contains its first byte.
  if (end_ >= 0 && file_offset_ + static_cast<int64_t>(pos_) >= end_) return false;
  if (pos_ >= len_ && !Fill()) return false;
  line_offset_ = file_offset_ + static_cast<int64_t>(pos_);
  const char* start = buf_.data() + pos_;
  const char* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - pos_));
  if (nl != nullptr) {
    size_t n = static_cast<size_t>(nl - start);
    pos_ += n + 1;
    if (n > 0 && start[n - 1] == '\r') --n;
    if (n > options_.max_line_bytes) {
      n = options_.max_line_bytes;
      ++truncated_lines_;
    }
    *line = std::string_view(start, n);
    ++line_number_;
    return true;
  }
  // The line straddles blocks (or is the truncated last line): assemble up to the cap, skip the rest.
  long_line_.assign(start, std::min(len_ - pos_, options_.max_line_bytes));
  bool truncated = (len_ - pos_) > options_.max_line_bytes;
  pos_ = len_;
  while (Fill()) {
    const char* s = buf_.data();
    const char* e = static_cast<const char*>(std::memchr(s, '\n', len_));
    size_t take = e ? static_cast<size_t>(e - s) : len_;
    if (long_line_.size() < options_.max_line_bytes) {
      size_t room = options_.max_line_bytes - long_line_.size();
      long_line_.append(s, std::min(take, room));
      if (take > room) truncated = true;
    } else if (take > 0) {
      truncated = true;
    }
    if (e) {
      pos_ = take + 1;
      break;
    }
    pos_ = len_;
  }
  if (!long_line_.empty() && long_line_.back() == '\r') long_line_.pop_back();
  if (truncated) ++truncated_lines_;
  *line = long_line_;
  ++line_number_;
  return true;
}

StatusOr<int64_t> CountLinesBefore(const std::string& path, int64_t offset) {
  ASSIGN_OR_RETURN(const int fd, OpenRegularFileForReading(path));
  std::vector<char> buf(1 << 20);
  int64_t done = 0, lines = 0;
  while (done < offset) {
    size_t want = static_cast<size_t>(std::min<int64_t>(offset - done, buf.size()));
    ssize_t n = ::read(fd, buf.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    lines += std::count(buf.data(), buf.data() + n, '\n');
    done += n;
  }
  ::close(fd);
  return lines;
}

StatusOr<std::optional<NumberedLine>> LastNonEmptyLine(const std::string& path, int64_t window) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return NotFoundError(path + ": " + std::strerror(errno));
  LineReader reader;
  RETURN_IF_ERROR(reader.Open(path, std::max<int64_t>(0, static_cast<int64_t>(st.st_size) - window)));
  std::optional<NumberedLine> last;
  int64_t last_offset = 0;
  for (std::string_view line; reader.Next(&line);) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    last = NumberedLine{0, std::string(line)};
    last_offset = reader.line_offset();
  }
  RETURN_IF_ERROR(reader.status());
  if (!last) return last;
  ASSIGN_OR_RETURN(int64_t before, CountLinesBefore(path, last_offset));
  last->number = before + 1;
  return last;
}

}  // namespace diagnose
