#include "engine/tsdb/query_answer_scanner.h"

#include <bit>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "engine/core/limits.h"
#include "engine/tsdb/prometheus_api.h"

namespace diagnose {
namespace {

constexpr int64_t kNoLimit = int64_t{1} << 40;

std::optional<StreamedQueryAnswer> Scan(std::string_view body, int64_t max_series = kNoLimit,
                                        int64_t max_points = kNoLimit) {
  return ScanQueryAnswer(body, max_series, max_points, std::nullopt);
}

// Bit for bit: -0 is not +0, and every NaN and rounding must be the general reader's.
bool SameBits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

// The scanner's answer, when it gives one, is the general reader's to the bit.
::testing::AssertionResult SameAsByEvents(std::string_view body) {
  const std::optional<StreamedQueryAnswer> scanned = Scan(body);
  if (!scanned) return ::testing::AssertionSuccess() << "declined";
  const StreamedQueryAnswer events = ParseQueryAnswerByEvents(body);
  if (events.fallback) return ::testing::AssertionFailure() << "the general reader needs the tree: " << body;
  if (!events.result.ok() || !scanned->result.ok()) return ::testing::AssertionFailure() << "an error: " << body;
  if (scanned->fallback || scanned->warnings != events.warnings || scanned->samples_read != events.samples_read ||
      scanned->result->result_type != events.result->result_type ||
      scanned->result->series.size() != events.result->series.size())
    return ::testing::AssertionFailure() << "envelope differs: " << body;
  for (size_t i = 0; i < events.result->series.size(); ++i) {
    const Series& a = scanned->result->series[i];
    const Series& b = events.result->series[i];
    if (a.labels != b.labels || a.samples.size() != b.samples.size())
      return ::testing::AssertionFailure() << "series " << i << " differs: " << body;
    for (size_t k = 0; k < a.samples.size(); ++k)
      if (!SameBits(a.samples[k].t, b.samples[k].t) || !SameBits(a.samples[k].v, b.samples[k].v))
        return ::testing::AssertionFailure() << "sample " << k << " of series " << i << " differs: " << body;
  }
  return ::testing::AssertionSuccess() << "scanned";
}

void ExpectScannedAsByEvents(std::string_view body) {
  ASSERT_TRUE(Scan(body).has_value()) << body;
  EXPECT_TRUE(SameAsByEvents(body));
}

const char kMatrix[] =
    R"({"status":"success","data":{"resultType":"matrix","result":[)"
    R"({"metric":{"__name__":"up","host":"chi2815","instance":"chi2815:9100"},"values":[[1771491200,"1"],[1771491260.5,"0.25"]]},)"
    R"({"metric":{"host":"chi2816"},"values":[[1771491200,"NaN"],[1771491260,"+Inf"],[1771491320,"-Inf"]]}]}})";

TEST(QueryAnswerScanner, ReadsVectorsAndMatricesAsTheGeneralReaderDoes) {
  ExpectScannedAsByEvents(kMatrix);
  ExpectScannedAsByEvents(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"host":"a"},"value":[1771491200.123,"42"]},{"metric":{},"value":[1,"-0"]}]}})");
  ExpectScannedAsByEvents(R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  ExpectScannedAsByEvents(R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"h":"a"}}]}})");
  // Whitespace anywhere JSON allows it, as a pretty-printing proxy sends it.
  ExpectScannedAsByEvents(" {\n \"status\" : \"success\" ,\r\n\t\"data\":{ \"resultType\":\"vector\" , \"result\":[ { \"metric\" : { } , \"value\" : [ 1 , \"2\" ] } ] } } \n");
  const auto matrix = Scan(kMatrix);
  ASSERT_TRUE(matrix && matrix->result.ok());
  ASSERT_EQ(matrix->result->series.size(), 2u);
  EXPECT_EQ(matrix->result->series[0].labels.at("instance"), "chi2815:9100");
  EXPECT_EQ(matrix->result->series[0].samples[1].t, 1771491260.5);
  EXPECT_EQ(matrix->result->series[0].samples[1].v, 0.25);
  EXPECT_TRUE(std::isnan(matrix->result->series[1].samples[0].v));
  EXPECT_EQ(matrix->result->series[1].samples[2].v, -HUGE_VAL);
}

