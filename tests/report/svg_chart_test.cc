#include "engine/report/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/report/html_report.h"

namespace diagnose::svg {
namespace {

TEST(SvgChartTest, NiceTicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(NiceTicks(0, 100, 5), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(NiceTicks(0, 0.9, 4), (std::vector<double>{0, 0.5}));
  const auto tenths = NiceTicks(0, 0.9, 10);
  ASSERT_EQ(tenths.size(), 10u);
  for (size_t i = 0; i < tenths.size(); ++i) EXPECT_NEAR(tenths[i], 0.1 * static_cast<double>(i), 1e-12);
  EXPECT_EQ(NiceTicks(5, 5, 4), (std::vector<double>{5}));
}

TEST(SvgChartTest, ThinningKeepsAOneSampleBurst) {
  std::vector<Point> pts;
  for (int i = 0; i < 10000; ++i) pts.push_back({static_cast<double>(i), i == 5003 ? 1000.0 : 1.0});
  auto thin = Thin(pts, 300);
  EXPECT_LE(thin.size(), 300u);
  EXPECT_TRUE(std::any_of(thin.begin(), thin.end(), [](const Point& p) { return p.y == 1000.0; }));
  EXPECT_EQ(thin.front().x, 0);
}

TEST(SvgChartTest, LineChartIsDeterministicAndEscapesLabels) {
  LineChart c;
  c.title = "retransmits <b>";
  c.lines.push_back({"chi\"1", "series blamed", {{"host", "chi\"1"}}, {{1000, 1}, {1060, 5}, {1120, 2}}});
  c.bands.push_back({"other 3 hosts", {}, {1000, 1060}, {0, 0}, {0.1, 0.2}, {0.5, 0.4}});
  c.shades.push_back({1030, 1090, "phase degraded", "steps 10-20"});
  c.markers.push_back({1060, "onset", "onset"});
  std::string a = RenderLineChart(c);
  EXPECT_EQ(a, RenderLineChart(c));
  EXPECT_NE(a.find("retransmits &lt;b&gt;"), std::string::npos);
  EXPECT_NE(a.find("data-host=\"chi&quot;1\""), std::string::npos);
  EXPECT_NE(a.find("class=\"phase degraded\""), std::string::npos);
  EXPECT_NE(a.find("class=\"onset\""), std::string::npos);
  EXPECT_NE(a.find("class=\"band\""), std::string::npos);
  EXPECT_EQ(a.find("NaN"), std::string::npos);
  EXPECT_EQ(a.find("nan"), std::string::npos);
}

TEST(SvgChartTest, EmptyAndNonFiniteInputsStillDrawAFrame) {
  LineChart c;
  c.lines.push_back({"x", "series", {}, {{1, std::nan("")}, {2, INFINITY}}});
  std::string a = RenderLineChart(c);
  EXPECT_NE(a.find("<svg"), std::string::npos);
  EXPECT_EQ(a.find("nan"), std::string::npos);
  EXPECT_EQ(a.find("inf"), std::string::npos);
}

TEST(SvgChartTest, HeatmapMergesRunsAndLabelsHighlightedRows) {
  Heatmap h;
  h.title = "t";
  h.rows = {"bad", "ok"};
  h.highlighted = {true, false};
  h.column_width = 60;
  for (int c = 0; c < 100; ++c) h.column_start.push_back(1000 + 60.0 * c);
  h.cells = {std::vector<double>(100, 50.0), std::vector<double>(100, 0.0)};
  std::string a = RenderHeatmap(h);
  EXPECT_NE(a.find("data-blamed-host=\"bad\""), std::string::npos);
  // One run of one level: a single rectangle for the whole row.
  size_t cells = 0;
  for (size_t p = a.find("class=\"cell\""); p != std::string::npos; p = a.find("class=\"cell\"", p + 1)) ++cells;
  EXPECT_EQ(cells, 1u);
}

// A 130 s scrape over a 120-column grid of 54 s columns left every other column empty: white
// stripes on a steady series. Each column within a scrape interval of a sample is filled.
TEST(SvgChartTest, HeatmapBinsLeaveNoStripesOnASteadySeriesButKeepRealGaps) {
  std::map<double, double> samples;
  for (int t = 0; t < 50; ++t) samples[1000.0 + t * 130] = 5.0;
  const double width = (49 * 130.0) / 120;
  std::vector<double> row = BinSamples(samples, 1000, width, 120);
  for (size_t c = 0; c < row.size(); ++c) EXPECT_FALSE(std::isnan(row[c])) << "column " << c;
  // A real gap (no samples for 20 minutes) stays empty.
  for (int t = 20; t < 30; ++t) samples.erase(1000.0 + t * 130);
  row = BinSamples(samples, 1000, width, 120);
  EXPECT_TRUE(std::isnan(row[60]));
  // The largest sample of a column is kept.
  std::map<double, double> two{{0, 1}, {1, 9}, {200, 2}};
  EXPECT_EQ(BinSamples(two, 0, 100, 3)[0], 9);
}

TEST(SvgChartTest, HeatmapTitleHasNoStraySpaceWithoutAUnit) {
  Heatmap h;
  h.title = "retx";
  h.rows = {"a"};
  h.highlighted = {false};
  h.column_width = 60;
  h.column_start = {0, 60};
  h.cells = {{5332, 1}};
  EXPECT_NE(RenderHeatmap(h).find("retx (peak 5332)"), std::string::npos) << RenderHeatmap(h);
  h.value_label = "pkts/s";
  EXPECT_NE(RenderHeatmap(h).find("retx (peak 5332 pkts/s)"), std::string::npos);
}

// Every part's width, read back from the SVG: one scale for all rows; negative and non-finite
// seconds draw nothing and never make the chart unreadable.
TEST(SvgChartTest, StackedBarsShareOneScaleAndDrawNothingForNegativeOrNonFinite) {
  StackedBars bars;
  bars.title = "decomposition <&>";
  bars.parts = {{"compute", "compute"}, {"idle", "idle"}};
  bars.rows = {{"a", {{"gpu", "0"}}, {6.0, 2.0}}, {"b", {{"gpu", "1"}}, {3.0, -1.0}},
               {"c", {{"gpu", "2"}}, {NAN, INFINITY}}};
  bars.marker = 8;
  const std::string svg = RenderStackedBars(bars);
  EXPECT_EQ(svg, RenderStackedBars(bars));
  EXPECT_NE(svg.find("decomposition &lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("NaN"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf\""), std::string::npos);
  std::vector<double> widths;
  for (size_t at = svg.find("data-part="); at != std::string::npos; at = svg.find("data-part=", at + 1)) {
    const size_t w = svg.find("width=\"", at) + 7;
    widths.push_back(std::stod(svg.substr(w, svg.find('"', w) - w)));
  }
  ASSERT_EQ(widths.size(), 6u);
  EXPECT_NEAR(widths[0] / 6.0, widths[1] / 2.0, 0.01);   // row a: 6 s and 2 s on one scale
  EXPECT_NEAR(widths[2] / 3.0, widths[0] / 6.0, 0.01);   // row b's 3 s on the same scale
  EXPECT_EQ(widths[3], 0);                               // -1 s
  EXPECT_EQ(widths[4], 0);                               // NaN
  EXPECT_EQ(widths[5], 0);                               // infinity
  EXPECT_NE(svg.find("class=\"step-mark\""), std::string::npos);
}

TEST(HtmlReportTest, StepTimesInterpolateAndExtrapolate) {
  std::vector<std::pair<int64_t, double>> steps{{10, 1000}, {20, 1300}};
  EXPECT_DOUBLE_EQ(*TimeOfStep(steps, 15), 1150);
  EXPECT_DOUBLE_EQ(*TimeOfStep(steps, 0), 700);
  EXPECT_DOUBLE_EQ(*TimeOfStep(steps, 30), 1600);
  EXPECT_FALSE(TimeOfStep({{1, 5}}, 3).has_value());
}

TEST(HtmlReportTest, GraphLinksEncodeTheQueryAndRefuseOtherSchemes) {
  std::string url = GraphPageUrl("https://thanos.example/", "up{job=\"a b\"}&x", TimeWindow{0, 3600});
  EXPECT_EQ(url, "https://thanos.example/graph?g0.expr=up%7Bjob%3D%22a%20b%22%7D%26x&g0.tab=0&g0.range_input=3600s"
                 "&g0.end_input=1970-01-01%2001%3A00%3A00");
  EXPECT_EQ(GraphPageUrl("javascript:alert(1)", "up", TimeWindow{0, 1}), "");
}

}  // namespace
}  // namespace diagnose::svg
