#include "engine/log/log_line.h"

#include <cstring>

#include "engine/core/utf8.h"

namespace diagnose {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int TwoDigits(std::string_view s, size_t i) { return (s[i] - '0') * 10 + (s[i + 1] - '0'); }

// "<spaces><digits>: " at the very start.
bool StripSrunLabel(std::string_view* text, int* task) {
  size_t i = 0;
  while (i < text->size() && i < 8 && (*text)[i] == ' ') ++i;
  size_t d = i;
  int value = 0;
  while (i < text->size() && IsDigit((*text)[i]) && i - d < 7) {
    value = value * 10 + ((*text)[i] - '0');
    ++i;
  }
  if (i == d || i + 1 >= text->size() + 0 || (*text)[i] != ':') return false;
  if (i + 1 < text->size() && (*text)[i + 1] != ' ') return false;
  *task = value;
  text->remove_prefix(std::min(text->size(), i + 2));
  return true;
}

constexpr std::string_view kActor = "(MaxTextTrainerActor pid=";
constexpr std::string_view kColoredActor = "\x1b[36m(MaxTextTrainerActor pid=";
constexpr std::string_view kColoredActorClose = ")\x1b[0m";

}  // namespace

void StripAnsi(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c != '\x1b') {
      out->push_back(c);
      continue;
    }
    if (i + 1 < in.size() && in[i + 1] == '[') {
      size_t j = i + 2;
      while (j < in.size() && !(in[j] >= 0x40 && in[j] <= 0x7e)) ++j;
      i = j;  // skip the final byte too
    } else if (i + 1 < in.size() && (in[i + 1] == '(' || in[i + 1] == ')')) {
      i += 2;
    } else {
      i += 1;
    }
  }
}

bool ParseAbslPrefix(std::string_view t, AbslPrefix* out) {
  // L MMDD ' ' HH:MM:SS
  if (t.size() < 16) return false;
  char l = t[0];
  if (l != 'I' && l != 'W' && l != 'E' && l != 'F') return false;
  for (int i : {1, 2, 3, 4, 6, 7, 9, 10, 12, 13})
    if (!IsDigit(t[i])) return false;
  if (t[5] != ' ' || t[8] != ':' || t[11] != ':') return false;
  size_t i = 14;
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && IsDigit(t[i])) ++i;
  }
  size_t stamp_end = i;
  while (i < t.size() && t[i] == ' ') ++i;
  // optional thread id
  size_t j = i;
  while (j < t.size() && IsDigit(t[j])) ++j;
  if (j > i && j < t.size() && t[j] == ' ') {
    i = j;
    while (i < t.size() && t[i] == ' ') ++i;
  }
  size_t close = t.find("] ", i);
  if (close == std::string_view::npos) {
    if (!t.empty() && t.back() == ']') close = t.size() - 1;
    else return false;
  }
  std::string_view file_line = t.substr(i, close - i);
  if (file_line.empty() || file_line.find(':') == std::string_view::npos ||
      file_line.find(' ') != std::string_view::npos)
    return false;
  out->level = l;
  out->month = TwoDigits(t, 1);
  out->day = TwoDigits(t, 3);
  out->hour = TwoDigits(t, 6);
  out->minute = TwoDigits(t, 9);
  out->second = TwoDigits(t, 12);
  out->stamp = t.substr(1, stamp_end - 1);
  out->file_line = file_line;
  out->message = close + 2 <= t.size() ? t.substr(close + 2) : std::string_view();
  if (out->month < 1 || out->month > 12 || out->day < 1 || out->day > 31) {
    *out = AbslPrefix{};
    return false;
  }
  return true;
}

std::string_view PeelLauncherPrefixes(std::string_view raw, int* task, bool* ray_driver) {
  std::string_view t = raw;
  StripSrunLabel(&t, task);
  // The Ray driver prefix is the common case on RAY=1 logs: skip it without copying the line.
  if (t.size() > kColoredActor.size() && t[0] == '\x1b' && t.substr(0, kColoredActor.size()) == kColoredActor) {
    // The pid is all digits, so the close is normally right after them; search only otherwise.
    size_t close = kColoredActor.size();
    while (close < t.size() && IsDigit(t[close])) ++close;
    if (t.size() - close < kColoredActorClose.size() ||
        std::memcmp(t.data() + close, kColoredActorClose.data(), kColoredActorClose.size()) != 0)
      close = t.find(kColoredActorClose, kColoredActor.size());
    if (close != std::string_view::npos) {
      *ray_driver = true;
      t.remove_prefix(close + kColoredActorClose.size());
      if (!t.empty() && t[0] == ' ') t.remove_prefix(1);
    }
  }
  return t;
}

LogLine ParseLogLine(std::string_view raw, std::string* scratch) {
  LogLine line;
  std::string_view t = PeelLauncherPrefixes(raw, &line.task, &line.ray_driver);
  if (!t.empty() && std::memchr(t.data(), '\x1b', t.size()) != nullptr) {
    StripAnsi(t, scratch);
    t = *scratch;
  }
  if (t.size() > kActor.size() && t[0] == '(' && t.substr(0, kActor.size()) == kActor) {
    size_t close = t.find(')');
    if (close != std::string_view::npos) {
      line.ray_driver = true;
      t.remove_prefix(close + 1);
      if (!t.empty() && t[0] == ' ') t.remove_prefix(1);
    }
  }
  line.text = t;
  if (!t.empty() && (t[0] == 'I' || t[0] == 'W' || t[0] == 'E' || t[0] == 'F'))
    ParseAbslPrefix(t, &line.absl);
  return line;
}

std::string SanitizeForQuote(std::string_view text, size_t max_bytes) {
  return ValidUtf8(text, max_bytes, /*strip_controls=*/true);
}

}  // namespace diagnose