TEST(QueryAnswerScanner, KeysInAnyOrderUnknownOnesSkippedStatsWarningsAndInfosRead) {
  const std::string body =
      R"({"data":{"result":[{"extra":{"a":[1,{"b":null}],"c":true},"value":[5,"6"],"metric":{"z":"1","a":"2"}}],)"
      R"("stats":{"timings":{"evalTotalTime":0.001},"samples":{"totalQueryableSamplesPerStep":[[1,2]],"totalQueryableSamples":192,"peakSamples":24}},)"
      R"("resultType":"vector","more":[]},"infos":["i1"],"warnings":["w1","w2"],"status":"success","x":-1.5e-3})";
  ExpectScannedAsByEvents(body);
  const auto scanned = Scan(body);
  EXPECT_EQ(scanned->warnings, (std::vector<std::string>{"w1", "w2", "info: i1"}));
  EXPECT_EQ(scanned->samples_read, 192);
  EXPECT_EQ(scanned->result->series.at(0).labels, (Labels{{"a", "2"}, {"z", "1"}}));
  // A negative count reads as none; a repeated label keeps its last value, as a tree does.
  ExpectScannedAsByEvents(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"h":"a","h":"b"},"value":[1,"1"]}],"stats":{"samples":{"totalQueryableSamples":-1}}}})");
  EXPECT_EQ(Scan(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"h":"a","h":"b"},"value":[1,"1"]}]}})")
                ->result->series[0].labels.at("h"),
            "b");
}

TEST(QueryAnswerScanner, LabelValuesAreUnescapedAndValidatedAsTheGeneralReaderDoes) {
  const std::string body =
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{)"
      R"("q":"say \"hi\"","b":"back\\slash","n":"line\nnext\t/\/\b\f\r","u":"\u00e9\u4e2d\ud83d\ude00","raw":"é中😀","nul":"a\u0000b",)"
      R"("k\u0065y":"escaped key","empty":""},"value":[1,"1"]}]}})";
  ExpectScannedAsByEvents(body);
  const std::optional<StreamedQueryAnswer> scanned = Scan(body);   // the labels below live in it
  ASSERT_TRUE(scanned && scanned->result.ok());
  const Labels& labels = scanned->result->series.at(0).labels;
  EXPECT_EQ(labels.at("q"), "say \"hi\"");
  EXPECT_EQ(labels.at("b"), "back\\slash");
  EXPECT_EQ(labels.at("n"), "line\nnext\t//\b\f\r");
  EXPECT_EQ(labels.at("u"), "\u00e9\u4e2d\U0001F600");
  EXPECT_EQ(labels.at("raw"), labels.at("u"));
  EXPECT_EQ(labels.at("nul"), std::string("a\0b", 3));
  EXPECT_EQ(labels.at("key"), "escaped key");
  EXPECT_EQ(labels.at("empty"), "");
}

