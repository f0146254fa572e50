// End-to-end checks of the health, hang, OOM, hardware, checkpoint and observability playbooks on the
// generated fixtures (fixtures/outputs, made by fixturegen; tests skip when they are absent):
// `diagnose JOB --format json`, contract JSON only. The decision's action may be adjusted by the
// sweep layer, so these assert the verdict and the playbooks' own findings.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/fixture_reports.h"

namespace diagnose {
namespace {

using nlohmann::json;

using e2e::DiagnoseFixtureJson;

using e2e::Dump;



const std::set<std::string> kHealthPlaybooks = {
    "rccl-hang", "host-oom", "gpu-hardware", "thermal-throttle", "gpu-health", "network-health",
    "training-stability", "checkpoint-interference", "observability-gaps"};

std::vector<std::string> FiredHealthFindings(const json& report) {
  std::vector<std::string> out;
  for (const auto& f : report["findings"])
    if (kHealthPlaybooks.count(f.value("playbook", "")) && f.value("status", "") == "fired")
      out.push_back(f.value("id", ""));
  return out;
}

TEST(HealthPlaybookFixtures, RcclHangIsABusyWaitRetriedOnTheSameNodes) {
  REQUIRE_FIXTURE("7877");
  json r = DiagnoseFixtureJson({"7877"});
  EXPECT_EQ(r["verdict"]["root_cause"], "rccl-hang") << Dump(r);
  EXPECT_EQ(r["verdict"]["confidence"], "confirmed");
  EXPECT_EQ(r["decision"]["action"], "retry-same-nodes");
  EXPECT_TRUE(e2e::ExcludedHosts(r).empty()) << Dump(r["decision"]);
  const json* hang = e2e::FindingById(r, "rccl-hang/busy_wait_hang");
  ASSERT_NE(hang, nullptr) << Dump(r);
  EXPECT_EQ((*hang)["status"], "fired");
  EXPECT_EQ((*hang)["hosts"].size(), 24u);
  EXPECT_EQ(e2e::StatusOfFinding(r, "rccl-hang/node_death"), "clear") << Dump(r);
  EXPECT_EQ(FiredHealthFindings(r), std::vector<std::string>{"rccl-hang/busy_wait_hang"});
}

TEST(HealthPlaybookFixtures, HealthyJobWithCheckpointsFiresNothing) {
  REQUIRE_FIXTURE("8400");
  json r = DiagnoseFixtureJson({"8400"});
  EXPECT_EQ(r["verdict"]["root_cause"], "none") << Dump(r);
  EXPECT_EQ(r["decision"]["action"], "none");
  EXPECT_TRUE(FiredHealthFindings(r).empty()) << json(FiredHealthFindings(r)).dump();
  EXPECT_EQ(e2e::StatusOfFinding(r, "checkpoint-interference/checkpoint_schedule"), "clear") << Dump(r);
}

TEST(HealthPlaybookFixtures, HeartbeatKillWhileTrainingIsNotAHang) {
  REQUIRE_FIXTURE("8043");
  json r = DiagnoseFixtureJson({"8043"});
  EXPECT_NE(r["verdict"]["root_cause"], "rccl-hang") << Dump(r);
  EXPECT_EQ(e2e::StatusOfFinding(r, "rccl-hang/busy_wait_hang"), "clear") << Dump(r);
}

TEST(HealthPlaybookFixtures, HostOomFromTheLogAlone) {
  REQUIRE_FIXTURE("9019");
  json r = DiagnoseFixtureJson({"9019"});
  EXPECT_EQ(r["verdict"]["root_cause"], "host-oom") << Dump(r);
  const json* oom = e2e::FindingById(r, "host-oom/log_only_oom");
  ASSERT_NE(oom, nullptr) << Dump(r);
  EXPECT_EQ((*oom)["status"], "fired");
  EXPECT_EQ((*oom)["hosts"], json::array({"node02"}));
}

TEST(HealthPlaybookFixtures, CheckpointFilesystemErrorWithTheCheckpointIntact) {
  REQUIRE_FIXTURE("9028");
  json r = DiagnoseFixtureJson({"9028"});
  EXPECT_EQ(r["verdict"]["root_cause"], "checkpoint-io-stall") << Dump(r);
  EXPECT_EQ(e2e::StatusOfFinding(r, "checkpoint-interference/fs_error_checkpoint_intact"), "fired") << Dump(r);
  EXPECT_EQ(e2e::StatusOfFinding(r, "checkpoint-interference/fs_error_checkpoint_lost"), "clear") << Dump(r);
}

TEST(HealthPlaybookFixtures, RuntimeAbortOnOneHostIsAHardwareFault) {
  REQUIRE_FIXTURE("9042");
  json r = DiagnoseFixtureJson({"9042"});
  EXPECT_EQ(r["verdict"]["root_cause"], "gpu-hardware-fault") << Dump(r);
  const json* abort = e2e::FindingById(r, "gpu-hardware/log_only_abort");
  ASSERT_NE(abort, nullptr) << Dump(r);
  EXPECT_EQ((*abort)["status"], "fired");
  EXPECT_EQ((*abort)["hosts"], json::array({"node03"}));
}

}  // namespace
}  // namespace diagnose
