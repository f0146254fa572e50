#include "engine/tsdb/promql_escape.h"

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

}  // namespace
}  // namespace diagnose
