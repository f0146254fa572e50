// `diagnose 8043 --prometheus https://...` against a real Prometheus serving a copy of the job's
// TSDB over TLS with basic auth: with --cacert (or --insecure) and the right Authorization header
// it reaches the same decision as the private server; a wrong CA, an expired certificate, a wrong
// or missing password and http:// to the TLS port each give the documented "diagnosis incomplete"
// (exit 3, decision none) with one line on stderr naming the endpoint and the cause.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/fake_http_server.h"
#include "tests/support/fixture_reports.h"
#include "tests/support/tls_prometheus.h"

namespace diagnose::e2e {
namespace {

using nlohmann::json;

CliRun Diagnose(const std::string& url, std::vector<std::string> flags) {
  std::vector<std::string> args = {"8043", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json",
                                   "--prometheus", url};
  args.insert(args.end(), flags.begin(), flags.end());
  return RunDiagnoseCli(args);
}

// Exit 3 with a report that acts on nothing, and one line on stderr naming `url` and saying `what`.
void ExpectIncomplete(const CliRun& run, const std::string& url, const std::string& what) {
  EXPECT_EQ(run.exit_code, kIncompleteExit) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find("diagnosis incomplete"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(url), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(what), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("attempts"), std::string::npos) << "retried: " << run.err;
  const json report = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << run.out.substr(0, 300);
  EXPECT_EQ(report["tsdb"][0]["state"], "failed");
  EXPECT_EQ(report["decision"]["action"], "none");
}

TEST(TlsAuthCli, HttpsWithCaAndCredentialsDecidesAsThePrivateServerAndEveryRefusalIsOneLine) {
  if (const std::string missing = testing::TlsToolsMissing(); !missing.empty()) GTEST_SKIP() << missing;
  REQUIRE_FIXTURE("8043");
  auto bed = testing::TlsTestBed::Create();
  ASSERT_TRUE(bed.ok()) << bed.status().ToString();
  const testing::TestPki& pki = (*bed)->pki();
  auto served = (*bed)->StartServer(pki.server_cert, FixtureJobDir("8043") + "/prometheus");
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  const std::string url = *served;
  const std::string auth = "Authorization: " + (*bed)->authorization();
  const std::string secret = (*bed)->authorization().substr(std::string("Basic ").size());

  const json private_run = DiagnoseFixtureJson({"8043"});
  ASSERT_EQ(private_run["decision"]["action"], "retry-with-changes");
  for (const auto& flags : std::vector<std::vector<std::string>>{{"--cacert", pki.ca_cert, "--header", auth},
                                                                 {"--insecure", "--header", auth}}) {
    SCOPED_TRACE(flags[0]);
    const CliRun run = Diagnose(url, flags);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.err, "");
    const json report = json::parse(run.out, nullptr, false);
    ASSERT_TRUE(report.is_object());
    EXPECT_EQ(report["tsdb"][0]["state"], "remote");
    EXPECT_EQ(report["tsdb"][0]["source"], url);
    EXPECT_EQ(report["verdict"]["root_cause"], private_run["verdict"]["root_cause"]);
    EXPECT_EQ(report["decision"]["action"], private_run["decision"]["action"]);
    EXPECT_EQ(report["decision"]["changes"], private_run["decision"]["changes"]);
    EXPECT_EQ(ExcludedHosts(report), ExcludedHosts(private_run));
    // The metrics were read: the power finding that rules out a collective hang is there.
    EXPECT_NE(report["decision"].dump().find("kept drawing training-level power"), std::string::npos)
        << Dump(report["decision"]);
    EXPECT_EQ(run.out.find(secret), std::string::npos) << "the credentials leaked into the report";
  }

