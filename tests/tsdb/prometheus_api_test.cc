#include "engine/tsdb/prometheus_api.h"
#include "engine/tsdb/tsdb_dir.h"
#include "engine/core/untrusted_json.h"

#include <chrono>
#include <cmath>

#include <gtest/gtest.h>

#include "engine/core/limits.h"

namespace diagnose {
namespace {

TEST(PrometheusApi, EnvelopeCarriesStatusDataErrorAndWarningsThenInfos) {
  ApiEnvelope ok = ParseApiEnvelope(
      R"({"status":"success","data":{"resultType":"scalar","result":[1,"2"]},"warnings":["w1",{"x":1}],"infos":["i1"]})");
  ASSERT_TRUE(ok.present);
  EXPECT_EQ(ok.status, "success");
  EXPECT_EQ(ok.warnings, (std::vector<std::string>{"w1", R"({"x":1})", "info: i1"}));
  auto scalar = DecodeQueryData(ok.data);
  ASSERT_TRUE(scalar.ok()) << scalar.status().message();
  EXPECT_EQ(scalar->series.at(0).samples.at(0).v, 2);

  ApiEnvelope error = ParseApiEnvelope(R"({"status":"error","errorType":"bad_data","error":"parse error"})");
  ASSERT_TRUE(error.present);
  EXPECT_EQ(error.error_type, "bad_data");
  EXPECT_EQ(error.error, "parse error");

  for (const char* not_envelope : {"", "<html>502 Bad Gateway</html>", "[1,2]", R"({"status":3})", "{\"status\":\"succ"}) {
    EXPECT_FALSE(ParseApiEnvelope(not_envelope).present) << not_envelope;
  }
}

TEST(PrometheusApi, MalformedDataIsAParseErrorNeverAThrow) {
  using nlohmann::json;
  for (const char* bad : {R"({})", R"({"resultType":"vector","result":{}})", R"({"resultType":"vector","result":[1]})",
                          R"({"resultType":"vector","result":[{"metric":{}}]})",
                          R"({"resultType":"matrix","result":[{"values":[[1]]}]})",
                          R"({"resultType":"matrix","result":[{"values":"x"}]})", R"({"resultType":"scalar","result":5})",
                          R"({"resultType":"string","result":[1]})", R"({"resultType":"histogram","result":[]})"}) {
    auto r = DecodeQueryData(json::parse(bad));
    EXPECT_EQ(r.status().code(), StatusCode::kParse) << bad;
  }
  EXPECT_EQ(DecodeSeriesData(json::object()).status().code(), StatusCode::kParse);
  EXPECT_EQ(DecodeLabelValues(json("x")).status().code(), StatusCode::kParse);
  auto values = DecodeLabelValues(json::parse(R"(["a", 3, null, "b"])"));
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, (std::vector<std::string>{"a", "b"}));
}

TEST(PrometheusApi, SeriesAndPointLimitsAreNamedWhenAnAnswerIsTooBig) {
  const auto data = nlohmann::json::parse(R"({"resultType":"matrix","result":[
      {"metric":{"host":"a"},"values":[[1,"1"],[2,"2"],[3,"3"]]},
      {"metric":{"host":"b"},"values":[[1,"1"],[2,"2"],[3,"3"]]},
      {"metric":{"host":"c"},"values":[[1,"1"],[2,"2"],[3,"NaN"]]}]})");
  ASSERT_TRUE(DecodeQueryData(data).ok());
  {
    ScopedLimit series(LimitId::kHttpSeriesPerQuery, 2);
    auto r = DecodeQueryData(data);
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(r.status().message().find("--limit http.series_per_query=N"), std::string::npos) << r.status().message();
  }
  {
    ScopedLimit points(LimitId::kHttpPointsPerQuery, 8);
    auto r = DecodeQueryData(data);
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(r.status().message().find("http.points_per_query (8"), std::string::npos) << r.status().message();
  }
  auto r = DecodeQueryData(data);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isnan(r->series[2].samples[2].v));
}

