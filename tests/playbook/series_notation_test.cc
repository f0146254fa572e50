#include "engine/playbook/series_notation.h"

#include <gtest/gtest.h>

namespace diagnose::playbook {
namespace {

std::string Render(const std::string& text) {
  auto pts = ExpandSeriesValues(text);
  EXPECT_TRUE(pts.ok()) << text << ": " << pts.status().message();
  std::string out;
  if (!pts.ok()) return out;
  for (const auto& p : *pts) {
    if (!out.empty()) out += " ";
    if (p.kind == SeriesPoint::Kind::kMissing) out += "_";
    else if (p.kind == SeriesPoint::Kind::kStale) out += "stale";
    else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", p.value);
      out += buf;
    }
  }
  return out;
}

// The expansions promtool documents (promqltest README): n+1 values for a+bxn and axn.
TEST(SeriesNotationTest, ExpandsLikePromtool) {
  EXPECT_EQ(Render("0+10x3"), "0 10 20 30");
  EXPECT_EQ(Render("1-1x3"), "1 0 -1 -2");
  EXPECT_EQ(Render("1x3"), "1 1 1 1");
  EXPECT_EQ(Render("-2+1.5x2"), "-2 -0.5 1");
  EXPECT_EQ(Render("1 _ 3 stale 5"), "1 _ 3 stale 5");
  EXPECT_EQ(Render("_x3 7"), "_ _ _ 7");
  EXPECT_EQ(Render("1e3+1e2x1"), "1000 1100");
  EXPECT_EQ(Render(""), "");
}

TEST(SeriesNotationTest, RejectsMalformedItems) {
  for (const char* bad : {"1+x3", "ax3", "1+1x", "_xq", "one"}) {
    auto r = ExpandSeriesValues(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_NE(ExpandSeriesValues("1 2 zz").status().message().find("item 3"), std::string::npos);
}

// Found by fuzz/series_notation (a 10 s timeout): `_x111111114` allocated 111 million points.
TEST(SeriesNotationTest, AHugeRepeatCountIsRefusedBeforeAnythingIsAllocated) {
  for (const char* huge : {"_x111111114", "0+1x999999999", "1 2 _x999999 5x999999"}) {
    auto r = ExpandSeriesValues(huge);
    ASSERT_FALSE(r.ok()) << huge;
    EXPECT_NE(r.status().message().find("expands to more than 1,000,000 samples"), std::string::npos)
        << r.status().message();
  }
  EXPECT_TRUE(ExpandSeriesValues("0+1x999998").ok());
}

TEST(SeriesNotationTest, StaleAndMissingBecomeGaps) {
  auto pts = ExpandSeriesValues("1 _ stale 4");
  ASSERT_TRUE(pts.ok());
  auto s = MaterializeSeries({{"__name__", "m"}}, *pts, 100, 10);
  ASSERT_EQ(s.samples.size(), 2u);
  EXPECT_EQ(s.samples[0].t, 100);
  EXPECT_EQ(s.samples[1].t, 130);
  EXPECT_EQ(s.samples[1].v, 4);
}

TEST(SeriesNotationTest, ParsesSelectors) {
  auto l = ParseSeriesSelector(R"(ray_node_gpus_utilization{instance="h1:55080", ip="10.0.0.1",GpuIndex="0",q="a\"b"})");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->at("__name__"), "ray_node_gpus_utilization");
  EXPECT_EQ(l->at("instance"), "h1:55080");
  EXPECT_EQ(l->at("q"), "a\"b");
  EXPECT_TRUE(ParseSeriesSelector("up").ok());
  EXPECT_TRUE(ParseSeriesSelector(R"({__name__="up",job="x"})").ok());
  EXPECT_FALSE(ParseSeriesSelector(R"(up{job=x})").ok());
  EXPECT_FALSE(ParseSeriesSelector(R"({job="x"})").ok());
}

}  // namespace
}  // namespace diagnose::playbook
