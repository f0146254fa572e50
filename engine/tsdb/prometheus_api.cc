#include "engine/tsdb/prometheus_api.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>

#include "engine/core/untrusted_json.h"
#include "engine/core/limits.h"
#include "engine/core/utf8.h"
#include "engine/tsdb/query_answer_scanner.h"

namespace diagnose {
namespace {

using nlohmann::json;

std::string AsText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

StatusOr<double> ParseSampleValue(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nan("");
  const std::string& text = v.get_ref<const std::string&>();
  if (std::optional<double> value = ParseSampleValueText(text)) return *value;
  return ParseError("sample value " + QuoteAnswer(v.dump()) +
                    " is not a number (Prometheus writes decimals, NaN, +Inf or -Inf; a finite value within double's range)");
}

StatusOr<Sample> ParsePair(const json& pair) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number()) {
    return ParseError("expected [time, \"value\"], got " + QuoteAnswer(pair.dump()));
  }
  ASSIGN_OR_RETURN(double value, ParseSampleValue(pair[1]));
  return Sample{pair[0].get<double>(), value};
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

std::optional<double> ParseSampleValueText(std::string_view text) {
  if (text == "NaN") return std::nan("");
  if (text == "+Inf") return HUGE_VAL;
  if (text == "-Inf") return -HUGE_VAL;
  // [+-]? (digits [. digits*] | . digits) ([eE] [+-]? digits)?, all of the text.
  std::string_view number = text;
  if (!number.empty() && number.front() == '+') number.remove_prefix(1);  // from_chars takes '-' only
  size_t i = number.empty() || number.front() != '-' ? 0 : 1;
  const auto digits = [&] {
    const size_t from = i;
    while (i < number.size() && number[i] >= '0' && number[i] <= '9') ++i;
    return i - from;
  };
  size_t mantissa_digits = digits();
  if (i < number.size() && number[i] == '.') {
    ++i;
    mantissa_digits += digits();
  }
  if (mantissa_digits == 0) return std::nullopt;
  if (i < number.size() && (number[i] == 'e' || number[i] == 'E')) {
    ++i;
    if (i < number.size() && (number[i] == '+' || number[i] == '-')) ++i;
    if (digits() == 0) return std::nullopt;
  }
  if (i != number.size() || (number.size() != text.size() && number.front() == '-')) return std::nullopt;
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec == std::errc() && end == number.data() + number.size()) return value;
  if (ec != std::errc::result_out_of_range) return std::nullopt;
  // Out of range: an underflow reads as the nearest double (0 or a subnormal), as Go's ParseFloat
  // reads it; an overflow is no value Prometheus could have held.
  const double rounded = std::strtod(std::string(number).c_str(), nullptr);
  if (std::isinf(rounded)) return std::nullopt;
  return rounded;
}

std::string QuoteAnswer(std::string_view body) {
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.remove_suffix(1);
  return ValidUtf8(body, 200, /*strip_controls=*/true);
}