// Found by fuzz/tsdb_meta (UBSan): minTime as a float beyond int64's range.
TEST(BlockMetaTest, ATimeBeyondInt64IsDataLossNotUndefinedBehaviour) {
  auto meta = ParseBlockMeta(R"({"ulid": "01M8AB2EJPYFN9N072AB4KT7P0", "minTime": 1.7e53, "maxTime": 5})",
                             "01M8AB2EJPYFN9N072AB4KT7P0", "b/meta.json");
  ASSERT_FALSE(meta.ok());
  EXPECT_EQ(meta.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(meta.status().message().find("b/meta.json"), std::string::npos) << meta.status().message();
}

// A sample time beyond int64's range is refused as a malformed answer.
TEST(PrometheusApiTest, ASampleTimeBeyondInt64IsRefused) {
  auto decoded = DecodeQueryData(ParseUntrustedJson(R"({"resultType":"vector","result":[{"metric":{},"value":[1e300,"1"]}]})"));
  EXPECT_FALSE(decoded.ok());
}

// The tree path's answer for `body`, as the HTTP client computed it before answers were streamed.
StatusOr<QueryResult> TreeDecode(const std::string& body, std::vector<std::string>* warnings) {
  ApiEnvelope envelope = ParseApiEnvelope(body);
  *warnings = envelope.warnings;
  if (!envelope.present || envelope.status != "success") return ParseError("not a success envelope");
  return DecodeQueryData(envelope.data);
}

bool SameSamples(const std::vector<Sample>& a, const std::vector<Sample>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].t != b[i].t) return false;
    if (!(a[i].v == b[i].v || (std::isnan(a[i].v) && std::isnan(b[i].v)))) return false;
  }
  return true;
}

// Streams `body`; unless it fell back, the answer must be exactly the tree path's.
StreamedQueryAnswer ExpectSameAsTree(const std::string& body) {
  StreamedQueryAnswer streamed = ParseQueryAnswer(body);
  if (streamed.fallback) return streamed;
  std::vector<std::string> warnings;
  auto tree = TreeDecode(body, &warnings);
  EXPECT_EQ(streamed.result.ok(), tree.ok()) << body;
  EXPECT_EQ(streamed.result.status().code(), tree.status().code()) << body;
  if (!streamed.result.ok() || !tree.ok()) return streamed;
  EXPECT_EQ(streamed.warnings, warnings) << body;
  EXPECT_EQ(streamed.samples_read, QueryStatsSamples(ParseApiEnvelope(body).data)) << body;
  EXPECT_EQ(streamed.result->result_type, tree->result_type) << body;
  EXPECT_EQ(streamed.result->series.size(), tree->series.size()) << body;
  for (size_t i = 0; i < std::min(streamed.result->series.size(), tree->series.size()); ++i) {
    EXPECT_EQ(streamed.result->series[i].labels, tree->series[i].labels) << body;
    EXPECT_TRUE(SameSamples(streamed.result->series[i].samples, tree->series[i].samples)) << body;
  }
  return streamed;
}

TEST(PrometheusApi, UsualAnswersAreDecodedWhileParsedAsTheTreePathDecodesThem) {
  for (const char* body : {
           R"({"status":"success","data":{"resultType":"vector","result":[]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"host":"a","gpu":"0"},"value":[1771495068.33,"2.5"]},{"metric":{},"value":[1,"NaN"]}]}})",
           R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up","host":"a"},"values":[[1,"1"],[2,"+Inf"],[3,"-Inf"]]},{"metric":{"host":"b"},"values":[]}]},"warnings":["partial"],"infos":["i"]})",
           R"({"status":"success","isPartial":false,"data":{"resultType":"matrix","stats":{"x":[1,{"y":2}]},"result":[{"metric":{"host":"a","n":3},"values":[[1,2],[2,1e300]],"extra":[[1]]}]}})",
           R"({"data":{"result":[{"value":[5,"7"],"metric":{"h":"x"}}],"resultType":"vector"},"status":"success"})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"x","a":1,"b":2,"b":"y"},"value":[1,"1"]}]}})",
       }) {
    StreamedQueryAnswer streamed = ExpectSameAsTree(body);
    EXPECT_FALSE(streamed.fallback) << body;
  }
}

// stats=all: the samples the query read, wherever the statistics put it among other keys.
TEST(PrometheusApi, TheSamplesAQueryReadAreTakenFromItsStatistics) {
  const std::string with_stats =
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"h":"a"},"value":[1,"2"]}],)"
      R"("stats":{"timings":{"evalTotalTime":0.01},"samples":{"totalQueryableSamplesPerStep":[[1,5]],)"
      R"("totalQueryableSamples":175712,"peakSamples":600}}}})";
  StreamedQueryAnswer streamed = ExpectSameAsTree(with_stats);
  EXPECT_FALSE(streamed.fallback);
  EXPECT_EQ(streamed.samples_read, 175712);
  for (const char* body : {
           R"({"status":"success","data":{"resultType":"vector","result":[]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[],"stats":{"samples":{"totalQueryableSamples":"7"}}}})",
           R"({"status":"success","data":{"resultType":"vector","result":[],"stats":{"samples":{"totalQueryableSamples":-1}}}})",
           R"({"status":"success","data":{"resultType":"vector","result":[],"stats":{"samples":[1]}}})",
       }) {
    StreamedQueryAnswer none = ExpectSameAsTree(body);
    EXPECT_FALSE(none.fallback) << body;
    EXPECT_EQ(none.samples_read, std::nullopt) << body;
  }
  // Repeated statistics: the tree keeps the last, so the stream leaves them to it.
  EXPECT_TRUE(ExpectSameAsTree(R"({"status":"success","data":{"resultType":"vector","result":[],)"
                               R"("stats":{"samples":{"totalQueryableSamples":3}},"stats":{}}})").fallback);
}

