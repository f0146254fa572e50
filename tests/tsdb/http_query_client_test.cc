#include "engine/tsdb/http_query_client.h"

#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <tuple>

#include <gtest/gtest.h>

#include "engine/core/limits.h"
#include "tests/support/fake_http_server.h"

namespace diagnose {
namespace {

using testing::FakeHttpServer;
using testing::FakeRequest;
using testing::FakeResponse;
using testing::FormValue;

std::string Body(const FakeRequest& r) {
  const size_t q = r.target.find('?');
  return r.method == "POST" ? r.body : (q == std::string::npos ? "" : r.target.substr(q + 1));
}

std::unique_ptr<HttpQueryClient> Client(const std::string& url, RemoteEndpointOptions options = {}) {
  options.url = url;
  if (options.retry_backoff_seconds == 0.2) options.retry_backoff_seconds = 0.01;
  auto client = HttpQueryClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(client).value();
}

TEST(HttpQueryClientTest, DecodesVectorWithSpecialValuesAndSendsExplicitTime) {
  FakeHttpServer server([](const FakeRequest&) {
    return FakeResponse{200, R"({"status":"success","data":{"resultType":"vector","result":[
      {"metric":{"host":"a"},"value":[1771891200.5,"NaN"]},
      {"metric":{"host":"b"},"value":[1771891200.5,"+Inf"]},
      {"metric":{"host":"c"},"value":[1771891200.5,"42.25"]}]}})"};
  });
  auto client = Client(server.url());
  auto r = client->Run(Query::Instant("max by (host) (hw_gpu_power_watts)", 1771891200.5));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->series.size(), 3u);
  EXPECT_TRUE(std::isnan(r->series[0].samples[0].v));
  EXPECT_TRUE(std::isinf(r->series[1].samples[0].v));
  EXPECT_EQ(r->series[2].samples[0].v, 42.25);
  EXPECT_EQ(r->series[2].labels.at("host"), "c");
  EXPECT_EQ(r->attempts, 1);
  auto got = server.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].method, "POST");
  EXPECT_EQ(got[0].target, "/api/v1/query");
  EXPECT_EQ(FormValue(got[0].body, "query"), "max by (host) (hw_gpu_power_watts)");
  EXPECT_EQ(FormValue(got[0].body, "time"), "1771891200.500");
}

TEST(HttpQueryClientTest, RangeStepIsClampedBelowElevenThousandPoints) {
  FakeHttpServer server([](const FakeRequest&) {
    return FakeResponse{200, R"({"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{},"values":[[1,"1"],[2,"2"]]}]}})"};
  });
  auto client = Client(server.url());
  const double start = 1771891200, end = start + 7 * 86400;  // a week at 1 s would be 604,800 points
  auto r = client->Run(Query::Range("up", start, end, 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->effective_step, std::ceil((end - start) / 11000));
  EXPECT_LE((end - start) / r->effective_step, 11000);
  EXPECT_EQ(r->series[0].samples.size(), 2u);
  auto body = server.received()[0].body;
  EXPECT_EQ(FormValue(body, "step"), "55.000");
  EXPECT_EQ(FormValue(body, "start"), "1771891200.000");
  EXPECT_EQ(ClampRangeStep(0, 100, 15), 15);
}

