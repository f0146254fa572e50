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

// Each case below is what `scontrol show hostnames` (Slurm 22.05) printed for the same expression;
// tests/slurm/ re-checks them, and 1,000 random ones, against a real scontrol.
TEST(HostlistTest, ReadsLikeSlurm) {
  // The low end's width pads the whole range, whatever the high end looks like.
  EXPECT_EQ(Expand("n[001-3]"), (std::vector<std::string>{"n001", "n002", "n003"}));
  EXPECT_EQ(Expand("n[1-010]").size(), 10u);
  EXPECT_EQ(Expand("n[1-010]").back(), "n10");
  EXPECT_EQ(Expand("n[09-11]"), (std::vector<std::string>{"n09", "n10", "n11"}));
  EXPECT_EQ(Expand("n[9-11]"), (std::vector<std::string>{"n9", "n10", "n11"}));
  EXPECT_EQ(Expand("n[1-]"), (std::vector<std::string>{"n1"}));
  // Whitespace separates like a comma; empty items are skipped.
  EXPECT_EQ(Expand("n[1-2] m\tk,,j,"), (std::vector<std::string>{"n1", "n2", "m", "k", "j"}));
  EXPECT_EQ(Expand("[1-2]"), (std::vector<std::string>{"1", "2"}));
  // Three groups: the last fastest, then the first, then the second.
  EXPECT_EQ(Expand("a[1-2]b[3-4]c[5-6]"),
            (std::vector<std::string>{"a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6", "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6"}));
  EXPECT_EQ(Expand("a[1-2][3-4]"), (std::vector<std::string>{"a13", "a14", "a23", "a24"}));
  EXPECT_EQ(Expand("n[1-65536]").size(), 65536u);
}

TEST(HostlistTest, RefusesWhatSlurmRefuses) {
  for (const char* expr : {"n[1-2]x", "a[1]b", "x[1-2]-y", "n[1-2]x[3-4]y", "n[1,,2]", "n[1-2,]", "n[,1]", "n[]",
                           "n[-2]", "n[1--2]", "n[1-2-3]", "n[1a]", "n[3-1]", "n[0-65536]", "n[1-3[4]]", "n[1-2]]"})
    EXPECT_FALSE(ExpandHostlist(expr).ok()) << expr;
}

TEST(HostlistTest, RefusesWhereSlurmWouldInventAHostName) {
  // Slurm reads these as host names containing a bracket, or pads with a space, or saturates the
  // number: no real host is named like that.
  for (const char* expr : {"n[1-2", "n1-2]", "n[ 1-2]", "n[99999999999999999999]"})
    EXPECT_FALSE(ExpandHostlist(expr).ok()) << expr;
}

TEST(HostlistTest, CompressIsInverseOfExpand) {
  for (const std::string expr : {"chi[2815-2822,2827-2830,2834-2835,2853]", "node[01-04]", "gpu-b[01-11]",
                                 "devbox07", "a[1-3],b[7,9]", "rack1-n[01-03],login,x[8-10]"}) {
    EXPECT_EQ(CompressHostlist(Expand(expr)), expr);
  }
}

TEST(HostlistTest, CompressSortsMergesAndKeepsPadding) {
  EXPECT_EQ(CompressHostlist({"chi2853", "chi2822", "chi2823", "chi2824"}), "chi[2822-2824,2853]");
  EXPECT_EQ(CompressHostlist({"n1", "n2", "n2"}), "n[1-2]");
  EXPECT_EQ(CompressHostlist({"node007", "node008"}), "node[007-008]");
  EXPECT_EQ(CompressHostlist({"n08", "n09", "n10", "n9"}), "n[08-10],n9");
  EXPECT_EQ(CompressHostlist({"login"}), "login");
  // Slurm refuses text after the last bracket, so a host with a suffix is never bracketed.
  EXPECT_EQ(CompressHostlist({"n1x", "n2x"}), "n1x,n2x");
}

TEST(HostlistTest, CompressKeepsEachRangeWithinSlurmsLimit) {
  std::vector<std::string> hosts;
  for (int i = 0; i < 70000; ++i) hosts.push_back("n" + std::to_string(i));
  const std::string compressed = CompressHostlist(hosts);
  EXPECT_EQ(compressed, "n[0-65535,65536-69999]");
  EXPECT_EQ(Expand(compressed), hosts);
}

}  // namespace
}  // namespace diagnose