TEST(QueryAnswerScanner, SampleValuesReadAsStrtodReadsThem) {
  auto body_with = [](const char* value) {
    return std::string(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,")") + value +
           R"("]}]}})";
  };
  for (const char* value : {"0", "-0", "1e+06", "1E-5", "123456789012345678901234567890", "0.1", "2.2250738585072011e-308",
                            "4.9e-324", "1e-400", "NaN", "+Inf", "-Inf", "+5", ".5", "5.", "1.7976931348623157e308",
                            "9007199254740993"})
    ExpectScannedAsByEvents(body_with(value));
  // Not what Prometheus writes (an overflow, another spelling of NaN/Inf, spaces, trailing text, hex,
  // nothing): the scanner declines them and the tree reader's error names the value.
  for (const char* value : {"1e400", "-1e400", "nan", "inf", " 12", "12abc", "0x1p4", ""}) {
    EXPECT_FALSE(Scan(body_with(value)).has_value()) << value;
    EXPECT_FALSE(ParseSampleValueText(value).has_value()) << value;
  }
  // Decimals around 2^53 and of up to 23 fraction digits, and 2,000 at random, as values and times.
  std::vector<std::string> decimals = {"9007199254740992.5", "900719925474099.3", "9007199254740993.1", "0.1234567890123456789012",
                                       "0.12345678901234567890123", "1771491260.333", "-0.000", "123456789.000000001"};
  std::mt19937_64 random(36);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t digits = random() >> (random() % 64);
    std::string text = std::to_string(digits);
    const size_t point = random() % (text.size() + 1);   // digits after it; none: no point
    if (point > 0) text.insert(text.size() - point, ".");
    if (text.front() == '.') text.insert(0, "0");
    if (random() % 2) text.insert(0, "-");
    decimals.push_back(text);
  }
  for (const std::string& decimal : decimals) {
    const std::string time = std::fabs(std::strtod(decimal.c_str(), nullptr)) < 9e18 ? decimal : "1";
    ExpectScannedAsByEvents(R"({"status":"success","data":{"resultType":"vector","result":[{"value":[)" + time + ",\"" + decimal + "\"]}]}}");
  }
  // Numbers where strings are expected, integers and floats as times, -0 as an integer (+0).
  for (const char* pair : {"[1,2]", "[1.5,-2.25]", "[-0,1]", "[-0.0,1]", "[0,1e3]", "[9.1e18,1]", "[12345678901234,\"1\"]"}) {
    ExpectScannedAsByEvents(std::string(R"({"status":"success","data":{"resultType":"vector","result":[{"value":)") + pair + "}]}}");
  }
  EXPECT_TRUE(std::signbit(Scan(R"({"status":"success","data":{"resultType":"vector","result":[{"value":[-0.0,"1"]}]}})")->result->series[0].samples[0].t));
  EXPECT_FALSE(std::signbit(Scan(R"({"status":"success","data":{"resultType":"vector","result":[{"value":[-0,"1"]}]}})")->result->series[0].samples[0].t));
}

TEST(QueryAnswerScanner, DeclinesWhatItWouldHaveToInterpret) {
  const std::string ok_result = R"("result":[{"metric":{},"value":[1,"1"]}])";
  for (const std::string& body : std::vector<std::string>{
           R"({"status":"error","errorType":"bad_data","error":"parse error"})",
           R"({"status":"success","errorType":"x","data":{"resultType":"vector",)" + ok_result + "}}",
           R"({"status":"success","data":{"resultType":"scalar","result":[1,"2"]}})",
           R"({"status":"success","data":{"resultType":"string","result":[1,"a"]}})",
           R"({"status":"success","status":"success","data":{"resultType":"vector",)" + ok_result + "}}",
           R"({"status":"success","data":{"resultType":"vector","resultType":"vector",)" + ok_result + "}}",
           R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"],"value":[2,"2"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"],"values":[[2,"2"]]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":[],"value":[1,"1"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"h":1},"value":[1,"1"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,null]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1",2]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"value":["1","1"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1e19,"1"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"value":[99999999999999999999,"1"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[1]}})",
           R"({"status":"success","data":{"resultType":"vector","result":{}}})",
           R"({"status":"success","data":{"resultType":"vector"}})",
           R"({"status":"success","data":[]})",
           R"({"data":{"resultType":"vector","result":[]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[]},"warnings":[1]})",
           R"({"status":"success","data":{"resultType":"vector","result":[]},"warnings":{}})",
           R"({"status":"success","data":{"resultType":"vector","result":[],"stats":{"samples":{"totalQueryableSamples":"1"}}}})",
           // Not JSON, or JSON the general reader accepts only through rules of its own (a BOM).
           "", "[]", "\xEF\xBB\xBF{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
           R"({"status":"success","data":{"resultType":"vector","result":[]}} x)",
           R"({"status":"success","data":{"resultType":"vector","result":[],}})",
           R"({"status":"success","data":{"resultType":"vector","result":[]})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"value":[01,"1"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1.,"1"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[]},"x":tru})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"h":"\ud800"},"value":[1,"1"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"h":"\udc00"},"value":[1,"1"]}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"h":"\x"},"value":[1,"1"]}]}})",
           "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"h\":\"a\nb\"},\"value\":[1,\"1\"]}]}}",
           "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"h\":\"\xC0\xAF\"},\"value\":[1,\"1\"]}]}}",
           "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"h\":\"\xED\xA0\x80\"},\"value\":[1,\"1\"]}]}}",
           "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"h\":\"\xE4\xB8\"},\"value\":[1,\"1\"]}]}}",
       }) {
    EXPECT_FALSE(Scan(body).has_value()) << body;
  }
}

