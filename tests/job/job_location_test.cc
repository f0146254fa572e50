#include "engine/job/job_location.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "tests/support/files.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

class Outputs {
 public:
  std::string Write(const std::string& rel, const std::string& content = "JOB_ID=1\n") const {
    return testing::WriteFile(dir_.path() / rel, content);
  }
  void Link(const std::string& target, const std::string& rel) const {
    fs::create_directories((dir_.path() / rel).parent_path());
    fs::create_symlink(target, dir_.path() / rel);
  }
  void Job(const std::string& name) const {
    Write(name + ".log");
    Link("../" + name + ".log", name + "/log");
  }
  const std::string& path() const { return path_; }

 private:
  testing::TempDir dir_{"diagnose-job"};
  std::string path_ = dir_.path().string();
};

TEST(JobLocationTest, SlurmIdFindsLogAndDir) {
  Outputs o;
  o.Job("8308-JAX-mixtral-8x22b");
  auto j = ResolveJob("8308", o.path());
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->id, "8308");
  EXPECT_EQ(j->name, "8308-JAX-mixtral-8x22b");
  ASSERT_TRUE(j->log_path.has_value());
  EXPECT_EQ(fs::path(*j->log_path).filename(), "8308-JAX-mixtral-8x22b.log");
  ASSERT_TRUE(j->job_dir.has_value());
}


TEST(JobLocationTest, PrefixOfAnotherIdDoesNotMatch) {
  Outputs o;
  o.Job("83080-JAX-a");
  o.Job("8308-JAX-b");
  auto j = ResolveJob("8308", o.path());
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->name, "8308-JAX-b");
}

TEST(JobLocationTest, AmbiguousIdListsCandidates) {
  Outputs o;
  o.Job("8308-JAX-a");
  o.Job("8308-JAX-b");
  auto j = ResolveJob("8308", o.path());
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(j.status().message().find("8308-JAX-a"), std::string::npos);
  EXPECT_NE(j.status().message().find("8308-JAX-b"), std::string::npos);
}

TEST(JobLocationTest, UnknownIdNamesIdAndOutputsDir) {
  Outputs o;
  o.Job("8308-JAX-a");
  auto j = ResolveJob("9999", o.path());
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kNotFound);
  EXPECT_NE(j.status().message().find("9999"), std::string::npos);
  EXPECT_NE(j.status().message().find(o.path()), std::string::npos);
}

TEST(JobLocationTest, TgsTaggedLogAndRenamedDir) {
  Outputs o;
  // The log was renamed by the TGS tagger; the dir not yet (job looked alive) but its link follows.
  o.Write("8309-JAX-llama2-70b-24N-pdbs2-TGS_3287.123.log");
  o.Link("../8309-JAX-llama2-70b-24N-pdbs2-TGS_3287.123.log", "8309-JAX-llama2-70b/log");
  auto j = ResolveJob("8309", o.path());
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->name, "8309-JAX-llama2-70b");
  EXPECT_EQ(fs::path(*j->log_path).filename(), "8309-JAX-llama2-70b-24N-pdbs2-TGS_3287.123.log");
}

TEST(JobLocationTest, SharedCheckpointDirIsSkipped) {
  Outputs o;
  o.Job("8400-JAX-llama2-70b-enable_checkpointing_true");
  fs::create_directories(fs::path(o.path()) / "llama2-70b" / "checkpoints");
  auto j = ResolveJob("8400", o.path());
  ASSERT_TRUE(j.ok());
  auto dir = ResolveJob(o.path() + "/llama2-70b", "");
  EXPECT_FALSE(dir.ok());
  auto all = ListJobs(o.path());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
}

TEST(JobLocationTest, DanglingLogSymlinkIsStillAJob) {
  Outputs o;
  o.Link("../8500-JAX-x.log", "8500-JAX-x/log");
  auto j = ResolveJob("8500", o.path());
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_FALSE(j->log_path.has_value());
  ASSERT_FALSE(j->notes.empty());
  EXPECT_NE(j->notes[0].find("dangles"), std::string::npos);
  EXPECT_TRUE(j->log_link_dangles);
}

