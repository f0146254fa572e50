#include "engine/core/terminal.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

TEST(Terminal, ParsesTheThreeModesAndNothingElse) {
  EXPECT_EQ(ParseColorMode("auto"), ColorMode::kAuto);
  EXPECT_EQ(ParseColorMode("always"), ColorMode::kAlways);
  EXPECT_EQ(ParseColorMode("never"), ColorMode::kNever);
  EXPECT_EQ(ParseColorMode("yes"), std::nullopt);
  EXPECT_EQ(ParseColorMode(""), std::nullopt);
}

TEST(Terminal, AutoNeverColoursAPipeAndExplicitModesIgnoreTheStream) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_FALSE(WantsColor(ColorMode::kAuto, fds[1]));
  EXPECT_TRUE(WantsColor(ColorMode::kAlways, fds[1]));
  EXPECT_FALSE(WantsColor(ColorMode::kNever, fds[1]));
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace diagnose
