// Text from outside (HTTP bodies, logs, YAML) made safe to put in a report: nlohmann::json refuses
// to serialise invalid UTF-8 (type_error.316), so every such string passes through here first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace diagnose {

// Length of the well-formed UTF-8 sequence starting at text[i] (Unicode 15, table 3-7: no
// overlongs, no surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one.
size_t Utf8SequenceLength(std::string_view text, size_t i);

// At most `max_bytes` of `text` (then "..."), each byte that does not start a well-formed sequence
// replaced by '?'; with `strip_controls`, C0 controls other than tab and DEL become '?' too, so a
// quoted line stays one line.
std::string ValidUtf8(std::string_view text, size_t max_bytes = std::string::npos, bool strip_controls = false);

// `text` with each C0 control other than tab and line feed, and DEL, written as '?': what a
// terminal would act on (an escape sequence from an endpoint's error text, a carriage return
// overwriting the line) never reaches a report, whatever its format.
std::string WithoutControls(std::string_view text);

// `text` as one printable line for an error message: valid UTF-8, each control byte written as an
// escape (\n, \t, \x1b, and \u0080..\u009f for the C1 controls), so a job id with a newline cannot
// forge a second line of output.
std::string OneLine(std::string_view text);

// `text` to print inside one line of a text or Markdown report, or of a command's text output:
// valid UTF-8 (at most `max_bytes`, then "..."), each C0 control but tab, DEL, and each C1 control
// (U+0080..U+009F: some terminals obey U+009B as ESC [) written visibly as in OneLine (\n, \r,
// \x1b, \u009b). A host label or log line then cannot set the window title, clear the screen or
// forge a line such as "exclude chi9999". Tab stays: a quoted log line's columns, it moves the cursor
// along the line and nowhere else. The one sanitiser for untrusted strings in text and Markdown.
std::string PrintableLine(std::string_view text, size_t max_bytes = std::string::npos);

}  // namespace diagnose
