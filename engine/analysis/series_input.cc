#include "engine/analysis/series_input.h"

#include <algorithm>
#include <cmath>

namespace diagnose::analysis {

double Mean(const std::vector<Point>& pts, size_t b, size_t e) {
  double s = 0;
  for (size_t i = b; i < e; ++i) s += pts[i].y;
  return e > b ? s / (e - b) : 0;
}

double Stddev(const std::vector<Point>& pts, size_t b, size_t e) {
  if (e - b < 2) return 0;
  double m = Mean(pts, b, e), s = 0;
  for (size_t i = b; i < e; ++i) s += (pts[i].y - m) * (pts[i].y - m);
  return std::sqrt(s / (e - b - 1));
}

std::string HostOfKey(const std::string& key) { return key.substr(0, key.find('/')); }

bool ToPoint(const Json& item, const std::string& x, const std::string& y, Point* out) {
  if (item.is_array() && item.size() >= 2 && item[0].is_number() && item[1].is_number()) {
    *out = {item[0].get<double>(), item[1].get<double>()};
    return true;
  }
  if (item.is_object() && item.contains(x) && item.contains(y) && item[x].is_number() && item[y].is_number()) {
    *out = {item[x].get<double>(), item[y].get<double>()};
    return true;
  }
  return false;
}

StatusOr<std::vector<Point>> ToPoints(const Json& input, const std::string& x, const std::string& y) {
  const Json* list = &input;
  if (input.is_object()) {
    if (input.contains("series") && input["series"].is_object()) return ToPoints(input["series"], x, y);
    // No series is no data (the query found none, e.g. no MoE loss in a dense job): the analysis
    // cannot run, which is not an error in the rule.
    if (input.empty()) return FailedPreconditionError("the query returned no series");
    if (input.size() != 1)
      return InvalidArgumentError("expected one series, got a map of " + std::to_string(input.size()));
    list = &input.begin().value();
  }
  if (!list->is_array()) return InvalidArgumentError("expected a list of points");
  std::vector<Point> pts;
  for (const auto& item : *list) {
    Point p;
    if (ToPoint(item, x, y, &p) && std::isfinite(p.y)) pts.push_back(p);
  }
  std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  return pts;
}

std::map<std::string, std::vector<Point>> ToSeriesMap(const Json& input) {
  std::map<std::string, std::vector<Point>> out;
  const Json& m = input.is_object() && input.contains("series") && input["series"].is_object() ? input["series"] : input;
  if (!m.is_object()) return out;
  for (const auto& [k, v] : m.items()) {
    if (!v.is_array()) continue;
    auto& pts = out[k];
    for (const auto& item : v) {
      Point p;
      if (ToPoint(item, "t", "v", &p) && std::isfinite(p.y)) pts.push_back(p);
    }
    std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  }
  return out;
}

double Arg(const AnalysisView& in, const std::string& name) {
  return in.args.contains(name) && in.args[name].is_number() ? in.args[name].get<double>() : 0;
}
std::string ArgStr(const AnalysisView& in, const std::string& name) {
  return in.args.contains(name) && in.args[name].is_string() ? in.args[name].get<std::string>() : "";
}

}  // namespace diagnose::analysis
