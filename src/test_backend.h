// The series backend `diagnose test` uses: input series -> TSDB blocks -> a private Prometheus.
#pragma once

#include <memory>

#include "engine/dag/test_runner.h"

namespace diagnose::cli {

std::unique_ptr<dag::SeriesBackend> MakeTestSeriesBackend();

}  // namespace diagnose::cli
