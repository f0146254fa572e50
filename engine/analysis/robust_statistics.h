// Median and median absolute deviation: the robust centre and spread every peer comparison uses,
// so one noisy host or one checkpoint spike cannot move the baseline it is judged against.
#pragma once

#include <vector>

namespace diagnose::analysis {

double Median(std::vector<double> values);   // 0 for an empty input
double Mad(const std::vector<double>& values, double median);

}  // namespace diagnose::analysis
