// A Prometheus scrape target (`instance` label) and the host in it.
#pragma once

#include <string>

namespace diagnose {

// "chi2822:9400" -> "chi2822", "[fe80::1]:9100" -> "fe80::1", "chi2822" -> "chi2822"; a bare IPv6
// address (more than one colon, no brackets) stays as it is.
inline std::string InstanceHost(const std::string& instance) {
  if (!instance.empty() && instance.front() == '[') {
    const size_t close = instance.find(']');
    return close == std::string::npos ? instance : instance.substr(1, close - 1);
  }
  const size_t colon = instance.rfind(':');
  if (colon == std::string::npos || instance.find(':') != colon) return instance;
  return instance.substr(0, colon);
}

}  // namespace diagnose
