#include "engine/core/vocabulary.h"

#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace diagnose {

// A vocabulary of the test's own, so that the template is checked apart from any contract word.
enum class Shade { kPale, kDark, kUnnamed };

template <>
struct VocabularyOf<Shade> {
  static constexpr Vocabulary<Shade, 2> kWords{{{
      {Shade::kPale, "pale"},
      {Shade::kDark, "dark"},
  }}};
  static constexpr std::string_view kWhat = "shade";
};

// Declared from one list, as the engine's vocabularies are.
#define DIAGNOSE_TONE_WORDS(WORD) WORD(kWarm, "warm") WORD(kCool, "cool") WORD(kFlat, "")
DIAGNOSE_VOCABULARY(Tone, "tone", DIAGNOSE_TONE_WORDS);

namespace {

TEST(Vocabulary, OneListDeclaresTheValuesInOrderWithTheirWords) {
  static_assert(static_cast<int>(Tone::kWarm) == 0 && static_cast<int>(Tone::kFlat) == 2);
  static_assert(ToString(Tone::kCool) == "cool");
  EXPECT_EQ(ParseWord<Tone>("warm"), Tone::kWarm);
  EXPECT_EQ(ParseWord<Tone>(""), Tone::kFlat);
  EXPECT_EQ(ParseWord<Tone>("Cool"), std::nullopt);
  constexpr auto values = ValuesOf<Tone>();
  EXPECT_EQ((std::vector<Tone>(values.begin(), values.end())),
            (std::vector<Tone>{Tone::kWarm, Tone::kCool, Tone::kFlat}));
  EXPECT_EQ(nlohmann::json(Tone::kCool), "cool");
}

TEST(Vocabulary, WordsAndParsingComeFromTheOneTable) {
  EXPECT_EQ(ToString(Shade::kDark), "dark");
  EXPECT_EQ(ParseWord<Shade>("pale"), Shade::kPale);
  EXPECT_EQ(ParseWord<Shade>("Pale"), std::nullopt);
  EXPECT_EQ(ParseWord<Shade>(""), std::nullopt);
  static_assert(ToString(Shade::kPale) == "pale");
}

TEST(Vocabulary, AValueOutsideTheTableIsWrittenAsTheFirstWord) {
  EXPECT_EQ(ToString(Shade::kUnnamed), "pale");
}

TEST(Vocabulary, StreamsAndJsonCarryTheWord) {
  std::ostringstream out;
  out << Shade::kDark;
  EXPECT_EQ(out.str(), "dark");
  const nlohmann::json j = Shade::kDark;
  EXPECT_EQ(j, "dark");
  EXPECT_EQ(nlohmann::json("pale").get<Shade>(), Shade::kPale);
}

TEST(Vocabulary, AnUnknownJsonWordThrowsNamingTheField) {
  try {
    (void)nlohmann::json("grey").get<Shade>();
    FAIL() << "an unknown word was accepted";
  } catch (const nlohmann::json::exception& e) {
    EXPECT_NE(std::string(e.what()).find("unknown shade 'grey'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace diagnose
