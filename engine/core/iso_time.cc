#include "engine/core/iso_time.h"

#include <cmath>
#include <ctime>

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

}  // namespace diagnose
