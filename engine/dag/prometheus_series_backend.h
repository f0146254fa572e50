// The series backend `diagnose test` uses: a test's input series -> TSDB blocks -> a private
// Prometheus, so playbook tests run real PromQL. Both are removed when the served series are.
#pragma once

#include <memory>

#include "engine/dag/test_runner.h"

namespace diagnose::dag {

std::unique_ptr<SeriesBackend> MakePrometheusSeriesBackend();

}  // namespace diagnose::dag
