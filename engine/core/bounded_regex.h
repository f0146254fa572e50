// std::regex on text others wrote (log lines, kernel names, tool output). libstdc++'s executor
// recurses at least once per character a `.*`-like loop consumes: a 40 KB log line matched against
// "NCCL FATAL .*Failed to ..." took ~97,000 frames and overflowed the 8 MiB stack. So a regex never
// sees more than kRegexWindowBytes of one text: the whole text when it is that short, else the
// slice around where its required literal was found. What is lost: a match that needs text more
// than half a window away from that literal (or, with no literal, past the window's end).
#pragma once

#include <cstddef>
#include <regex>
#include <string_view>

namespace diagnose {

// About 300 bytes of stack a character (measured at -O2): ~1.3 MiB of a thread's 8 MiB.
inline constexpr size_t kRegexWindowBytes = 4096;

// The part of `text` a regex may read: all of it up to kRegexWindowBytes, else kRegexWindowBytes
// centred on [focus_begin, focus_end) (clamped to the text; with the default focus, the text's
// start).
std::string_view RegexWindow(std::string_view text, size_t focus_begin = 0, size_t focus_end = 0);

// std::regex_search over RegexWindow(text, focus_begin, focus_end); false also when the executor
// gives up (regex_error: its complexity limit).
// `match`, when given, points into `text`.
bool BoundedRegexSearch(std::string_view text, const std::regex& re, size_t focus_begin = 0, size_t focus_end = 0,
                        std::cmatch* match = nullptr);

// std::regex_match of the whole text; false past kRegexWindowBytes: every text matched whole here
// is a name, a duration or a time, none of them that long.
bool BoundedRegexMatch(std::string_view text, const std::regex& re, std::cmatch* match = nullptr);

}  // namespace diagnose
