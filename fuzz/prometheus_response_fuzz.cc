// Answers of a Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics or
// anything pretending to be one): the envelope, then the data as a query result, a series list
// and a label-values list; and, differentially, the streamed query-answer decoder, which must
// either fall back or give exactly the tree path's answer, and the scanner of common answers, which
// must either decline or give exactly the event reader's answer, to the bit. Also read as build information
// (/api/v1/status/buildinfo), which decides whether the engine composes answers on the endpoint.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "engine/core/limits.h"
#include "engine/tsdb/prometheus_api.h"
#include "engine/tsdb/query_answer_scanner.h"
#include "fuzz/fuzz_input.h"

namespace {

using namespace diagnose;

bool SameSeries(const Series& a, const Series& b) {
  if (a.labels != b.labels || a.samples.size() != b.samples.size()) return false;
  for (size_t i = 0; i < a.samples.size(); ++i) {
    if (a.samples[i].t != b.samples[i].t) return false;
    if (!(a.samples[i].v == b.samples[i].v || (std::isnan(a.samples[i].v) && std::isnan(b.samples[i].v)))) return false;
  }
  return true;
}

bool SameBits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

void CheckScannedAsByEvents(std::string_view text) {
  const std::optional<StreamedQueryAnswer> scanned = ScanQueryAnswer(
      text, GetLimit(LimitId::kHttpSeriesPerQuery), GetLimit(LimitId::kHttpPointsPerQuery), std::nullopt);
  if (!scanned) return;
  const StreamedQueryAnswer events = ParseQueryAnswerByEvents(text);
  if (scanned->fallback || events.fallback || !scanned->result.ok() || !events.result.ok()) std::abort();
  if (scanned->warnings != events.warnings || scanned->samples_read != events.samples_read ||
      scanned->result->result_type != events.result->result_type ||
      scanned->result->series.size() != events.result->series.size())
    std::abort();
  for (size_t i = 0; i < events.result->series.size(); ++i) {
    const Series& a = scanned->result->series[i];
    const Series& b = events.result->series[i];
    if (a.labels != b.labels || a.samples.size() != b.samples.size()) std::abort();
    for (size_t k = 0; k < a.samples.size(); ++k)
      if (!SameBits(a.samples[k].t, b.samples[k].t) || !SameBits(a.samples[k].v, b.samples[k].v)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto text = fuzz::AsText(data, size);
  ApiEnvelope envelope = ParseApiEnvelope(text);
  StreamedQueryAnswer streamed = ParseQueryAnswer(text);
  CheckScannedAsByEvents(text);
  if (!streamed.fallback) {
    // The streamed decoder only answers "success" envelopes; the tree must agree on all of it.
    if (!envelope.present || envelope.status != "success") std::abort();
    auto tree = DecodeQueryData(envelope.data);
    if (tree.ok() != streamed.result.ok() || tree.status().code() != streamed.result.status().code()) std::abort();
    if (tree.ok()) {
      if (envelope.warnings != streamed.warnings || tree->result_type != streamed.result->result_type ||
          tree->series.size() != streamed.result->series.size())
        std::abort();
      for (size_t i = 0; i < tree->series.size(); ++i)
        if (!SameSeries(tree->series[i], streamed.result->series[i])) std::abort();
    }
  }
  if (auto build = ParsePrometheusBuildInfo(text); build.ok()) {
    // Only a short release number is ever accepted, and only a 2.42 release composes.
    if (build->version.empty() || build->version.size() > 256 || build->major > 99999 || build->minor > 99999 ||
        build->patch > 99999 || size > 4096)
      std::abort();
    if (PrometheusVerifiedForComposition(*build) && (build->major != 2 || build->minor != 42 || build->prerelease))
      std::abort();
  }
  if (!envelope.present) return 0;
  (void)DecodeQueryData(envelope.data);
  (void)DecodeSeriesData(envelope.data);
  (void)DecodeLabelValues(envelope.data);
  return 0;
}
