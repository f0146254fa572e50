#include "engine/core/vocabulary.h"

#include <sstream>
#include <string>

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

namespace {

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