TEST(QueryAnswerScanner, NestingBeyondItsDepthIsLeftToTheGeneralReader) {
  auto nested = [](int depth) {
    return R"({"status":"success","data":{"resultType":"vector","result":[]},"x":)" + std::string(depth, '[') +
           std::string(depth, ']') + "}";
  };
  EXPECT_TRUE(Scan(nested(kMaxScannedDepth)).has_value());
  EXPECT_FALSE(Scan(nested(kMaxScannedDepth + 1)).has_value());
  EXPECT_TRUE(ParseQueryAnswer(nested(kMaxScannedDepth + 1)).result.ok());
}

TEST(QueryAnswerScanner, LimitsAndTheDeadlineAreNamedByTheGeneralReader) {
  EXPECT_TRUE(Scan(kMatrix, 2, 5).has_value());
  EXPECT_FALSE(Scan(kMatrix, 1, 5).has_value());
  EXPECT_FALSE(Scan(kMatrix, 2, 4).has_value());
  {
    ScopedLimit series(LimitId::kHttpSeriesPerQuery, 1);
    const StreamedQueryAnswer answer = ParseQueryAnswer(kMatrix);
    EXPECT_EQ(answer.result.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(answer.result.status().message().find("more than 1 series"), std::string::npos) << answer.result.status().message();
  }
  {
    ScopedLimit points(LimitId::kHttpPointsPerQuery, 4);
    const StreamedQueryAnswer answer = ParseQueryAnswer(kMatrix);
    EXPECT_EQ(answer.result.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(answer.result.status().message().find("more than 4 points"), std::string::npos) << answer.result.status().message();
  }
  // A long answer whose deadline has passed: the scanner stops at its first look at the clock.
  std::string big = R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[)";
  for (int i = 0; i < 10000; ++i) big += (i ? "," : "") + std::string("[") + std::to_string(i) + ",\"1\"]";
  big += "]}]}}";
  const auto passed = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  EXPECT_FALSE(ScanQueryAnswer(big, kNoLimit, kNoLimit, passed).has_value());
  EXPECT_EQ(ParseQueryAnswer(big, passed).result.status().code(), StatusCode::kDeadlineExceeded);
  ExpectScannedAsByEvents(big);
}

// Every body one edit away from a real answer (a byte changed, dropped or repeated) is either
// declined or read to the bit as the general reader reads it.
TEST(QueryAnswerScanner, OneEditFromARealAnswerIsDeclinedOrReadAsTheGeneralReaderReadsIt) {
  const std::string base =
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"x","host":"a\"b\u00e9"},)"
      R"("values":[[1771491200,"1.5"],[1771491215.25,"-0"],[1771491230,"NaN"]]},{"metric":{},"values":[]}],)"
      R"("stats":{"samples":{"totalQueryableSamples":7}}},"warnings":["w"]})";
  const std::string alphabet = "{}[]\",:\\0123456789.-+eEtrufalsn \x80\xC3\xA9u";
  std::mt19937 random(36);
  int scanned = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string body = base;
    const size_t at = random() % body.size();
    switch (random() % 3) {
      case 0: body[at] = alphabet[random() % alphabet.size()]; break;
      case 1: body.erase(at, 1); break;
      default: body.insert(at, 1, body[at]); break;
    }
    const ::testing::AssertionResult same = SameAsByEvents(body);
    ASSERT_TRUE(same) << "round " << round;
    if (std::string(same.message()) == "scanned") ++scanned;
  }
  EXPECT_GT(scanned, 1000);   // the edits inside strings and numbers that keep it an answer
}

}  // namespace
}  // namespace diagnose
