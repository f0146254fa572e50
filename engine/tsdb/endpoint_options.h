// How to reach a PromQL HTTP endpoint: a private Prometheus, a live job's Prometheus, or a fleet
// backend (Thanos, Mimir/Cortex, VictoriaMetrics) behind a path prefix, auth headers and TLS.
//
// Backend differences a reader of the report must know (prometheus-notes §7):
// - VictoriaMetrics' MetricsQL does not extrapolate rate()/increase() and includes the last raw
//   sample before the window, so the same rate() gives different numbers than Prometheus;
//   thresholds tuned on Prometheus are approximate there. Its cluster API sits under
//   /select/<accountID>/prometheus.
// - Thanos answers partial data with warnings unless partial_response=false (sent when `thanos`);
//   warnings are kept in QueryResult::warnings.
// - Mimir/Cortex need X-Scope-OrgID on every request (`tenant`) and usually the /prometheus prefix;
//   their query-frontends split long ranges at 24 h and may reject long ranges per tenant.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "engine/core/status.h"

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
  // At most this many estimated samples (Query::estimated_samples, the plan's series x steps of the
  // range questions it splits, engine/dag/range_split.h) in flight at once; 0: no bound. A request
  // alone in flight is sent whatever its estimate.
  int64_t max_estimated_samples_in_flight = 0;
  // Ask for gzip/deflate answers. Worth it across a network; on loopback (the private server, a live
  // job's Prometheus on 127.0.0.1) the server's compressing costs more CPU than the bytes it saves
  // (about a tenth of Prometheus' CPU in a diagnosis of 8308). Unset: asked for unless the URL's
  // host is a loopback address.
  std::optional<bool> compressed_answers;
  // Ask for the query's statistics (stats=all) and total the samples the server says it read
  // (HttpQueryClient::samples_read). Prometheus >= 2.35 reports them; other backends may not.
  bool query_stats = false;
  // The endpoint is Prometheus itself (the private server): the engine may compute an answer from
  // another one exactly as Prometheus would (QueryClient::EvaluatesPromql). Not assumed of a remote
  // endpoint, which may speak a dialect (MetricsQL aggregates NaN differently).
  bool is_prometheus = false;
  // Ask the endpoint what it is (GET /api/v1/status/buildinfo, once, when the client is created) and
  // set is_prometheus when it answers as a Prometheus release the engine's composed answers were
  // verified against (PrometheusVerifiedForComposition). Never with `thanos` or a `tenant`: those
  // name a fleet backend with an engine of its own.
  bool identify_prometheus = false;
  // --ask-as-written: every question goes to the endpoint as written, whatever it says it is (a proxy
  // that forwards the build information of a Prometheus but rewrites or caches the queries).
  bool ask_as_written = false;
  // The whole run's deadline (--deadline): no request outlives it, whatever its own timeout and
  // retries, so an endpoint that accepts and never answers cannot hold a Slurm epilog.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// The extra headers and the tenant (sent as X-Scope-OrgID) as they may be sent: a name is an HTTP
// token (RFC 9110 5.6.2), a value holds no control character but tab. A CR or LF would end the
// header and start one the user never wrote. InvalidArgument naming the header otherwise.
Status CheckRequestHeaders(const RemoteEndpointOptions& options);

// An endpoint URL split at its userinfo ("http://user:pass@host/..."): the URL without it, which is
// what requests go to and messages name, and the credentials as written (percent-encoded).
struct UrlCredentials {
  std::string url;          // the URL with no userinfo
  std::string user;         // empty when the URL has no userinfo
  std::string password;
  bool has_password = false;
};
UrlCredentials SplitUrlCredentials(const std::string& url);

// The URL as reports, logs and error messages show it: a password in its userinfo written as ***
// (http://user:***@host/...), a userinfo without one (a bare token) as *** (http://***@host/...);
// anything else exactly as given. Every place an endpoint is echoed
// goes through here, since a report is shared and stderr logged.
std::string ShownUrl(const std::string& url);

}  // namespace diagnose
