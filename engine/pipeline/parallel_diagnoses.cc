#include "engine/pipeline/parallel_diagnoses.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/core/text.h"

namespace diagnose {

namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<int64_t> ParseBytes(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// cgroup v2: what the process's memory cgroup may still take (memory.max is "max" when unlimited).
std::optional<int64_t> CgroupHeadroomBytes() {
  const std::string self = ReadSmallFile("/proc/self/cgroup");   // "0::/path" on a v2-only system
  if (self.rfind("0::", 0) != 0) return std::nullopt;
  std::string path = self.substr(3);
  while (!path.empty() && path.back() == '\n') path.pop_back();
  if (path.find("..") != std::string::npos) return std::nullopt;
  const std::string dir = "/sys/fs/cgroup" + path;
  const auto max = ParseBytes(ReadSmallFile(dir + "/memory.max"));
  const auto current = ParseBytes(ReadSmallFile(dir + "/memory.current"));
  if (!max || !current) return std::nullopt;
  return std::max<int64_t>(0, *max - *current);
}

// The cores this process may run on (a Slurm step or taskset pins fewer than the machine has).
int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

}  // namespace

std::optional<int64_t> MemAvailableBytes(const std::string& meminfo) {
  std::istringstream lines(meminfo);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    int64_t kib = -1;
    std::string unit;
    if (!(fields >> kib >> unit) || kib < 0 || unit != "kB" || kib > (INT64_MAX >> 10)) return std::nullopt;
    return kib << 10;
  }
  return std::nullopt;
}

ParallelismBound BoundParallelDiagnoses(int cores, std::optional<int64_t> available_bytes,
                                        int64_t per_diagnosis_bytes) {
  ParallelismBound bound;
  bound.cores = std::max(1, cores);
  bound.available_bytes = available_bytes;
  bound.parallel = bound.cores;
  std::string memory = "available memory unknown";
  if (available_bytes && per_diagnosis_bytes > 0) {
    const int64_t by_memory = *available_bytes / 2 / per_diagnosis_bytes;
    bound.parallel = static_cast<int>(std::clamp<int64_t>(by_memory, 1, bound.cores));
    memory = FixedDecimal(static_cast<double>(*available_bytes) / (1 << 30), 1) + " GiB available";
  }
  bound.reason = std::to_string(bound.cores) + " core(s), " + memory + ", " +
                 std::to_string(per_diagnosis_bytes >> 20) + " MiB per diagnosis: " +
                 std::to_string(bound.parallel) + " at a time";
  return bound;
}

ParallelismBound DefaultParallelDiagnoses(int64_t per_diagnosis_bytes) {
  std::optional<int64_t> available = MemAvailableBytes(ReadSmallFile("/proc/meminfo"));
  if (const auto headroom = CgroupHeadroomBytes(); headroom && (!available || *headroom < *available))
    available = headroom;
  return BoundParallelDiagnoses(UsableCores(), available,
                                per_diagnosis_bytes);
}

}  // namespace diagnose
