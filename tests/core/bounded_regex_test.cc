#include "engine/core/bounded_regex.h"

#include <string>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

TEST(BoundedRegexTest, ShortTextIsReadWhole) {
  const std::string text = "abc [ERROR] Login to x failed";
  EXPECT_EQ(RegexWindow(text, 5, 9), text);
  EXPECT_TRUE(BoundedRegexSearch(text, std::regex("Login to .* failed")));
}

TEST(BoundedRegexTest, LongTextIsReadAroundItsFocusOnly) {
  const std::string text = std::string(30000, 'x') + "KEY" + std::string(30000, 'y');
  const std::string_view window = RegexWindow(text, 30000, 30003);
  EXPECT_EQ(window.size(), kRegexWindowBytes);
  EXPECT_NE(window.find("KEY"), std::string_view::npos);
  EXPECT_EQ(RegexWindow(text).data(), text.data());                       // no focus: the start
  EXPECT_EQ(RegexWindow(text, text.size(), text.size()).data() + kRegexWindowBytes, text.data() + text.size());
  EXPECT_EQ(RegexWindow(text, std::string::npos, std::string::npos).size(), kRegexWindowBytes);
  // 60 KB through `.*` overflowed the stack before: only the window is searched now.
  EXPECT_TRUE(BoundedRegexSearch(text, std::regex("x*KEY.*y"), 30000, 30003));
  EXPECT_FALSE(BoundedRegexSearch(text, std::regex("^x.*KEY")));
  std::cmatch m;
  ASSERT_TRUE(BoundedRegexSearch(text, std::regex("K(E)Y"), 30000, 30003, &m));
  EXPECT_EQ(m[1].str(), "E");
}

}  // namespace
}  // namespace diagnose
