#include "engine/fleet/fleet_record.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

Report JobReport(const std::vector<std::string>& hosts, const std::vector<Exclusion>& exclude) {
  Report r;
  JobEntry subject;
  subject.id = "4242";
  subject.status = JobStatus::kFailed;
  subject.failure_class = "nic-error";
  subject.hosts = hosts;
  r.jobs.push_back(subject);
  JobEntry baseline = subject;
  baseline.role = JobRole::kBaseline;
  baseline.hosts = {"other-host"};
  r.jobs.push_back(baseline);
  r.verdict.root_cause = "rdma-link-degradation";
  r.decision.action = DecisionAction::kRetryExcludingNodes;
  r.decision.exclude = exclude;
  Finding fired;
  fired.id = "network-health/network_anomalies";
  fired.status = FindingStatus::kFired;
  fired.hosts = {"h2", "h3"};
  Finding clear = fired;
  clear.id = "common/cpu_clean";
  clear.status = FindingStatus::kClear;
  clear.hosts = {"h1"};
  r.findings = {fired, clear};
  return r;
}

Labels LabelsOf(const std::vector<Series>& series, const std::string& host) {
  for (const auto& s : series)
    if (s.labels.count("host") && s.labels.at("host") == host) return s.labels;
  return {};
}

TEST(VerdictRecord, OneJobSeriesAndOneSeriesPerHostOfTheSubjectOnly) {
  const Report r = JobReport({"h1", "h2", "h3"}, {{"h2", 1, "RDMA retry exhaustion on h2"}});
  const auto series = VerdictRecordSeries(r, 1770000000);
  ASSERT_EQ(series.size(), 4u);
  EXPECT_EQ(series[0].labels.at("__name__"), kJobVerdictMetric);
  EXPECT_EQ(series[0].labels.at("root_cause"), "rdma-link-degradation");
  EXPECT_EQ(series[0].labels.at("action"), "retry-excluding-nodes");
  EXPECT_EQ(LabelsOf(series, "h1").at("state"), "clean");   // a clear finding names nobody
  EXPECT_EQ(LabelsOf(series, "h2").at("state"), "excluded");
  EXPECT_EQ(LabelsOf(series, "h2").at("priority"), "1");
  EXPECT_EQ(LabelsOf(series, "h2").at("reason"), "RDMA retry exhaustion on h2");
  EXPECT_EQ(LabelsOf(series, "h3").at("state"), "named");
  EXPECT_EQ(LabelsOf(series, "h3").at("findings"), "network-health/network_anomalies");
  EXPECT_TRUE(LabelsOf(series, "other-host").empty());   // the baseline's hosts are not this job's
  for (const auto& s : series) {
    ASSERT_EQ(s.samples.size(), 1u);
    EXPECT_EQ(s.samples[0].t, 1770000000);
    EXPECT_EQ(s.samples[0].v, 1770000000);   // the value carries the time for last_over_time
  }
}

TEST(VerdictRecord, ALongReasonIsCutAtACharacterBoundary) {
  std::string reason;
  for (int i = 0; i < 200; ++i) reason += "é";   // 2 bytes each
  const auto series = VerdictRecordSeries(JobReport({"h1"}, {{"h1", 2, reason}}), 1);
  const std::string cut = LabelsOf(series, "h1").at("reason");
  EXPECT_LT(cut.size(), reason.size());
  EXPECT_TRUE(nlohmann::json::accept("\"" + cut + "\""));
}

Series HostRecord(const std::string& job, const std::string& host, const std::string& state, double end,
                  const std::string& reason = "") {
  Series s;
  s.labels = {{"slurm_job_id", job}, {"host", host}, {"state", state}, {"root_cause", "x"}};
  if (!reason.empty()) s.labels["reason"] = reason;
  s.samples = {{end + 100, end}};
  return s;
}

TEST(FleetNodes, AHostExcludedInTwoJobsIsTheOnlyRepeatOffenderAndComesFirst) {
  std::vector<Series> records;
  for (const char* job : {"1", "2", "3"})
    for (const char* host : {"a", "b", "c", "d"}) records.push_back(HostRecord(job, host, "clean", 100));
  records[2] = HostRecord("1", "c", "excluded", 100, "rdma");
  records[6] = HostRecord("2", "c", "excluded", 200, "thermal");
  records[9] = HostRecord("3", "b", "excluded", 300, "once");
  records[4] = HostRecord("2", "a", "named", 200);
  records.push_back(HostRecord("2", "c", "excluded", 200, "thermal"));   // a re-import's duplicate
  const FleetNodes t = BuildFleetNodes(records, "slurm_job_id");
  EXPECT_EQ(t.jobs, 3);
  ASSERT_EQ(t.hosts.size(), 4u);
  EXPECT_EQ(t.hosts[0].host, "c");
  EXPECT_EQ(t.hosts[0].excluded, 2);
  EXPECT_EQ(t.hosts[0].jobs, 3);
  EXPECT_EQ(t.hosts[0].records[0].job, "2");   // newest first
  EXPECT_EQ(t.hosts[0].records[0].reason, "thermal");
  EXPECT_EQ(t.hosts[1].host, "b");
  EXPECT_EQ(t.hosts[2].host, "a");
  EXPECT_EQ(t.hosts[2].named, 1);
  EXPECT_EQ(t.repeat_offenders, std::vector<std::string>{"c"});
  EXPECT_EQ(BuildFleetNodes(records, "slurm_job_id", 1).repeat_offenders, (std::vector<std::string>{"c", "b"}));
}

TEST(FleetNodes, RecordsWithoutTheJobLabelOrAHostAreIgnored) {
  std::vector<Series> records = {HostRecord("1", "a", "excluded", 1)};
  records[0].labels.erase("slurm_job_id");
  records.push_back(HostRecord("2", "", "excluded", 1));
  const FleetNodes t = BuildFleetNodes(records, "slurm_job_id");
  EXPECT_EQ(t.jobs, 0);
  EXPECT_TRUE(t.hosts.empty());
  EXPECT_EQ(BuildFleetNodes({HostRecord("1", "a", "excluded", 1)}, "cluster_job").jobs, 0);
}

}  // namespace
}  // namespace diagnose
