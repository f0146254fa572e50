// TLS and basic auth against a real Prometheus 2.42 (--web.config.file), through the real
// HttpQueryClient: the right CA and credentials work, --insecure works (and skips only the
// certificate check), and a wrong CA, an expired certificate, a wrong or missing password, http://
// to the TLS port and https:// to a plain port each fail at once, in one line naming the endpoint,
// never falling back to plain HTTP. Certificates are made at test time with `openssl`.
#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "engine/tsdb/http_query_client.h"
#include "tests/support/tls_prometheus.h"

namespace diagnose {
namespace {

using testing::TlsTestBed;

enum class Server { kValid, kExpired, kPlain };

// One test bed per suite, each server started the first time a test asks for it. The bed (and
// its servers) goes when the suite ends: other suites of the same process check that they leave no
// prometheus child behind, and would see these.
class TlsAuth : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    urls_.clear();
    bed_.reset();
  }

  static TlsTestBed& Bed() {
    if (!bed_) {
      auto created = TlsTestBed::Create();
      if (!created.ok()) throw std::runtime_error("no TLS test bed: " + created.status().ToString());
      bed_ = std::move(created).value();
    }
    return *bed_;
  }

  static std::string Url(Server which) {
    if (!urls_.count(which)) {
      const std::string cert = which == Server::kValid     ? Bed().pki().server_cert
                               : which == Server::kExpired ? Bed().pki().expired_cert
                                                           : "";
      auto url = Bed().StartServer(cert);
      if (!url.ok()) throw std::runtime_error(url.status().ToString());
      urls_[which] = *url;
    }
    return urls_[which];
  }

 private:
  static inline std::unique_ptr<TlsTestBed> bed_;
  static inline std::map<Server, std::string> urls_;
};

#define REQUIRE_TLS_TOOLS()                                                     \
  if (const std::string missing = testing::TlsToolsMissing(); !missing.empty()) \
  GTEST_SKIP() << missing

struct Credentials {
  std::string ca_file;
  bool insecure = false;
  std::string authorization;   // empty: no Authorization header
};

