#include "engine/tsdb/query_client.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

std::vector<std::string> Numbered(const std::string& prefix, int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// Answers computed from others (composed, counted, joined range pieces) merged their warnings by
// comparing each with all kept so far: 5,000 per answer took minutes. Merging is linear and capped.
TEST(QueryClientWarnings, MergedAnswersKeepTheFirstDistinctWarningsAndAddUpWhatWasLeftOut) {
  std::vector<std::string> part_a = Numbered("a", 5000);
  std::vector<std::string> part_b = Numbered("b", 30);
  CapWarnings(&part_a);
  CapWarnings(&part_b);
  ASSERT_EQ(part_a.size(), kMaxWarningsPerAnswer + 1);
  EXPECT_EQ(part_a.back(), "... 4990 more warnings left out");

  std::vector<std::string> merged = part_a;
  MergeWarnings(part_b, &merged);
  MergeWarnings(part_a, &merged);   // the same part twice adds nothing new but its left-out count
  ASSERT_EQ(merged.size(), kMaxWarningsPerAnswer + 1);
  EXPECT_EQ(merged.front(), "a0");
  EXPECT_EQ(merged[kMaxWarningsPerAnswer - 1], "a9");
  // a's 4,990 twice (a count is all a capped list keeps of what it left out), b's 20 and its 10 kept.
  EXPECT_EQ(merged.back(), "... " + std::to_string(4990 * 2 + 20 + 10) + " more warnings left out");
}

TEST(QueryClientWarnings, ALongWarningIsShortenedAndDuplicatesCountOnce) {
  std::vector<std::string> warnings = {std::string(100000, 'w'), "x", "x", "x"};
  CapWarnings(&warnings);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], std::string(kMaxWarningBytes, 'w') + "...");
  EXPECT_EQ(warnings[1], "x");
}

}  // namespace
}  // namespace diagnose