TEST(HttpQueryClientTest, BadDataIsTypedCarriesQueryAndEndpointAndIsNotRetried) {
  FakeHttpServer server([](const FakeRequest&) {
    return FakeResponse{400, R"({"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:14: parse error: unexpected \"(\""})"};
  });
  auto client = Client(server.url());
  auto r = client->Run(Query::Instant("sum by (host (up)", 100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("sum by (host (up)"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(server.url() + "/api/v1/query"), std::string::npos);
  EXPECT_NE(r.status().message().find("parse error"), std::string::npos);
  EXPECT_EQ(server.requests(), 1);
}

TEST(HttpQueryClientTest, ExecutionErrorIsNotRetried) {
  FakeHttpServer server([](const FakeRequest&) {
    return FakeResponse{422, R"({"status":"error","errorType":"execution","error":"vector cannot contain metrics with the same labelset"})"};
  });
  auto r = Client(server.url())->Run(Query::Instant("rate(x[5m])", 100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("same labelset"), std::string::npos);
  EXPECT_EQ(server.requests(), 1);
}

TEST(HttpQueryClientTest, ServiceUnavailableIsRetriedBoundedly) {
  FakeHttpServer server([](const FakeRequest&) { return FakeResponse{503, "Service Unavailable", "text/plain"}; });
  RemoteEndpointOptions options;
  options.max_retries = 3;
  auto r = Client(server.url(), options)->Run(Query::Instant("up", 100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("4 attempts"), std::string::npos) << r.status().message();
  EXPECT_EQ(server.requests(), 4);
}

TEST(HttpQueryClientTest, TransientFailureRecoversOnRetry) {
  std::atomic<int> n{0};
  FakeHttpServer server([&](const FakeRequest&) {
    if (n++ == 0) return FakeResponse{503, R"({"status":"error","errorType":"unavailable","error":"busy"})"};
    return FakeResponse{200, R"({"status":"success","data":{"resultType":"scalar","result":[5,"7"]}})"};
  });
  auto r = Client(server.url())->Run(Query::Instant("scalar(up)", 5));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(r->series[0].samples[0].v, 7);
}

TEST(HttpQueryClientTest, GarbageBodyIsParseErrorNamingTheEndpoint) {
  FakeHttpServer server([](const FakeRequest&) { return FakeResponse{200, "<html>login</html>", "text/html"}; });
  auto r = Client(server.url())->Run(Query::Instant("up", 100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kParse);
  EXPECT_NE(r.status().message().find(server.url()), std::string::npos);
  EXPECT_NE(r.status().message().find("<html>login"), std::string::npos);
  EXPECT_EQ(server.requests(), 1);
}

TEST(HttpQueryClientTest, AnAnswerPastTheResponseLimitIsCutOffAndNamesTheLimit) {
  const std::string big = R"({"status":"success","data":{"resultType":"vector","result":[)" +
                          std::string(200000, ' ') + "]}}";
  FakeHttpServer server([&](const FakeRequest&) { return FakeResponse{200, big}; });
  ScopedLimit limit(LimitId::kHttpResponseBytes, 64 * 1024);
  auto r = Client(server.url())->Run(Query::Instant("up", 100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("http.response_bytes (64 KiB"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("--limit http.response_bytes=N"), std::string::npos);
  EXPECT_NE(r.status().message().find(server.url()), std::string::npos) << "names the endpoint";
  EXPECT_EQ(server.requests(), 1) << "a limit is not retried";
}

TEST(HttpQueryClientTest, MalformedEnvelopeDataIsParseError) {
  FakeHttpServer server([](const FakeRequest&) {
    return FakeResponse{200, R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":"x"}]}})"};
  });
  auto r = Client(server.url())->Run(Query::Instant("up", 100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kParse);
  EXPECT_NE(r.status().message().find("`up`"), std::string::npos);
}

// Prometheus answers a range query with a matrix and an instant query with a vector, a matrix (a
// range selector) or a scalar (a scalar expression); a string, or a vector or scalar to a range
// query, is from something else. (The scalar's labelless series is never excluded: LanguageTest.)
TEST(HttpQueryClientTest, AnAnswerOfAnotherTypeThanTheQueryAsksIsAParseErrorNamingIt) {
  std::string body;
  FakeHttpServer server([&](const FakeRequest&) { return FakeResponse{200, body}; });
  auto client = Client(server.url());
  const Query instant = Query::Instant("up", 100);
  const Query range = Query::Range("up", 100, 200, 10);
  const std::string vector = R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"host":"a"},"value":[100,"1"]}]}})";
  const std::string matrix = R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"host":"a"},"values":[[100,"1"]]}]}})";
  const std::string scalar = R"({"status":"success","data":{"resultType":"scalar","result":[100,"2"]}})";
  const std::string string = R"({"status":"success","data":{"resultType":"string","result":[100,"x"]}})";
  for (const auto& [query, answer, accepted] : std::vector<std::tuple<Query, std::string, bool>>{
           {instant, vector, true}, {range, matrix, true}, {instant, scalar, true}, {instant, string, false},
           {instant, matrix, true}, {range, vector, false}, {range, scalar, false}}) {
    body = answer;
    auto r = client->Run(query);
    EXPECT_EQ(r.ok(), accepted) << answer;
    if (accepted) continue;
    EXPECT_EQ(r.status().code(), StatusCode::kParse) << answer;
    EXPECT_NE(r.status().message().find("`up`"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(server.url()), std::string::npos) << r.status().message();
  }
}

// strtod read "abc" as 0, "12abc" as 12, "0x10" as 16 and "1e400" as +Inf (a proxy's "1e400"
// excluded all 24 hosts of a job): a value Prometheus cannot have written is refused, by name.
TEST(HttpQueryClientTest, ASampleValuePrometheusCannotHaveWrittenIsAParseErrorNamingIt) {
  std::string value;
  FakeHttpServer server([&](const FakeRequest& req) {
    const bool range = req.target.find("query_range") != std::string::npos;
    return FakeResponse{200, range ? R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"host":"a"},"values":[[100,"1"],[110,")" + value + R"("]]}]}})"
                                   : R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"host":"a"},"value":[100,")" + value + R"("]}]}})"};
  });
  auto client = Client(server.url());
  for (const char* bad : {"abc", "12abc", "0x10", "1e400", "-1e400", "", " 1", "1 ", "inf", "nan", "1e", "."}) {
    value = bad;
    for (const Query& query : {Query::Instant("up", 100), Query::Range("up", 100, 200, 10)}) {
      auto r = client->Run(query);
      ASSERT_FALSE(r.ok()) << "'" << bad << "'";
      EXPECT_EQ(r.status().code(), StatusCode::kParse) << r.status().message();
      EXPECT_NE(r.status().message().find("\"" + std::string(bad) + "\" is not a number"), std::string::npos)
          << r.status().message();
      EXPECT_NE(r.status().message().find(server.url()), std::string::npos) << r.status().message();
    }
  }
  for (const auto& [good, read] : std::vector<std::pair<std::string, double>>{
           {"1", 1}, {"-2.5", -2.5}, {"+3", 3}, {"1e3", 1000}, {"1.5E-2", 0.015}, {".5", 0.5}, {"1e-400", 0}}) {
    value = good;
    auto r = client->Run(Query::Instant("up", 100));
    ASSERT_TRUE(r.ok()) << good << ": " << r.status().message();
    EXPECT_EQ(r->series.at(0).samples.at(0).v, read) << good;
  }
}

