// The HTML report: one self-contained file (inline CSS and SVG, no script, a Content-Security-Policy
// that forbids every fetch), readable from a mail attachment or a CI artifact and printable.
//
// Pictures, because the incidents are understood by them: the TGS timeline with its phases,
// checkpoints and the verdict's onset; for each fired finding its per-host series with the blamed
// hosts drawn over a median/range band of the rest; both jobs on one axis for --baseline; a host x
// time heatmap when the job has too many hosts for lines; for a job with a profiler window, a
// stacked bar per GPU (compute, exposed communication, idle, overlap) and the kernel-family table.
// The DOM classes (figure.chart[data-chart], path.series.blamed[data-host], path.band, rect.phase,
// line.onset, pre.promql, a.graph-link, g.bar[data-gpu] rect.bar-part[data-part][data-seconds],
// table.kernel-families tr[data-family]) are a contract with tests/report/browser_test.py.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/report/report.h"

namespace diagnose {

// `details_html` is the full listing (every check and its evidence), placed in a closed <details>.
std::string RenderHtmlReport(const Report& report, const std::string& details_html);

// Unix time of the end of `step`, interpolated (or extrapolated from the nearest two) along a
// job's step map; nullopt with fewer than two known steps.
std::optional<double> TimeOfStep(const std::vector<std::pair<int64_t, double>>& step_times, double step);

// Prometheus's graph page for `query` over `window` on `endpoint` (http/https only; "" otherwise).
std::string GraphPageUrl(const std::string& endpoint, const std::string& query, const TimeWindow& window);

}  // namespace diagnose
