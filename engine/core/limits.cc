#include "engine/core/limits.h"

#include <array>
#include <atomic>
#include <charconv>

namespace diagnose {
namespace {

constexpr int64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
constexpr size_t kLimitCount = 9;

struct LimitValues {
  LimitValues() {
    for (const auto& info : AllLimits()) values[static_cast<size_t>(info.id)] = info.default_value;
  }
  std::array<std::atomic<int64_t>, kLimitCount> values;
};

std::array<std::atomic<int64_t>, kLimitCount>& Values() {
  static LimitValues limits;
  return limits.values;
}

}  // namespace

const std::vector<LimitInfo>& AllLimits() {
  static const std::vector<LimitInfo> kLimits = {
      {LimitId::kHttpResponseBytes, "http.response_bytes", 256 * kMiB, true, "the body of one HTTP answer"},
      {LimitId::kHttpSeriesPerQuery, "http.series_per_query", 200'000, false,
       "series (or label values) in one query answer"},
      {LimitId::kHttpPointsPerQuery, "http.points_per_query", 20'000'000, false,
       "samples over all series of one query answer"},
      {LimitId::kYamlFileBytes, "yaml.file_bytes", 8 * kMiB, true, "one YAML file"},
      {LimitId::kYamlDepth, "yaml.depth", 64, false, "nesting depth of one YAML document"},
      {LimitId::kYamlNodes, "yaml.nodes", 1'000'000, false, "YAML nodes with aliases expanded"},
      {LimitId::kLogLineBytes, "log.line_bytes", 64 * kKiB, true, "one log line (the rest is skipped)"},
      {LimitId::kLogFiles, "log.files", 20'000, false, "Ray worker logs read for one job"},
      // The exporter caps a file at 1,000,000 events, about 260 MB of JSON: four times that is no
      // real trace, and each file being parsed is held whole.
      {LimitId::kProfileTraceBytes, "profile.trace_bytes", 1 * kGiB, true,
       "one profile trace file, decompressed"},
  };
  return kLimits;
}

const LimitInfo& InfoOf(LimitId id) { return AllLimits()[static_cast<size_t>(id)]; }

int64_t GetLimit(LimitId id) { return Values()[static_cast<size_t>(id)].load(std::memory_order_relaxed); }

std::string FormatLimitValue(LimitId id, int64_t value) {
  if (InfoOf(id).bytes) {
    if (value % kGiB == 0) return std::to_string(value / kGiB) + " GiB";
    if (value % kMiB == 0) return std::to_string(value / kMiB) + " MiB";
    if (value % kKiB == 0) return std::to_string(value / kKiB) + " KiB";
    return std::to_string(value) + " bytes";
  }
  return std::to_string(value);
}

Status SetLimitFromText(std::string_view assignment) {
  const size_t eq = assignment.find('=');
  std::string known;
  for (const auto& info : AllLimits()) known += std::string(known.empty() ? "" : ", ") + info.name;
  if (eq == std::string_view::npos) {
    return InvalidArgumentError("--limit takes NAME=VALUE, got '" + std::string(assignment) + "' (names: " + known + ")");
  }
  const std::string_view name = assignment.substr(0, eq);
  std::string_view text = assignment.substr(eq + 1);
  const LimitInfo* found = nullptr;
  for (const auto& info : AllLimits())
    if (name == info.name) found = &info;
  if (found == nullptr) return InvalidArgumentError("unknown limit '" + std::string(name) + "' (names: " + known + ")");
  int64_t scale = 1;
  for (auto [suffix, factor] : {std::pair{"KiB", kKiB}, {"MiB", kMiB}, {"GiB", kGiB}}) {
    const std::string_view s = suffix;
    if (found->bytes && text.size() > s.size() && text.substr(text.size() - s.size()) == s) {
      text.remove_suffix(s.size());
      scale = factor;
    }
  }
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0 || value > INT64_MAX / scale) {
    return InvalidArgumentError("--limit " + std::string(found->name) + ": '" + std::string(assignment.substr(eq + 1)) +
                                "' is not a positive integer" + (found->bytes ? " (optionally with KiB, MiB or GiB)" : ""));
  }
  Values()[static_cast<size_t>(found->id)] = value * scale;
  return Status::Ok();
}

Status LimitExceeded(LimitId id, const std::string& what) {
  const LimitInfo& info = InfoOf(id);
  return ResourceExhaustedError(what + " exceeds the limit " + info.name + " (" + FormatLimitValue(id, GetLimit(id)) +
                                ", " + info.what + "); raise it with --limit " + info.name + "=N");
}

ScopedLimit::ScopedLimit(LimitId id, int64_t value) : id_(id), previous_(GetLimit(id)) {
  Values()[static_cast<size_t>(id)] = value;
}

ScopedLimit::~ScopedLimit() { Values()[static_cast<size_t>(id_)] = previous_; }

}  // namespace diagnose
