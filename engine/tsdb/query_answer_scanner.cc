#include "engine/tsdb/query_answer_scanner.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "engine/core/utf8.h"

namespace diagnose {
namespace {

// Numbers whose magnitude reaches this read as null in the general reader (a float beyond int64):
// the scanner leaves them to it.
constexpr double kNumberMagnitudeLimit = 9.2e18;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t code_point, std::string* out) {
  if (code_point < 0x80) {
    out->push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

// The end of the JSON number grammar's match at text[0..], or nullptr when none starts there.
// `integral`: no fraction and no exponent.
const char* NumberEnd(const char* p, const char* end, bool* integral) {
  if (p < end && *p == '-') ++p;
  if (p >= end) return nullptr;
  if (*p == '0') {
    ++p;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && IsDigit(*p)) ++p;
  } else {
    return nullptr;
  }
  *integral = true;
  if (p < end && *p == '.') {
    *integral = false;
    if (++p >= end || !IsDigit(*p)) return nullptr;
    while (p < end && IsDigit(*p)) ++p;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    *integral = false;
    if (++p < end && (*p == '+' || *p == '-')) ++p;
    if (p >= end || !IsDigit(*p)) return nullptr;
    while (p < end && IsDigit(*p)) ++p;
  }
  return p;
}

class Scanner {
 public:
  Scanner(std::string_view body, int64_t max_series, int64_t max_points,
          std::optional<std::chrono::steady_clock::time_point> deadline)
      : body_(body), p_(body.data()), end_(body.data() + body.size()), max_series_(max_series),
        max_points_(max_points), deadline_(deadline) {}

  std::optional<StreamedQueryAnswer> Run() {
    if (!Root()) return std::nullopt;
    SkipSpace();
    if (p_ != end_ || !seen_status_ || !seen_result_ || result_type_.empty()) return std::nullopt;
    if (result_type_ == "vector") {
      for (size_t i = 0; i < series_.size(); ++i) {
        if (!vector_values_[i]) return std::nullopt;
        series_[i].samples.assign(1, *vector_values_[i]);
      }
    }
    StreamedQueryAnswer answer;
    answer.warnings = std::move(warnings_);
    for (auto& info : infos_) answer.warnings.push_back(std::move(info));
    QueryResult result;
    result.result_type = std::move(result_type_);
    result.series = std::move(series_);
    answer.result = std::move(result);
    answer.samples_read = samples_read_;
    return answer;
  }

 private:
  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (p_ >= end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool Peek(char c) {
    SkipSpace();
    return p_ < end_ && *p_ == c;
  }

  // A string at p_ (after its opening quote is consumed here), validated as the general reader
  // validates it (no raw control characters, well-formed UTF-8, escapes including surrogate
  // pairs). `out` views the body when there is no escape, else `scratch`.
  bool String(std::string_view* out, std::string* scratch) {
    if (!Consume('"')) return false;
    const char* begin = p_;
    bool escaped = false;
    while (true) {
      if (p_ >= end_) return false;
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') break;
      if (c < 0x20) return false;
      if (c == '\\') {
        if (!escaped) {
          scratch->assign(begin, p_);
          escaped = true;
        }
        if (!Escape(scratch)) return false;
        continue;
      }
      size_t length = 1;
      if (c >= 0x80 && (length = Utf8SequenceLength(body_, static_cast<size_t>(p_ - body_.data()))) == 0) return false;
      if (escaped) scratch->append(p_, length);
      p_ += length;
    }
    *out = escaped ? std::string_view(*scratch) : std::string_view(begin, static_cast<size_t>(p_ - begin));
    ++p_;
    return true;
  }
  bool Escape(std::string* out) {
    if (end_ - p_ < 2) return false;
    const char c = p_[1];
    p_ += 2;
    switch (c) {
      case '"': out->push_back('"'); return true;
      case '\\': out->push_back('\\'); return true;
      case '/': out->push_back('/'); return true;
      case 'b': out->push_back('\b'); return true;
      case 'f': out->push_back('\f'); return true;
      case 'n': out->push_back('\n'); return true;
      case 'r': out->push_back('\r'); return true;
      case 't': out->push_back('\t'); return true;
      case 'u': break;
      default: return false;
    }
    std::optional<uint32_t> unit = HexUnit();
    if (!unit || (*unit >= 0xDC00 && *unit <= 0xDFFF)) return false;
    uint32_t code_point = *unit;
    if (*unit >= 0xD800 && *unit <= 0xDBFF) {
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      const std::optional<uint32_t> low = HexUnit();
      if (!low || *low < 0xDC00 || *low > 0xDFFF) return false;
      code_point = 0x10000 + ((*unit - 0xD800) << 10) + (*low - 0xDC00);
    }
    AppendUtf8(code_point, out);
    return true;
  }
  std::optional<uint32_t> HexUnit() {
    if (end_ - p_ < 4) return std::nullopt;
    uint32_t unit = 0;
    for (int i = 0; i < 4; ++i) {
      const int digit = HexDigit(p_[i]);
      if (digit < 0) return std::nullopt;
      unit = unit * 16 + static_cast<uint32_t>(digit);
    }
    p_ += 4;
    return unit;
  }

  // A JSON number read as the general reader reads it: an integer as int64 then double (so "-0" is
  // +0), anything else correctly rounded; nullopt beyond kNumberMagnitudeLimit.
  bool Number(double* out) {
    SkipSpace();
    bool integral = false;
    const char* end = NumberEnd(p_, end_, &integral);
    if (end == nullptr) return false;
    if (integral) {
      int64_t integer = 0;
      const auto [ptr, ec] = std::from_chars(p_, end, integer);
      if (ec != std::errc() || ptr != end) return false;
      *out = static_cast<double>(integer);
    } else {
      const auto [ptr, ec] = std::from_chars(p_, end, *out);
      if (ec != std::errc() || ptr != end) return false;
    }
    p_ = end;
    return std::fabs(*out) < kNumberMagnitudeLimit;
  }

  // Any JSON value, validated and dropped. Iterative, as deep as kMaxScannedDepth.
  bool Skip() {
    char open[kMaxScannedDepth];   // '{' or '[' per level
    int depth = 0;
    std::string_view text;
    while (true) {
      SkipSpace();
      if (p_ >= end_) return false;
      const char c = *p_;
      if (c == '{' || c == '[') {
        if (depth == kMaxScannedDepth) return false;
        open[depth++] = c;
        ++p_;
        if (Consume(c == '{' ? '}' : ']')) {
          --depth;
        } else if (c == '{' && !(String(&text, &scratch_) && Consume(':'))) {
          return false;
        } else {
          continue;
        }
      } else if (c == '"') {
        if (!String(&text, &scratch_)) return false;
      } else if (c == 't' || c == 'f' || c == 'n') {
        if (!Literal()) return false;
      } else {
        bool integral = false;
        const char* end = NumberEnd(p_, end_, &integral);
        if (end == nullptr) return false;
        p_ = end;
      }
      // After a complete value: close what it completes, or move to the next item.
      while (true) {
        if (depth == 0) return true;
        const char close = open[depth - 1] == '{' ? '}' : ']';
        if (Consume(close)) {
          --depth;
          continue;
        }
        if (!Consume(',')) return false;
        if (open[depth - 1] == '{' && !(String(&text, &scratch_) && Consume(':'))) return false;
        break;
      }
    }
  }
  bool Literal() {
    for (std::string_view word : {"true", "false", "null"}) {
      if (static_cast<size_t>(end_ - p_) >= word.size() && std::string_view(p_, word.size()) == word) {
        p_ += word.size();
        return true;
      }
    }
    return false;
  }

  // `{ "key": value, ... }` with `member(key)` reading each value; an empty object has none.
  template <typename Member>
  bool Object(Member&& member) {
    if (!Consume('{')) return false;
    if (Consume('}')) return true;
    do {
      std::string_view key;
      if (!String(&key, &key_scratch_) || !Consume(':')) return false;
      // The key may view key_scratch_, which a nested object's keys reuse: copied where escaped.
      const std::string owned = key.data() == key_scratch_.data() ? key_scratch_ : std::string();
      if (!member(owned.empty() ? key : std::string_view(owned))) return false;
    } while (Consume(','));
    return Consume('}');
  }
  template <typename Item>
  bool Array(Item&& item) {
    if (!Consume('[')) return false;
    if (Consume(']')) return true;
    do {
      if (!item()) return false;
    } while (Consume(','));
    return Consume(']');
  }
  static bool Once(bool& seen) {
    if (seen) return false;
    seen = true;
    return true;
  }

  bool Root() {
    SkipSpace();
    if (p_ >= end_ || *p_ != '{') return false;
    bool data = false, warnings = false, infos = false;
    return Object([&](std::string_view key) {
      if (key == "status") {
        std::string_view status;
        return Once(seen_status_) && String(&status, &scratch_) && status == "success";
      }
      if (key == "data") return Once(data) && Data();
      if (key == "warnings") return Once(warnings) && Strings(&warnings_, "");
      if (key == "infos") return Once(infos) && Strings(&infos_, "info: ");
      if (key == "errorType" || key == "error") return false;   // a success carrying an error
      return Skip();
    });
  }
  bool Strings(std::vector<std::string>* out, std::string_view prefix) {
    return Array([&] {
      std::string_view text;
      if (!String(&text, &scratch_)) return false;
      out->push_back(std::string(prefix).append(text));
      return true;
    });
  }
  bool Data() {
    bool result_type = false, stats = false;
    return Object([&](std::string_view key) {
      if (key == "resultType") {
        std::string_view type;
        if (!Once(result_type) || !String(&type, &scratch_) || (type != "vector" && type != "matrix")) return false;
        result_type_ = type;
        return true;
      }
      if (key == "result") return Once(seen_result_) && Peek('[') && Array([&] { return Element(); });
      if (key == "stats") return Once(stats) && (Peek('{') ? Stats() : Skip());
      return Skip();
    });
  }
  bool Stats() {
    return Object([&](std::string_view key) {
      if (key != "samples" || !Peek('{')) return Skip();
      return Object([&](std::string_view sample_key) {
        if (sample_key != "totalQueryableSamples") return Skip();
        double total = 0;
        if (!Number(&total)) return false;
        samples_read_ = total >= 0 ? std::optional<int64_t>(static_cast<int64_t>(total)) : std::nullopt;
        return true;
      });
    });
  }

  bool Element() {
    if (!Peek('{') || static_cast<int64_t>(series_.size()) >= max_series_) return false;
    series_.emplace_back();
    vector_values_.emplace_back();
    bool metric = false, value = false, values = false;
    const bool read = Object([&](std::string_view key) {
      if (key == "metric") return Once(metric) && Peek('{') && Metric(&series_.back().labels);
      if (key == "value") {
        Sample sample;
        if (!Once(value) || !Pair(&sample)) return false;
        vector_values_.back() = sample;
        return true;
      }
      if (key == "values") {
        return Once(values) && Array([&] {
          Sample sample;
          if (!Pair(&sample)) return false;
          series_.back().samples.push_back(sample);
          return true;
        });
      }
      return Skip();
    });
    return read && !(value && values);
  }
  bool Metric(Labels* labels) {
    return Object([&](std::string_view name) {
      std::string_view value;
      if (!String(&value, &scratch_)) return false;
      // Prometheus sends labels sorted: the hint makes each insertion constant time.
      labels->insert_or_assign(labels->end(), std::string(name), std::string(value));
      return true;
    });
  }
  // [time, "value"] or [time, value].
  bool Pair(Sample* sample) {
    if (++points_ > max_points_ || !InTime() || !Consume('[') || !Number(&sample->t) || !Consume(',')) return false;
    if (Peek('"')) {
      std::string_view text;
      if (!String(&text, &scratch_)) return false;
      // A value that is not a number: the general reader names it.
      std::optional<double> value = ParseSampleValueText(text);
      if (!value) return false;
      sample->v = *value;
    } else if (!Number(&sample->v)) {
      return false;
    }
    return Consume(']');
  }
  // The clock is read every few thousand points: often enough to stop within milliseconds.
  bool InTime() { return (points_ & 0xfff) != 0 || !deadline_ || std::chrono::steady_clock::now() < *deadline_; }

  const std::string_view body_;
  const char* p_;
  const char* const end_;
  const int64_t max_series_, max_points_;
  const std::optional<std::chrono::steady_clock::time_point> deadline_;
  int64_t points_ = 0;
  std::string scratch_, key_scratch_;
  bool seen_status_ = false, seen_result_ = false;
  std::string result_type_;
  std::vector<std::string> warnings_, infos_;
  std::vector<Series> series_;
  std::vector<std::optional<Sample>> vector_values_;
  std::optional<int64_t> samples_read_;
};

}  // namespace

std::optional<StreamedQueryAnswer> ScanQueryAnswer(std::string_view body, int64_t max_series, int64_t max_points,
                                                   std::optional<std::chrono::steady_clock::time_point> deadline) {
  return Scanner(body, max_series, max_points, deadline).Run();
}

}  // namespace diagnose
