// Streaming, bounded line reader for job logs. Reads large blocks with read(2), splits on '\n' with
// memchr, strips one trailing '\r', and caps every line at a fixed length (the rest of an overlong
// line is skipped, not buffered) so a 1 MB line or binary garbage cannot grow memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace diagnose {

struct LineReaderOptions {
  // read(2) size: small enough that a block is still in cache when the scan reads what the
  // kernel just copied into it, large enough that system calls do not count.
  size_t block_bytes = 256 << 10;
  size_t max_line_bytes = 0;        // longer lines are truncated to this; 0: the log.line_bytes limit
  // Reading stops here with kDeadlineExceeded (status(), naming the byte offset). The clock is read
  // every kDeadlineCheckBytes: a caller that checks per line never sees one line of 4 GiB of NULs
  // (a sparse log of a node that crashed mid-write) end before the bytes do.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// Bytes read between looks at LineReaderOptions::deadline: 16 blocks, ~2 ms of reading.
inline constexpr int64_t kDeadlineCheckBytes = int64_t{4} << 20;

class LineReader {
 public:
  explicit LineReader(LineReaderOptions options = {});
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Opens `path` and positions at byte `begin`; reading stops at the first line that starts at or
  // after `end` (end = -1: end of file). A range that starts mid-line skips to the next line start,
  // so splitting a file at arbitrary offsets covers every line exactly once.
  Status Open(const std::string& path, int64_t begin = 0, int64_t end = -1);

  // Next line (without '\n' / "\r\n"); false at end of range or on a read error (see status()).
  // The view is valid until the next call.
  bool Next(std::string_view* line);

  int64_t line_number() const { return line_number_; }   // 1-based number of the last line returned
  int64_t line_offset() const { return line_offset_; }   // byte offset of the last line returned
  int64_t truncated_lines() const { return truncated_lines_; }
  const Status& status() const { return status_; }
  // Sets the number the next line will get minus one (for ranges whose start line is known).
  void set_line_number(int64_t n) { line_number_ = n; }

 private:
  bool Fill();

  LineReaderOptions options_;
  int fd_ = -1;
  std::string path_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
  int64_t file_offset_ = 0;     // offset of buf_[0] in the file
  int64_t end_ = -1;
  bool eof_ = false;
  std::string long_line_;        // assembly space for lines that straddle blocks
  int64_t line_number_ = 0;
  int64_t line_offset_ = 0;
  int64_t truncated_lines_ = 0;
  int64_t bytes_since_clock_ = 0;   // read since the deadline was last looked at
  Status status_;
};

// Counts '\n'-terminated lines in [0, offset) (for numbering lines of a range); bounded memory.
StatusOr<int64_t> CountLinesBefore(const std::string& path, int64_t offset);

struct NumberedLine {
  int64_t number = 0;   // 1-based
  std::string text;     // capped like every line the reader returns
};

// The last line of `path` with more than whitespace on it, looked for in its final `window` bytes:
// where a log that stopped without a summary stops is the evidence of how it died. nullopt when
// that window holds none.
StatusOr<std::optional<NumberedLine>> LastNonEmptyLine(const std::string& path, int64_t window = 64 << 10);

}  // namespace diagnose
