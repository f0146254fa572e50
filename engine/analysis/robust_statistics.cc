#include "engine/analysis/robust_statistics.h"

#include <algorithm>
#include <cmath>

namespace diagnose::analysis {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double Mad(const std::vector<double>& values, double median) {
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double x : values) deviations.push_back(std::fabs(x - median));
  return Median(std::move(deviations));
}

}  // namespace diagnose::analysis
