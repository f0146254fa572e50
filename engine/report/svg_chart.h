// Static SVG charts for the HTML report, drawn by the engine: no script, no network, printable,
// and byte-stable for golden tests. Two shapes cover the incidents: a line chart (a few highlighted
// series over a median/range band of the rest, with shaded windows and vertical markers) and a
// row x time heatmap for jobs with too many hosts for lines.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace diagnose::svg {

struct Point {
  double x = 0;
  double y = 0;
};

struct Line {
  std::string label;                          // legend and hover text
  std::string css_class;                      // "series blamed", "tgs-line", ...
  std::map<std::string, std::string> data;    // data-* attributes (data-host, data-job)
  std::vector<Point> points;                  // ascending x
};

// The rest of the hosts, drawn as one min-max area with its median: 1,000 healthy hosts read as
// one band instead of 1,000 overlapping lines.
struct Band {
  std::string label;
  std::map<std::string, std::string> data;
  std::vector<double> x, low, median, high;
  bool draw_median = true;   // off when the median is drawn elsewhere as a line of its own
};

struct Shade {
  double x0 = 0;
  double x1 = 0;
  std::string css_class;   // "phase", "phase degraded"
  std::string label;
};

struct Marker {
  double x = 0;
  std::string css_class;   // "checkpoint", "onset"
  std::string label;
};

enum class Axis { kNumber, kUnixTime, kElapsedMinutes };

struct LineChart {
  std::string title;
  std::string y_label;
  Axis x_axis = Axis::kUnixTime;
  std::string x_label;
  std::vector<Line> lines;
  std::vector<Band> bands;
  std::vector<Shade> shades;
  std::vector<Marker> markers;
  // A second row of x labels under the first (wall time under steps): x position -> label.
  std::vector<std::pair<double, std::string>> secondary_ticks;
  int width = 960;
  int height = 240;
};

struct Heatmap {
  std::string title;
  std::string value_label;
  std::vector<std::string> rows;              // top to bottom
  std::vector<bool> highlighted;              // same length as rows
  std::vector<double> column_start;           // unix seconds, ascending; one per column
  double column_width = 0;                    // seconds
  std::vector<std::vector<double>> cells;     // rows x columns, NaN where no sample
  std::vector<Shade> shades;
  int width = 960;
};

// Horizontal bars, one row each, stacked from parts (seconds): every part's width is its value on
// one scale shared by all rows, so bars compare by length. Negative values draw as zero width.
struct BarPart {
  std::string label;       // legend and data-part
  std::string css_class;   // "compute", "exposed-comm", ...
};

struct BarRow {
  std::string label;
  std::map<std::string, std::string> data;   // data-* attributes of the row's group (data-gpu)
  std::vector<double> values;                 // one per part
};

struct StackedBars {
  std::string title;
  std::string x_label;
  std::vector<BarPart> parts;
  std::vector<BarRow> rows;
  double marker = 0;          // a vertical line at this x when > 0 (the step time)
  std::string marker_label;
  int width = 960;
  int row_height = 12;
};

std::string RenderLineChart(const LineChart& chart);
std::string RenderHeatmap(const Heatmap& heatmap);
std::string RenderStackedBars(const StackedBars& bars);

// Keeps at most `max_points` per line: within each x bucket the first, minimum and maximum points
// survive, so a burst of retransmits one scrape long stays visible after thinning.
std::vector<Point> Thin(const std::vector<Point>& points, size_t max_points);

// One heatmap row: `samples` (time -> value) binned into `columns` columns of `width` seconds from
// `start`, the largest sample of a column kept. A column that no sample falls in (the grid is finer
// than the scrape interval, or not aligned to it) takes the nearest sample within one scrape
// interval (the median spacing of the samples), so a steady series draws no empty stripes; real
// gaps in the data longer than that stay empty (NaN).
std::vector<double> BinSamples(const std::map<double, double>& samples, double start, double width, size_t columns);

// Round axis ticks covering [lo, hi]: about `count` values at 1/2/5 x 10^k steps.
std::vector<double> NiceTicks(double lo, double hi, int count);

}  // namespace diagnose::svg
