#include "engine/triage/hostlist.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

std::vector<std::string> Expand(const std::string& e) {
  auto r = ExpandHostlist(e);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<std::string>{};
}

TEST(HostlistTest, RangesAndSingles) {
  auto h = Expand("chi[2822-2835,2853]");
  ASSERT_EQ(h.size(), 15u);
  EXPECT_EQ(h.front(), "chi2822");
  EXPECT_EQ(h[13], "chi2835");
  EXPECT_EQ(h.back(), "chi2853");
}

TEST(HostlistTest, ZeroPadding) {
  auto h = Expand("node[001-010]");
  ASSERT_EQ(h.size(), 10u);
  EXPECT_EQ(h[0], "node001");
  EXPECT_EQ(h[9], "node010");
}

TEST(HostlistTest, CommaListOutsideBracketsAndSeveralGroups) {
  EXPECT_EQ(Expand("a1,b[2-3],c"), (std::vector<std::string>{"a1", "b2", "b3", "c"}));
  EXPECT_EQ(Expand("rack[1-2]-n[01-02]"),
            (std::vector<std::string>{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}));
  EXPECT_EQ(Expand("single"), (std::vector<std::string>{"single"}));
}

TEST(HostlistTest, MalformedIsAnError) {
  EXPECT_FALSE(ExpandHostlist("chi[2822-").ok());
  EXPECT_FALSE(ExpandHostlist("chi[5-3]").ok());
  EXPECT_FALSE(ExpandHostlist("chi[a-b]").ok());
  EXPECT_FALSE(ExpandHostlist("x[0-999999999]").ok());
}

}  // namespace
}  // namespace diagnose
