// `diagnose explain` is byte-identical across runs and matches its golden files.
// Regenerate with DIAGNOSE_UPDATE_GOLDEN=1 after an intended change, then review the diff.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/support/cli.h"
#include "tests/support/golden.h"

namespace diagnose {
namespace {

const std::string kSourceDir = DIAGNOSE_SOURCE_DIR;

std::string Explain(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"explain", kSourceDir + "/playbooks/examples/retry-exhaustion.yaml"};
  args.insert(args.end(), extra.begin(), extra.end());
  const testing::CliRun r = testing::RunDiagnoseCli(args, std::chrono::milliseconds(30000));
  EXPECT_EQ(r.exit_code, 0) << r.Printed();
  return r.Printed();
}

void CheckGolden(const std::string& name, const std::string& actual) {
  const std::string path = kSourceDir + "/tests/cli/golden/" + name;
  if (testing::CheckGoldenFile(path, actual, "explain output") == testing::GoldenOutcome::kUpdated)
    GTEST_SKIP() << "updated " << path;
}

TEST(ExplainGoldenTest, CompiledFormIsDeterministic) {
  std::string first = Explain({});
  EXPECT_EQ(first, Explain({}));
  EXPECT_NE(first.find("\"edges\""), std::string::npos);
  CheckGolden("explain_retry_exhaustion.json", first);
}

TEST(ExplainGoldenTest, ResolvedPromqlWithFacts) {
  std::vector<std::string> args = {"--facts", kSourceDir + "/tests/playbook/testdata/explain_facts.json", "--discovery",
                                   kSourceDir + "/tests/playbook/testdata/explain_discovery.json"};
  std::string first = Explain(args);
  EXPECT_EQ(first, Explain(args));
  EXPECT_NE(first.find("max_over_time(hw_rdma_req_tx_retry_excd_err_total[2m])"), std::string::npos) << first;
  CheckGolden("explain_retry_exhaustion_resolved.json", first);
}

}  // namespace
}  // namespace diagnose
