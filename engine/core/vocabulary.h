// A closed vocabulary: an enum and the one word each value is written as (contract words, rule
// file words). The enum is what the engine compares; the word exists only where data enters
// (Parse) and where a report, line or record leaves (Word).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace diagnose {

template <typename Enum, size_t N>
struct Vocabulary {
  std::array<std::pair<Enum, std::string_view>, N> words;

  // The value's word; the first entry's for a value outside the table (a cast gone wrong).
  constexpr std::string_view Word(Enum value) const {
    for (const auto& [v, word] : words)
      if (v == value) return word;
    return words[0].second;
  }
  constexpr std::optional<Enum> Parse(std::string_view word) const {
    for (const auto& [v, w] : words)
      if (w == word) return v;
    return std::nullopt;
  }
  // JSON reading: an unknown word throws like any other malformed field (`what` names the field).
  Enum FromJson(const nlohmann::json& j, std::string_view what) const {
    const std::string word = j.get<std::string>();
    if (const std::optional<Enum> parsed = Parse(word)) return *parsed;
    throw nlohmann::json::other_error::create(501, "unknown " + std::string(what) + " '" + word + "'", &j);
  }
};

}  // namespace diagnose
