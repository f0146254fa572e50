// How to reach a PromQL HTTP endpoint: a private Prometheus, a live job's Prometheus, or a fleet
// backend (Thanos, Mimir/Cortex, VictoriaMetrics) behind a path prefix, auth headers and TLS.
#pragma once

#include <map>
#include <string>

namespace diagnose {

struct RemoteEndpointOptions {
  std::string url;                                  // --prometheus; may already end in a prefix
  std::map<std::string, std::string> headers;       // --header "K: V" (bearer, X-Scope-OrgID, ...)
  std::string tenant;                               // --tenant -> X-Scope-OrgID
  bool insecure_skip_verify = false;
  std::string ca_file;
  bool thanos = false;                              // partial_response=false
  double timeout_seconds = 30;
  // Added for the HTTP client (all optional):
  std::string path_prefix;          // "/prometheus" (Mimir), "/select/0/prometheus" (VM cluster)
  int max_retries = 2;              // extra attempts for retryable failures only
  double retry_backoff_seconds = 0.2;   // doubled per attempt
  int max_parallel = 8;             // concurrent requests in RunBatch
};

}  // namespace diagnose