ApiEnvelope ParseApiEnvelope(std::string_view body, const JsonParseBounds& bounds) {
  ApiEnvelope envelope;
  StatusOr<json> bounded = ParseUntrustedJsonBounded(body, bounds);
  if (!bounded.ok()) {
    envelope.stopped = bounded.status();
    return envelope;
  }
  json parsed = std::move(bounded).value();
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

namespace {

// SAX handler for ParseQueryAnswer. Returning false from a callback stops the parse; `fallback`
// (or `limit`) says why. Frames follow the path from the root; kSkip frames swallow values of
// keys nobody reads.
class QueryAnswerHandler : public nlohmann::json_sax<json> {
 public:
  QueryAnswerHandler(int64_t max_series, int64_t max_points,
                     std::optional<std::chrono::steady_clock::time_point> deadline)
      : max_series_(max_series), max_points_(max_points), deadline_(deadline) {}

  bool null() override { return Scalar(Atom::kOther, 0, nullptr); }
  bool boolean(bool) override { return Scalar(Atom::kOther, 0, nullptr); }
  bool number_integer(number_integer_t v) override { return Scalar(Atom::kNumber, static_cast<double>(v), nullptr); }
  bool number_unsigned(number_unsigned_t v) override { return Scalar(Atom::kNumber, static_cast<double>(v), nullptr); }
  bool number_float(number_float_t v, const string_t&) override {
    // As ParseUntrustedJson: a float beyond int64's range reads as null.
    return std::fabs(v) < 9.2e18 ? Scalar(Atom::kNumber, v, nullptr) : Scalar(Atom::kOther, 0, nullptr);
  }
  bool string(string_t& v) override { return Scalar(Atom::kString, 0, &v); }
  bool binary(binary_t&) override { return Fallback(); }

  bool start_object(std::size_t) override {
    const Frame parent = Top();
    if (parent == Frame::kSkip) return Push(Frame::kSkip);
    if (stack_.empty()) return Push(Frame::kRoot);
    switch (parent) {
      case Frame::kRoot:
        if (key_ == "data") return Once(seen_data_) && Push(Frame::kData);
        return Push(Frame::kSkip);
      case Frame::kData:
        return Push(key_ == "stats" ? Frame::kStats : Frame::kSkip);
      case Frame::kStats:
        return Push(key_ == "samples" ? Frame::kStatsSamples : Frame::kSkip);
      case Frame::kStatsSamples:
        return Push(Frame::kSkip);
      case Frame::kResult:
        if (static_cast<int64_t>(series_.size()) >= max_series_) return Limit(LimitId::kHttpSeriesPerQuery);
        series_.emplace_back();
        vector_values_.emplace_back();
        element_ = {};
        element_keys_.clear();
        return Push(Frame::kElement);
      case Frame::kElement:
        if (key_ == "metric") return Once(element_.metric) && Push(Frame::kMetric);
        if (key_ == "value" || key_ == "values") return Fallback();  // the tree path names the error
        return Push(Frame::kSkip);
      default:
        return Fallback();  // an object where a pair, label value or warning belongs
    }
  }
  bool end_object() override {
    const Frame f = Pop();
    // Which of value and values counts depends on resultType, which may come last; both at once
    // is odd enough for the tree path.
    if (f == Frame::kElement && element_.value && element_.values) return Fallback();
    return true;
  }
  bool start_array(std::size_t) override {
    const Frame parent = Top();
    if (parent == Frame::kSkip || stack_.empty()) return stack_.empty() ? Fallback() : Push(Frame::kSkip);
    switch (parent) {
      case Frame::kRoot:
        if (key_ == "warnings") return Once(seen_warnings_) && Push(Frame::kWarnings);
        if (key_ == "infos") return Once(seen_infos_) && Push(Frame::kInfos);
        return Push(Frame::kSkip);
      case Frame::kData:
        if (key_ == "result") return Once(seen_result_) && Push(Frame::kResult);
        return Push(Frame::kSkip);
      case Frame::kElement:
        if (key_ == "value") { pair_ = {}; return Once(element_.value) && Push(Frame::kValuePair); }
        if (key_ == "values") return Once(element_.values) && Push(Frame::kValues);
        return Push(Frame::kSkip);
      case Frame::kValues:
        pair_ = {};
        return Push(Frame::kValuesPair);
      case Frame::kStats:
      case Frame::kStatsSamples:
        return Push(Frame::kSkip);
      default:
        return Fallback();
    }
  }
  bool end_array() override {
    const Frame f = Pop();
    if (f == Frame::kValuePair) {
      if (!PairDone()) return Fallback();
      vector_values_.back() = pair_.sample;
      return CountPoint();
    }
    if (f == Frame::kValuesPair) {
      if (!PairDone()) return Fallback();
      if (!CountPoint()) return false;
      series_.back().samples.push_back(pair_.sample);
    }
    return true;
  }
  bool key(string_t& k) override {
    if (!Tick()) return false;
    key_ = std::move(k);
    const Frame f = Top();
    // A key we read, repeated with a value of any type (an object, then an array), means whatever
    // a tree parser keeps of it (the last); leave that to one.
    if (std::set<std::string>* seen = ReadKeysOf(f); seen && !seen->insert(key_).second) return Fallback();
    if (f == Frame::kRoot && (key_ == "status" || key_ == "errorType" || key_ == "error")) return Once(Seen(key_));
    if (f == Frame::kData && key_ == "resultType") return Once(seen_result_type_);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return Fallback(); }

  bool fallback = false;
  std::optional<Status> limit;
  std::optional<Status> deadline_passed;
  std::string status, result_type;
  std::vector<std::string> warnings, infos;
  std::vector<Series> series_;
  std::vector<std::optional<Sample>> vector_values_;  // per element: its "value"
  bool seen_result_ = false;
  std::optional<int64_t> samples_read;

 private:
  enum class Frame { kNone, kRoot, kData, kResult, kElement, kMetric, kValuePair, kValues, kValuesPair, kWarnings,
                     kInfos, kStats, kStatsSamples, kSkip };
  enum class Atom { kNumber, kString, kOther };
  struct Pair {
    int items = 0;
    bool ok = true;
    Sample sample{0, 0};
  };
  struct Element {
    bool metric = false, value = false, values = false;
  };

  Frame Top() const { return stack_.empty() ? Frame::kNone : stack_.back(); }
  bool Push(Frame f) {
    stack_.push_back(f);
    return true;
  }
  Frame Pop() {
    const Frame f = Top();
    if (!stack_.empty()) stack_.pop_back();
    return f;
  }
  bool Fallback() {
    fallback = true;
    return false;
  }
  bool Limit(LimitId id) {
    limit = id == LimitId::kHttpSeriesPerQuery
                ? LimitExceeded(id, "an answer of more than " + std::to_string(max_series_) + " series")
                : LimitExceeded(id, "an answer of more than " + std::to_string(max_points_) + " points");
    return false;
  }
  // A key seen twice means whatever a tree parser keeps of it (the last); leave that to one.
  bool Once(bool& seen) {
    if (seen) return Fallback();
    seen = true;
    return true;
  }
  // The keys whose values this parser reads, per frame; nullptr where every key is skipped.
  std::set<std::string>* ReadKeysOf(Frame f) {
    static const std::set<std::string> kRootKeys = {"status", "errorType", "error", "data", "warnings", "infos"};
    static const std::set<std::string> kDataKeys = {"resultType", "result", "stats"};
    static const std::set<std::string> kElementKeys = {"metric", "value", "values"};
    switch (f) {
      case Frame::kRoot: return kRootKeys.count(key_) ? &root_keys_ : nullptr;
      case Frame::kData: return kDataKeys.count(key_) ? &data_keys_ : nullptr;
      case Frame::kElement: return kElementKeys.count(key_) ? &element_keys_ : nullptr;
      default: return nullptr;
    }
  }
  bool& Seen(const std::string& k) { return k == "status" ? seen_status_ : k == "errorType" ? seen_error_type_ : seen_error_; }
  bool CountPoint() {
    if (++points_ > max_points_) return Limit(LimitId::kHttpPointsPerQuery);
    return true;
  }
  bool PairDone() const { return pair_.ok && pair_.items == 2; }

  // The clock is read every few thousand events: often enough to stop within milliseconds.
  bool Tick() {
    if ((++events_ & 0xfff) != 0 || !deadline_ || std::chrono::steady_clock::now() < *deadline_) return true;
    deadline_passed = DeadlineExceededError("the run's deadline passed while a query answer was being read (" +
                                            std::to_string(series_.size()) + " series in)");
    return false;
  }

  bool Scalar(Atom atom, double number, const std::string* text) {
    if (!Tick()) return false;
    switch (Top()) {
      case Frame::kNone:
        return Fallback();
      case Frame::kRoot:
        if (key_ == "status") {
          if (atom != Atom::kString || *text != "success") return Fallback();  // errors: the tree path
          status = *text;
        } else if (key_ == "errorType" || key_ == "error") {
          return Fallback();  // a success carrying an error is odd enough for the tree path
        } else if (key_ == "data" || key_ == "warnings" || key_ == "infos") {
          return Fallback();
        }
        return true;
      case Frame::kData:
        if (key_ == "resultType") {
          if (atom != Atom::kString || (*text != "vector" && *text != "matrix")) return Fallback();
          result_type = *text;
        } else if (key_ == "result") {
          return Fallback();
        }
        return true;
      case Frame::kElement:
        if (key_ == "metric" || key_ == "value" || key_ == "values") return Fallback();
        return true;
      case Frame::kMetric:
        // Non-strings are dropped; one repeating a label replaces it, as the last value wins in a tree.
        if (atom == Atom::kString) {
          series_.back().labels[key_] = *text;
        } else {
          series_.back().labels.erase(key_);
        }
        return true;
      case Frame::kValuePair:
      case Frame::kValuesPair:
        ++pair_.items;
        if (pair_.items == 1) {
          if (atom != Atom::kNumber) pair_.ok = false;
          pair_.sample.t = number;
        } else if (pair_.items == 2) {
          if (atom == Atom::kString) {
            // A value that is not a number leaves the answer to the tree path, which names it.
            std::optional<double> value = ParseSampleValueText(*text);
            if (!value) return Fallback();
            pair_.sample.v = *value;
          } else {
            pair_.sample.v = atom == Atom::kNumber ? number : std::nan("");
          }
        }
        return true;
      case Frame::kWarnings:
        if (atom != Atom::kString) return Fallback();
        warnings.push_back(*text);
        return true;
      case Frame::kInfos:
        if (atom != Atom::kString) return Fallback();
        infos.push_back("info: " + *text);
        return true;
      case Frame::kStats:
        return true;
      case Frame::kStatsSamples:
        // The last of a repeated key wins, as in a tree.
        if (key_ == "totalQueryableSamples") {
          samples_read = atom == Atom::kNumber && number >= 0 && number < 9.2e18
                             ? std::optional<int64_t>(static_cast<int64_t>(number))
                             : std::nullopt;
        }
        return true;
      case Frame::kSkip:
        return true;
      default:
        return Fallback();  // a bare value inside result or values
    }
  }

  const int64_t max_series_, max_points_;
  const std::optional<std::chrono::steady_clock::time_point> deadline_;
  uint64_t events_ = 0;
  std::vector<Frame> stack_;
  std::string key_;
  Element element_;
  Pair pair_;
  int64_t points_ = 0;
  std::set<std::string> root_keys_, data_keys_, element_keys_;
  bool seen_data_ = false, seen_warnings_ = false, seen_infos_ = false, seen_result_type_ = false;
  bool seen_status_ = false, seen_error_type_ = false, seen_error_ = false;
};

}  // namespace

StreamedQueryAnswer ParseQueryAnswer(std::string_view body,
                                     std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::optional<StreamedQueryAnswer> scanned =
      ScanQueryAnswer(body, GetLimit(LimitId::kHttpSeriesPerQuery), GetLimit(LimitId::kHttpPointsPerQuery), deadline);
  return scanned ? std::move(*scanned) : ParseQueryAnswerByEvents(body, deadline);
}

StreamedQueryAnswer ParseQueryAnswerByEvents(std::string_view body,
                                             std::optional<std::chrono::steady_clock::time_point> deadline) {
  StreamedQueryAnswer answer;
  QueryAnswerHandler handler(GetLimit(LimitId::kHttpSeriesPerQuery), GetLimit(LimitId::kHttpPointsPerQuery), deadline);
  const bool parsed = nlohmann::json::sax_parse(body.begin(), body.end(), &handler, nlohmann::json::input_format_t::json,
                                                /*strict=*/true, /*ignore_comments=*/false);
  if (handler.deadline_passed) {
    answer.result = *handler.deadline_passed;
    return answer;
  }
  const bool success_shape = handler.status == "success" && !handler.result_type.empty();
  if (handler.limit && !handler.fallback && success_shape) {
    answer.result = *handler.limit;
    return answer;
  }
  if (!parsed || handler.fallback || !success_shape || !handler.seen_result_) {
    answer.fallback = true;
    return answer;
  }
  QueryResult result;
  result.result_type = handler.result_type;
  result.series = std::move(handler.series_);
  if (result.result_type == "vector") {
    for (size_t i = 0; i < result.series.size(); ++i) {
      if (!handler.vector_values_[i]) {  // a vector element without value: the tree path says so
        answer.fallback = true;
        return answer;
      }
      result.series[i].samples.assign(1, *handler.vector_values_[i]);
    }
  }
  answer.warnings = std::move(handler.warnings);
  for (auto& info : handler.infos) answer.warnings.push_back(std::move(info));
  answer.result = std::move(result);
  answer.samples_read = handler.samples_read;
  return answer;
}

std::optional<int64_t> QueryStatsSamples(const json& data) {
  if (!data.is_object()) return std::nullopt;
  const auto stats = data.find("stats");
  if (stats == data.end() || !stats->is_object()) return std::nullopt;
  const auto samples = stats->find("samples");
  if (samples == stats->end() || !samples->is_object()) return std::nullopt;
  const auto total = samples->find("totalQueryableSamples");
  if (total == samples->end() || !total->is_number()) return std::nullopt;
  const double n = total->get<double>();
  if (!(n >= 0 && n < 9.2e18)) return std::nullopt;
  return static_cast<int64_t>(n);
}

StatusOr<int64_t> SeriesCountOf(const json& data) {
  if (!data.is_array()) return ParseError("series result is not an array");
  if (static_cast<int64_t>(data.size()) > GetLimit(LimitId::kHttpSeriesPerQuery)) {
    return LimitExceeded(LimitId::kHttpSeriesPerQuery, "a series answer of " + std::to_string(data.size()) + " series");
  }
  return static_cast<int64_t>(data.size());
}

StatusOr<std::vector<Labels>> DecodeSeriesData(const json& data) {
  RETURN_IF_ERROR(SeriesCountOf(data).status());
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

namespace {

// "2.42.0", "2.42.0+ds" (a distribution's build), "2.42.0-rc.0"; nullopt for anything else.
std::optional<PrometheusBuildInfo> ParseReleaseVersion(const std::string& text) {
  PrometheusBuildInfo info;
  info.version = text;
  int* parts[] = {&info.major, &info.minor, &info.patch};
  size_t pos = 0;
  for (size_t k = 0; k < 3; ++k) {
    if (k > 0) {
      if (pos >= text.size() || text[pos] != '.') return std::nullopt;
      ++pos;
    }
    const size_t begin = pos;
    while (pos < text.size() && pos - begin < 5 && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == begin || (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])))) return std::nullopt;
    *parts[k] = std::atoi(text.substr(begin, pos - begin).c_str());
  }
  if (pos == text.size()) return info;
  if (text[pos] != '-' && text[pos] != '+') return std::nullopt;
  info.prerelease = text[pos] == '-';
  for (size_t i = pos + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+' && c != '~') return std::nullopt;
  }
  return pos + 1 < text.size() ? std::optional<PrometheusBuildInfo>(info) : std::nullopt;
}

}  // namespace

