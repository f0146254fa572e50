// A closed vocabulary: an enum and the one word each value is written as (contract words, rule
// file words). The enum is what the engine compares; the word exists only where data enters
// (ParseWord) and where a report, line or record leaves (ToString, <<, JSON).
//
// An enum is declared with its words from one list, so that each value is written once and none
// can be added without its word:
//   #define DIAGNOSE_COLOR_WORDS(WORD) WORD(kRed, "red") WORD(kBlue, "blue")
//   DIAGNOSE_VOCABULARY(Color, "color", DIAGNOSE_COLOR_WORDS);
// declares `enum class Color { kRed, kBlue };` (list order is value order) and its VocabularyOf:
// the word table and kWhat, which names the field in a JSON error. Color then has ToString,
// ParseWord<Color>, ValuesOf<Color>, operator<< and the JSON conversions below, all driven by that
// one table. (An enum declared elsewhere may still specialise VocabularyOf by hand.)
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

template <typename Enum, size_t N>
constexpr Vocabulary<Enum, N> MakeVocabulary(const std::pair<Enum, std::string_view> (&words)[N]) {
  Vocabulary<Enum, N> vocabulary{};
  for (size_t i = 0; i < N; ++i) vocabulary.words[i] = words[i];
  return vocabulary;
}

template <typename Enum>
struct VocabularyOf;

#define DIAGNOSE_VOCABULARY_ENUMERATOR(name, word) name,
#define DIAGNOSE_VOCABULARY_ENTRY(name, word) {Enum::name, word},
#define DIAGNOSE_VOCABULARY(EnumName, what, WORDS)                                            \
  enum class EnumName { WORDS(DIAGNOSE_VOCABULARY_ENUMERATOR) };                              \
  template <>                                                                                 \
  struct VocabularyOf<EnumName> {                                                             \
    using Enum = EnumName;                                                                    \
    static constexpr auto kWords = MakeVocabulary<Enum>({WORDS(DIAGNOSE_VOCABULARY_ENTRY)}); \
    static constexpr std::string_view kWhat = what;                                           \
  }

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

// Every value, in table order.
template <ClosedVocabulary Enum>
constexpr auto ValuesOf() {
  constexpr auto& words = VocabularyOf<Enum>::kWords.words;
  std::array<Enum, words.size()> values{};
  for (size_t i = 0; i < words.size(); ++i) values[i] = words[i].first;
  return values;
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
