#include "engine/tsdb/query_client.h"

#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>
#include <unordered_set>

#include "engine/core/utf8.h"

namespace diagnose {

Query Query::Instant(std::string promql, double time, std::string id) {
  Query q;
  q.kind = Kind::kInstant;
  q.promql = std::move(promql);
  q.time = time;
  q.id = std::move(id);
  return q;
}

Query Query::Range(std::string promql, double start, double end, double step, std::string id) {
  Query q;
  q.kind = Kind::kRange;
  q.promql = std::move(promql);
  q.start = start;
  q.end = end;
  q.step = step;
  q.id = std::move(id);
  return q;
}

namespace {

constexpr std::string_view kLeftOutPrefix = "... ";
constexpr std::string_view kLeftOutSuffix = " more warnings left out";

// The count of a "left out" line CapWarnings wrote, nullopt for any other warning.
std::optional<int64_t> LeftOutCount(std::string_view warning) {
  if (!warning.starts_with(kLeftOutPrefix) || !warning.ends_with(kLeftOutSuffix)) return std::nullopt;
  warning.remove_prefix(kLeftOutPrefix.size());
  warning.remove_suffix(kLeftOutSuffix.size());
  int64_t count = 0;
  const auto [end, ec] = std::from_chars(warning.data(), warning.data() + warning.size(), count);
  if (ec != std::errc() || end != warning.data() + warning.size()) return std::nullopt;
  return count;
}

}  // namespace

void CapWarnings(std::vector<std::string>* warnings) {
  std::vector<std::string> kept;
  std::unordered_set<std::string> seen;
  int64_t left_out = 0;
  for (std::string& warning : *warnings) {
    if (std::optional<int64_t> earlier = LeftOutCount(warning)) {
      left_out += *earlier;
      continue;
    }
    if (warning.size() > kMaxWarningBytes) warning = ValidUtf8(warning, kMaxWarningBytes);  // then "..."
    if (!seen.insert(warning).second) continue;
    if (kept.size() < kMaxWarningsPerAnswer) {
      kept.push_back(std::move(warning));
    } else {
      ++left_out;
    }
  }
  if (left_out > 0) kept.push_back(std::string(kLeftOutPrefix) + std::to_string(left_out) + std::string(kLeftOutSuffix));
  *warnings = std::move(kept);
}

void MergeWarnings(const std::vector<std::string>& from, std::vector<std::string>* into) {
  if (from.empty()) return;
  into->insert(into->end(), from.begin(), from.end());
  CapWarnings(into);
}

std::vector<StatusOr<QueryResult>> QueryClient::RunBatch(const std::vector<Query>& queries) {
  std::vector<StatusOr<QueryResult>> results;
  results.reserve(queries.size());
  for (const auto& q : queries) results.push_back(Run(q));
  return results;
}

std::vector<StatusOr<std::vector<std::string>>> QueryClient::LabelValuesBatch(
    const std::vector<LabelValuesQuestion>& questions) {
  std::vector<StatusOr<std::vector<std::string>>> results;
  results.reserve(questions.size());
  for (const auto& q : questions) results.push_back(LabelValues(q.label, q.matchers, q.start, q.end));
  return results;
}

std::vector<StatusOr<int64_t>> QueryClient::SeriesCountsForEstimate(const std::vector<SeriesQuestion>& questions) {
  std::vector<StatusOr<int64_t>> counts;
  counts.reserve(questions.size());
  for (const auto& q : questions) {
    auto series = SeriesMatching(q.matchers, q.start, q.end);
    if (series.ok()) counts.emplace_back(static_cast<int64_t>(series->size()));
    else counts.emplace_back(series.status());
  }
  return counts;
}

}  // namespace diagnose
