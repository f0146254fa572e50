#include "engine/tsdb/promql_escape.h"

#include <cmath>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

TEST(PromqlEscapeTest, StringEscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(EscapePromqlString("chi2822"), "chi2822");
  EXPECT_EQ(EscapePromqlString(R"(a"b\c)"), R"(a\"b\\c)");
  EXPECT_EQ(EscapePromqlString("a\nb"), "a\\nb");
}

TEST(PromqlEscapeTest, RegexLiteralNeutralisesMetacharacters) {
  // A hostname with regex metacharacters must match only itself.
  EXPECT_EQ(EscapePromqlRegexLiteral("node.1"), R"(node\\.1)");
  EXPECT_EQ(EscapePromqlRegexLiteral("a|b"), R"(a\\|b)");
  EXPECT_EQ(PromqlAlternation({"h1", "h(2)"}), R"(h1|h\\(2\\))");
}

TEST(PromqlSeconds, WholeSecondsRoundedUpAndNeverZero) {
  EXPECT_EQ(PromqlSeconds(14176), "14176s");
  EXPECT_EQ(PromqlSeconds(14176.01), "14177s");
  EXPECT_EQ(PromqlSeconds(0.2), "1s");
  EXPECT_EQ(PromqlSeconds(0), "1s");
  EXPECT_EQ(PromqlSeconds(-5), "1s");
  EXPECT_EQ(PromqlSeconds(std::nan("")), "1s");
  EXPECT_EQ(PromqlSeconds(1e300), "10000000000s");
}

}  // namespace
}  // namespace diagnose