TEST(JobLocationTest, EmptyJobDirWithoutLogIsAPrologKill) {
  Outputs o;
  fs::create_directories(fs::path(o.path()) / "8501-JAX-x");
  auto j = ResolveJob("8501", o.path());
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_FALSE(j->log_path.has_value());
  EXPECT_FALSE(j->log_link_dangles);
  ASSERT_FALSE(j->notes.empty());
  EXPECT_NE(j->notes[0].find("prolog"), std::string::npos);
  auto all = ListJobs(o.path());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
}

TEST(JobLocationTest, NonEmptyDirWithoutLogIsNotAJob) {
  Outputs o;
  fs::create_directories(fs::path(o.path()) / "8502-JAX-x" / "checkpoints");
  auto j = ResolveJob("8502", o.path());
  EXPECT_FALSE(j.ok());
}

TEST(JobLocationTest, LogSymlinkOutsideOutputsIsRefused) {
  Outputs o;
  Outputs elsewhere;
  std::string target = elsewhere.Write("secret.log");
  o.Link(target, "8600-JAX-x/log");
  auto j = ResolveJob("8600", o.path());
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kPermissionDenied);
}

// One rule for every path found through the outputs dir: followed only while it resolves inside.
TEST(JobLocationTest, EverySymlinkOutsideOutputsIsRefusedOrLeftOut) {
  Outputs o;
  Outputs elsewhere;
  const std::string outside_log = elsewhere.Write("secret.log");
  elsewhere.Write("tsdb/wal/00000000");
  elsewhere.Write("job/log-target");

  // A top-level <id>-*.log that is a symlink to a file outside.
  o.Link(outside_log, "8601-JAX-x.log");
  auto top_level = ResolveJob("8601", o.path());
  ASSERT_FALSE(top_level.ok());
  EXPECT_EQ(top_level.status().code(), StatusCode::kPermissionDenied) << top_level.status().ToString();

  // A job dir that is itself a symlink to a dir outside.
  elsewhere.Link("log-target", "job/log");
  o.Link(elsewhere.path() + "/job", "8602-JAX-x");
  auto linked_dir = ResolveJob("8602", o.path());
  ASSERT_FALSE(linked_dir.ok());
  EXPECT_EQ(linked_dir.status().code(), StatusCode::kPermissionDenied) << linked_dir.status().ToString();

  // prometheus/, a rank log and a Ray worker log pointing outside: the job resolves, they are left out.
  o.Job("8603-JAX-x");
  o.Link(elsewhere.path() + "/tsdb", "8603-JAX-x/prometheus");
  o.Link(outside_log, "8603-JAX-x/rank-0.log");
  o.Write("8603-JAX-x/rank-1.log");
  o.Link(outside_log, "8603-JAX-x/ray_logs/hostA/worker-aa-01-1.out");
  o.Write("8603-JAX-x/ray_logs/hostA/worker-aa-01-2.out");
  auto j = ResolveJob("8603", o.path());
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_FALSE(j->prometheus_dir.has_value());
  ASSERT_EQ(j->rank_logs.size(), 1u);
  EXPECT_EQ(fs::path(j->rank_logs[0]).filename(), "rank-1.log");
  ASSERT_EQ(j->ray_worker_logs.size(), 1u);
  EXPECT_EQ(fs::path(j->ray_worker_logs[0]).filename(), "worker-aa-01-2.out");
  std::string notes;
  for (const auto& n : j->notes) notes += n + "\n";
  EXPECT_NE(notes.find("prometheus resolves outside the outputs dir"), std::string::npos) << notes;
  EXPECT_NE(notes.find("2 rank/worker log(s)"), std::string::npos) << notes;

  // The same paths by file reference obey the same rule.
  auto by_log = ResolveJob(o.path() + "/8601-JAX-x.log", o.path());
  ASSERT_FALSE(by_log.ok());
  EXPECT_EQ(by_log.status().code(), StatusCode::kPermissionDenied);

  // Symlinks that stay inside are followed.
  o.Write("store/8604.log");
  o.Link("store/8604.log", "8604-JAX-x.log");
  auto inside = ResolveJob("8604", o.path());
  ASSERT_TRUE(inside.ok()) << inside.status().ToString();
}

