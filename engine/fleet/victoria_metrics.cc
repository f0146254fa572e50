#include "engine/fleet/victoria_metrics.h"

#include <cmath>

#include "engine/core/text.h"
#include "engine/core/url_encode.h"
#include "engine/fleet/raw_export.h"

namespace diagnose {

namespace {

// An error body can be a page of HTML from a proxy; a line of it is enough to say what happened.
std::string Excerpt(const std::string& body) {
  std::string line = body.substr(0, std::min<size_t>(body.find('\n'), 300));
  return line.empty() ? "(empty body)" : line;
}

}  // namespace

StatusOr<std::unique_ptr<VictoriaMetricsStore>> VictoriaMetricsStore::Connect(RemoteEndpointOptions options) {
  const double timeout = options.timeout_seconds;
  auto client = HttpQueryClient::Create(std::move(options), "VictoriaMetrics");
  if (!client.ok()) return client.status();
  std::unique_ptr<VictoriaMetricsStore> store(new VictoriaMetricsStore(std::move(*client)));
  store->timeout_seconds_ = timeout;
  // A Prometheus answers 404 here; only a VictoriaMetrics can take an import.
  auto probe = store->client_->Get("/api/v1/status/active_queries", timeout);
  if (!probe.ok()) return probe.status().WithContext("connecting to the fleet store " + store->url());
  if (probe->http_code != 200) {
    return FailedPreconditionError(store->url() + " does not answer as VictoriaMetrics (HTTP " +
                                   std::to_string(probe->http_code) + " for /api/v1/status/active_queries); "
                                   "fleet import writes VictoriaMetrics' /api/v1/import");
  }
  return store;
}

Status VictoriaMetricsStore::Expect(const StatusOr<HttpResponse>& response, const std::string& what, long ok_low,
                                    long ok_high) {
  if (!response.ok()) return response.status().WithContext(what + " on " + url());
  if (response->http_code < ok_low || response->http_code > ok_high) {
    return UnavailableError(what + " on " + url() + ": HTTP " + std::to_string(response->http_code) + ": " +
                            Excerpt(response->body));
  }
  return Status::Ok();
}

Status VictoriaMetricsStore::Import(const std::string& json_lines) {
  if (json_lines.empty()) return Status::Ok();
  return Expect(client_->Post("/api/v1/import", json_lines, "application/json", timeout_seconds_), "importing samples",
                200, 299);
}

Status VictoriaMetricsStore::MakeSearchable() {
  RETURN_IF_ERROR(Expect(client_->Get("/internal/force_flush", timeout_seconds_), "flushing imported samples", 200, 299));
  return Expect(client_->Get("/internal/resetRollupResultCache", timeout_seconds_), "resetting the query cache", 200,
                299);
}

StatusOr<int64_t> VictoriaMetricsStore::SampleCount(const std::string& selector, TimeRange range) {
  auto result = client_->Run(SampleCountQuery(selector, range, "fleet:sample-count"));
  if (!result.ok()) return result.status().WithContext("counting samples of " + selector);
  return SampleCountOf(*result);
}

Status VictoriaMetricsStore::DeleteSeries(const std::string& selector) {
  return Expect(client_->Post("/api/v1/admin/tsdb/delete_series", "match[]=" + UrlEncode(selector),
                              "application/x-www-form-urlencoded", timeout_seconds_),
                "deleting " + selector, 200, 299);
}

}  // namespace diagnose
