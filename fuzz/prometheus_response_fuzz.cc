// Answers of a Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics or
// anything pretending to be one): the envelope, then the data as a query result, a series list
// and a label-values list; and, differentially, the streamed query-answer decoder, which must
// either fall back or give exactly the tree path's answer. Also read as build information
// (/api/v1/status/buildinfo), which decides whether the engine composes answers on the endpoint.
#include <cmath>
#include <cstdlib>

#include "engine/tsdb/prometheus_api.h"
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto text = fuzz::AsText(data, size);
  ApiEnvelope envelope = ParseApiEnvelope(text);
  StreamedQueryAnswer streamed = ParseQueryAnswer(text);
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