// 5,000 warnings with each answer became a 234 MB report: an answer keeps its first
// kMaxWarningsPerAnswer distinct ones and says how many more there were.
TEST(HttpQueryClientTest, AnAnswerKeepsItsFirstDistinctWarningsAndCountsTheRest) {
  std::string warnings;
  for (int i = 0; i < 5000; ++i) warnings += (i ? ",\"" : "\"") + std::string("store ") + std::to_string(i % 2500) + " unavailable\"";
  warnings += ",\"" + std::string(10000, 'x') + "\"";
  FakeHttpServer server([&](const FakeRequest&) {
    return FakeResponse{200, R"({"status":"success","warnings":[)" + warnings + R"(],"data":{"resultType":"vector","result":[]}})"};
  });
  auto r = Client(server.url())->Run(Query::Instant("up", 100));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->warnings.size(), kMaxWarningsPerAnswer + 1);
  EXPECT_EQ(r->warnings[0], "store 0 unavailable");
  EXPECT_EQ(r->warnings[kMaxWarningsPerAnswer - 1], "store 9 unavailable");
  // 2,500 distinct store warnings and the long one, less the ten kept.
  EXPECT_EQ(r->warnings.back(), "... 2491 more warnings left out");
}

// fopen of a FIFO with no writer blocked Create forever, whatever --deadline said.
TEST(HttpQueryClientTest, ACaFileThatIsNotARegularFileIsRefusedWithoutOpeningIt) {
  char dir_template[] = "/tmp/cacert-fifo-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string fifo = std::string(dir_template) + "/ca.pem";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  RemoteEndpointOptions options;
  options.url = "https://127.0.0.1:1";
  options.ca_file = fifo;
  auto client = HttpQueryClient::Create(options);
  ::unlink(fifo.c_str());
  ::rmdir(dir_template);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(client.status().message().find(fifo + " is a FIFO"), std::string::npos) << client.status().message();
  EXPECT_NE(client.status().message().find("https://127.0.0.1:1"), std::string::npos) << client.status().message();
}

// Each answer under http.response_bytes, but eight at once (compressed, inflating to 250 MiB each)
// held 3 GiB: a batch's bodies may hold twice the limit at once, and one past that is refused by name.
TEST(HttpQueryClientTest, TheAnswersOfABatchHeldAtOnceStayWithinTwiceTheResponseLimit) {
  ScopedLimit response_bytes(LimitId::kHttpResponseBytes, 1 << 20);
  // "warnings":[1] sends the answer down the tree path, whose body is kept until the batch ends:
  // the bodies add up whatever order they arrive in.
  const std::string body = R"({"status":"success","warnings":[1],"data":{"resultType":"vector","result":[]},"pad":")" +
                           std::string(700 << 10, 'x') + R"("})";
  FakeHttpServer server([&](const FakeRequest&) { return FakeResponse{200, body}; });
  auto client = Client(server.url());
  std::vector<Query> queries;
  for (int i = 0; i < 6; ++i) queries.push_back(Query::Instant("up" + std::to_string(i), 100));
  int answered = 0, refused = 0;
  for (const auto& r : client->RunBatch(queries)) {
    if (r.ok()) {
      ++answered;
      continue;
    }
    ++refused;
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().message();
    EXPECT_NE(r.status().message().find("answers held at once (twice the limit, 2 MiB"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(server.url()), std::string::npos) << r.status().message();
  }
  EXPECT_GE(answered, 1);
  EXPECT_GE(refused, 3) << "six answers of 700 KiB (1 MiB by capacity) cannot all be held within 2 MiB";
  // A lone answer of the same size is read: the budget bounds a batch, not one answer.
  EXPECT_TRUE(client->Run(Query::Instant("up", 100)).ok());
}

