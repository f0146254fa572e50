// One log line with its launcher/runtime prefixes peeled off (maxtext-slurm-formats.md §2.0):
// srun task label of any width, Ray driver prefix, ANSI colour codes, and the absl/glog prefix of
// C++ lines. Pure functions over string_views; no allocation unless ANSI codes must be removed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace diagnose {

struct AbslPrefix {
  char level = 0;                 // I W E F; 0 = no absl prefix
  int month = 0, day = 0;
  int hour = 0, minute = 0, second = 0;
  std::string_view stamp;         // "0224 19:21:00" or "0224 19:21:00.123456"
  std::string_view file_line;     // "client.h:77"
  std::string_view message;       // text after "] "
};

struct LogLine {
  int task = -1;                  // srun label / rank, -1 when unlabelled
  bool ray_driver = false;        // carried the (MaxTextTrainerActor pid=...) prefix
  std::string_view text;          // prefixes stripped (absl prefix kept; see absl)
  AbslPrefix absl;
  int64_t line_number = 0;        // 1-based within its file
};

// The launcher's prefixes only: the srun label and the coloured Ray driver prefix, the first steps
// of ParseLogLine. Sets *task (when labelled) and *ray_driver (when prefixed) and returns the rest
// of `raw`, which may still hold ANSI codes, an uncoloured Ray prefix or an absl prefix. The rest
// of the line is not read, so hot paths can look at its start before paying for a full parse.
std::string_view PeelLauncherPrefixes(std::string_view raw, int* task, bool* ray_driver);

// Strips prefixes from `raw`. When ANSI escapes must be removed the cleaned text is written into
// `scratch` and `text` points into it, so `scratch` must outlive the returned line.
LogLine ParseLogLine(std::string_view raw, std::string* scratch);

// Parses "<L>MMDD HH:MM:SS[.uuuuuu] [tid] file:line] msg" at the start of `text`.
bool ParseAbslPrefix(std::string_view text, AbslPrefix* out);

// Removes ESC [ ... final-byte (CSI) and ESC ( B style sequences.
void StripAnsi(std::string_view in, std::string* out);

// Limits a line for quoting in evidence: at most `max_bytes`, invalid UTF-8 and control bytes
// replaced by '?', so JSON output never fails on binary garbage.
std::string SanitizeForQuote(std::string_view text, size_t max_bytes = 300);

}  // namespace diagnose
