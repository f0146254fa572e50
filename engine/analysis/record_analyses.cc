#include "engine/analysis/record_analyses.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <vector>

#include "engine/analysis/robust_statistics.h"
#include "engine/core/untrusted_json.h"

namespace diagnose::analysis {
namespace {

std::string Text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) {
    double d = v.get<double>();
    if (d == std::floor(d) && std::fabs(d) < 9e15) return std::to_string(static_cast<int64_t>(d));
  }
  return v.dump();
}

std::string ArgString(const Json& args, const char* name, const std::string& fallback) {
  return args.contains(name) && args[name].is_string() ? args[name].get<std::string>() : fallback;
}

double ArgNumber(const Json& args, const char* name, double fallback) {
  return args.contains(name) && args[name].is_number() ? args[name].get<double>() : fallback;
}

// A number, or a string holding one (PASSTHROUGH_ARGS values are strings); nullopt otherwise.
std::optional<double> PositiveNumber(const Json& v) {
  double d = 0;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    const std::string& s = v.get<std::string>();
    char* end = nullptr;
    d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (!(d > 0) || !std::isfinite(d)) return std::nullopt;
  return d;
}


}  // namespace

StatusOr<Json> SelectRecords(const AnalysisView& in) {
  const std::string field = ArgString(in.args, "field", "");
  const std::string equals = ArgString(in.args, "equals", "");
  const std::string host_field = ArgString(in.args, "host_field", "host");
  if (field.empty()) return InvalidArgumentError("select_records: arg 'field' is required");
  if (!in.input.is_array()) return InvalidArgumentError("select_records: input must be a list of records");
  Json items = Json::array();
  std::map<std::string, int64_t> per_host;
  for (const auto& record : in.input) {
    if (!record.is_object()) continue;
    auto it = record.find(field);
    if (it == record.end() || Text(*it) != equals) continue;
    items.push_back(record);
    auto host = record.find(host_field);
    if (host != record.end() && host->is_string() && !host->get<std::string>().empty()) {
      // A record may stand for several matching lines (ClassMatch.count).
      const int64_t n = record.contains("count") ? ClampedInteger(record["count"], 1, 1L << 40).value_or(1) : 1;
      per_host[host->get<std::string>()] += std::max<int64_t>(n, 1);
    }
  }
  Json hosts = Json::array();
  Json values = Json::object();
  for (const auto& [h, n] : per_host) {
    hosts.push_back(h);
    values[h] = n;
  }
  return Json{{"items", items}, {"count", items.size()}, {"hosts", hosts}, {"values", values}};
}

// The multiples of `period` in [first, last]. A log whose steps jump (one line saying step 10^12)
// would make that range hold more checkpoints than memory: past a few per recorded step, only the
// periods that hold a recorded step are kept (the gaps hold no record to say anything about).
std::set<int64_t> CheckpointMultiples(const std::map<int64_t, double>& seconds, int64_t first, int64_t last,
                                      int64_t period) {
  std::set<int64_t> multiples;
  const int64_t first_multiple = first >= 0 ? (first + period - 1) / period * period : first / period * period;
  const int64_t span = last >= first_multiple ? (last - first_multiple) / period + 1 : 0;
  if (span <= 4 * static_cast<int64_t>(seconds.size()) + 1024) {
    for (int64_t k = 0; k < span; ++k) multiples.insert(first_multiple + k * period);
    return multiples;
  }
  for (const auto& entry : seconds) {
    const int64_t s = entry.first;
    const int64_t below = s >= 0 ? s / period * period : -((-s + period - 1) / period) * period;
    if (below >= first_multiple) multiples.insert(below);
  }
  return multiples;
}

