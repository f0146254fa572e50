// Percent-encoding for URLs built from untrusted values (label names, PromQL, times).
#pragma once

#include <string>
#include <string_view>

namespace diagnose {

// RFC 3986: every byte but the unreserved set (ALPHA DIGIT - . _ ~) becomes %XX, so the result is
// safe as a query-string value, a form field and a path segment alike.
std::string UrlEncode(std::string_view value);

}  // namespace diagnose