TEST(HttpQueryClientTest, PlainText404SuggestsThePrefix) {
  FakeHttpServer server([](const FakeRequest&) { return FakeResponse{404, "404 page not found", "text/plain"}; });
  auto r = Client(server.url())->Run(Query::Instant("up", 100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("prefix"), std::string::npos);
}

TEST(HttpQueryClientTest, StallPastTheTimeoutIsDeadlineExceededAndRetried) {
  FakeHttpServer server([](const FakeRequest&) {
    FakeResponse r{200, R"({"status":"success","data":{"resultType":"vector","result":[]}})"};
    r.stall = std::chrono::milliseconds(1500);
    return r;
  });
  RemoteEndpointOptions options;
  options.timeout_seconds = 0.2;
  options.max_retries = 1;
  auto r = Client(server.url(), options)->Run(Query::Instant("up", 100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("`up`"), std::string::npos);
  EXPECT_EQ(server.requests(), 2);
}

TEST(HttpQueryClientTest, ConnectionRefusedIsUnavailable) {
  int port;
  { FakeHttpServer gone([](const FakeRequest&) { return FakeResponse{}; }); port = gone.port(); }
  RemoteEndpointOptions options;
  options.max_retries = 1;
  auto r = Client("http://127.0.0.1:" + std::to_string(port), options)->Run(Query::Instant("up", 100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("2 attempts"), std::string::npos) << r.status().message();
}

TEST(HttpQueryClientTest, PrefixHeadersTenantAndThanosWarnings) {
  FakeHttpServer server([](const FakeRequest&) {
    return FakeResponse{200, R"({"status":"success","warnings":["store 10.0.0.1:10901 unavailable"],
      "data":{"resultType":"vector","result":[]}})"};
  });
  RemoteEndpointOptions options;
  options.path_prefix = "/select/0/prometheus";
  options.headers["Authorization"] = "Bearer s3cret";
  options.tenant = "team-a";
  options.thanos = true;
  auto client = Client(server.url(), options);
  EXPECT_EQ(client->Describe(), server.url() + "/select/0/prometheus");
  auto r = client->Run(Query::Instant("up", 100));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("unavailable"), std::string::npos);
  auto got = server.received()[0];
  EXPECT_EQ(got.target, "/select/0/prometheus/api/v1/query");
  EXPECT_EQ(FormValue(got.body, "partial_response"), "false");
  auto has = [&](const std::string& h) { return std::find(got.headers.begin(), got.headers.end(), h) != got.headers.end(); };
  EXPECT_TRUE(has("Authorization: Bearer s3cret"));
  EXPECT_TRUE(has("X-Scope-OrgID: team-a"));
}

// A CR or LF in the tenant or a header value would end the header and start one the user never
// wrote: refused like a bad --header, before anything is sent, naming what was given.
TEST(HttpQueryClientTest, ATenantOrHeaderThatWouldInjectAHeaderIsRefused) {
  FakeHttpServer server([](const FakeRequest&) {
    return FakeResponse{200, R"({"status":"success","data":{"resultType":"vector","result":[]}})"};
  });
  RemoteEndpointOptions tenant, value, name, tab;
  tenant.tenant = "t1\r\nInjected: yes";
  value.headers["X-A"] = "a\nInjected: yes";
  name.headers["X A"] = "a";
  tab.headers["X-A"] = "a\tb";   // a tab is allowed in a field value
  tab.tenant = "team-a";
  for (auto* options : {&tenant, &value, &name}) {
    options->url = server.url();
    auto client = HttpQueryClient::Create(*options);
    ASSERT_FALSE(client.ok());
    EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(client.status().message().find('\n'), std::string::npos) << client.status().message();
    EXPECT_EQ(client.status().message().find('\r'), std::string::npos) << client.status().message();
  }
  EXPECT_NE(CheckRequestHeaders(tenant).message().find("--tenant"), std::string::npos) << CheckRequestHeaders(tenant).message();
  EXPECT_TRUE(CheckRequestHeaders(tab).ok()) << CheckRequestHeaders(tab).message();
  EXPECT_EQ(server.requests(), 0);
}

// Credentials in the URL authenticate every request (Basic, as curl sends them from a URL) while
// the URL the client names in its messages and requests carries none.
TEST(HttpQueryClientTest, UrlCredentialsAuthenticateButAreNeverNamed) {
  FakeHttpServer server([](const FakeRequest&) {
    return FakeResponse{503, "down", "text/plain"};
  });
  const std::string url = "http://us%40er:s3cr%3At@127.0.0.1:" + std::to_string(server.port());
  RemoteEndpointOptions options;
  options.max_retries = 0;
  auto client = Client(url, options);
  EXPECT_EQ(client->Describe(), server.url());
  auto r = client->Run(Query::Instant("up", 100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("s3cr"), std::string::npos) << r.status().message();
  ASSERT_EQ(server.received().size(), 1u);
  const std::vector<std::string> headers = server.received()[0].headers;
  // base64("us@er:s3cr:t")
  EXPECT_NE(std::find(headers.begin(), headers.end(), "Authorization: Basic dXNAZXI6czNjcjp0"), headers.end())
      << ::testing::PrintToString(headers);
}

TEST(HttpQueryClientTest, CompressedAnswersAreAskedForOnlyWhenWanted) {
  FakeHttpServer server([](const FakeRequest&) {
    return FakeResponse{200, R"({"status":"success","data":{"resultType":"vector","result":[]}})"};
  });
  auto accept_encoding = [](const FakeRequest& request) {
    for (const auto& h : request.headers)
      if (strncasecmp(h.c_str(), "Accept-Encoding:", 16) == 0) return h.substr(16);
    return std::string();
  };
  for (const bool compressed : {true, false}) {
    RemoteEndpointOptions options;
    options.compressed_answers = compressed;
    auto client = Client(server.url(), options);
    ASSERT_TRUE(client->Run(Query::Instant("up", 100)).ok());
    const std::string asked = accept_encoding(server.received().back());
    if (compressed) {
      EXPECT_NE(asked.find("gzip"), std::string::npos) << asked;
    } else {
      EXPECT_EQ(asked, "") << asked;
    }
  }
  // Unsaid, an endpoint on this host (a live job's Prometheus on 127.0.0.1) is not asked to compress.
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    SCOPED_TRACE(host);
    auto local = Client("http://" + host + ":" + std::to_string(server.port()));
    ASSERT_TRUE(local->Run(Query::Instant("up", 100)).ok());
    EXPECT_EQ(accept_encoding(server.received().back()), "");
  }
}

TEST(HttpQueryClientTest, QueryStatisticsAreAskedForAndTheSamplesReadTotalled) {
  FakeHttpServer server([](const FakeRequest& request) {
    const bool stats = FormValue(request.body, "stats") == "all";
    const bool range = request.target.find("query_range") != std::string::npos;
    return FakeResponse{200, std::string(R"({"status":"success","data":{"resultType":")") + (range ? "matrix" : "vector") +
                                 R"(","result":[])" +
                                 (stats ? R"(,"stats":{"samples":{"totalQueryableSamples":250}})" : "") + "}}"};
  });
  RemoteEndpointOptions plain;
  auto without = Client(server.url(), plain);
  ASSERT_TRUE(without->Run(Query::Instant("up", 100)).ok());
  EXPECT_EQ(FormValue(server.received().back().body, "stats"), "");
  EXPECT_EQ(without->samples_read(), 0);
  RemoteEndpointOptions with_stats;
  with_stats.query_stats = true;
  auto client = Client(server.url(), with_stats);
  auto results = client->RunBatch({Query::Instant("up", 100), Query::Range("up", 0, 600, 60)});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].ok() && results[1].ok());
  EXPECT_EQ(client->samples_read(), 500);
}

