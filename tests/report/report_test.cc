#include "engine/report/report.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

TEST(DecisionJson, SlurmExcludeListKeepsPriorityOrderAndDropsNamesSlurmWouldReadAsSyntax) {
  Decision d;
  d.action = DecisionAction::kRetryExcludingNodes;
  d.exclude = {{"chi2822", 1, "ECC"}, {"gpu-07.rack2", 2, "RDMA"}, {"a,b", 2, "from a label"},
               {"n[1-3]", 3, "from a label"}, {"x y", 3, "from a label"}, {"", 3, "empty"}};
  EXPECT_EQ(SlurmExcludeList(d), "chi2822,gpu-07.rack2");
  EXPECT_EQ(SlurmExcludeList(Decision{}), "");
}

// What slurm_exclude leaves out is said, never silently dropped: a quote, `\`, `|` too (a shell
// would read them), each name quoted on one line.
TEST(DecisionJson, TheHostsSlurmExcludeLeavesOutAreNamedInANote) {
  const std::vector<Exclusion> exclude = {{"chi2822", 1, "ECC"}, {"a\"b", 2, "label"}, {"c\\d", 2, "label"},
                                          {"e|f", 2, "label"}, {"g\nh", 3, "label"}};
  EXPECT_EQ(SlurmExcludeList(exclude), "chi2822");
  const std::string note = SlurmExcludeOmissionNote(exclude);
  for (const char* named : {"'a\"b'", "'c\\d'", "'e|f'", "'g\\nh'"}) EXPECT_NE(note.find(named), std::string::npos) << note;
  EXPECT_EQ(note.find("chi2822"), std::string::npos) << note;
  EXPECT_EQ(note.find('\n'), std::string::npos) << note;
  EXPECT_EQ(SlurmExcludeOmissionNote({{"chi2822", 1, "ECC"}}), "");
}

TEST(DecisionJson, TypedChangesTypesNumbersAndBooleansAndLeavesTheRestStrings) {
  const nlohmann::json typed = TypedChanges({{"timeout", "14400"},
                                             {"ratio", "0.5"},
                                             {"negative", "-3"},
                                             {"flag", "true"},
                                             {"name", "llama-70b"},
                                             {"version", "1.2.3"},
                                             {"not_a_number", "nan"},
                                             {"blank", ""}});
  EXPECT_EQ(typed["timeout"], 14400);
  EXPECT_TRUE(typed["timeout"].is_number_integer());
  EXPECT_DOUBLE_EQ(typed["ratio"].get<double>(), 0.5);
  EXPECT_EQ(typed["negative"], -3);
  EXPECT_EQ(typed["flag"], true);
  EXPECT_EQ(typed["name"], "llama-70b");
  EXPECT_EQ(typed["version"], "1.2.3");
  EXPECT_EQ(typed["not_a_number"], "nan");
  EXPECT_EQ(typed["blank"], "");
}

TEST(DecisionJson, OverridesSerializeWithTheirRuleOnlyWhenOneWasInCharge) {
  Decision d;
  d.action = DecisionAction::kStopSweep;
  d.overrides = {{DecisionAction::kRetryExcludingNodes, DecisionAction::kStopSweep, "4 nodes excluded (limit 2)", ""},
                 {DecisionAction::kNone, DecisionAction::kStopSweep, "GPU abort on every node",
                  "gpu-hardware-error-all-nodes"}};
  const nlohmann::json j = ToJson(d);
  ASSERT_EQ(j["overrides"].size(), 2u);
  EXPECT_FALSE(j["overrides"][0].contains("rule"));
  EXPECT_EQ(j["overrides"][1]["rule"], "gpu-hardware-error-all-nodes");
  EXPECT_EQ(j["overrides"][0]["reason"], "4 nodes excluded (limit 2)");
  EXPECT_EQ(j["overrides"][0]["from"], "retry-excluding-nodes");
  EXPECT_EQ(j["overrides"][1]["to"], "stop-sweep");
  EXPECT_EQ(ToJson(Decision{})["overrides"], nlohmann::json::array());
}

TEST(ReportFacts, SubjectFactsAreTheSubjectJobsTypedFacts) {
  Report report;
  JobEntry baseline;
  baseline.id = "76";
  baseline.role = JobRole::kBaseline;
  JobEntry subject;
  subject.id = "77";
  report.jobs = {baseline, subject};
  EXPECT_EQ(SubjectFacts(report), nullptr);
  JobFacts facts;
  facts.id = "77";
  facts.header.hosts = {"h1"};
  report.facts["76"].id = "76";
  report.facts["77"] = facts;
  ASSERT_NE(SubjectFacts(report), nullptr);
  EXPECT_EQ(SubjectFacts(report)->header.hosts, std::vector<std::string>{"h1"});
  EXPECT_EQ(FactsOf(report, "76")->id, "76");
  EXPECT_EQ(FactsOf(report, "78"), nullptr);
  EXPECT_EQ(ToJson(report)["facts"]["77"]["header"]["hosts"], nlohmann::json::array({"h1"}));
  report.facts.clear();
  EXPECT_FALSE(ToJson(report).contains("facts"));
}

TEST(ReportVocabulary, ConfidenceRanksAndKeepsItsContractWords) {
  for (const Confidence c : kAllConfidences) EXPECT_EQ(ParseConfidence(ToString(c)), c);
  EXPECT_LT(Confidence::kPossible, Confidence::kLikely);
  EXPECT_LT(Confidence::kLikely, Confidence::kConfirmed);
  EXPECT_FALSE(ParseConfidence("Likely"));
  EXPECT_THROW(nlohmann::json("sure").get<Confidence>(), nlohmann::json::exception);
  Report report;
  report.verdict.confidence = Confidence::kPossible;
  EXPECT_EQ(ToJson(report)["verdict"]["confidence"], "possible");
}

TEST(ReportVocabulary, TsdbModeAndStateAreWrittenAsTheirContractWords) {
  Report report;
  report.tsdb.push_back(TsdbState{});
  TsdbState remote;
  remote.mode = TsdbMode::kRemote;
  remote.state = TsdbAvailability::kFailed;
  report.tsdb.push_back(remote);
  const nlohmann::json tsdb = ToJson(report)["tsdb"];
  EXPECT_EQ(tsdb[0]["mode"], "none");
  EXPECT_EQ(tsdb[0]["state"], "unavailable");
  EXPECT_EQ(tsdb[1]["mode"], "remote");
  EXPECT_EQ(tsdb[1]["state"], "failed");
  EXPECT_EQ(ToString(TsdbMode::kPrivateCopy), "private-copy");
  EXPECT_EQ(ToString(TsdbAvailability::kNotRequested), "not-requested");
}

}  // namespace
}  // namespace diagnose
