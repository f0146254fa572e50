#include "engine/fleet/raw_export.h"

#include <gtest/gtest.h>

#include <regex>

#include "engine/core/json.h"

namespace diagnose {
namespace {

// Answers `{__name__="m"}[Ns]` at t from an in-memory TSDB, inclusive at both ends as Prometheus
// 2.x does, so the exporter's own (lo, hi] cut is what keeps chunk borders from doubling samples.
class MemoryTsdb : public QueryClient {
 public:
  std::map<std::string, std::vector<Series>> by_name;
  std::vector<Query> asked;

  StatusOr<QueryResult> Run(const Query& q) override {
    asked.push_back(q);
    std::smatch m;
    static const std::regex selector(R"re(^\{__name__="([^"]*)"\}\[(\d+)s\]$)re");
    if (!std::regex_match(q.promql, m, selector)) return InvalidArgumentError("unexpected query " + q.promql);
    const double window = std::stod(m[2]);
    QueryResult r;
    r.result_type = "matrix";
    for (const auto& s : by_name[m[1]]) {
      Series out{s.labels, {}};
      out.labels.erase("__name__");   // Prometheus drops it from range-vector results
      for (const auto& sample : s.samples)
        if (sample.t >= q.time - window && sample.t <= q.time) out.samples.push_back(sample);
      if (!out.samples.empty()) r.series.push_back(out);
    }
    return r;
  }
  StatusOr<std::vector<std::string>> LabelValues(const std::string& label, const std::vector<std::string>&, double,
                                                 double) override {
    if (label != "__name__") return InvalidArgumentError("only names");
    std::vector<std::string> names;
    for (const auto& [name, _] : by_name) names.push_back(name);
    return names;
  }
  StatusOr<std::vector<Labels>> SeriesMatching(const std::vector<std::string>&, double, double) override {
    return std::vector<Labels>{};
  }
  std::string Describe() const override { return "memory"; }
};

Series Make(const std::string& name, Labels labels, double from, double to, double step, double value = 1) {
  Series s;
  s.labels = std::move(labels);
  s.labels["__name__"] = name;
  for (double t = from; t <= to + 1e-9; t += step) s.samples.push_back({t, value++});
  return s;
}

TEST(RawExport, EverySampleReachesTheSinkOnceAcrossChunkBorders) {
  MemoryTsdb tsdb;
  // 10 s scrapes over 3 h and a chunk of 1 h: samples fall exactly on every chunk border.
  tsdb.by_name["hw_gpu_power_watts"] = {Make("hw_gpu_power_watts", {{"host", "a"}, {"gpu", "0"}}, 1000, 11800, 10),
                                        Make("hw_gpu_power_watts", {{"host", "b"}, {"gpu", "0"}}, 1000, 11800, 10)};
  tsdb.by_name["up"] = {Make("up", {{"instance", "b:9100"}}, 1005, 11805, 5)};
  std::map<std::pair<Labels, double>, int> seen;
  ExportStats stats;
  ASSERT_TRUE(ExportRawSamples(tsdb, {1000, 11805}, 3600,
                               [&](const std::vector<Series>& chunk) {
                                 for (const auto& s : chunk)
                                   for (const auto& sample : s.samples) ++seen[{s.labels, sample.t}];
                                 return Status::Ok();
                               },
                               &stats)
                  .ok());
  const int64_t expected = 2 * 1081 + 2161;
  EXPECT_EQ(stats.samples, expected);
  EXPECT_EQ(static_cast<int64_t>(seen.size()), expected);
  for (const auto& [key, count] : seen) ASSERT_EQ(count, 1) << key.first.at("__name__") << " at " << key.second;
  EXPECT_EQ(stats.series, 3);
  EXPECT_EQ(stats.metric_names.size(), 2u);
  // Every query names the metric literally and asks at a time inside the range.
  for (const auto& q : tsdb.asked) EXPECT_LE(q.time, 11805.0);
}

TEST(RawExport, AMetricNameIsEscapedBeforeItEntersPromQL) {
  MemoryTsdb tsdb;
  tsdb.by_name["evil\"} or vector(1) or {x=\""] = {};
  ASSERT_FALSE(ExportRawSamples(tsdb, {0, 10}, 60, [](const std::vector<Series>&) { return Status::Ok(); }, nullptr)
                   .ok());   // the fake refuses anything but a plain selector: the quote was escaped
  ASSERT_FALSE(tsdb.asked.empty());
  EXPECT_NE(tsdb.asked[0].promql.find(R"(evil\"})"), std::string::npos) << tsdb.asked[0].promql;
}

TEST(RawExport, ASinkFailureStopsTheExportAndIsReturned) {
  MemoryTsdb tsdb;
  tsdb.by_name["up"] = {Make("up", {{"instance", "a"}}, 0, 7200, 10)};
  int calls = 0;
  Status s = ExportRawSamples(tsdb, {0, 7200}, 600,
                              [&](const std::vector<Series>&) {
                                ++calls;
                                return UnavailableError("store went away");
                              },
                              nullptr);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls, 1);
}

TEST(RawExport, RefusesAChunkBelowOneSecondAndAnInvertedRange) {
  MemoryTsdb tsdb;
  auto sink = [](const std::vector<Series>&) { return Status::Ok(); };
  EXPECT_EQ(ExportRawSamples(tsdb, {0, 10}, 0.5, sink, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ExportRawSamples(tsdb, {10, 0}, 60, sink, nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(VictoriaMetricsLines, OneJsonLinePerSeriesWithTheJobLabelAndMillisecondTimes) {
  Series a{{{"__name__", "hw_oom_kills_total"}, {"host", "n\"1\\"}, {"slurm_job_id", "stale"}},
           {{1770000000.0, 2}, {1770000010.5, NAN}, {1770000020.001, 3}}};
  int64_t written = 0, skipped = 0;
  const std::string text = VictoriaMetricsImportLines({a}, {{"slurm_job_id", "8308"}}, &written, &skipped);
  EXPECT_EQ(written, 2);
  EXPECT_EQ(skipped, 1);
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["metric"]["slurm_job_id"], "8308");   // the job label wins over a series' own
  EXPECT_EQ(j["metric"]["host"], "n\"1\\");
  EXPECT_EQ(j["timestamps"], (nlohmann::json{1770000000000LL, 1770000020001LL}));
  EXPECT_EQ(j["values"], (nlohmann::json{2.0, 3.0}));
}

TEST(VictoriaMetricsLines, InvalidUtf8InALabelIsReplacedNotFatal) {
  Series a{{{"__name__", "up"}, {"host", std::string("bad\xff")}}, {{1, 1}}};
  int64_t written = 0;
  const std::string text = VictoriaMetricsImportLines({a}, {}, &written, nullptr);
  EXPECT_EQ(written, 1);
  EXPECT_TRUE(nlohmann::json::accept(text.substr(0, text.size() - 1)));
}

}  // namespace
}  // namespace diagnose