TEST(PrometheusApi, OddAnswersFallBackToTheTreePath) {
  for (const char* body : {
           "", "<html>502</html>", "[1,2]", R"({"status":"error","errorType":"bad_data","error":"x"})",
           R"({"status":"success","data":{"resultType":"scalar","result":[1,"2"]}})",
           R"({"status":"success","data":{"resultType":"string","result":[1,"s"]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[1]}})",
           R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[[1]]}]}})",
           R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,[2]]]}]}})",
           R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":{"b":1}},"values":[]}]}})",
           R"({"status":"success","status":"success","data":{"resultType":"vector","result":[]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"],"value":[2,"2"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[]},"warnings":[{"x":1}]})",
           R"({"status":"success","data":{"resultType":"vector","result":[]}} trailing)",
           R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1e300,"1"]]}]}})",
           R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":{}}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":{}}]}})",
       }) {
    EXPECT_TRUE(ExpectSameAsTree(body).fallback) << body;
  }
}

// A key we read, repeated with a value of another shape: a tree keeps the last value, so the stream
// must not answer with the first (found by fuzz/prometheus_response in CI).
TEST(PrometheusApi, AKeyRepeatedWithAnotherShapeFallsBackToTheTreePath) {
  for (const char* body : {
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"x"},"metric":[],"value":[1,"1"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[]},"data":[]})",
           R"({"status":"success","data":{"resultType":"vector","result":[],"result":{}}})",
           R"({"status":"success","warnings":["w"],"warnings":{},"data":{"resultType":"vector","result":[]}})",
           R"({"status":"success","infos":["i"],"infos":{},"data":{"resultType":"vector","result":[]}})",
           R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]],"values":{}}]}})",
       }) {
    EXPECT_TRUE(ExpectSameAsTree(body).fallback) << body;
  }
}

TEST(PrometheusApi, StreamedAnswersKeepTheSeriesAndPointLimits) {
  const std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"host":"a"},"values":[[1,"1"],[2,"2"],[3,"3"]]},
      {"metric":{"host":"b"},"values":[[1,"1"],[2,"2"],[3,"3"]]},
      {"metric":{"host":"c"},"values":[[1,"1"],[2,"2"],[3,"NaN"]]}]}})";
  {
    ScopedLimit series(LimitId::kHttpSeriesPerQuery, 2);
    StreamedQueryAnswer r = ExpectSameAsTree(body);
    ASSERT_FALSE(r.fallback);
    EXPECT_EQ(r.result.status().code(), StatusCode::kResourceExhausted);
  }
  {
    ScopedLimit points(LimitId::kHttpPointsPerQuery, 8);
    StreamedQueryAnswer r = ExpectSameAsTree(body);
    ASSERT_FALSE(r.fallback);
    EXPECT_EQ(r.result.status().code(), StatusCode::kResourceExhausted);
  }
  ScopedLimit enough(LimitId::kHttpPointsPerQuery, 9);
  EXPECT_TRUE(ExpectSameAsTree(body).result.ok());
}

// A query answer read after the run's deadline stops at once: parsing 10^6 series is minutes.
TEST(PrometheusApi, AQueryAnswerStopsBeingReadAtTheDeadline) {
  std::string body = R"({"status":"success","data":{"resultType":"vector","result":[)";
  for (int i = 0; i < 20000; ++i)
    body += (i ? "," : "") + std::string(R"({"metric":{"host":"h)") + std::to_string(i) + R"("},"value":[1,"1"]})";
  body += "]}}";
  EXPECT_TRUE(ParseQueryAnswer(body).result.ok());
  StreamedQueryAnswer late = ParseQueryAnswer(body, std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_FALSE(late.fallback);
  ASSERT_FALSE(late.result.ok());
  EXPECT_EQ(late.result.status().code(), StatusCode::kDeadlineExceeded) << late.result.status().ToString();
  ApiEnvelope envelope = ParseApiEnvelope(body, JsonParseBounds{std::chrono::steady_clock::now() - std::chrono::seconds(1)});
  ASSERT_TRUE(envelope.stopped.has_value());
  EXPECT_EQ(envelope.stopped->code(), StatusCode::kDeadlineExceeded);
}

// What each server answers to /api/v1/status/buildinfo, from their sources: Prometheus' web/api/v1
// (and the installed 2.42.0+ds), VictoriaMetrics app/vmselect (1.77-1.95 and 1.96 on), Grafana Mimir
// (application and features added), Thanos' pkg/api (Prometheus' six fields, its own version).
constexpr const char* kPrometheus242 =
    R"({"status":"success","data":{"version":"2.42.0+ds","revision":"2.42.0+ds-5+deb12u1","branch":"debian/sid",)"
    R"("buildUser":"team+pkg-go@tracker.debian.org","buildDate":"20240101-00:00:00","goVersion":"go1.19.8"}})";

std::string BuildInfoWithVersion(const std::string& version) {
  return R"({"status":"success","data":{"version":")" + version +
         R"(","revision":"abc","branch":"HEAD","buildUser":"root@x","buildDate":"20230101-00:00:00","goVersion":"go1.20"}})";
}

