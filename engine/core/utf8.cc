#include "engine/core/utf8.h"

#include <algorithm>

namespace diagnose {

size_t Utf8SequenceLength(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;   // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;           // overlong
    if (c == 0xED) hi = 0x9F;           // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;           // overlong
    if (c == 0xF4) hi = 0x8F;           // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  return len;
}

std::string ValidUtf8(std::string_view text, size_t max_bytes, bool strip_controls) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes == std::string::npos ? text.size() : max_bytes) + 4);
  size_t i = 0;
  while (i < text.size() && out.size() < max_bytes) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      const bool control = (c < 0x20 && c != '\t') || c == 0x7f;
      out.push_back(strip_controls && control ? '?' : static_cast<char>(c));
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out.push_back('?');
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  if (i < text.size()) out += "...";
  return out;
}

std::string WithoutControls(std::string_view text) {
  std::string out(text);
  for (char& ch : out) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) ch = '?';
  }
  return out;
}

namespace {

// ValidUtf8(text, max_bytes) with its controls escaped; tab too unless `keep_tab`.
std::string EscapedControls(std::string_view text, size_t max_bytes, bool keep_tab) {
  static const char kHex[] = "0123456789abcdef";
  const std::string valid = ValidUtf8(text, max_bytes);
  std::string out;
  out.reserve(valid.size());
  for (size_t i = 0; i < valid.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(valid[i]);
    // A C1 control is U+0080..U+009F, in valid UTF-8 the two bytes C2 80..C2 9F.
    if (c == 0xC2 && i + 1 < valid.size() && static_cast<unsigned char>(valid[i + 1]) <= 0x9F) {
      const unsigned char code = static_cast<unsigned char>(valid[++i]);
      out += "\\u00";
      out.push_back(kHex[code >> 4]);
      out.push_back(kHex[code & 0xf]);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += keep_tab ? "\t" : "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace

std::string OneLine(std::string_view text) { return EscapedControls(text, std::string::npos, /*keep_tab=*/false); }

std::string PrintableLine(std::string_view text, size_t max_bytes) {
  return EscapedControls(text, max_bytes, /*keep_tab=*/true);
}

}  // namespace diagnose
