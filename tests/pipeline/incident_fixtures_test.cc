// End-to-end acceptance of the four incident playbooks: `diagnose JOB --format json` on the generated
// incident fixtures (fixtures/outputs, made by fixturegen; tests skip when they are absent) must
// reach the published conclusions. Checks the contract JSON only, as a sweep driver would.
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


TEST(IncidentFixtures, RdmaPhasesExcludeExactlyTheBadHosts) {
  REQUIRE_FIXTURE("8308");
  json r = DiagnoseFixtureJson({"8308"});
  EXPECT_EQ(r["verdict"]["root_cause"], "rdma-link-degradation") << Dump(r);
  EXPECT_EQ(r["decision"]["action"], "retry-excluding-nodes");
  EXPECT_EQ(e2e::ExcludedHosts(r), (std::set<std::string>{"chi2822", "chi2834", "chi2835", "chi2882"})) << Dump(r["decision"]);
  for (const auto& e : r["decision"]["exclude"]) {
    EXPECT_GE(e["priority"].get<int>(), 1);
    EXPECT_LE(e["priority"].get<int>(), 3);
    EXPECT_NE(e["reason"].get<std::string>().find("TGS phase steps"), std::string::npos) << e.dump();
  }
  // The TCP-only decoy is named in the notes and never excluded.
  bool noted = false;
  for (const auto& n : r["decision"]["notes"]) noted |= n.get<std::string>().find("chi2860") != std::string::npos;
  EXPECT_TRUE(noted) << Dump(r["decision"]);
  EXPECT_EQ(e2e::StatusOfFinding(r, "rdma-phase-correlation/recovery"), "fired") << Dump(r);
}

TEST(IncidentFixtures, HealthyRerunIsNone) {
  REQUIRE_FIXTURE("8309");
  json r = DiagnoseFixtureJson({"8309"});
  EXPECT_EQ(r["verdict"]["root_cause"], "none") << Dump(r);
  EXPECT_EQ(r["decision"]["action"], "none");
  EXPECT_TRUE(e2e::ExcludedHosts(r).empty());
}

TEST(IncidentFixtures, HeartbeatFalsePositiveWithNeighbourAndTimeoutChange) {
  REQUIRE_FIXTURE("8043");
  json r = DiagnoseFixtureJson({"8043"});
  EXPECT_EQ(r["verdict"]["root_cause"], "heartbeat-false-positive") << Dump(r);
  EXPECT_EQ(r["decision"]["action"], "retry-with-changes");
  EXPECT_EQ(r["decision"]["changes"]["jax_distributed_heartbeat_timeout_seconds"], "14400");
  const json* accused = e2e::FindingById(r, "heartbeat-false-positive/accused");
  ASSERT_NE(accused, nullptr);
  EXPECT_EQ((*accused)["hosts"], json::array({"chi2853", "chi2875"}));
  const json* neighbour = e2e::FindingById(r, "heartbeat-false-positive/neighbour");
  ASSERT_NE(neighbour, nullptr);
  EXPECT_EQ((*neighbour)["hosts"], json::array({"chi2865"}));
  const json* timeline = e2e::FindingById(r, "heartbeat-false-positive/timeline");
  ASSERT_NE(timeline, nullptr);
  EXPECT_NE((*timeline)["summary"].get<std::string>().find("19:06:00"), std::string::npos) << timeline->dump();
  EXPECT_EQ(e2e::StatusOfFinding(r, "heartbeat-false-positive/accused_alive"), "fired") << Dump(r);
}

// The liveness evidence averages eight GPUs per host. Prometheus 2.42 adds an aggregation's input in
// Go map order when that input is a binary operation (`avg (a or b)`), so such a query's last bits
// changed from run to run; four runs of the same job must give the same report, value for value.
TEST(IncidentFixtures, HeartbeatEvidenceIsTheSameOnEveryRun) {
  REQUIRE_FIXTURE("8043");
  const auto without_clock = [](json report) {   // what a run measures, not what it found
    report.erase("timings");
    for (auto& source : report["tsdb"]) source["discovery"].erase("elapsed_seconds");
    return report;
  };
  const json first = without_clock(DiagnoseFixtureJson({"8043"}));
  for (int run = 0; run < 3; ++run) {
    const json again = without_clock(DiagnoseFixtureJson({"8043"}));
    ASSERT_EQ(again, first) << "run " << run + 2 << " differs: " << json::diff(first, again).dump();
  }
}

TEST(IncidentFixtures, RestoreThreadLeakAgainstFreshBaseline) {
  REQUIRE_FIXTURE("7882");
  REQUIRE_FIXTURE("7879");
  json r = DiagnoseFixtureJson({"7882", "--baseline", "7879"});
  EXPECT_EQ(r["verdict"]["root_cause"], "restore-thread-leak") << Dump(r);
  EXPECT_EQ(r["decision"]["action"], "none");
  const json* delta = e2e::FindingById(r, "restore-thread-leak/procs_delta");
  ASSERT_NE(delta, nullptr);
  EXPECT_EQ((*delta)["status"], "fired");
  EXPECT_EQ((*delta)["hosts"].size(), 24u);
  EXPECT_EQ(e2e::StatusOfFinding(r, "restore-thread-leak/tgs_gap"), "fired") << Dump(r);
}

TEST(IncidentFixtures, MoeRoutingShiftWithEverySystemFamilyClean) {
  REQUIRE_FIXTURE("7938");
  json r = DiagnoseFixtureJson({"7938"});
  EXPECT_EQ(r["verdict"]["root_cause"], "moe-routing-shift") << Dump(r);
  EXPECT_EQ(r["verdict"]["domain"], "training");
  EXPECT_EQ(r["decision"]["action"], "none");
  for (const char* family : {"common/gpu_power_clean", "common/gpu_thermal_clean", "common/gpu_util_clean",
                             "common/gpu_hw_clean", "common/cpu_clean", "common/io_clean", "common/memory_clean",
                             "common/network_clean"}) {
    const json* f = e2e::FindingById(r, family);
    ASSERT_NE(f, nullptr) << family;
    EXPECT_EQ((*f)["status"], "clear") << f->dump();
    EXPECT_FALSE((*f)["evidence"].empty()) << family;
  }
}

}  // namespace
}  // namespace diagnose