  const std::string wrong_auth = "Authorization: " + (*bed)->wrong_authorization();
  {
    SCOPED_TRACE("wrong CA");
    ExpectIncomplete(Diagnose(url, {"--cacert", pki.other_ca_cert, "--header", auth}), url,
                     "the TLS certificate of " + url + " could not be verified");
  }
  {
    SCOPED_TRACE("wrong password");
    const CliRun run = Diagnose(url, {"--cacert", pki.ca_cert, "--header", wrong_auth});
    ExpectIncomplete(run, url, "HTTP 401 unauthorized");
    EXPECT_EQ(run.err.find(wrong_auth.substr(std::string("Authorization: Basic ").size())), std::string::npos);
  }
  {
    SCOPED_TRACE("no Authorization");
    ExpectIncomplete(Diagnose(url, {"--cacert", pki.ca_cert}), url, "no Authorization header was sent");
  }
  {
    SCOPED_TRACE("http:// to the TLS port");
    const std::string http = "http://" + url.substr(std::string("https://").size());
    ExpectIncomplete(Diagnose(http, {"--header", auth}), http, "speaks HTTPS, not plain HTTP");
  }
  {
    SCOPED_TRACE("expired certificate");
    auto expired = (*bed)->StartServer(pki.expired_cert);
    ASSERT_TRUE(expired.ok()) << expired.status().ToString();
    ExpectIncomplete(Diagnose(*expired, {"--cacert", pki.ca_cert, "--header", auth}), *expired,
                     "the TLS certificate of " + *expired + " has expired");
  }
}

// A password in --prometheus authenticates every request but is never shown: the report, every
// not_evaluated entry and the stderr line name the endpoint as user:***@host.
TEST(TlsAuthCli, APasswordInTheUrlAuthenticatesButIsNeverShown) {
  REQUIRE_FIXTURE("8308");
  testing::FakeHttpServer server([](const testing::FakeRequest&) { return testing::FakeResponse{503, "down", "text/plain"}; });
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  for (const char* format : {"json", "text", "html"}) {
    SCOPED_TRACE(format);
    const CliRun run = RunDiagnoseCli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", format,
                                       "--prometheus", "http://user:s3cret@" + host});
    EXPECT_EQ(run.exit_code, kIncompleteExit) << run.err;
    EXPECT_EQ(run.Printed().find("s3cret"), std::string::npos) << "the password leaked";
    EXPECT_NE(run.err.find("user:***@" + host), std::string::npos) << run.err;
    if (std::string(format) == "json") {
      const json report = json::parse(run.out, nullptr, false);
      ASSERT_TRUE(report.is_object());
      EXPECT_EQ(report["tsdb"][0]["source"], "http://user:***@" + host);
    }
  }
  ASSERT_FALSE(server.received().empty());
  const std::vector<std::string> headers = server.received().front().headers;
  EXPECT_NE(std::find(headers.begin(), headers.end(), "Authorization: Basic dXNlcjpzM2NyZXQ="), headers.end())
      << "the URL's credentials were not sent";
}

// A CR or LF in --tenant or a --header value would add a header of the value's choosing to every
// request: a usage error (exit 2) naming it, for diagnose and the fleet commands alike, and nothing sent.
TEST(TlsAuthCli, AHeaderOrTenantThatWouldInjectAHeaderIsAUsageError) {
  testing::FakeHttpServer server([](const testing::FakeRequest&) { return testing::FakeResponse{}; });
  const std::string outputs = DIAGNOSE_FIXTURE_OUTPUTS;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"8308", "--outputs", outputs, "--prometheus", server.url(), "--tenant", "t1\r\nInjected: yes"},
           {"8308", "--outputs", outputs, "--prometheus", server.url(), "--header", "X-A: a\r\nInjected: yes"},
           {"8308", "--outputs", outputs, "--prometheus", server.url(), "--header", "X A: a"},
           {"fleet", "nodes", "--prometheus", server.url(), "--tenant", "t1\nInjected: yes"}}) {
    SCOPED_TRACE(args[args.size() - 2]);
    const CliRun run = RunDiagnoseCli(args);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_NE(run.err.find(args[args.size() - 2] == "--tenant" ? "--tenant" : "--header"), std::string::npos)
        << run.err;
    // A refused value is never echoed: it is often a credential.
    EXPECT_EQ(run.err.find("Injected"), std::string::npos) << run.err;
    EXPECT_EQ(run.out, "");
  }
  EXPECT_EQ(server.requests(), 0);
}

}  // namespace
}  // namespace diagnose::e2e
