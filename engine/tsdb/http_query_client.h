// QueryClient over the Prometheus HTTP API (libcurl multi + nlohmann_json). Works against a private
// Prometheus, a live one, Thanos, Mimir/Cortex and VictoriaMetrics: path prefix, auth headers,
// tenant, TLS options and Thanos partial_response=false come from RemoteEndpointOptions.
//
// Every request carries explicit time/start/end (recorded data is never "now"), is POSTed as a
// URL-encoded form where the API allows it, has a timeout, and is retried with backoff only when the
// failure is transient (connection refused/reset, HTTP 502/503/504, timeout). Range steps are
// raised to ceil((end-start)/11000) so the server's 11,000-points-per-series cap is never hit.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/tsdb/endpoint_options.h"
#include "engine/tsdb/query_client.h"

namespace diagnose {

struct HttpResponse {
  long http_code = 0;
  std::string body;
};

// Prometheus refuses range queries with more points per series than this.
inline constexpr double kMaxPointsPerSeries = 11000;

// The smallest step >= requested that keeps (end-start)/step within kMaxPointsPerSeries.
double ClampRangeStep(double start, double end, double requested_step);

class HttpQueryClient : public QueryClient {
 public:
  // `description` overrides Describe() (a private server names the snapshot it serves).
  static StatusOr<std::unique_ptr<HttpQueryClient>> Create(RemoteEndpointOptions options,
                                                           std::string description = "");
  ~HttpQueryClient() override;

  StatusOr<QueryResult> Run(const Query& query) override;
  // Concurrent over one curl multi handle, at most options.max_parallel in flight.
  std::vector<StatusOr<QueryResult>> RunBatch(const std::vector<Query>& queries) override;
  StatusOr<std::vector<std::string>> LabelValues(const std::string& label,
                                                 const std::vector<std::string>& matchers, double start,
                                                 double end) override;
  // Concurrent like RunBatch: one Perform over every question.
  std::vector<StatusOr<std::vector<std::string>>> LabelValuesBatch(
      const std::vector<LabelValuesQuestion>& questions) override;
  StatusOr<std::vector<Labels>> SeriesMatching(const std::vector<std::string>& matchers, double start,
                                               double end) override;
  // Concurrent like RunBatch; each answer counted without building its label sets.
  std::vector<StatusOr<int64_t>> SeriesCountsForEstimate(const std::vector<SeriesQuestion>& questions) override;
  std::string Describe() const override;
  // The private server, or an endpoint identified as a verified Prometheus (identify_prometheus),
  // unless ask_as_written.
  bool EvaluatesPromql() const override { return evaluates_promql_; }
  // Whether the engine composes answers on this endpoint and why, as -v says it ("" when nothing
  // was decided beyond the options: the private server, fleet stores).
  const std::string& composition_note() const { return composition_note_; }

  // One GET of `path` under the base URL, no retries, no envelope parsing (readiness probes).
  StatusOr<HttpResponse> Get(const std::string& path, double timeout_seconds);
  // A write to the endpoint (VictoriaMetrics' import API); the body is sent as is.
  StatusOr<HttpResponse> Post(const std::string& path, const std::string& body, const std::string& content_type,
                              double timeout_seconds);
  // Samples the server said its query answers read (options.query_stats), over every query so far.
  int64_t samples_read() const { return samples_read_.load(); }
  // base URL with prefix, no trailing slash
  const std::string& base_url() const { return base_url_; }

  struct Request;  // internal; public so the .cc's helpers can name it

 private:
  HttpQueryClient(RemoteEndpointOptions options, std::string description);
  // Runs requests concurrently with retries, at most `max_in_flight` (options.max_parallel when 0) at
  // once; fills each Request's outcome.
  void Perform(std::vector<Request>& requests, int max_in_flight = 0);
  StatusOr<HttpResponse> Transfer(const char* method, const std::string& path, const std::string* body,
                                  const std::string& content_type, double timeout_seconds);
  Request MakeQueryRequest(const Query& query, double* effective_step) const;
  Request MakeLabelValuesRequest(const LabelValuesQuestion& question) const;
  Request MakeSeriesRequest(const SeriesQuestion& question) const;
  // identify_prometheus: sets evaluates_promql_ from the endpoint's build information.
  void IdentifyEndpoint();

  RemoteEndpointOptions options_;
  std::string base_url_;
  std::string description_;
  std::vector<std::string> header_lines_;
  std::mutex mutex_;        // one multi handle; concurrent callers take turns
  void* multi_ = nullptr;   // CURLM*, kept so connections are reused across calls
  std::atomic<int64_t> samples_read_{0};
  bool evaluates_promql_ = false;
  std::string composition_note_;
};

}  // namespace diagnose
