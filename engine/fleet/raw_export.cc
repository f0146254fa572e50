#include "engine/fleet/raw_export.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <future>
#include <set>

#include "engine/core/json.h"
#include "engine/tsdb/promql_escape.h"

namespace diagnose {

namespace {


int64_t Millis(double seconds) { return std::llround(seconds * 1000.0); }

}  // namespace

Query SampleCountQuery(const std::string& selector, TimeRange range, std::string purpose) {
  return Query::Instant("sum(count_over_time(" + selector + "[" + PromqlSeconds(range.end - range.start + 1) + "]))",
                        range.end, std::move(purpose));
}

int64_t SampleCountOf(const QueryResult& answer) {
  if (answer.series.empty() || answer.series[0].samples.empty()) return 0;
  const double v = answer.series[0].samples.back().v;
  return std::isfinite(v) && v > 0 ? std::llround(std::min(v, 9e18)) : 0;
}

Status ExportRawSamples(QueryClient& source, TimeRange range, double chunk_seconds,
                        const std::function<Status(const std::vector<Series>&)>& sink, ExportStats* stats) {
  if (!(chunk_seconds >= 1)) return InvalidArgumentError("export chunk must be at least 1 s");
  if (!(range.end >= range.start)) return InvalidArgumentError("export range ends before it starts");
  ExportStats local;
  ExportStats& st = stats ? *stats : local;
  auto names = source.LabelValues("__name__", {}, range.start, range.end + 1);
  ++st.queries;
  if (!names.ok()) return names.status().WithContext("listing metric names on " + source.Describe());
  st.metric_names = *names;
  // Whole milliseconds, as the TSDB stores them: chunk k holds (lo, hi], the first one from
  // just before the range's first sample.
  const int64_t first_ms = Millis(range.start) - 1, last_ms = Millis(range.end);
  const int64_t chunk_ms = Millis(chunk_seconds);
  struct Chunk {
    size_t name;
    int64_t lo, hi;
  };
  std::vector<Chunk> chunks;
  for (size_t n = 0; n < names->size(); ++n)
    for (int64_t lo = first_ms; lo < last_ms; lo += chunk_ms) chunks.push_back({n, lo, std::min(lo + chunk_ms, last_ms)});
  auto fetch = [&](const Chunk& c) {
    const std::string selector = "{__name__=\"" + EscapePromqlString((*names)[c.name]) + "\"}";
    return source.Run(Query::Instant(selector + "[" + PromqlSeconds((c.hi - c.lo) / 1000.0) + "]", c.hi / 1000.0,
                                     "export:" + (*names)[c.name]));
  };
  // The next chunk is fetched (and parsed) while this one is written: two answers in memory at most.
  std::future<StatusOr<QueryResult>> next;
  if (!chunks.empty()) next = std::async(std::launch::async, fetch, chunks[0]);
  std::set<Labels> seen;   // of the current metric
  for (size_t i = 0; i < chunks.size(); ++i) {
    StatusOr<QueryResult> result = next.get();
    ++st.queries;
    if (i + 1 < chunks.size()) next = std::async(std::launch::async, fetch, chunks[i + 1]);
    const Chunk& c = chunks[i];
    const std::string& name = (*names)[c.name];
    if (!result.ok()) {
      if (next.valid()) next.wait();
      return result.status().WithContext("exporting " + name + " from " + source.Describe());
    }
    if (i > 0 && chunks[i - 1].name != c.name) seen.clear();
    std::vector<Series> kept_series;
    kept_series.reserve(result->series.size());
    for (auto& series : result->series) {
      Series kept;
      kept.labels = std::move(series.labels);
      kept.labels["__name__"] = name;
      for (const auto& sample : series.samples) {
        const int64_t t = Millis(sample.t);
        if (t > c.lo && t <= c.hi) kept.samples.push_back(sample);
      }
      if (kept.samples.empty()) continue;
      st.samples += static_cast<int64_t>(kept.samples.size());
      if (seen.insert(kept.labels).second) ++st.series;
      kept_series.push_back(std::move(kept));
    }
    if (kept_series.empty()) continue;
    if (Status s = sink(kept_series); !s.ok()) {
      if (next.valid()) next.wait();
      return s;
    }
  }
  return Status::Ok();
}

namespace {

// Per label, not per sample: nlohmann's escaping, invalid UTF-8 replaced rather than refused.
void AppendJsonString(std::string& out, const std::string& text) {
  out += nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

template <typename T>
void AppendNumber(std::string& out, T value) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, ec == std::errc() ? end : buf);
}

}  // namespace

// Written by hand rather than through a JSON DOM: an import moves millions of samples, and the
// DOM's allocations were a third of the exporter's time.
std::string VictoriaMetricsImportLines(const std::vector<Series>& series, const Labels& extra,
                                       int64_t* samples_written, int64_t* non_finite_skipped) {
  std::string out;
  for (const auto& s : series) {
    size_t finite = 0;
    for (const auto& sample : s.samples) finite += std::isfinite(sample.v);
    if (non_finite_skipped) *non_finite_skipped += static_cast<int64_t>(s.samples.size() - finite);
    if (finite == 0) continue;
    if (samples_written) *samples_written += static_cast<int64_t>(finite);
    Labels labels = s.labels;
    for (const auto& [k, v] : extra) labels[k] = v;
    out += "{\"metric\":{";
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) out += ',';
      first = false;
      AppendJsonString(out, k);
      out += ':';
      AppendJsonString(out, v);
    }
    auto append_array = [&](auto value_of) {
      bool first_value = true;
      for (const auto& sample : s.samples) {
        if (!std::isfinite(sample.v)) continue;
        if (!first_value) out += ',';
        first_value = false;
        AppendNumber(out, value_of(sample));
      }
    };
    out += "},\"values\":[";
    append_array([](const Sample& x) { return x.v; });
    out += "],\"timestamps\":[";
    append_array([](const Sample& x) { return Millis(x.t); });
    out += "]}\n";
  }
  return out;
}

}  // namespace diagnose
