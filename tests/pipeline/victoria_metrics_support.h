// A VictoriaMetrics (Debian's victoria-metrics) on a loopback port for the tests that need a fleet
// store: one per test binary run, its data dir in the build tree named by pid (a killed run's dir
// is removed by the next), the server stopped with its owner.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <filesystem>

#include "engine/core/subprocess.h"

namespace diagnose::e2e {

// A free loopback TCP port, or -1.
int FreePort();

class VictoriaMetrics {
 public:
  // Null with `why` set when it is not installed or does not start.
  static std::unique_ptr<VictoriaMetrics> Start(std::string* why);
  ~VictoriaMetrics();
  const std::string& url() const { return url_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  VictoriaMetrics() = default;
  std::filesystem::path dir_;
  std::string url_;
  std::optional<ChildProcess> child_;
};

}  // namespace diagnose::e2e
