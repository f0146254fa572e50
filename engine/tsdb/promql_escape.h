// Values from logs and YAML (hostnames, task ids, device names) enter PromQL only through these.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace diagnose {

// Escapes a value for use inside a double-quoted PromQL label matcher: `host="<here>"`.
std::string EscapePromqlString(std::string_view value);
// Escapes a value so that it matches literally inside a regex matcher (`host=~"<here>"`): RE2
// metacharacters are backslash-escaped, then the result is string-escaped.
std::string EscapePromqlRegexLiteral(std::string_view value);
// `a|b|c` of literal alternatives, each regex-escaped; for `host=~"..."`.
std::string PromqlAlternation(const std::vector<std::string>& values);

// A range selector's duration covering `seconds` ("14176s"): whole seconds rounded up, at least 1s,
// because PromQL refuses fractions of a second there and a zero range.
std::string PromqlSeconds(double seconds);

}  // namespace diagnose
