#include "engine/tsdb/prometheus_api.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "engine/core/untrusted_json.h"
#include "engine/core/limits.h"
#include "engine/core/utf8.h"

namespace diagnose {
namespace {

using nlohmann::json;

std::string AsText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

double ParseSampleValue(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return std::strtod(v.get_ref<const std::string&>().c_str(), nullptr);  // NaN, +Inf too
  return std::nan("");
}

StatusOr<Sample> ParsePair(const json& pair) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number()) {
    return ParseError("expected [time, \"value\"], got " + QuoteAnswer(pair.dump()));
  }
  return Sample{pair[0].get<double>(), ParseSampleValue(pair[1])};
}

Labels ParseLabels(const json& metric) {
  Labels labels;
  if (!metric.is_object()) return labels;
  for (auto it = metric.begin(); it != metric.end(); ++it) {
    if (it.value().is_string()) labels[it.key()] = it.value().get<std::string>();
  }
  return labels;
}

}  // namespace

std::string QuoteAnswer(std::string_view body) {
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.remove_suffix(1);
  return ValidUtf8(body, 200, /*strip_controls=*/true);
}

ApiEnvelope ParseApiEnvelope(std::string_view body) {
  ApiEnvelope envelope;
  json parsed = ParseUntrustedJson(body);
  if (!parsed.is_object() || !parsed.contains("status") || !parsed["status"].is_string()) return envelope;
  envelope.present = true;
  envelope.status = parsed["status"].get<std::string>();
  if (auto it = parsed.find("warnings"); it != parsed.end() && it->is_array()) {
    for (const auto& w : *it) envelope.warnings.push_back(AsText(w));
  }
  if (auto it = parsed.find("infos"); it != parsed.end() && it->is_array()) {
    for (const auto& w : *it) envelope.warnings.push_back("info: " + AsText(w));
  }
  if (auto it = parsed.find("errorType"); it != parsed.end() && it->is_string()) envelope.error_type = it->get<std::string>();
  if (auto it = parsed.find("error"); it != parsed.end() && it->is_string()) envelope.error = it->get<std::string>();
  if (auto it = parsed.find("data"); it != parsed.end()) envelope.data = std::move(*it);
  return envelope;
}

StatusOr<QueryResult> DecodeQueryData(const json& data) {
  QueryResult result;
  if (!data.is_object() || !data.contains("resultType") || !data["resultType"].is_string()) {
    return ParseError("response data has no resultType");
  }
  result.result_type = data["resultType"].get<std::string>();
  const json& r = data.contains("result") ? data["result"] : json();
  if (result.result_type == "vector" || result.result_type == "matrix") {
    if (!r.is_array()) return ParseError("result is not an array");
    const int64_t max_series = GetLimit(LimitId::kHttpSeriesPerQuery);
    const int64_t max_points = GetLimit(LimitId::kHttpPointsPerQuery);
    if (static_cast<int64_t>(r.size()) > max_series) {
      return LimitExceeded(LimitId::kHttpSeriesPerQuery, "an answer of " + std::to_string(r.size()) + " series");
    }
    int64_t points = 0;
    result.series.reserve(r.size());
    for (const auto& item : r) {
      if (!item.is_object()) return ParseError("result element is not an object: " + QuoteAnswer(item.dump()));
      Series s;
      if (auto metric = item.find("metric"); metric != item.end()) s.labels = ParseLabels(*metric);
      if (result.result_type == "vector") {
        if (!item.contains("value")) return ParseError("vector element without value");
        ASSIGN_OR_RETURN(Sample sample, ParsePair(item["value"]));
        s.samples.push_back(sample);
      } else {
        const json& values = item.contains("values") ? item["values"] : json::array();
        if (!values.is_array()) return ParseError("matrix element values is not an array");
        s.samples.reserve(values.size());
        for (const auto& v : values) {
          ASSIGN_OR_RETURN(Sample sample, ParsePair(v));
          s.samples.push_back(sample);
        }
      }
      points += static_cast<int64_t>(s.samples.size());
      if (points > max_points) {
        return LimitExceeded(LimitId::kHttpPointsPerQuery,
                             "an answer of more than " + std::to_string(max_points) + " points");
      }
      result.series.push_back(std::move(s));
    }
  } else if (result.result_type == "scalar") {
    ASSIGN_OR_RETURN(Sample sample, ParsePair(r));
    Series s;
    s.samples.push_back(sample);
    result.series.push_back(std::move(s));
  } else if (result.result_type == "string") {
    // A string result carries no number; keep it as a label so callers can still read it.
    if (!r.is_array() || r.size() != 2) return ParseError("malformed string result");
    Series s;
    s.labels["value"] = AsText(r[1]);
    s.samples.push_back({r[0].is_number() ? r[0].get<double>() : 0, std::nan("")});
    result.series.push_back(std::move(s));
  } else {
    return ParseError("unknown resultType '" + QuoteAnswer(result.result_type) + "'");
  }
  return result;
}

StatusOr<std::vector<Labels>> DecodeSeriesData(const json& data) {
  if (!data.is_array()) return ParseError("series result is not an array");
  if (static_cast<int64_t>(data.size()) > GetLimit(LimitId::kHttpSeriesPerQuery)) {
    return LimitExceeded(LimitId::kHttpSeriesPerQuery, "a series answer of " + std::to_string(data.size()) + " series");
  }
  std::vector<Labels> out;
  out.reserve(data.size());
  for (const auto& s : data) out.push_back(ParseLabels(s));
  return out;
}

StatusOr<std::vector<std::string>> DecodeLabelValues(const json& data) {
  if (!data.is_array()) return ParseError("label values are not an array");
  if (static_cast<int64_t>(data.size()) > GetLimit(LimitId::kHttpSeriesPerQuery)) {
    return LimitExceeded(LimitId::kHttpSeriesPerQuery, "a label-values answer of " + std::to_string(data.size()) + " values");
  }
  std::vector<std::string> values;
  for (const auto& v : data) {
    if (v.is_string()) values.push_back(v.get<std::string>());
  }
  return values;
}

}  // namespace diagnose
