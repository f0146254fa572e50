// What the analyses in analysis.cc's registry read their input as: points of one series, series by
// key, and their numeric and string arguments. Shared by the analysis families (series shape, peers,
// alignment); not part of the module's interface to playbooks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/analysis/analysis.h"

namespace diagnose::analysis {

struct Point {
  double x = 0;
  double y = 0;
};

// Mean and sample standard deviation of y over [b, e).
double Mean(const std::vector<Point>& pts, size_t b, size_t e);
double Stddev(const std::vector<Point>& pts, size_t b, size_t e);

// The host part of a reduction key ("chi2822/ionic_0" -> "chi2822").
std::string HostOfKey(const std::string& key);

// A point from [x, y] or from an object's `x` and `y` fields; false when neither is numeric.
bool ToPoint(const Json& item, const std::string& x, const std::string& y, Point* out);

// A series from: a list of [x, y] pairs or objects, or a map holding exactly one such list.
StatusOr<std::vector<Point>> ToPoints(const Json& input, const std::string& x, const std::string& y);

// map key -> list of [t, v]; accepts a query result object (its `series`) too.
std::map<std::string, std::vector<Point>> ToSeriesMap(const Json& input);

// A numeric (0 when absent) or string ("" when absent) argument.
double Arg(const AnalysisView& in, const std::string& name);
std::string ArgStr(const AnalysisView& in, const std::string& name);

}  // namespace diagnose::analysis