TEST(HttpQueryClientTest, PrefixAlreadyInUrlIsNotDoubled) {
  RemoteEndpointOptions options;
  options.url = "https://mimir.example/prometheus/";
  options.path_prefix = "prometheus";
  auto client = HttpQueryClient::Create(options);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->base_url(), "https://mimir.example/prometheus");
}

TEST(HttpQueryClientTest, InvalidOptionsAreRejected) {
  RemoteEndpointOptions options;
  options.url = "mimir:9009";
  EXPECT_EQ(HttpQueryClient::Create(options).status().code(), StatusCode::kInvalidArgument);
  options.url = "http://x";
  options.headers["Bad\nName"] = "v";
  EXPECT_EQ(HttpQueryClient::Create(options).status().code(), StatusCode::kInvalidArgument);
  options.headers.clear();
  options.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(HttpQueryClient::Create(options).status().code(), StatusCode::kNotFound);
}

// Each request takes 100 ms to answer; how many were being answered at once is kept.
struct SlowAnswers {
  std::atomic<int> in_flight{0}, max_in_flight{0};
  void Answer() {
    int now = ++in_flight;
    int prev = max_in_flight.load();
    while (now > prev && !max_in_flight.compare_exchange_weak(prev, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    --in_flight;
  }
};

TEST(HttpQueryClientTest, BatchRunsConcurrentlyBoundedAndKeepsOrder) {
  SlowAnswers slow;
  FakeHttpServer server([&](const FakeRequest& req) {
    slow.Answer();
    const std::string q = FormValue(req.body, "query");
    return FakeResponse{200, R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"q":")" + q +
                                 R"("},"value":[1,"1"]}]}})"};
  });
  RemoteEndpointOptions options;
  options.max_parallel = 4;
  auto client = Client(server.url(), options);
  std::vector<Query> queries;
  for (int i = 0; i < 12; ++i) queries.push_back(Query::Instant("q" + std::to_string(i), 1, "id" + std::to_string(i)));
  queries.push_back(Query::Range("bad", 10, 5, 1));  // invalid: ends before it starts
  auto results = client->RunBatch(queries);
  ASSERT_EQ(results.size(), 13u);
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status().ToString();
    EXPECT_EQ(results[i]->series[0].labels.at("q"), "q" + std::to_string(i));
    EXPECT_GT(results[i]->elapsed_seconds, 0);
  }
  EXPECT_EQ(results[12].status().code(), StatusCode::kInvalidArgument);
  EXPECT_GT(slow.max_in_flight.load(), 1);
  EXPECT_LE(slow.max_in_flight.load(), 4);
}

