// A closed vocabulary: an enum and the one word each value is written as (contract words, rule
// file words). The enum is what the engine compares; the word exists only where data enters
// (ParseWord) and where a report, line or record leaves (ToString, <<, JSON).
//
// An enum joins by specialising VocabularyOf next to its declaration:
//   template <> struct VocabularyOf<Color> {
//     static constexpr Vocabulary<Color, 2> kWords{{{{Color::kRed, "red"}, {Color::kBlue, "blue"}}}};
//     static constexpr std::string_view kWhat = "color";  // names the field in a JSON error
//   };
// and then has ToString, ParseWord<Color>, operator<< and the JSON conversions below, all driven
// by that one table.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
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
};

template <typename Enum>
struct VocabularyOf;

template <typename Enum>
concept ClosedVocabulary = std::is_enum_v<Enum> && requires {
  VocabularyOf<Enum>::kWords.Word(Enum{});
  std::string_view{VocabularyOf<Enum>::kWhat};
};

template <ClosedVocabulary Enum>
constexpr std::string_view ToString(Enum value) {
  return VocabularyOf<Enum>::kWords.Word(value);
}

template <ClosedVocabulary Enum>
constexpr std::optional<Enum> ParseWord(std::string_view word) {
  return VocabularyOf<Enum>::kWords.Parse(word);
}

// For test failure messages and logs: the word.
template <ClosedVocabulary Enum>
std::ostream& operator<<(std::ostream& out, Enum value) {
  return out << ToString(value);
}

// JSON carries the word; an unknown word throws like any other malformed field.
template <ClosedVocabulary Enum>
void to_json(nlohmann::json& j, Enum value) {
  j = std::string(ToString(value));
}

template <ClosedVocabulary Enum>
void from_json(const nlohmann::json& j, Enum& value) {
  const std::string word = j.get<std::string>();
  if (const std::optional<Enum> parsed = ParseWord<Enum>(word)) {
    value = *parsed;
    return;
  }
  throw nlohmann::json::other_error::create(
      501, "unknown " + std::string(VocabularyOf<Enum>::kWhat) + " '" + word + "'", &j);
}

}  // namespace diagnose