std::unique_ptr<HttpQueryClient> Connect(const std::string& url, const Credentials& c) {
  RemoteEndpointOptions options;
  options.url = url;
  options.ca_file = c.ca_file;
  options.insecure_skip_verify = c.insecure;
  if (!c.authorization.empty()) options.headers["Authorization"] = c.authorization;
  options.timeout_seconds = 10;
  options.max_retries = 2;   // the default: a refusal must not use them
  auto client = HttpQueryClient::Create(options, "endpoint " + url);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

constexpr double kTime = 1771891200;   // any explicit time: vector(1) needs no data

// vector(1) through `c`; the status of the first failure.
Status AskVectorOne(const std::string& url, const Credentials& c) {
  auto client = Connect(url, c);
  if (!client) return InternalError("no client");
  auto result = client->Run(Query::Instant("vector(1)", kTime));
  if (!result.ok()) return result.status();
  EXPECT_EQ(result->attempts, 1);
  if (result->series.size() != 1 || result->series[0].samples.size() != 1 ||
      result->series[0].samples[0].v != 1) {
    return InternalError("vector(1) answered something else");
  }
  auto names = client->LabelValues("__name__", {}, kTime - 3600, kTime);
  return names.ok() ? Status::Ok() : names.status();
}

// A refusal: one line naming the endpoint, saying `what`, asked once (not retried).
void ExpectRefused(const Status& status, StatusCode code, const std::string& url, const std::string& what) {
  ASSERT_FALSE(status.ok()) << "expected a refusal saying '" << what << "' from " << url;
  const std::string& m = status.message();
  EXPECT_EQ(status.code(), code) << m;
  EXPECT_NE(m.find(url), std::string::npos) << "does not name the endpoint: " << m;
  EXPECT_NE(m.find(what), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << "more than one line: " << m;
  EXPECT_EQ(m.find("attempts"), std::string::npos) << "retried: " << m;
}

TEST_F(TlsAuth, TheRightCaAndCredentialsAreAnswered) {
  REQUIRE_TLS_TOOLS();
  const std::string url = Url(Server::kValid);
  ASSERT_EQ(url.rfind("https://127.0.0.1:", 0), 0u) << url;
  const Status ok = AskVectorOne(url, {Bed().pki().ca_cert, false, Bed().authorization()});
  EXPECT_TRUE(ok.ok()) << ok.ToString();
}

TEST_F(TlsAuth, InsecureSkipsTheCertificateCheckButNotTheCredentials) {
  REQUIRE_TLS_TOOLS();
  const std::string url = Url(Server::kValid);
  // No CA at all, and a CA that did not sign it: both accepted with --insecure.
  const Status no_ca = AskVectorOne(url, {"", true, Bed().authorization()});
  EXPECT_TRUE(no_ca.ok()) << no_ca.ToString();
  const Status other_ca = AskVectorOne(url, {Bed().pki().other_ca_cert, true, Bed().authorization()});
  EXPECT_TRUE(other_ca.ok()) << other_ca.ToString();
  ExpectRefused(AskVectorOne(url, {"", true, ""}), StatusCode::kPermissionDenied, url, "HTTP 401 unauthorized");
}

TEST_F(TlsAuth, ACertificateNoTrustedCaSignedIsNotVerified) {
  REQUIRE_TLS_TOOLS();
  const std::string url = Url(Server::kValid);
  // An unrelated CA, and the system's CAs (no --cacert): neither signed the test CA.
  for (const std::string& ca : {Bed().pki().other_ca_cert, std::string()}) {
    SCOPED_TRACE(ca.empty() ? "system CAs" : ca);
    const auto started = std::chrono::steady_clock::now();
    const Status status = AskVectorOne(url, {ca, false, Bed().authorization()});
    ExpectRefused(status, StatusCode::kFailedPrecondition, url, "could not be verified");
    EXPECT_NE(status.message().find("unable to get local issuer certificate"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("--cacert"), std::string::npos) << status.message();
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  }
}

TEST_F(TlsAuth, AnExpiredCertificateSaysExpired) {
  REQUIRE_TLS_TOOLS();
  const std::string url = Url(Server::kExpired);
  const Status status = AskVectorOne(url, {Bed().pki().ca_cert, false, Bed().authorization()});
  ExpectRefused(status, StatusCode::kFailedPrecondition, url, "has expired");
  EXPECT_NE(status.message().find("SSL certificate problem: certificate has expired"), std::string::npos)
      << status.message();
  // --insecure is the deliberate way past it.
  const Status insecure = AskVectorOne(url, {"", true, Bed().authorization()});
  EXPECT_TRUE(insecure.ok()) << insecure.ToString();
}

TEST_F(TlsAuth, AWrongOrMissingPasswordIsOne401) {
  REQUIRE_TLS_TOOLS();
  const std::string url = Url(Server::kValid);
  const std::string ca = Bed().pki().ca_cert;
  const auto started = std::chrono::steady_clock::now();
  const Status wrong = AskVectorOne(url, {ca, false, Bed().wrong_authorization()});
  ExpectRefused(wrong, StatusCode::kPermissionDenied, url, "HTTP 401 unauthorized");
  EXPECT_NE(wrong.message().find("refused the Authorization header"), std::string::npos) << wrong.message();
  const Status none = AskVectorOne(url, {ca, false, ""});
  ExpectRefused(none, StatusCode::kPermissionDenied, url, "HTTP 401 unauthorized");
  EXPECT_NE(none.message().find("no Authorization header was sent"), std::string::npos) << none.message();
  // Retries back off 0.2 s, 0.4 s: two refusals answered at once take far less.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(500));
  // A bearer token is refused the same way by a basic-auth server.
  ExpectRefused(AskVectorOne(url, {ca, false, "Bearer abc"}), StatusCode::kPermissionDenied, url, "HTTP 401");
}

TEST_F(TlsAuth, PlainHttpToTheTlsPortFailsClearly) {
  REQUIRE_TLS_TOOLS();
  const std::string https = Url(Server::kValid);
  const std::string http = "http://" + https.substr(std::string("https://").size());
  ExpectRefused(AskVectorOne(http, {Bed().pki().ca_cert, false, Bed().authorization()}),
                StatusCode::kFailedPrecondition, http, "speaks HTTPS, not plain HTTP: use https://");
}

TEST_F(TlsAuth, HttpsNeverFallsBackToPlainHttp) {
  REQUIRE_TLS_TOOLS();
  // The same server without TLS answers plain HTTP...
  const std::string http = Url(Server::kPlain);
  ASSERT_EQ(http.rfind("http://127.0.0.1:", 0), 0u) << http;
  const Status plain = AskVectorOne(http, {"", false, Bed().authorization()});
  ASSERT_TRUE(plain.ok()) << plain.ToString();
  // ...and https:// to it is a failed handshake, with or without verification, never an answer.
  const std::string https = "https://" + http.substr(std::string("http://").size());
  for (bool insecure : {false, true}) {
    SCOPED_TRACE(insecure ? "--insecure" : "--cacert");
    ExpectRefused(AskVectorOne(https, {insecure ? "" : Bed().pki().ca_cert, insecure, Bed().authorization()}),
                  StatusCode::kFailedPrecondition, https, "TLS handshake with " + https + " failed");
  }
}

}  // namespace
}  // namespace diagnose