// A Ray worker log that is no file (a symlink to a directory, a FIFO) is named like a rank log
// that is none, never skipped unsaid.
TEST(JobLocationTest, AWorkerLogThatIsNoFileIsNamed) {
  Outputs o;
  o.Job("8605-JAX-x");
  o.Link("/etc", "8605-JAX-x/ray_logs/hostA/worker-aa-01-1.out");
  o.Write("8605-JAX-x/ray_logs/hostA/worker-aa-01-2.out");
  auto j = ResolveJob("8605", o.path());
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  ASSERT_EQ(j->ray_worker_logs.size(), 1u);
  std::string notes;
  for (const auto& n : j->notes) notes += n + "\n";
  EXPECT_NE(notes.find("worker-aa-01-1.out is a directory, not a regular file; not read"), std::string::npos) << notes;
}

TEST(JobLocationTest, JobDirAndLogFileReferences) {
  Outputs o;
  o.Job("8700-JAX-x");
  auto by_dir = ResolveJob(o.path() + "/8700-JAX-x/", "");
  ASSERT_TRUE(by_dir.ok()) << by_dir.status().ToString();
  EXPECT_EQ(by_dir->id, "8700");
  EXPECT_TRUE(by_dir->log_path.has_value());
  auto by_log = ResolveJob(o.path() + "/8700-JAX-x.log", "");
  ASSERT_TRUE(by_log.ok());
  EXPECT_EQ(by_log->id, "8700");
  EXPECT_TRUE(by_log->job_dir.has_value());
}

TEST(JobLocationTest, K8sAndLocalIdsWithRankLogs) {
  Outputs o;
  o.Job("k8s-20260310-080957-475e-JAX-llama");
  o.Write("k8s-20260310-080957-475e-JAX-llama/rank-10.log");
  o.Write("k8s-20260310-080957-475e-JAX-llama/rank-2.log");
  o.Job("local_20260310_080957_abcd-JAX-llama");
  auto k = ResolveJob("k8s-20260310-080957-475e", o.path());
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ASSERT_EQ(k->rank_logs.size(), 2u);
  EXPECT_EQ(fs::path(k->rank_logs[0]).filename(), "rank-2.log");
  auto l = ResolveJob("local_20260310_080957_abcd", o.path());
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->id, "local_20260310_080957_abcd");
}

TEST(JobLocationTest, RayWorkerLogsBothLayoutsAndPrometheus) {
  Outputs o;
  o.Job("8800-JAX-x");
  o.Write("8800-JAX-x/ray_logs/hostA/worker-aa-01-1.out");
  o.Write("8800-JAX-x/ray_logs/hostA/raylet.out");
  o.Write("8800-JAX-x/ray_logs/hostB/session_2026-01-01_00-00-00_1_1/logs/worker-bb-01-2.out");
  o.Write("8800-JAX-x/prometheus/prometheus.log");
  auto j = ResolveJob("8800", o.path());
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->ray_worker_logs.size(), 2u);
  EXPECT_TRUE(j->prometheus_dir.has_value());
}

TEST(JobLocationTest, OutputsDefaultsFromFlagEnvAndCwd) {
  EXPECT_EQ(DefaultOutputsDir("/x"), "/x");
  ::setenv("DIAGNOSE_OUTPUTS", "/from/env", 1);
  EXPECT_EQ(DefaultOutputsDir(""), "/from/env");
  ::unsetenv("DIAGNOSE_OUTPUTS");
  EXPECT_EQ(DefaultOutputsDir(""), "./outputs");
  Outputs o;
  o.Job("8900-JAX-x");
  ::setenv("DIAGNOSE_OUTPUTS", o.path().c_str(), 1);
  auto j = ResolveJob("8900", "");
  ::unsetenv("DIAGNOSE_OUTPUTS");
  EXPECT_TRUE(j.ok());
}

TEST(JobLocationTest, NeverWritesIntoOutputs) {
  Outputs o;
  o.Job("9000-JAX-x");
  auto count = [&] {
    size_t n = 0;
    for (auto& e : fs::recursive_directory_iterator(o.path())) (void)e, ++n;
    return n;
  };
  size_t before = count();
  ASSERT_TRUE(ResolveJob("9000", o.path()).ok());
  ASSERT_TRUE(ListJobs(o.path()).ok());
  EXPECT_EQ(count(), before);
}

TEST(JobLocationTest, ListJobsIncludesAmbiguousIdsAndLogsWithoutDirs) {
  Outputs o;
  o.Job("8308-JAX-a");
  o.Job("8308-JAX-b");
  o.Write("8310-JAX-c.log");
  fs::create_directories(fs::path(o.path()) / "llama2-70b");
  auto all = ListJobs(o.path());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
}

}  // namespace
}  // namespace diagnose
