#include "engine/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <optional>
#include <sstream>

#include "engine/core/text.h"
#include "engine/report/render.h"

namespace diagnose::svg {

namespace {

constexpr double kLeft = 70, kRight = 16, kTop = 48, kBottom = 40;
// Distinct on white and for the common colour-vision deficiencies (Okabe-Ito order).
constexpr const char* kPalette[] = {"#d55e00", "#0072b2", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000"};

std::string Fixed(double v, int precision = 1) { return FixedDecimal(v, precision); }

// Short numbers for tick labels: 0.05, 12, 3.3k, 1.2M.
std::string Compact(double v) {
  const double a = std::fabs(v);
  char buf[48];
  if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  else if (a >= 1e4) std::snprintf(buf, sizeof buf, "%.3gk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string ClockLabel(double t, bool with_date) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, with_date ? "%m-%d %H:%M" : "%H:%M", &tm);
  return buf;
}

std::string DataAttributes(const std::map<std::string, std::string>& data) {
  std::string out;
  for (const auto& [k, v] : data) out += " data-" + HtmlEscape(k) + "=\"" + HtmlEscape(v) + "\"";
  return out;
}

struct Frame {
  double x0, x1, y0, y1;   // data ranges
  double width, height;    // whole SVG
  double px(double x) const { return kLeft + (x - x0) / (x1 - x0) * (width - kLeft - kRight); }
  double py(double y) const { return height - kBottom - (y - y0) / (y1 - y0) * (height - kTop - kBottom); }
};

std::vector<double> TimeTicks(double lo, double hi, int count) {
  static constexpr double kSteps[] = {60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800};
  double step = kSteps[std::size(kSteps) - 1];
  for (double s : kSteps)
    if ((hi - lo) / s <= count) {
      step = s;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + 1e-9 && ticks.size() < 64; t += step) ticks.push_back(t);
  return ticks;
}

std::string XTickLabel(Axis axis, double x, bool first) {
  switch (axis) {
    case Axis::kUnixTime: return ClockLabel(x, first);
    case Axis::kElapsedMinutes: return Compact(x) + " min";
    case Axis::kNumber: return Compact(x);
  }
  return Compact(x);
}

void Axes(std::ostringstream& out, const Frame& f, Axis axis, const std::string& x_label, const std::string& y_label) {
  out << "<g class=\"axes\">";
  for (double y : NiceTicks(f.y0, f.y1, 5)) {
    out << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << Fixed(f.width - kRight) << "\" y1=\"" << Fixed(f.py(y))
        << "\" y2=\"" << Fixed(f.py(y)) << "\"/>";
    out << "<text class=\"tick\" x=\"" << kLeft - 6 << "\" y=\"" << Fixed(f.py(y) + 4) << "\" text-anchor=\"end\">"
        << HtmlEscape(Compact(y)) << "</text>";
  }
  const auto xticks = axis == Axis::kUnixTime ? TimeTicks(f.x0, f.x1, 7) : NiceTicks(f.x0, f.x1, 7);
  for (size_t i = 0; i < xticks.size(); ++i) {
    out << "<text class=\"tick\" x=\"" << Fixed(f.px(xticks[i])) << "\" y=\"" << Fixed(f.height - kBottom + 16)
        << "\" text-anchor=\"middle\">" << HtmlEscape(XTickLabel(axis, xticks[i], i == 0)) << "</text>";
  }
  out << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << kLeft << "\" y1=\"" << kTop << "\" y2=\""
      << Fixed(f.height - kBottom) << "\"/>";
  out << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << Fixed(f.width - kRight) << "\" y1=\""
      << Fixed(f.height - kBottom) << "\" y2=\"" << Fixed(f.height - kBottom) << "\"/>";
  if (!x_label.empty())
    out << "<text class=\"label\" x=\"" << Fixed(f.width - kRight) << "\" y=\"16"
        << "\" text-anchor=\"end\">" << HtmlEscape(x_label) << "</text>";
  if (!y_label.empty())
    out << "<text class=\"label\" x=\"" << 4 << "\" y=\"" << kTop - 4 << "\">" << HtmlEscape(y_label) << "</text>";
  out << "</g>";
}

// A missing or non-finite sample breaks the line instead of drawing it at an invented value.
std::string PathOf(const std::vector<Point>& pts, const Frame& f) {
  std::string d;
  bool pen_down = false;
  for (const auto& p : pts) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) {
      pen_down = false;
      continue;
    }
    d += (d.empty() ? "" : " ") + std::string(pen_down ? "L" : "M") + Fixed(f.px(p.x)) + " " + Fixed(f.py(p.y));
    pen_down = true;
  }
  return d;
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int count) {
  if (!(hi > lo) || count < 1) return {lo};
  const double raw = (hi - lo) / count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  // Multiples of the step, not a running sum: 0.1 + 0.2 must print as 0.3.
  const double first = std::ceil(lo / step);
  for (double k = first; k * step <= hi + step * 1e-6 && ticks.size() < 64; k += 1)
    ticks.push_back(std::fabs(k) < 0.5 ? 0 : std::round(k * step / mag * 1e6) / 1e6 * mag);
  return ticks;
}

std::vector<Point> Thin(const std::vector<Point>& points, size_t max_points) {
  if (points.size() <= max_points || max_points < 3) return points;
  const size_t buckets = max_points / 3;
  const double x0 = points.front().x, x1 = points.back().x;
  const double width = (x1 - x0) / static_cast<double>(buckets);
  std::vector<Point> out;
  size_t i = 0;
  for (size_t b = 0; b < buckets && i < points.size(); ++b) {
    const double end = b + 1 == buckets ? std::numeric_limits<double>::infinity() : x0 + width * (b + 1);
    size_t first = i, lo = i, hi = i;
    for (; i < points.size() && points[i].x < end; ++i) {
      if (points[i].y < points[lo].y) lo = i;
      if (points[i].y > points[hi].y) hi = i;
    }
    if (i == first) continue;
    std::vector<size_t> keep{first, lo, hi};
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    for (size_t k : keep) out.push_back(points[k]);
  }
  return out;
}

std::string RenderLineChart(const LineChart& chart) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  auto see = [&](double x, double y) {
    if (!std::isfinite(x) || !std::isfinite(y)) return;
    x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  };
  for (const auto& l : chart.lines)
    for (const auto& p : l.points) see(p.x, p.y);
  for (const auto& b : chart.bands)
    for (size_t i = 0; i < b.x.size(); ++i) see(b.x[i], b.low[i]), see(b.x[i], b.high[i]);
  if (!std::isfinite(x0)) {
    x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  }
  // Counters and rates start at zero; a zero baseline keeps a 2x burst from looking like 100x.
  if (y0 >= 0) y0 = 0;
  if (y1 <= y0) y1 = y0 + 1;
  y1 += (y1 - y0) * 0.05;
  if (x1 <= x0) x1 = x0 + 1;
  const Frame f{x0, x1, y0, y1, static_cast<double>(chart.width), static_cast<double>(chart.height)};

  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << chart.width << " " << chart.height
      << "\" width=\"" << chart.width << "\" height=\"" << chart.height << "\" role=\"img\" aria-label=\""
      << HtmlEscape(chart.title) << "\">";
  out << "<text class=\"title\" x=\"" << kLeft << "\" y=\"16\">" << HtmlEscape(chart.title) << "</text>";
  for (const auto& s : chart.shades) {
    const double a = std::clamp(f.px(std::max(s.x0, x0)), kLeft, f.width - kRight);
    const double b = std::clamp(f.px(std::min(s.x1, x1)), kLeft, f.width - kRight);
    if (b <= a) continue;
    out << "<rect class=\"" << HtmlEscape(s.css_class) << "\" x=\"" << Fixed(a) << "\" y=\"" << kTop << "\" width=\""
        << Fixed(std::max(b - a, 1.0)) << "\" height=\"" << Fixed(f.height - kTop - kBottom) << "\"><title>"
        << HtmlEscape(s.label) << "</title></rect>";
  }
  Axes(out, f, chart.x_axis, chart.x_label, chart.y_label);
  for (const auto& [x, label] : chart.secondary_ticks)
    if (x >= x0 && x <= x1)
      out << "<text class=\"tick secondary\" x=\"" << Fixed(f.px(x)) << "\" y=\"" << Fixed(f.height - kBottom + 30)
          << "\" text-anchor=\"middle\">" << HtmlEscape(label) << "</text>";
  for (const auto& b : chart.bands) {
    if (b.x.empty()) continue;
    std::string d;
    for (size_t i = 0; i < b.x.size(); ++i) d += (i ? " L" : "M") + Fixed(f.px(b.x[i])) + " " + Fixed(f.py(b.high[i]));
    for (size_t i = b.x.size(); i-- > 0;) d += " L" + Fixed(f.px(b.x[i])) + " " + Fixed(f.py(b.low[i]));
    out << "<path class=\"band\"" << DataAttributes(b.data) << " d=\"" << d << " Z\"><title>" << HtmlEscape(b.label)
        << " (min-max)</title></path>";
    if (!b.draw_median || b.median.size() != b.x.size()) continue;
    std::vector<Point> med;
    for (size_t i = 0; i < b.x.size(); ++i) med.push_back({b.x[i], b.median[i]});
    out << "<path class=\"median\"" << DataAttributes(b.data) << " d=\"" << PathOf(med, f) << "\"><title>"
        << HtmlEscape(b.label) << " (median)</title></path>";
  }
  for (size_t i = 0; i < chart.lines.size(); ++i) {
    const auto& l = chart.lines[i];
    if (l.points.empty()) continue;
    out << "<path class=\"" << HtmlEscape(l.css_class) << "\"" << DataAttributes(l.data) << " style=\"stroke:"
        << kPalette[i % std::size(kPalette)] << "\" d=\"" << PathOf(Thin(l.points, 3 * static_cast<size_t>(chart.width) / 2), f)
        << "\"><title>" << HtmlEscape(l.label) << "</title></path>";
  }
  for (const auto& m : chart.markers) {
    if (m.x < x0 || m.x > x1) continue;
    out << "<line class=\"" << HtmlEscape(m.css_class) << "\" x1=\"" << Fixed(f.px(m.x)) << "\" x2=\"" << Fixed(f.px(m.x))
        << "\" y1=\"" << kTop << "\" y2=\"" << Fixed(f.height - kBottom) << "\"><title>" << HtmlEscape(m.label)
        << "</title></line>";
  }
  // Legend: highlighted lines by colour, then the band.
  // Legend on its own row under the title: long titles and many hosts never overlap it.
  double lx = kLeft;
  for (size_t i = 0; i < chart.lines.size() && i < 8; ++i) {
    out << "<rect x=\"" << Fixed(lx) << "\" y=\"22\" width=\"10\" height=\"10\" style=\"fill:" << kPalette[i % std::size(kPalette)]
        << "\"/><text class=\"legend\" x=\"" << Fixed(lx + 14) << "\" y=\"31\">" << HtmlEscape(chart.lines[i].label) << "</text>";
    lx += 24 + 6.5 * static_cast<double>(chart.lines[i].label.size());
  }
  if (chart.lines.size() > 8)
    out << "<text class=\"legend\" x=\"" << Fixed(lx) << "\" y=\"31\">+" << chart.lines.size() - 8 << " more</text>";
  for (const auto& b : chart.bands) {
    out << "<rect class=\"band\" x=\"" << Fixed(lx) << "\" y=\"22\" width=\"10\" height=\"10\"/><text class=\"legend\" x=\""
        << Fixed(lx + 14) << "\" y=\"31\">" << HtmlEscape(b.label) << "</text>";
    lx += 24 + 6.5 * static_cast<double>(b.label.size());
  }
  out << "</svg>";
  return out.str();
}

std::vector<double> BinSamples(const std::map<double, double>& samples, double start, double width, size_t columns) {
  std::vector<double> row(columns, std::nan(""));
  if (samples.empty() || columns == 0 || !(width > 0)) return row;
  for (const auto& [t, v] : samples) {
    const double at = std::floor((t - start) / width);
    if (at < 0) continue;
    const size_t c = std::min(columns - 1, static_cast<size_t>(at));
    row[c] = std::isnan(row[c]) ? v : std::max(row[c], v);
  }
  std::vector<double> spacing;
  for (auto it = samples.begin(), next = std::next(it); next != samples.end(); ++it, ++next)
    spacing.push_back(next->first - it->first);
  if (spacing.empty()) return row;
  std::nth_element(spacing.begin(), spacing.begin() + static_cast<std::ptrdiff_t>(spacing.size() / 2), spacing.end());
  const double interval = spacing[spacing.size() / 2];
  for (size_t c = 0; c < columns; ++c) {
    if (!std::isnan(row[c])) continue;
    const double middle = start + width * (static_cast<double>(c) + 0.5);
    auto after = samples.lower_bound(middle);
    double best_distance = interval + width / 2;   // a sample this close would have shared the column's scrape
    std::optional<double> nearest;
    if (after != samples.end() && after->first - middle <= best_distance) {
      best_distance = after->first - middle;
      nearest = after->second;
    }
    if (after != samples.begin() && middle - std::prev(after)->first <= best_distance) nearest = std::prev(after)->second;
    if (nearest) row[c] = *nearest;
  }
  return row;
}

std::string RenderHeatmap(const Heatmap& h) {
  constexpr double kLabel = 120;
  const size_t rows = h.rows.size(), cols = h.column_start.size();
  const double row_h = rows == 0 ? 10 : std::clamp(std::floor(640.0 / static_cast<double>(rows)), 1.0, 14.0);
  const double plot_w = h.width - kLabel - kRight;
  const double col_w = cols == 0 ? plot_w : plot_w / static_cast<double>(cols);
  const double height = kTop + row_h * static_cast<double>(rows) + kBottom;
  double peak = 0;
  for (const auto& r : h.cells)
    for (double v : r)
      if (std::isfinite(v)) peak = std::max(peak, v);
  // Eight levels on a square-root scale: background noise stays pale, a burst is dark, and runs of
  // one level merge into one rectangle so a 1,000 x 120 grid stays a few hundred kilobytes.
  auto level = [&](double v) -> int {
    if (!std::isfinite(v) || peak <= 0 || v <= 0) return 0;
    return std::clamp(static_cast<int>(std::ceil(std::sqrt(v / peak) * 8)), 1, 8);
  };
  static constexpr const char* kRamp[] = {"", "#fde0c5", "#facba6", "#f8b58b", "#f59e72", "#f2855d", "#ef6a4c", "#d5493b", "#9f2a2a"};

  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << h.width << " " << Fixed(height, 0) << "\" width=\""
      << h.width << "\" height=\"" << Fixed(height, 0) << "\" role=\"img\" aria-label=\"" << HtmlEscape(h.title) << "\">";
  out << "<text class=\"title\" x=\"" << kLabel << "\" y=\"16\">" << HtmlEscape(h.title) << " (peak "
      << HtmlEscape(Compact(peak) + (h.value_label.empty() ? "" : " " + h.value_label)) << ")</text>";
  const double t0 = cols ? h.column_start.front() : 0, t1 = cols ? h.column_start.back() + h.column_width : 1;
  auto px = [&](double t) { return kLabel + (t - t0) / std::max(t1 - t0, 1e-9) * plot_w; };
  for (size_t r = 0; r < rows; ++r) {
    const double y = kTop + row_h * static_cast<double>(r);
    const bool hi = r < h.highlighted.size() && h.highlighted[r];
    if (hi || row_h >= 8) {
      out << "<text class=\"host" << (hi ? " blamed\" data-blamed-host=\"" + HtmlEscape(h.rows[r]) : std::string())
          << "\" x=\"" << kLabel - 4 << "\" y=\"" << Fixed(y + std::min(row_h, 10.0)) << "\" text-anchor=\"end\">"
          << HtmlEscape(h.rows[r]) << "</text>";
    }
    const auto& cells = r < h.cells.size() ? h.cells[r] : std::vector<double>{};
    for (size_t c = 0; c < cols && c < cells.size();) {
      const int lv = level(cells[c]);
      size_t end = c + 1;
      while (end < cols && end < cells.size() && level(cells[end]) == lv) ++end;
      if (lv > 0) {
        double mx = 0;
        for (size_t k = c; k < end; ++k) mx = std::max(mx, cells[k]);
        out << "<rect class=\"cell\" data-row=\"" << r << "\" x=\"" << Fixed(kLabel + col_w * static_cast<double>(c))
            << "\" y=\"" << Fixed(y) << "\" width=\"" << Fixed(col_w * static_cast<double>(end - c)) << "\" height=\""
            << Fixed(row_h) << "\" style=\"fill:" << kRamp[lv] << "\"><title>" << HtmlEscape(h.rows[r]) << ": up to "
            << HtmlEscape(Compact(mx)) << "</title></rect>";
      }
      c = end;
    }
    if (hi)
      out << "<rect class=\"row-highlight\" x=\"" << kLabel << "\" y=\"" << Fixed(y) << "\" width=\"" << Fixed(plot_w)
          << "\" height=\"" << Fixed(row_h) << "\"/>";
  }
  for (const auto& s : h.shades) {
    const double a = std::clamp(px(s.x0), kLabel, kLabel + plot_w), b = std::clamp(px(s.x1), kLabel, kLabel + plot_w);
    if (b <= a) continue;
    out << "<rect class=\"" << HtmlEscape(s.css_class) << " outline\" x=\"" << Fixed(a) << "\" y=\"" << kTop << "\" width=\""
        << Fixed(b - a) << "\" height=\"" << Fixed(row_h * static_cast<double>(rows)) << "\"><title>" << HtmlEscape(s.label)
        << "</title></rect>";
  }
  for (double t : TimeTicks(t0, t1, 7))
    out << "<text class=\"tick\" x=\"" << Fixed(px(t)) << "\" y=\"" << Fixed(height - kBottom + 16)
        << "\" text-anchor=\"middle\">" << HtmlEscape(ClockLabel(t, false)) << "</text>";
  out << "</svg>";
  return out.str();
}


std::string RenderStackedBars(const StackedBars& bars) {
  constexpr double kLabelWidth = 170, kBarTop = 44, kGap = 3;
  const double row_pitch = bars.row_height + kGap;
  const double height = kBarTop + row_pitch * static_cast<double>(bars.rows.size()) + kBottom;
  // A bar part is as long as its seconds; a negative or non-finite value has nothing to draw.
  const auto drawn = [](double v) { return std::isfinite(v) ? std::max(0.0, v) : 0.0; };
  double longest = drawn(bars.marker);
  for (const auto& row : bars.rows) {
    double sum = 0;
    for (double v : row.values) sum += drawn(v);
    longest = std::max(longest, sum);
  }
  // The axis ends on a round tick past the longest bar.
  double scale_max = longest > 0 ? longest : 1;
  if (const auto ticks = NiceTicks(0, scale_max, 6); ticks.size() >= 2)
    scale_max = std::ceil(scale_max / (ticks[1] - ticks[0]) - 1e-9) * (ticks[1] - ticks[0]);
  const double plot_width = bars.width - kLabelWidth - kRight;
  const auto px = [&](double seconds) { return kLabelWidth + seconds / scale_max * plot_width; };
  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << bars.width << " " << Fixed(height, 0)
      << "\" width=\"" << bars.width << "\" height=\"" << Fixed(height, 0) << "\" role=\"img\" aria-label=\""
      << HtmlEscape(bars.title) << "\" data-seconds-per-px=\"" << FixedDecimal(scale_max / plot_width, 9) << "\">";
  out << "<text class=\"title\" x=\"" << Fixed(kLabelWidth) << "\" y=\"14\">" << HtmlEscape(bars.title) << "</text>";
  double lx = kLabelWidth;
  for (size_t p = 0; p < bars.parts.size(); ++p) {
    out << "<rect class=\"bar-part " << HtmlEscape(bars.parts[p].css_class) << "\" x=\"" << Fixed(lx)
        << "\" y=\"22\" width=\"10\" height=\"10\"/><text class=\"legend\" x=\"" << Fixed(lx + 14) << "\" y=\"31\">"
        << HtmlEscape(bars.parts[p].label) << "</text>";
    lx += 14 + 7.0 * static_cast<double>(bars.parts[p].label.size()) + 16;
  }
  const double axis_y = kBarTop + row_pitch * static_cast<double>(bars.rows.size());
  out << "<g class=\"axes\">";
  for (double t : NiceTicks(0, scale_max, 6)) {
    if (t > scale_max + 1e-12) continue;
    out << "<line class=\"grid\" x1=\"" << Fixed(px(t)) << "\" x2=\"" << Fixed(px(t)) << "\" y1=\"" << Fixed(kBarTop)
        << "\" y2=\"" << Fixed(axis_y) << "\"/><text x=\"" << Fixed(px(t)) << "\" y=\"" << Fixed(axis_y + 14)
        << "\" text-anchor=\"middle\">" << Compact(t) << "</text>";
  }
  out << "<text x=\"" << Fixed(kLabelWidth + plot_width / 2) << "\" y=\"" << Fixed(axis_y + 30)
      << "\" text-anchor=\"middle\">" << HtmlEscape(bars.x_label) << "</text></g>";
  for (size_t r = 0; r < bars.rows.size(); ++r) {
    const BarRow& row = bars.rows[r];
    const double y = kBarTop + row_pitch * static_cast<double>(r);
    out << "<g class=\"bar\"" << DataAttributes(row.data) << "><text x=\"" << Fixed(kLabelWidth - 6) << "\" y=\""
        << Fixed(y + bars.row_height - 2) << "\" text-anchor=\"end\">" << HtmlEscape(row.label) << "</text>";
    double at = 0;
    for (size_t p = 0; p < row.values.size() && p < bars.parts.size(); ++p) {
      const double seconds = drawn(row.values[p]);
      const double shown = std::isfinite(row.values[p]) ? row.values[p] : 0.0;
      out << "<rect class=\"bar-part " << HtmlEscape(bars.parts[p].css_class) << "\" data-part=\""
          << HtmlEscape(bars.parts[p].label) << "\" data-seconds=\"" << FixedDecimal(shown, 4) << "\" x=\""
          << FixedDecimal(px(at), 3) << "\" y=\"" << Fixed(y) << "\" width=\""
          << FixedDecimal(seconds / scale_max * plot_width, 3) << "\" height=\"" << bars.row_height << "\"><title>"
          << HtmlEscape(row.label + ": " + bars.parts[p].label + " " + FixedDecimal(shown, 3) + " s")
          << "</title></rect>";
      at += seconds;
    }
    out << "</g>";
  }
  if (drawn(bars.marker) > 0)
    out << "<line class=\"step-mark\" x1=\"" << FixedDecimal(px(bars.marker), 3) << "\" x2=\""
        << FixedDecimal(px(bars.marker), 3) << "\" y1=\"" << Fixed(kBarTop - 4) << "\" y2=\"" << Fixed(axis_y)
        << "\"><title>" << HtmlEscape(bars.marker_label) << "</title></line>";
  out << "</svg>";
  return out.str();
}

}  // namespace diagnose::svg
