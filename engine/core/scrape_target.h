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

// An IP address rather than a name: four dot-separated decimal parts (10.0.3.7), or IPv6 (any
// colon; InstanceHost has already taken off a bracketed form's port).
inline bool IsAddress(const std::string& host) {
  if (host.find(':') != std::string::npos) return true;
  int parts = 0, digits = 0;
  for (char c : host) {
    if (c == '.') {
      if (digits == 0) return false;
      ++parts, digits = 0;
    } else if (c >= '0' && c <= '9') {
      if (++digits > 3) return false;
    } else {
      return false;
    }
  }
  return digits > 0 && parts == 3;
}

}  // namespace diagnose
