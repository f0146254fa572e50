#include "engine/core/iso_time.h"

#include <cmath>
#include <ctime>
#include <regex>

namespace diagnose {

std::string IsoUtc(double epoch_seconds) {
  if (!std::isfinite(epoch_seconds) || epoch_seconds < 0 || epoch_seconds > 253402300799.0) return "";
  std::time_t t = static_cast<std::time_t>(std::floor(epoch_seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

StatusOr<int64_t> ParseIsoTime(const std::string& text) {
  static const std::regex iso(
      R"(^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$)");
  // Longer text is no date/time, and std::regex recurses per character (a 100 KB fraction overflowed
  // the stack).
  if (text.size() > 64) return InvalidArgumentError("not an ISO-8601 date/time (longer than 64 characters)");
  std::smatch m;
  if (!std::regex_match(text, m, iso)) return InvalidArgumentError("not an ISO-8601 date/time");
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = m[4].matched ? std::stoi(m[4]) : 0;
  tm.tm_min = m[5].matched ? std::stoi(m[5]) : 0;
  tm.tm_sec = m[6].matched ? std::stoi(m[6]) : 0;
  if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
    return InvalidArgumentError("not a valid date/time");
  int64_t epoch = static_cast<int64_t>(::timegm(&tm));
  if (m[7].matched && m[7].str() != "Z") {
    const std::string offset = m[7].str();
    const int hours = std::stoi(offset.substr(1, 2));
    const int minutes = std::stoi(offset.substr(offset.size() - 2));
    const int64_t east = (hours * 3600 + minutes * 60) * (offset[0] == '-' ? -1 : 1);
    epoch -= east;
  }
  return epoch;
}

}  // namespace diagnose
