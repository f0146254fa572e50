// `diagnose explain PLAYBOOK JOB`: the job's facts and TSDB discovery resolve every query's PromQL
// and window, deterministically.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/fixture_reports.h"

namespace diagnose {
namespace {

TEST(ExplainJobTest, ResolvesQueriesAgainstTheJobAndIsByteIdentical) {
  REQUIRE_FIXTURE("8308");
  const std::vector<std::string> args{"explain", "rdma-phase-correlation", "8308", "--outputs",
                                      DIAGNOSE_FIXTURE_OUTPUTS};
  e2e::CliRun first = e2e::RunDiagnoseCli(args);
  e2e::CliRun second = e2e::RunDiagnoseCli(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, second.out);
  auto explained = nlohmann::json::parse(first.out, nullptr, false);
  ASSERT_FALSE(explained.is_discarded());
  int resolved_queries = 0;
  for (const auto& node : explained["nodes"]) {
    if (!node.contains("resolved") || !node["resolved"].contains("query")) continue;
    ++resolved_queries;
    const auto& query = node["resolved"]["query"].get_ref<const std::string&>();
    EXPECT_EQ(query.find("{{"), std::string::npos) << "unresolved template in " << node["id"];
    ASSERT_TRUE(node["resolved"].contains("window")) << node["id"];
    // Instant queries are evaluated over [t, t].
    EXPECT_LE(node["resolved"]["window"]["start"].get<double>(), node["resolved"]["window"]["end"].get<double>());
  }
  EXPECT_GT(resolved_queries, 0);
}

TEST(ExplainJobTest, UnknownJobIsOneClearError) {
  e2e::CliRun run = e2e::RunDiagnoseCli({"explain", "rdma-phase-correlation", "424242", "--outputs",
                                         DIAGNOSE_FIXTURE_OUTPUTS});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_TRUE(run.out.empty());
  EXPECT_NE(run.err.find("424242"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace diagnose
