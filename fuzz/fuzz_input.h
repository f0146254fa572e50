// What every fuzz target needs from its raw bytes: the text, and that text split into lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/triage/signature_table.h"

namespace diagnose::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

inline std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

// The shipped failure-signature table (rules/triage/failure-signatures.yaml), loaded once.
inline const SignatureTable& ShippedSignatureTable() {
  static const auto* table = new SignatureTable(
      LoadSignatureTable(std::string(DIAGNOSE_SOURCE_DIR) + "/rules/triage/failure-signatures.yaml").value());
  return *table;
}

// The first byte picks a mode, so one target reaches several entry points of one parser.
inline uint8_t TakeMode(std::string_view* text) {
  if (text->empty()) return 0;
  const auto mode = static_cast<uint8_t>(text->front());
  text->remove_prefix(1);
  return mode;
}

}  // namespace diagnose::fuzz
