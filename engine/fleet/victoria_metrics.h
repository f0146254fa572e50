// A VictoriaMetrics single node as a fleet store: its PromQL API for reading (through the same
// HttpQueryClient every remote endpoint uses) and the few write and maintenance endpoints an
// import needs.
#pragma once

#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/discovery/discovery.h"
#include "engine/tsdb/endpoint_options.h"
#include "engine/tsdb/http_query_client.h"

namespace diagnose {

class VictoriaMetricsStore {
 public:
  // Checks that the endpoint answers as VictoriaMetrics (/api/v1/import exists only there).
  static StatusOr<std::unique_ptr<VictoriaMetricsStore>> Connect(RemoteEndpointOptions options);

  HttpQueryClient& client() { return *client_; }
  const std::string& url() const { return client_->base_url(); }

  // POST /api/v1/import: JSON lines, one series each.
  Status Import(const std::string& json_lines);
  // Imported samples become visible to queries after an in-memory buffer is flushed, and query
  // results over old data are cached: both are cleared so a read right after an import sees it.
  Status MakeSearchable();
  // Raw samples of `selector` within [range.start, range.end] (sum of count_over_time).
  StatusOr<int64_t> SampleCount(const std::string& selector, TimeRange range);
  Status DeleteSeries(const std::string& selector);

 private:
  explicit VictoriaMetricsStore(std::unique_ptr<HttpQueryClient> client) : client_(std::move(client)) {}
  Status Expect(const StatusOr<HttpResponse>& response, const std::string& what, long ok_low, long ok_high);
  std::unique_ptr<HttpQueryClient> client_;
  double timeout_seconds_ = 30;
};

}  // namespace diagnose
