// Answers of a Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics or
// anything pretending to be one): the envelope, then the data as a query result, a series list
// and a label-values list.
#include "engine/tsdb/prometheus_api.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace diagnose;
  ApiEnvelope envelope = ParseApiEnvelope(fuzz::AsText(data, size));
  if (!envelope.present) return 0;
  (void)DecodeQueryData(envelope.data);
  (void)DecodeSeriesData(envelope.data);
  (void)DecodeLabelValues(envelope.data);
  return 0;
}