// Split range pieces carry the plan's estimate: no more of it in flight than the bound (one heavy
// request at a time here, a lone one whatever its estimate), while unestimated requests go beside them.
TEST(HttpQueryClientTest, EstimatedSamplesInFlightStayWithinTheBound) {
  SlowAnswers heavy, all;
  FakeHttpServer server([&](const FakeRequest& req) {
    const std::string q = FormValue(req.body, "query");
    if (q.rfind("heavy", 0) == 0) heavy.Answer();
    else all.Answer();
    return FakeResponse{200, R"({"status":"success","data":{"resultType":"vector","result":[]}})"};
  });
  RemoteEndpointOptions options;
  options.max_parallel = 8;
  options.max_estimated_samples_in_flight = 3'000'000;
  auto client = Client(server.url(), options);
  std::vector<Query> queries;
  for (int i = 0; i < 3; ++i) {
    queries.push_back(Query::Instant("heavy" + std::to_string(i), 1));
    queries.back().estimated_samples = 2'000'000;
  }
  queries.push_back(Query::Instant("heavy-alone", 1));
  queries.back().estimated_samples = 5'000'000;   // past the bound alone: sent when nothing else is
  for (int i = 0; i < 4; ++i) queries.push_back(Query::Instant("light" + std::to_string(i), 1));
  auto results = client->RunBatch(queries);
  for (const auto& r : results) EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(heavy.max_in_flight.load(), 1);
  EXPECT_GT(all.max_in_flight.load(), 1);
  EXPECT_EQ(server.requests(), 8);
}

// Discovery's label-value questions go out together: each answer waits 100 ms here, and the batch
// overlaps them while keeping every answer (and every failure) in its question's place.
TEST(HttpQueryClientTest, LabelValuesBatchRunsConcurrentlyAndKeepsOrder) {
  SlowAnswers slow;
  FakeHttpServer server([&](const FakeRequest& req) {
    slow.Answer();
    const size_t begin = std::string("/api/v1/label/").size();
    const std::string label = req.target.substr(begin, req.target.find("/values") - begin);
    if (label == "broken") return FakeResponse{400, R"({"status":"error","errorType":"bad_data","error":"no"})"};
    return FakeResponse{200, R"({"status":"success","data":[")" + label + R"(",")" + FormValue(Body(req), "match[]") + R"("]})"};
  });
  RemoteEndpointOptions options;
  options.max_parallel = 3;
  auto client = Client(server.url(), options);
  std::vector<LabelValuesQuestion> questions;
  for (int i = 0; i < 6; ++i) questions.push_back({"label" + std::to_string(i), {"m" + std::to_string(i)}, 10, 20});
  questions.insert(questions.begin() + 2, LabelValuesQuestion{"broken", {}, 10, 20});
  auto answers = client->LabelValuesBatch(questions);
  ASSERT_EQ(answers.size(), 7u);
  EXPECT_EQ(answers[2].status().code(), StatusCode::kInvalidArgument) << answers[2].status().ToString();
  for (size_t i = 0; i < answers.size(); ++i) {
    if (i == 2) continue;
    ASSERT_TRUE(answers[i].ok()) << answers[i].status().ToString();
    EXPECT_EQ(*answers[i], (std::vector<std::string>{questions[i].label, questions[i].matchers.front()}));
  }
  EXPECT_EQ(server.received().size(), 7u);
  EXPECT_GT(slow.max_in_flight.load(), 1);
  EXPECT_LE(slow.max_in_flight.load(), 3);
}

// A batch's series look-ups for estimates (range_split.h) go out together, two at a time, and are
// counted, each in its question's place; one without a matcher is refused without a request.
TEST(HttpQueryClientTest, SeriesCountsForEstimateRunConcurrentlyAndKeepOrder) {
  SlowAnswers slow;
  FakeHttpServer server([&](const FakeRequest& req) {
    slow.Answer();
    const std::string matcher = FormValue(Body(req), "match[]");
    if (matcher == "broken") return FakeResponse{400, R"({"status":"error","errorType":"bad_data","error":"no"})"};
    std::string data;
    for (int i = 0; i < std::stoi(matcher.substr(1)); ++i) data += std::string(i ? "," : "") + R"({"i":")" + std::to_string(i) + R"("})";
    return FakeResponse{200, R"({"status":"success","data":[)" + data + "]}"};
  });
  RemoteEndpointOptions options;
  options.max_parallel = 3;
  auto client = Client(server.url(), options);
  std::vector<SeriesQuestion> questions;
  for (int i = 0; i < 6; ++i) questions.push_back({{"m" + std::to_string(i * 7)}, 10, 20});
  questions.insert(questions.begin() + 2, SeriesQuestion{{"broken"}, 10, 20});
  questions.push_back(SeriesQuestion{{}, 10, 20});
  auto counts = client->SeriesCountsForEstimate(questions);
  ASSERT_EQ(counts.size(), 8u);
  EXPECT_EQ(counts[2].status().code(), StatusCode::kInvalidArgument) << counts[2].status().ToString();
  EXPECT_EQ(counts[7].status().code(), StatusCode::kInvalidArgument);
  for (size_t i = 0; i < 7; ++i) {
    if (i == 2) continue;
    ASSERT_TRUE(counts[i].ok()) << counts[i].status().ToString();
    EXPECT_EQ(*counts[i], std::stoi(questions[i].matchers.front().substr(1)));
  }
  EXPECT_EQ(server.received().size(), 7u);
  EXPECT_EQ(FormValue(Body(server.received()[0]), "end"), "20.000");
  EXPECT_EQ(slow.max_in_flight.load(), 2) << "two at a time: they cost the server CPU, not waiting";
}

