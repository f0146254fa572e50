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
// escape (\n, \t, \x1b), so a job id with a newline cannot forge a second line of output.
std::string OneLine(std::string_view text);

}  // namespace diagnose
