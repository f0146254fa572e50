#include "engine/core/untrusted_json.h"

#include <vector>

namespace diagnose {
namespace {

using nlohmann::json;

// Builds the tree as json::parse does (nlohmann's own DOM builder), counting as it goes: the clock
// is read every few thousand events, each open array's length on every element.
class BoundedDomBuilder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  BoundedDomBuilder(json& result, const JsonParseBounds& bounds)
      : dom_(result, /*allow_exceptions=*/false),
        bounds_(bounds),
        max_elements_(bounds.array_limit ? GetLimit(*bounds.array_limit) : -1) {}

  bool null() { return Element() && dom_.null(); }
  bool boolean(bool v) { return Element() && dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return Element() && dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return Element() && dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) {
    // As ParseUntrustedJson: a float beyond int64's range reads as null.
    if (!(std::fabs(v) < 9.2e18)) return Element() && dom_.null();
    return Element() && dom_.number_float(v, s);
  }
  bool string(string_t& v) { return Element() && dom_.string(v); }
  bool binary(binary_t& v) { return Element() && dom_.binary(v); }
  bool start_object(std::size_t n) {
    if (!Element() || !Deeper()) return false;
    open_.push_back(-1);   // an object: its members are not counted
    return dom_.start_object(n);
  }
  bool key(string_t& k) { return Tick() && dom_.key(k); }
  bool end_object() {
    open_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    if (!Element() || !Deeper()) return false;
    open_.push_back(0);
    return dom_.start_array(n);
  }
  bool end_array() {
    open_.pop_back();
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    syntax_error_ = true;
    return dom_.parse_error(position, token, e);
  }

  std::optional<Status> stopped;
  bool syntax_error_ = false;

 private:
  bool Tick() {
    if ((++events_ & 0xfff) != 0 || !bounds_.deadline) return true;
    if (std::chrono::steady_clock::now() < *bounds_.deadline) return true;
    stopped = DeadlineExceededError("the run's deadline passed while " + bounds_.what + " was being read (" +
                                    std::to_string(events_) + " values in)");
    return false;
  }
  // One more open container: refused past kMaxJsonDepth, as dump(), copies and comparisons of a
  // tree recurse per level (200,000 nested arrays overflowed the stack in AsText's dump()).
  bool Deeper() {
    if (open_.size() < kMaxJsonDepth) return true;
    stopped = ParseError(bounds_.what + " nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return false;
  }
  // One more value where it stands: in an array, one more element.
  bool Element() {
    if (!Tick()) return false;
    if (open_.empty() || open_.back() < 0 || max_elements_ < 0) return true;
    if (++open_.back() <= max_elements_) return true;
    stopped = LimitExceeded(*bounds_.array_limit, bounds_.what + ", an array of more than " +
                                                      std::to_string(max_elements_) + " elements,");
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const JsonParseBounds& bounds_;
  const int64_t max_elements_;
  std::vector<int64_t> open_;   // per open container: elements so far (arrays) or -1 (objects)
  uint64_t events_ = 0;
};

}  // namespace

nlohmann::json ParseUntrustedJson(std::string_view text) {
  StatusOr<json> parsed = ParseUntrustedJsonBounded(text, JsonParseBounds{});
  return parsed.ok() ? std::move(parsed).value() : json(json::value_t::discarded);
}

StatusOr<nlohmann::json> ParseUntrustedJsonBounded(std::string_view text, const JsonParseBounds& bounds) {
  json result;
  BoundedDomBuilder builder(result, bounds);
  const bool parsed = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json,
                                      /*strict=*/true, /*ignore_comments=*/false);
  if (builder.stopped) return *builder.stopped;
  if (!parsed || builder.syntax_error_) return json(json::value_t::discarded);
  return result;
}

}  // namespace diagnose