TEST(HttpQueryClientTest, LabelValuesAndSeriesSendMatchersAndRange) {
  FakeHttpServer server([](const FakeRequest& req) {
    if (req.target.find("/api/v1/label/") == 0) {
      return FakeResponse{200, R"({"status":"success","data":["chi2822","chi2823"]})"};
    }
    return FakeResponse{200, R"({"status":"success","data":[{"__name__":"up","instance":"chi2822:55080"}]})"};
  });
  auto client = Client(server.url());
  auto values = client->LabelValues("host", {"hw_gpu_power_watts"}, 10, 20);
  ASSERT_TRUE(values.ok()) << values.status().ToString();
  EXPECT_EQ(*values, (std::vector<std::string>{"chi2822", "chi2823"}));
  auto series = client->SeriesMatching({R"(up{job="ray"})"}, 10, 20);
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  EXPECT_EQ((*series)[0].at("instance"), "chi2822:55080");
  auto got = server.received();
  EXPECT_EQ(got[0].method, "GET");
  EXPECT_EQ(FormValue(Body(got[0]), "match[]"), "hw_gpu_power_watts");
  EXPECT_EQ(FormValue(Body(got[0]), "start"), "10.000");
  EXPECT_EQ(FormValue(Body(got[1]), "match[]"), R"(up{job="ray"})");
  EXPECT_EQ(FormValue(Body(got[1]), "end"), "20.000");
}

// An answer that arrives just before the run's deadline is not read past it: parsing 10^6 label
// values takes most of a second here and minutes for the answers a 10^6-series store gives.
TEST(HttpQueryClientTest, AnAnswerArrivingAtTheDeadlineIsNotReadPastIt) {
  ScopedLimit values(LimitId::kHttpSeriesPerQuery, 2000000);
  std::string huge = R"({"status":"success","data":[)";
  for (int i = 0; i < 1000000; ++i) huge += (i ? ",\"host-" : "\"host-") + std::to_string(i) + "\"";
  huge += "]}";
  FakeHttpServer server([&](const FakeRequest&) {
    FakeResponse r{200, huge};
    r.stall = std::chrono::milliseconds(250);
    return r;
  });
  RemoteEndpointOptions options;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  auto client = Client(server.url(), options);
  auto values_of = client->LabelValues("host", {}, 0, 60);
  ASSERT_FALSE(values_of.ok()) << values_of->size() << " values read past the deadline";
  EXPECT_EQ(values_of.status().code(), StatusCode::kDeadlineExceeded) << values_of.status().ToString();
  EXPECT_NE(values_of.status().message().find("deadline"), std::string::npos) << values_of.status().message();
}

// A label-values answer longer than http.series_per_query is refused while it is read, naming the
// limit and how to raise it.
TEST(HttpQueryClientTest, ALabelValuesAnswerPastTheSeriesLimitNamesIt) {
  ScopedLimit values(LimitId::kHttpSeriesPerQuery, 100);
  std::string body = R"({"status":"success","data":[)";
  for (int i = 0; i < 1000; ++i) body += (i ? ",\"h" : "\"h") + std::to_string(i) + "\"";
  body += "]}";
  FakeHttpServer server([&](const FakeRequest&) { return FakeResponse{200, body}; });
  auto client = Client(server.url());
  auto r = client->LabelValues("host", {}, 0, 60);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("--limit http.series_per_query="), std::string::npos) << r.status().message();
}

// A server answering /api/v1/status/buildinfo with `buildinfo` (and `status`), counting the asks.
struct BuildInfoServer {
  explicit BuildInfoServer(std::string buildinfo, int status = 200, std::string content_type = "application/json")
      : server([this, buildinfo, status, content_type](const FakeRequest& r) {
          if (r.target.rfind("/api/v1/status/buildinfo", 0) == 0) {
            ++asked;
            return FakeResponse{status, buildinfo, content_type};
          }
          return FakeResponse{404, "404 page not found\n", "text/plain"};
        }) {}
  std::atomic<int> asked{0};
  FakeHttpServer server;
};

std::unique_ptr<HttpQueryClient> IdentifyingClient(const std::string& url, RemoteEndpointOptions options = {}) {
  options.identify_prometheus = true;
  return Client(url, options);
}

constexpr const char* kPrometheus242BuildInfo =
    R"({"status":"success","data":{"version":"2.42.0","revision":"225c61122d88b01d1f0eaaee0e05b6f3e0567ac0",)"
    R"("branch":"HEAD","buildUser":"root@c67d48967507","buildDate":"20230201-07:53:32","goVersion":"go1.19.5"}})";

