// The Prometheus HTTP API's answer format, parsed from untrusted bytes: the JSON envelope
// ({status, data, errorType, error, warnings, infos}) and a query's data (vector, matrix, scalar,
// string). Pure functions: the HTTP client calls them on every answer and fuzz/ feeds them directly.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/core/untrusted_json.h"
#include "engine/tsdb/query_client.h"

namespace diagnose {

struct ApiEnvelope {
  bool present = false;              // the body is a JSON object with a string "status"
  std::string status;                // "success", "error", or whatever the server sent
  nlohmann::json data;               // on success
  std::string error_type = "unknown";
  std::string error;
  std::vector<std::string> warnings; // "warnings", then "infos" prefixed "info: "
  std::optional<Status> stopped;     // the parse was cut short by `bounds` (deadline, array limit)
};

// A server's answer (or part of one) quoted in an error: bounded, one line, valid UTF-8 whatever
// it sent.
std::string QuoteAnswer(std::string_view body);

// A sample value as Prometheus writes it in an answer: a decimal (an exponent allowed), NaN, +Inf
// or -Inf, the whole text. Anything else ("abc", "12abc", "0x10", "1e400", which strtod would
// read as 0, 12, 16 and +Inf) is nullopt: a number the endpoint never held.
std::optional<double> ParseSampleValueText(std::string_view text);

// Never throws; a body that is not an envelope (proxies, HTML error pages) has present == false.
// A parse that `bounds` cut short sets `stopped` and nothing else.
ApiEnvelope ParseApiEnvelope(std::string_view body, const JsonParseBounds& bounds = {});

// A query's `data`. kParseError says what was malformed; the caller adds the query and endpoint.
StatusOr<QueryResult> DecodeQueryData(const nlohmann::json& data);

// A query answer decoded while it is parsed, without a JSON tree (a range answer at 1,024 nodes
// is tens of MB of text and several times that as a tree). Covers the shape every engine sends:
// a "success" envelope whose data is a vector or matrix of {metric, value|values} objects with
// [time, "value"] pairs, unknown keys skipped. Anything else (errors, scalars, strings, odd shapes,
// repeated keys) sets `fallback`: the caller then uses ParseApiEnvelope + DecodeQueryData, so
// every answer means what it meant before. Series and point limits hold while parsing.
struct StreamedQueryAnswer {
  bool fallback = false;
  std::vector<std::string> warnings;  // as ApiEnvelope::warnings
  StatusOr<QueryResult> result = QueryResult{};
  // data.stats.samples.totalQueryableSamples, when the answer carries it (stats=all).
  std::optional<int64_t> samples_read;
};
// A deadline that passes mid-parse ends it: `result` is then kDeadlineExceeded. The common answer
// is read by ScanQueryAnswer (query_answer_scanner.h), everything else by ParseQueryAnswerByEvents.
StreamedQueryAnswer ParseQueryAnswer(std::string_view body,
                                     std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
// The general reader behind ParseQueryAnswer: a JSON parser's events, any shape, any key order,
// every limit and error named. The tests and the fuzzer hold the scanner's answers to its.
StreamedQueryAnswer ParseQueryAnswerByEvents(
    std::string_view body, std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

// data.stats.samples.totalQueryableSamples of a query answer's `data` (stats=all), when present.
std::optional<int64_t> QueryStatsSamples(const nlohmann::json& data);

// Label sets of /api/v1/series (`data` must be an array of objects; non-string values are dropped).
StatusOr<std::vector<Labels>> DecodeSeriesData(const nlohmann::json& data);
// How many label sets the same answer holds, under the same checks, without building them.
StatusOr<int64_t> SeriesCountOf(const nlohmann::json& data);

// Values of /api/v1/label/<name>/values (an array; non-string entries are dropped).
StatusOr<std::vector<std::string>> DecodeLabelValues(const nlohmann::json& data);

// Prometheus' own answer to /api/v1/status/buildinfo: a "success" envelope whose data holds exactly
// version, revision, branch, buildUser, buildDate and goVersion, all strings. Other servers answer
// otherwise, and that is how they are told apart:
//   - VictoriaMetrics: `{}` (1.77-1.95) or only `{"version":"2.24.0"}` (1.96 on, a version made up
//     for Grafana), no revision/branch/build fields;
//   - Grafana Mimir: adds "application" and "features" (its own version, r<N> weeklies or 2.x);
//   - Thanos and Cortex: Prometheus' six fields, with their own version (0.x, 1.x);
//   - older servers, proxies: 404 or no envelope.
struct PrometheusBuildInfo {
  std::string version;   // as sent, e.g. "2.42.0+ds"
  int major = 0, minor = 0, patch = 0;
  bool prerelease = false;   // "-rc.0" and the like
};
// kFailedPrecondition saying why the answer is not Prometheus' (bounded, quoted), kParseError for
// what is not even an envelope. The body is refused past 4 KiB (Prometheus' is about 250 bytes).
StatusOr<PrometheusBuildInfo> ParsePrometheusBuildInfo(std::string_view body);

// The Prometheus releases on which the engine may compute an answer from the answers to its parts
// (engine/dag composite, count and derived answers): those its readers were compared with bit for
// bit, 2.42.x, the one the test suite runs. Not extrapolated: a later release may evaluate an
// operator the engine repeats differently in the last bit or in series order (2.53 sums with Kahan
// compensation, prometheus/prometheus#14074); a release is added here once the answer tests
// (tests/tsdb/*_answer_test.cc) pass against it. Pre-releases are never accepted.
bool PrometheusVerifiedForComposition(const PrometheusBuildInfo& info);
inline constexpr const char* kPrometheusVerifiedForComposition = "2.42.x";

}  // namespace diagnose