StatusOr<Json> CheckpointSteps(const AnalysisView& in) {
  if (!in.input.is_array() || in.input.size() < 2 || in.input.size() > 3)
    return InvalidArgumentError("checkpoint_steps: input must be [steps, period] or [steps, period, heartbeat_timeout]");
  const Json& steps = in.input[0];
  const Json& period_value = in.input[1];
  const double timeout = in.input.size() > 2 ? PositiveNumber(in.input[2]).value_or(0) : 0;   // 0 = unknown
  if (!period_value.is_number() || period_value.get<double>() <= 0)
    return FailedPreconditionError("checkpoint_steps: no checkpoint period (checkpointing off or unknown)");
  if (!steps.is_array()) return FailedPreconditionError("checkpoint_steps: no step records");
  // Steps and periods beyond 2^53 cannot come from a real run; clamping them keeps every sum below
  // overflow (a log line with `completed step: 1e30` is untrusted text).
  constexpr int64_t kMaxStep = int64_t{1} << 53;
  const int64_t period = ClampedInteger(period_value, 1, kMaxStep).value_or(1);
  const std::string x = ArgString(in.args, "x", "step");
  const std::string y = ArgString(in.args, "y", "seconds");
  const auto offset = static_cast<int64_t>(ArgNumber(in.args, "write_offset", 1));
  const double spike_ratio = ArgNumber(in.args, "spike_ratio", 3);
  const auto skip_first = static_cast<int64_t>(ArgNumber(in.args, "skip_first", 5));

  std::map<int64_t, double> seconds;   // step -> seconds (first record wins)
  for (const auto& r : steps) {
    if (!r.is_object() || !r.contains(x) || !r.contains(y) || !r[x].is_number() || !r[y].is_number()) continue;
    seconds.emplace(*ClampedInteger(r[x], -kMaxStep, kMaxStep), r[y].get<double>());
  }
  Json out = {{"period", period}, {"checkpoint_steps", Json::array()}, {"write_seconds", Json::object()},
              {"max_write_seconds", nullptr}, {"max_write_step", nullptr}, {"median_seconds", nullptr},
              {"spike_steps", Json::array()}, {"expected_spikes", Json::array()},
              {"unexpected_spikes", Json::array()}, {"count", 0}, {"current_checkpoint", nullptr},
              {"heartbeat_timeout", timeout > 0 ? Json(timeout) : Json()}, {"write_fraction", nullptr}};
  if (seconds.empty()) return out;
  const int64_t first = seconds.begin()->first;
  const int64_t last = seconds.rbegin()->first;

  const std::set<int64_t> checkpoint_steps = CheckpointMultiples(seconds, first, last, period);
  std::set<int64_t> write_steps;
  double max_write = -1;
  int64_t max_write_step = -1;
  for (int64_t c : checkpoint_steps) {
    out["checkpoint_steps"].push_back(c);
    write_steps.insert(c);
    write_steps.insert(c + offset);
    auto it = seconds.find(c + offset);
    if (it == seconds.end()) continue;
    out["write_seconds"][std::to_string(c)] = it->second;
    if (it->second > max_write) max_write = it->second, max_write_step = c;
  }
  out["count"] = checkpoint_steps.size();
  if (max_write_step >= 0) {
    out["max_write_seconds"] = max_write;
    out["max_write_step"] = max_write_step;
    if (timeout > 0) out["write_fraction"] = max_write / timeout;
  }
  // The save in progress when the log ends: after step N completes, step N's save runs.
  const int64_t current = last / period * period;
  if (current >= first) out["current_checkpoint"] = current;

  // The typical step: steps after warm-up that are not checkpoint or write steps.
  std::vector<double> typical;
  for (const auto& [s, v] : seconds)
    if (s >= first + skip_first && !write_steps.count(s)) typical.push_back(v);
  if (typical.empty()) return out;
  const double median = Median(typical);
  out["median_seconds"] = median;
  if (median <= 0) return out;
  for (const auto& [s, v] : seconds) {
    if (s < first + skip_first || v <= spike_ratio * median) continue;
    out["spike_steps"].push_back(s);
    out[write_steps.count(s) ? "expected_spikes" : "unexpected_spikes"].push_back(s);
  }
  return out;
}

void RegisterRecordAnalyses(std::map<std::string, AnalysisDef>& r) {
  r["select_records"] = {"select_records", "log-fact records whose field equals a value, with their hosts",
                         {{"field", {"string", "", {}}}, {"equals", {"string", "", {}}},
                          {"host_field", {"string", "host", {}}}},
                         {{"items", "list"}, {"count", "number"}, {"hosts", "list"}, {"values", "map"}},
                         {"input"}, SelectRecords};
  r["checkpoint_steps"] = {"checkpoint_steps", "periodic checkpoint steps, their write times and the spikes they explain",
                           {{"x", {"string", "step", {}}}, {"y", {"string", "seconds", {}}},
                            {"write_offset", {"number", 1, {}}}, {"spike_ratio", {"number", 3, {}}},
                            {"skip_first", {"number", 5, {}}}},
                           {{"period", "number"}, {"checkpoint_steps", "list"}, {"write_seconds", "map"},
                            {"max_write_seconds", "number"}, {"max_write_step", "number"},
                            {"median_seconds", "number"}, {"spike_steps", "list"}, {"expected_spikes", "list"},
                            {"unexpected_spikes", "list"}, {"count", "number"}, {"current_checkpoint", "number"},
                            {"heartbeat_timeout", "number"}, {"write_fraction", "number"}},
                           {"input"}, CheckpointSteps};
}

}  // namespace diagnose::analysis
