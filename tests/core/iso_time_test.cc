#include "engine/core/iso_time.h"

#include <gtest/gtest.h>

#include <string>

namespace diagnose {
namespace {

TEST(IsoTimeTest, ParsesTheFormsTheCliTakes) {
  EXPECT_EQ(*ParseIsoTime("2025-01-01T00:00:00Z"), 1735689600);
  EXPECT_EQ(*ParseIsoTime("2025-01-01T01:00:00.250+01:00"), 1735689600);
  EXPECT_FALSE(ParseIsoTime("2025-13-01").ok());
}

// std::regex recursed once per character of a fraction: 100,000 digits overflowed the stack
// (`--window`, `summary --since`).
TEST(IsoTimeTest, AHugeTextIsRefusedNotMatched) {
  const auto huge = ParseIsoTime("2025-01-01T00:00:00." + std::string(100000, '1') + "Z");
  EXPECT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("longer than"), std::string::npos) << huge.status().message();
}

}  // namespace
}  // namespace diagnose