TEST(HttpQueryClientIdentity, AVerifiedPrometheusHasItsAnswersComposed) {
  BuildInfoServer prometheus(kPrometheus242BuildInfo);
  auto client = IdentifyingClient(prometheus.server.url());
  EXPECT_TRUE(client->EvaluatesPromql()) << client->composition_note();
  EXPECT_EQ(prometheus.asked.load(), 1);
  EXPECT_NE(client->composition_note().find("Prometheus 2.42.0"), std::string::npos) << client->composition_note();
  EXPECT_NE(client->composition_note().find("--ask-as-written"), std::string::npos) << client->composition_note();
}

TEST(HttpQueryClientIdentity, EverythingElseIsAskedAsWrittenWithTheReason) {
  const std::vector<std::tuple<std::string, int, std::string, std::string>> endpoints{
      {"VictoriaMetrics 1.79", 200, R"({"status":"success","data":{}})", "lacks Prometheus' field"},
      {"VictoriaMetrics 1.96+", 200, R"({"status":"success","data":{"version":"2.24.0"}})", "lacks Prometheus' field"},
      {"Mimir", 200,
       R"({"status":"success","data":{"application":"Grafana Mimir","version":"2.10.0","revision":"a","branch":"b",)"
       R"("buildUser":"","buildDate":"","goVersion":"go1.21","features":{}}})",
       "a field Prometheus does not send"},
      {"Thanos", 200,
       R"({"status":"success","data":{"version":"0.32.5","revision":"a","branch":"b","buildUser":"c","buildDate":"d",)"
       R"("goVersion":"go1.21"}})",
       "names release 0.32.5, not a Prometheus release"},
      {"a later Prometheus", 200,
       R"({"status":"success","data":{"version":"2.53.0","revision":"a","branch":"b","buildUser":"c","buildDate":"d",)"
       R"("goVersion":"go1.22"}})",
       "names release 2.53.0, not a Prometheus release"},
      {"an old server", 404, "404 page not found\n", "HTTP 404"},
      {"a proxy's error page", 502, "<html>Bad Gateway</html>", "HTTP 502"},
      {"garbage", 200, "\x01\x02{{{not json", "not Prometheus"},
  };
  for (const auto& [who, status, body, why] : endpoints) {
    SCOPED_TRACE(who);
    BuildInfoServer server(body, status);
    auto client = IdentifyingClient(server.server.url());
    EXPECT_FALSE(client->EvaluatesPromql());
    EXPECT_EQ(server.asked.load(), 1);
    EXPECT_NE(client->composition_note().find("as written"), std::string::npos) << client->composition_note();
    EXPECT_NE(client->composition_note().find(why), std::string::npos) << client->composition_note();
  }
}

TEST(HttpQueryClientIdentity, AnEndpointThatDoesNotAnswerIsNotWaitedForLong) {
  FakeHttpServer silent([](const FakeRequest&) {
    return FakeResponse{200, "", "application/json", std::chrono::milliseconds(1500)};
  });
  RemoteEndpointOptions options;
  options.timeout_seconds = 0.3;
  auto client = IdentifyingClient(silent.url(), options);
  EXPECT_FALSE(client->EvaluatesPromql());
  EXPECT_NE(client->composition_note().find("could not be read"), std::string::npos) << client->composition_note();
}

TEST(HttpQueryClientIdentity, FleetBackendsAndTheFlagAreNeverAsked) {
  RemoteEndpointOptions thanos, tenant, as_written;
  thanos.thanos = true;
  tenant.tenant = "team-a";
  as_written.ask_as_written = true;
  for (const auto& [flag, options] : std::vector<std::pair<std::string, RemoteEndpointOptions>>{
           {"--thanos", thanos}, {"--tenant", tenant}, {"--ask-as-written", as_written}}) {
    SCOPED_TRACE(flag);
    BuildInfoServer prometheus(kPrometheus242BuildInfo);
    auto client = IdentifyingClient(prometheus.server.url(), options);
    EXPECT_FALSE(client->EvaluatesPromql());
    EXPECT_EQ(prometheus.asked.load(), 0);
    EXPECT_NE(client->composition_note().find(flag), std::string::npos) << client->composition_note();
  }
  // Without identify_prometheus (fleet stores, the alert watcher's own client) nothing is asked.
  BuildInfoServer prometheus(kPrometheus242BuildInfo);
  auto plain = Client(prometheus.server.url());
  EXPECT_FALSE(plain->EvaluatesPromql());
  EXPECT_EQ(prometheus.asked.load(), 0);
  EXPECT_EQ(plain->composition_note(), "");
}

TEST(HttpQueryClientIdentity, AskAsWrittenOverridesEvenAKnownPrometheus) {
  RemoteEndpointOptions options;
  options.is_prometheus = true;
  auto known = Client("http://127.0.0.1:9", options);
  EXPECT_TRUE(known->EvaluatesPromql());
  options.ask_as_written = true;
  EXPECT_FALSE(Client("http://127.0.0.1:9", options)->EvaluatesPromql());
}

}  // namespace
}  // namespace diagnose