StatusOr<PrometheusBuildInfo> ParsePrometheusBuildInfo(std::string_view body) {
  constexpr size_t kMaxBuildInfoBytes = 4096;
  constexpr size_t kMaxFieldBytes = 256;
  if (body.size() > kMaxBuildInfoBytes)
    return FailedPreconditionError("its build information is " + std::to_string(body.size()) + " bytes, not Prometheus' few hundred");
  ApiEnvelope envelope = ParseApiEnvelope(body);
  if (!envelope.present) return ParseError("no API envelope in the build information ('" + QuoteAnswer(body) + "')");
  if (envelope.status != "success")
    return FailedPreconditionError("its build information is an error (" + envelope.error_type + ": " + QuoteAnswer(envelope.error) + ")");
  static const std::set<std::string> kPrometheusFields{"version", "revision", "branch", "buildUser", "buildDate", "goVersion"};
  if (!envelope.data.is_object()) return FailedPreconditionError("its build information holds no object");
  for (const auto& [key, value] : envelope.data.items()) {
    if (!kPrometheusFields.count(key))
      return FailedPreconditionError("its build information has a field Prometheus does not send ('" + QuoteAnswer(key) + "': '" +
                                     QuoteAnswer(value.dump()) + "')");
    if (!value.is_string() || value.get_ref<const std::string&>().size() > kMaxFieldBytes)
      return FailedPreconditionError("its build information's " + key + " is not a short string");
  }
  for (const std::string& field : kPrometheusFields) {
    if (!envelope.data.contains(field))
      return FailedPreconditionError("its build information lacks Prometheus' field " + field + " ('" +
                                     QuoteAnswer(envelope.data.dump()) + "')");
  }
  const std::string& version = envelope.data["version"].get_ref<const std::string&>();
  std::optional<PrometheusBuildInfo> info = ParseReleaseVersion(version);
  if (!info) return FailedPreconditionError("its build information's version '" + QuoteAnswer(version) + "' is not a release number");
  return *info;
}

bool PrometheusVerifiedForComposition(const PrometheusBuildInfo& info) {
  return info.major == 2 && info.minor == 42 && !info.prerelease;
}

}  // namespace diagnose
