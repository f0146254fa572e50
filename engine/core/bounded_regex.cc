#include "engine/core/bounded_regex.h"

#include <algorithm>

namespace diagnose {

std::string_view RegexWindow(std::string_view text, size_t focus_begin, size_t focus_end) {
  if (text.size() <= kRegexWindowBytes) return text;
  focus_end = std::min(std::max(focus_begin, focus_end), text.size());
  focus_begin = std::min(focus_begin, focus_end);
  const size_t focus = focus_end - focus_begin;
  if (focus >= kRegexWindowBytes) return text.substr(focus_begin, kRegexWindowBytes);
  const size_t margin = (kRegexWindowBytes - focus) / 2;
  const size_t start = std::min(focus_begin - std::min(focus_begin, margin), text.size() - kRegexWindowBytes);
  return text.substr(start, kRegexWindowBytes);
}

bool BoundedRegexSearch(std::string_view text, const std::regex& re, size_t focus_begin, size_t focus_end,
                        std::cmatch* match) {
  const std::string_view window = RegexWindow(text, focus_begin, focus_end);
  try {
    if (match != nullptr) return std::regex_search(window.data(), window.data() + window.size(), *match, re);
    return std::regex_search(window.data(), window.data() + window.size(), re);
  } catch (const std::regex_error&) {
    return false;
  }
}

bool BoundedRegexMatch(std::string_view text, const std::regex& re, std::cmatch* match) {
  if (text.size() > kRegexWindowBytes) return false;
  try {
    if (match != nullptr) return std::regex_match(text.data(), text.data() + text.size(), *match, re);
    return std::regex_match(text.data(), text.data() + text.size(), re);
  } catch (const std::regex_error&) {
    return false;
  }
}

}  // namespace diagnose
