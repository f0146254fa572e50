#include "engine/pipeline/assemble_report.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

// An excluded host slurm_exclude cannot carry (a name from a metric label) is named in the
// decision's notes, not silently missing from what a driver passes to sbatch.
TEST(AssembleReport, AnExcludedHostLeftOutOfSlurmExcludeIsNamedInTheNotes) {
  ReportParts parts;
  parts.diagnosis.decision.action = DecisionAction::kRetryExcludingNodes;
  parts.diagnosis.decision.exclude = {{"chi2822", 1, "ECC"}, {"chi|2823", 2, "from a label"}};
  const Report report = AssembleReport(parts);
  EXPECT_EQ(SlurmExcludeList(report.decision), "chi2822");
  const auto& notes = report.decision.notes;
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("left out of slurm_exclude: 'chi|2823'") != std::string::npos;
  })) << ::testing::PrintToString(notes);

  ReportParts plain;
  plain.diagnosis.decision.exclude = {{"chi2822", 1, "ECC"}};
  EXPECT_TRUE(AssembleReport(plain).decision.notes.empty());
}

// The graph links of a report read through an endpoint carry no credentials, and its source shows
// no password.
TEST(AssembleReport, GraphLinksCarryNoCredentials) {
  ReportParts parts;
  AssessedJob job;
  job.tsdb.mode = TsdbMode::kRemote;
  job.tsdb.state = TsdbAvailability::kRemote;
  job.tsdb.source = "https://user:***@prom.example:9090/prometheus";
  parts.jobs.push_back(job);
  const Report report = AssembleReport(parts);
  EXPECT_EQ(report.graph_endpoint, "https://prom.example:9090/prometheus");
  EXPECT_EQ(report.tsdb.at(0).source, "https://user:***@prom.example:9090/prometheus");
}

}  // namespace
}  // namespace diagnose
