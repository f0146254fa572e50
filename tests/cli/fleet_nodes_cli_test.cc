// `diagnose fleet nodes` prints the fleet store's diagnose_host_verdict label values (host, job id,
// reason, root cause): a store anyone's job can write to. Adversarial test 17 (defect 10) put an
// OSC title, a clear screen and a newline forging a line in every one of them; they reached the
// terminal raw.
#include <algorithm>
#include <ctime>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/fake_http_server.h"
#include "tests/support/fixture_reports.h"

namespace diagnose::e2e {
namespace {

using nlohmann::json;

TEST(FleetNodesCli, StoredLabelValuesArePrintedVisiblyNeverObeyed) {
  const std::string hostile = "\x1b]0;owned\x07\x1b[2J\xc2\x9b" "31m\nFORGED LINE";
  const double when = static_cast<double>(std::time(nullptr) - 3600);
  json result = json::array();
  result.push_back({{"metric",
                     {{"__name__", "diagnose_host_verdict"}, {"host", "chi2815" + hostile}, {"slurm_job_id", "8308" + hostile},
                      {"state", "excluded"}, {"reason", "r" + hostile}, {"findings", "f"},
                      {"root_cause", "rdma-link-degradation" + hostile}, {"priority", "1"}}},
                    {"value", {when, "1"}}});
  result.push_back({{"metric",
                     {{"__name__", "diagnose_host_verdict"}, {"host", "chi2816" + hostile}, {"slurm_job_id", "8309"},
                      {"state", "clean"}, {"reason", ""}, {"findings", ""}, {"root_cause", "none"}, {"priority", "0"}}},
                    {"value", {when, "1"}}});
  const std::string vector =
      json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}}.dump();
  testing::FakeHttpServer server([&](const testing::FakeRequest& request) {
    testing::FakeResponse response;
    response.body = request.target.find("buildinfo") != std::string::npos
                        ? R"({"status":"success","data":{"version":"2.42.0","revision":"x","branch":"x",)"
                          R"("buildUser":"x","buildDate":"x","goVersion":"go1.19"}})"
                        : vector;
    return response;
  });
  const CliRun run = RunDiagnoseCli({"fleet", "nodes", "--prometheus", server.url()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("chi2815\\x1b]0;owned\\x07\\x1b[2J\\u009b31m\\nFORGED LINE"), std::string::npos) << run.out;
  for (const char control : {'\x1b', '\x07'})
    EXPECT_EQ(run.out.find(control), std::string::npos) << "control " << int(control) << " in:\n" << run.out;
  EXPECT_EQ(run.out.find("\xc2\x9b"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("\nFORGED LINE"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace diagnose::e2e