TEST(PrometheusBuildInfo, PrometheusOwnAnswerIsReadWithItsVersion) {
  auto info = ParsePrometheusBuildInfo(kPrometheus242);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->version, "2.42.0+ds");
  EXPECT_EQ(info->major, 2);
  EXPECT_EQ(info->minor, 42);
  EXPECT_EQ(info->patch, 0);
  EXPECT_FALSE(info->prerelease);
  EXPECT_TRUE(PrometheusVerifiedForComposition(*info));
}

TEST(PrometheusBuildInfo, OnlyTheVerifiedReleaseComposes) {
  for (const auto& [version, composes] : std::vector<std::pair<std::string, bool>>{
           {"2.42.0", true}, {"2.42.3", true}, {"2.42.1+ds", true}, {"2.42.0-rc.0", false},
           {"2.41.0", false}, {"2.43.0", false}, {"2.48.1", false}, {"2.53.0", false}, {"3.0.0", false},
           {"0.42.0", false}, {"1.42.0", false}}) {
    SCOPED_TRACE(version);
    auto info = ParsePrometheusBuildInfo(BuildInfoWithVersion(version));
    ASSERT_TRUE(info.ok()) << info.status().message();
    EXPECT_EQ(PrometheusVerifiedForComposition(*info), composes);
  }
}

TEST(PrometheusBuildInfo, OtherServersAreToldApart) {
  const std::vector<std::pair<std::string, std::string>> others{
      {"VictoriaMetrics 1.79", R"({"status":"success","data":{}})"},
      {"VictoriaMetrics 1.96+", R"({"status":"success","data":{"version":"2.24.0"}})"},
      {"VictoriaMetrics claiming 2.42", R"({"status":"success","data":{"version":"2.42.0"}})"},
      {"Grafana Mimir", R"({"status":"success","data":{"application":"Grafana Mimir","version":"2.42.0",)"
                        R"("revision":"5bedc7a1","branch":"weekly-r249","buildUser":"","buildDate":"","goVersion":"go1.20.5",)"
                        R"("features":{"ruler_config_api":"true"}}})"},
  };
  for (const auto& [who, body] : others) {
    SCOPED_TRACE(who);
    auto info = ParsePrometheusBuildInfo(body);
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.status().code(), StatusCode::kFailedPrecondition);
  }
  // Thanos sends Prometheus' fields with its own release number: read, never verified.
  auto thanos = ParsePrometheusBuildInfo(BuildInfoWithVersion("0.32.5"));
  ASSERT_TRUE(thanos.ok()) << thanos.status().message();
  EXPECT_FALSE(PrometheusVerifiedForComposition(*thanos));
}

TEST(PrometheusBuildInfo, MalformedAnswersAreRefused) {
  const std::vector<std::string> refused{
      "",
      "<html><body>404 page not found</body></html>",
      "404 page not found\n",
      R"({"status":"error","errorType":"not_found","error":"no such path"})",
      R"({"status":"success","data":["2.42.0"]})",
      R"({"status":"success","data":{"version":2.42,"revision":"a","branch":"b","buildUser":"c","buildDate":"d","goVersion":"e"}})",
      BuildInfoWithVersion("v2.42.0"),
      BuildInfoWithVersion("2.42"),
      BuildInfoWithVersion("2.42.0 "),
      BuildInfoWithVersion("2.42.0+"),
      BuildInfoWithVersion("2.42.0+a b"),
      BuildInfoWithVersion("2.042.0x"),
      BuildInfoWithVersion("2.4200000.0"),
      BuildInfoWithVersion("99999999999.42.0"),
      BuildInfoWithVersion(std::string(300, '2')),
      // A Prometheus answer padded past what any server sends is not read.
      std::string(kPrometheus242).insert(1, std::string(5000, ' ')),
  };
  for (const std::string& body : refused) {
    SCOPED_TRACE(body.substr(0, 120));
    auto info = ParsePrometheusBuildInfo(body);
    EXPECT_FALSE(info.ok());
  }
}

}  // namespace
}  // namespace diagnose
