#include "engine/triage/triage.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "engine/core/text.h"
#include "engine/job/job_location.h"
#include "engine/triage/log_assessment.h"
#include "tests/triage/triage_support.h"

namespace diagnose {
namespace {

using testing::JobSpec;
using testing::LogBuilder;
using testing::TempOutputs;

constexpr int64_t kFarFuture = 4102444800;   // 2100-01-01: every finished log looks old

JobFacts Triage(const TempOutputs& out, const std::string& id, std::optional<bool> running = std::nullopt,
                int64_t now = kFarFuture) {
  auto job = ResolveJob(id, out.path());
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  TriageOptions opt;
  opt.rules_dir = testing::RulesDir();
  opt.now = now;
  opt.scheduler_running = running;
  auto facts = TriageJob(*job, opt);
  EXPECT_TRUE(facts.ok()) << facts.status().ToString();
  return facts.ok() ? *facts : JobFacts{};
}

// The facts of the one job `log` describes, written as job 9101 into an outputs dir of its own.
JobFacts TriageBuiltLog(const LogBuilder& log) {
  TempOutputs out;
  testing::WriteSlurmJob(out, log.spec(), log.str());
  return Triage(out, "9101");
}

bool HasClass(const JobFacts& f, const std::string& id) {
  return std::any_of(f.classes.begin(), f.classes.end(), [&](const ClassMatch& c) { return c.failure_class == id; });
}

// Found by fuzz/log_line (UBSan): a garbled summary wall time of 30 digits overflowed int64.
TEST(TriageTest, AGarbledSummaryWallTimeSaturatesInsteadOfOverflowing) {
  LogBuilder b(JobSpec{});
  b.Header().Setup().Steps(0, 9, 30.0, 3290.0).Summary("SUCCESS (exit 0)", "999999999999999999999999999999h 99999999999999m");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_TRUE(f.summary.present);
  EXPECT_GT(f.summary.wall_seconds, 0);
  EXPECT_LE(f.summary.wall_seconds, int64_t{1} << 40);
}

TEST(TriageTest, CompletedJobHeaderHostsStepsAndSummary) {
  LogBuilder b(JobSpec{});
  b.Header().Setup().Steps(0, 399, 30.0, 3290.0).Summary("SUCCESS (exit 0)", "3h 21m 5s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.status, JobStatus::kCompleted);
  EXPECT_EQ(f.failure_class, "");
  EXPECT_EQ(f.header.nnodes, 24);
  ASSERT_EQ(f.header.hosts.size(), 24u);
  EXPECT_EQ(f.header.hosts[0], "gpu400");
  EXPECT_EQ(f.header.hosts[23], "gpu423");
  EXPECT_EQ(f.header.passthrough.at("steps"), "400");
  EXPECT_EQ(f.config.at("checkpoint_period"), "100");
  ASSERT_EQ(f.steps.size(), 400u);
  EXPECT_EQ(f.steps[5].task, 0);
  EXPECT_NEAR(f.steps[5].tokens_per_sec_per_device, 3290.0, 1e-6);
  EXPECT_TRUE(f.steps[5].mfu_pct.has_value());
  EXPECT_EQ(f.steps[5].total_weights, 65536);
  EXPECT_GT(f.steps[5].where.line, 0);
  EXPECT_TRUE(f.summary.present);
  EXPECT_EQ(f.summary.wall_seconds, 3 * 3600 + 21 * 60 + 5);
  EXPECT_TRUE(f.barrier_passed);
  EXPECT_FALSE(f.restore.restored);
  EXPECT_EQ(f.nccl_init_bursts, 1);
  ASSERT_FALSE(f.memstats.empty());
  EXPECT_NEAR(f.memstats[0].used_gb, 100.21, 1e-6);
  EXPECT_EQ(f.memstats[0].device, "rocm:0");
  EXPECT_EQ(f.tgs.pattern, "stable");
  EXPECT_EQ(f.progress.last_step, 399);
  EXPECT_EQ(f.progress.last_checkpoint_step, 300);
  EXPECT_EQ(f.progress.progress_lost_steps, 99);
  EXPECT_NEAR(f.progress.step_time_seconds, 30.0, 1e-6);
  // The git diff inside the provenance block is not job output.
  EXPECT_FALSE(HasClass(f, "oom-gpu"));
}

TEST(TriageTest, GpuOomCascadeNamesOomPrimaryAndAllocation) {
  LogBuilder b(JobSpec{});
  b.Header().Setup().Steps(0, 20, 30.0, 3290.0);
  b.Line(5, "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 221.71GiB.: "
            "while running replica 0 and partition 40 of a replicated computation (other replicas may have failed as well).");
  b.Line(7, "gpu407:1007:2001 [1] proxy.cc:1500 NCCL WARN Timeout waiting for peer");
  b.Line(0, "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):");
  b.Line(0, "/job:jax_worker/replica:0/task:5");
  b.Line(0, "The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, eviction) to debug further.");
  b.Line(5, "NODE_EXIT host=gpu405 exit=1");
  b.Line(-1, "srun: error: gpu405: task 5: Exited with exit code 1");
  b.Summary("FAILED (exit 1) \xe2\x80\x94 Training FAILED (exit=1)", "25m 3s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.status, JobStatus::kFailed);
  EXPECT_EQ(f.failure_class, "oom-gpu");
  EXPECT_EQ(f.oom_allocation, "221.71GiB");
  EXPECT_TRUE(HasClass(f, "nccl-timeout"));
  EXPECT_TRUE(HasClass(f, "heartbeat-timeout"));
  EXPECT_TRUE(HasClass(f, "node-fail"));
  EXPECT_EQ(f.classes[0].failure_class, "oom-gpu");
  EXPECT_EQ(f.classes[0].task, 5);
  EXPECT_EQ(f.classes[0].host, "gpu405");
  EXPECT_EQ(f.summary.reason, "Training FAILED (exit=1)");
}

TEST(TriageTest, HeartbeatFalsePositiveAccusedTasksHostsAndTimeline) {
  JobSpec spec;
  spec.host_prefix = "node";
  spec.host_first = 7100;
  LogBuilder b(spec);
  b.Header().Setup().Steps(0, 71, 30.0, 3290.0);
  for (int t = 0; t < 24; ++t) {
    b.Line(t, "E0224 19:21:00.075402  157988 coordination_service_agent.cc:310] Polled error from coordination service");
  }
  b.Line(0, "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):");
  b.Line(0, "/job:jax_worker/replica:0/task:8");
  b.Line(0, "/job:jax_worker/replica:0/task:10");
  b.Line(0, "The tasks have crashed.");
  b.Line(8, "F0224 19:21:00 client.h:77] Terminating process because the JAX distributed");
  b.Line(8, "/job:jax_worker/replica:0/task:8");
  b.Line(10, "F0224 19:21:00 client.h:77] Terminating process because the JAX distributed");
  b.Summary("FAILED (exit 1) \xe2\x80\x94 Training FAILED (exit=134)", "47m 12s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.failure_class, "heartbeat-timeout");
  ASSERT_TRUE(f.heartbeat.present);
  EXPECT_EQ(f.heartbeat.accused_tasks, (std::vector<int>{8, 10}));
  EXPECT_EQ(f.heartbeat.accused_hosts, (std::vector<std::string>{"node7108", "node7110"}));
  EXPECT_EQ(f.heartbeat.self_reported_death_tasks, (std::vector<int>{8, 10}));
  EXPECT_EQ(f.heartbeat.timeout_seconds, 900);
  ASSERT_TRUE(f.heartbeat.crash_time.has_value());
  EXPECT_EQ(f.heartbeat.crash_time->year_source, "artifact-id");
  EXPECT_EQ(f.heartbeat.crash_time->epoch, 1771960860);   // 2026-02-24T19:21:00Z
  ASSERT_TRUE(f.heartbeat.heartbeat_stop_time.has_value());
  EXPECT_EQ(f.heartbeat.heartbeat_stop_time->epoch, 1771960860 - 900);
  EXPECT_EQ(f.heartbeat.last_step_before, 71);
  // Events on absl lines carry their time, placed in the year the artifact id gives.
  bool timed = false;
  for (const auto& e : f.events)
    if (e.time && e.time->epoch == 1771960860) timed = true;
  EXPECT_TRUE(timed);
}

TEST(TriageTest, HangThenHeartbeatKillIsPrimaryHang) {
  LogBuilder b(JobSpec{});
  b.Header().Setup().Steps(0, 100, 30.0, 3290.0);
  b.Line(0, "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):");
  b.Line(0, "/job:jax_worker/replica:0/task:3");
  b.Line(0, "The tasks have crashed.");
  // 101 steps * 30 s = 50 min of steps; wall 3 h: a 2+ hour stall before the kill.
  b.Summary("FAILED (exit 1) \xe2\x80\x94 Training FAILED (exit=1)", "3h 0m 0s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.failure_class, "hang");
  EXPECT_TRUE(HasClass(f, "heartbeat-timeout"));
  ASSERT_TRUE(f.progress.unexplained_gap_seconds.has_value());
  EXPECT_GT(*f.progress.unexplained_gap_seconds, 3600);
}

TEST(TriageTest, CancelledAfterHang) {
  LogBuilder b(JobSpec{});
  b.Header().Setup().Steps(0, 50, 30.0, 3290.0);
  for (int i = 0; i < 40; ++i) b.Line(i % 24, "gpu400:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC");
  b.Line(-1, "slurmstepd: error: *** JOB 9101 ON gpu400 CANCELLED AT 2026-02-25T02:00:00 ***");
  b.Summary("FAILED (exit 143) \xe2\x80\x94 CANCELLED (scancel / SIGTERM)", "6h 2m 0s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.status, JobStatus::kCancelled);
  EXPECT_EQ(f.failure_class, "cancelled-after-hang");
  EXPECT_TRUE(HasClass(f, "hang"));
  EXPECT_TRUE(HasClass(f, "cancelled"));
}

TEST(TriageTest, PlainCancel) {
  LogBuilder b(JobSpec{});
  b.Header().Setup().Steps(0, 50, 30.0, 3290.0);
  b.Summary("\x1b[31mFAILED (exit 143)\x1b(B\x1b[m \xe2\x80\x94 CANCELLED (scancel / SIGTERM)", "40m 0s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.status, JobStatus::kCancelled);
  EXPECT_EQ(f.failure_class, "cancelled");
  EXPECT_EQ(f.summary.exit_code, 143);
  EXPECT_EQ(f.summary.status, "FAILED");
}

TEST(TriageTest, SoftSuccessAfterFinalStep) {
  JobSpec spec;
  spec.passthrough = "steps=30";
  LogBuilder b(spec);
  b.Header().Setup().Steps(0, 29, 30.0, 3290.0);
  b.Line(3, "[Node 3] Actor failed: RayActorError: The actor died unexpectedly before finishing this task.");
  b.Line(3, "NODE_EXIT host=gpu403 exit=1");
  b.Summary("FAILED (exit 1) \xe2\x80\x94 Training FAILED (exit=1)", "30m 0s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.status, JobStatus::kCompleted);
  EXPECT_TRUE(f.soft_success);
  EXPECT_EQ(f.failure_class, "soft-success");
  EXPECT_TRUE(HasClass(f, "actor-fail"));
}

TEST(TriageTest, CleanupExit143AfterFinalStepIsSoftSuccess) {
  JobSpec spec;
  spec.passthrough = "steps=20";
  LogBuilder b(spec);
  b.Header().Setup().Steps(0, 19, 30.0, 3290.0);
  for (int t = 0; t < 24; ++t) b.Line(t, "NODE_EXIT host=" + b.Host(t) + " exit=143");
  b.Summary("FAILED (exit 143) \xe2\x80\x94 CANCELLED (scancel / SIGTERM)", "20m 0s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_TRUE(f.soft_success);
  EXPECT_EQ(f.failure_class, "soft-success");
  EXPECT_FALSE(HasClass(f, "node-fail"));   // 143 everywhere is teardown
  EXPECT_EQ(f.node_exits.size(), 24u);
}

struct LineCase {
  const char* cls;
  const char* line;
  int task;
  JobStatus status;
};

class LineClassTest : public ::testing::TestWithParam<LineCase> {};

TEST_P(LineClassTest, PrimaryClassFromOneLine) {
  const LineCase& c = GetParam();
  TempOutputs out;
  JobSpec spec;
  spec.ntasks = 8;
  LogBuilder b(spec);
  b.Header();
  b.Line(c.task, c.line);
  b.Summary("FAILED (exit 1) \xe2\x80\x94 Training FAILED (exit=1)", "5m 0s");
  testing::WriteSlurmJob(out, b.spec(), b.str());
  JobFacts f = Triage(out, "9101");
  EXPECT_EQ(f.failure_class, c.cls) << c.line;
  EXPECT_EQ(f.status, c.status);
  ASSERT_FALSE(f.classes.empty());
  EXPECT_GT(f.classes[0].where.line, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Classes, LineClassTest,
    ::testing::Values(
        LineCase{"container-pull-fail", "[ERROR] Pull failed for rocm/jax-training:latest.", 2, JobStatus::kFailed},
        LineCase{"container-load-fail", "[ERROR] Unable to determine image name or ID from docker load output.", 1, JobStatus::kFailed},
        LineCase{"no-gpu", "WARNING: No GPU devices detected (no /dev/kfd, no nvidia-smi)", 4, JobStatus::kFailed},
        LineCase{"nccl-nic-fail", "NCCL FATAL gpu403: Failed to auto-detect NCCL_SOCKET_IFNAME; ABORTING...", 3, JobStatus::kFailed},
        LineCase{"port-fail", "FATAL: Could not find a free port for JAX coordinator", -1, JobStatus::kFailed},
        LineCase{"model-not-found", "!!! Unknown model: llama9 (no configs/llama9.gpu.yml).", 0, JobStatus::kFailed},
        LineCase{"patch-branch-fail", "[FAIL] Failed to check out my-branch in the local maxtext repo.", 0, JobStatus::kFailed},
        LineCase{"preflight-timeout", "== Preflight TIMEOUT (900s/900s) ==", -1, JobStatus::kFailed},
        LineCase{"pull-timeout", "== Docker pull TIMEOUT (900s/900s) ==", -1, JobStatus::kFailed},
        LineCase{"ecc-timeout", "== ECC check TIMEOUT (300s/300s) ==", -1, JobStatus::kFailed},
        LineCase{"stage-fail", "== Preflight FAILED (exit=2, 31s) ==", -1, JobStatus::kFailed},
        LineCase{"oom-host", "srun: error: gpu402: task 2: Killed", -1, JobStatus::kFailed},
        LineCase{"oom-host", "/bin/bash: line 1:  4242 Killed                  python3 -u MaxText/train.py", 3, JobStatus::kFailed},
        LineCase{"ecc-error", "gpu403: GPU[5]\t\t: UMC CE=0 UE=3", 3, JobStatus::kFailed},
        LineCase{"coordination-deadline", "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: k", 1, JobStatus::kFailed},
        LineCase{"hsa-error", ":0:rocdevice.cpp            :3587: 13177094081 us:  Callback: Queue 0x7f9100c00000 aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal address. code: 0x29", 6, JobStatus::kFailed},
        LineCase{"xla-compile-fail", "INTERNAL: Failed to compile the HLO module", 0, JobStatus::kFailed},
        LineCase{"checkpoint-fs-error", "Training stopped: Checkpointing failed", 0, JobStatus::kFailed},
        LineCase{"nccl-timeout", "gpu401:11:12 [3] NCCL WARN Timeout waiting for connection", 1, JobStatus::kFailed},
        LineCase{"nic-error", "gpu405:1:1 [0] NCCL WARN NET/IB : ibv_post_send failed", 5, JobStatus::kFailed},
        LineCase{"signal-kill", "[Node 2 @ gpu402] Training subprocess killed by SIGSEGV (signal 11)", 2, JobStatus::kFailed},
        LineCase{"subprocess-fail", "[Node 2 @ gpu402] Training subprocess exited with code 1", 2, JobStatus::kFailed},
        LineCase{"actor-fail", "[Node 0] Actor failed: RuntimeError: boom", 0, JobStatus::kFailed},
        LineCase{"python-exception", "Traceback (most recent call last):", 0, JobStatus::kFailed},
        LineCase{"node-fail", "NODE_EXIT host=gpu406.cluster.local exit=137", 6, JobStatus::kFailed},
        LineCase{"ray-start-fail", "[Ray] HEAD failed to start (port 6379, dashboard 8265, bind 10.0.0.1)", 0, JobStatus::kFailed},
        LineCase{"train-timeout", "== Training TIMEOUT (7200s/7200s) ==", -1, JobStatus::kFailed}));

TEST(TriageTest, HarmlessLinesAreNotClassified) {
  JobSpec spec;
  spec.ntasks = 8;
  LogBuilder b(spec);
  b.Header().Setup().Steps(0, 20, 30.0, 3290.0);
  b.Line(0, "failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)");
  b.Line(1, "gpu401:1:1 [0] rccl_wrap.cc:12 NCCL WARN LL cutoff points not detected for a supported arch gfx950");
  b.Line(1, "OCI runtime exec failed: exec failed: unable to start container process: error executing setns process: exit status 1: unknown");
  b.Line(-1, "srun: error: gpu401: task 1: Exited with exit code 143");
  b.Line(2, "gpu403: GPU[1]\t\t: UMC CE=0 UE=0");   // ECC check with clean counts
  b.Summary("SUCCESS (exit 0)", "20m 0s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.status, JobStatus::kCompleted);
  EXPECT_TRUE(f.classes.empty()) << f.classes[0].failure_class;
}

// No JOB SUMMARY and scheduler state unknown: how long the log has been silent decides. Recent ->
// running; stopped long before "now" but within a live hang's span -> hanging; silent for hours
// beyond it -> the job is gone.
// Writes job 9101 with 31 steps (and a JOB SUMMARY when `finished`); returns its log's mtime.
int64_t WriteStepsJob(const TempOutputs& out, bool finished) {
  LogBuilder b(JobSpec{});
  b.Header().Setup().Steps(0, 30, 30.0, 3290.0);
  if (finished) b.Summary("SUCCESS (exit 0)", "20m 0s");
  const std::string log = testing::WriteSlurmJob(out, b.spec(), b.str());
  struct stat st {};
  EXPECT_EQ(::stat(log.c_str(), &st), 0);
  return static_cast<int64_t>(st.st_mtime);
}

TEST(TriageTest, NoSummarySilenceDecidesRunningHangingOrUnknownDeath) {
  TempOutputs out;
  const int64_t mtime = WriteStepsJob(out, /*finished=*/false);
  struct Case {
    int64_t silence_seconds;
    JobStatus status;
    std::string failure_class;
  };
  for (const Case& c : {Case{60, JobStatus::kRunning, ""}, Case{1500, JobStatus::kHanging, "hang"},
                        Case{6 * 3600, JobStatus::kUnknownDeath, "unknown-death"}}) {
    SCOPED_TRACE(c.silence_seconds);
    JobFacts f = Triage(out, "9101", std::nullopt, mtime + c.silence_seconds);
    EXPECT_EQ(f.status, c.status);
    EXPECT_EQ(f.failure_class, c.failure_class);
  }
}

// The file server's clock six hours ahead: the log's mtime lies in the future. That is skew, not a
// log written just now, so a job without a JOB SUMMARY is not "running"; with a summary the clocks
// do not matter at all.
TEST(TriageTest, FutureLogMtimeIsClockSkewNotARunningJob) {
  TempOutputs out;
  const int64_t now = WriteStepsJob(out, /*finished=*/false) - 6 * 3600;
  JobFacts skewed = Triage(out, "9101", std::nullopt, now);
  EXPECT_NE(skewed.status, JobStatus::kRunning);
  EXPECT_NE(skewed.status, JobStatus::kHanging);
  EXPECT_NEAR(skewed.log_clock_skew_seconds, 6 * 3600, 2);
  EXPECT_EQ(Triage(out, "9101", true, now).status, JobStatus::kRunning);  // the scheduler says so; no silence to measure

  TempOutputs finished_out;
  JobFacts f = Triage(finished_out, "9101", std::nullopt, WriteStepsJob(finished_out, /*finished=*/true) - 6 * 3600);
  EXPECT_EQ(f.status, JobStatus::kCompleted);
  EXPECT_GT(f.log_clock_skew_seconds, 0);
}

TEST(TriageTest, CancelledLongIntoTrainingWithoutAStepIsInitHang) {
  LogBuilder b(JobSpec{});
  b.Header().Setup();
  b.Line(0, "gpu400:1:1 [0] NCCL WARN Call to connect returned Connection refused, retrying");
  b.Line(-1, "slurmstepd: error: *** JOB 9101 ON gpu400 CANCELLED AT 2026-02-25T02:00:00 ***");
  b.Summary("FAILED (exit 143) \xe2\x80\x94 CANCELLED (scancel / SIGTERM)", "25m 0s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.status, JobStatus::kCancelled);
  EXPECT_EQ(f.failure_class, "cancelled-after-hang");
}

// No JOB SUMMARY and steps stopped: the scheduler's view decides between a hang and a dead job.
TEST(TriageTest, NoSummaryStoppedStepsFollowSchedulerState) {
  TempOutputs out;
  LogBuilder b(JobSpec{});
  b.Header().Setup().Steps(0, 30, 30.0, 3290.0);
  testing::WriteSlurmJob(out, b.spec(), b.str());
  JobFacts running = Triage(out, "9101", true);
  EXPECT_EQ(running.status, JobStatus::kHanging);
  EXPECT_EQ(running.failure_class, "hang");
  JobFacts gone = Triage(out, "9101", false);
  EXPECT_EQ(gone.status, JobStatus::kUnknownDeath);
  EXPECT_EQ(gone.failure_class, "unknown-death");
}

// A job that completed its 301 steps in three hours.
JobSpec CompletedAtStep300() {
  JobSpec spec;
  spec.passthrough = "steps=301 per_device_batch_size=2 jax_distributed_heartbeat_timeout_seconds=900";
  return spec;
}

// A stretch of 71 step lines the log lost (about 35 min at 30 s a step) while training went on at
// the same pace: a log gap, the class naming the missing steps; the job is still completed.
TEST(TriageTest, LostStepLinesAreALogGap) {
  LogBuilder b(CompletedAtStep300());
  b.Header().Setup().Steps(0, 109, 30.0, 3300.0).Steps(181, 300, 30.0, 3300.0);
  b.Summary("SUCCESS (exit 0)", "3h 0m 0s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.status, JobStatus::kCompleted);
  EXPECT_EQ(f.failure_class, "log-step-gap");
  const auto gap = std::find_if(f.classes.begin(), f.classes.end(),
                                [](const auto& c) { return c.failure_class == "log-step-gap"; });
  ASSERT_NE(gap, f.classes.end());
  EXPECT_NE(gap->where.text.find("steps 110-180 missing from the log (about 35.5 min"), std::string::npos)
      << gap->where.text;
}

// Near misses: a single lost line, and a stretch shorter than a sustained fault (9 steps of 30 s,
// 4.5 min), are no log gap; nor is a restart inside one log (the steps go back).
TEST(TriageTest, ShortOrBackwardStepJumpsAreNoLogGap) {
  for (auto [resume, ok_class] : {std::pair<int, const char*>{111, ""}, {119, ""}}) {
    LogBuilder b(CompletedAtStep300());
    b.Header().Setup().Steps(0, 109, 30.0, 3300.0).Steps(resume, 300, 30.0, 3300.0);
    b.Summary("SUCCESS (exit 0)", "3h 0m 0s");
    JobFacts f = TriageBuiltLog(b);
    EXPECT_EQ(f.failure_class, ok_class) << "resumed at " << resume;
  }
  LogBuilder b(CompletedAtStep300());
  b.Header().Setup().Steps(0, 150, 30.0, 3300.0).Steps(101, 300, 30.0, 3300.0);
  b.Summary("SUCCESS (exit 0)", "3h 0m 0s");
  EXPECT_EQ(TriageBuiltLog(b).failure_class, "");
}

TEST(TriageTest, TgsDegradationPhasesFromLog) {
  JobSpec spec;
  spec.ntasks = 32;
  spec.host_prefix = "mi";
  spec.host_first = 1;
  LogBuilder b(spec);
  b.Header().Setup().Steps(0, 150, 30.0, 3300.0).Steps(151, 300, 38.0, 2600.0);
  b.Summary("SUCCESS (exit 0)", "3h 0m 0s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_EQ(f.status, JobStatus::kCompleted);
  EXPECT_EQ(f.failure_class, "tgs-degradation");
  EXPECT_EQ(f.tgs.pattern, "one-time-drop");
  ASSERT_EQ(f.tgs.phases.size(), 2u);
  EXPECT_NEAR(f.tgs.phases[1].first_step, 151, 2);
  EXPECT_EQ(f.header.hosts.size(), 32u);
  EXPECT_EQ(f.header.hosts[31], "mi32");
  // The log evidence rounds as the reports do (TGS to the unit, % to 1 decimal), not by truncation.
  ASSERT_FALSE(f.classes.empty());
  const std::string& evidence = f.classes.front().where.text;
  EXPECT_NE(evidence.find("steady " + FixedDecimal(f.tgs.steady_tgs, 0)), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("(" + FixedDecimal(f.tgs.degradation_pct, 1) + "% lower)"), std::string::npos) << evidence;
}

TEST(TriageTest, RayWorkerLogsExtendTruncatedSlurmLogBothLayouts) {
  for (bool session_layout : {false, true}) {
    TempOutputs out;
    JobSpec spec;
    spec.ray = true;
    spec.ntasks = 8;
    spec.passthrough = "steps=100";
    LogBuilder b(spec);
    b.Header().Setup().Steps(0, 33, 30.0, 3290.0);
    b.Line(0, "  ssh -J user@login.example.org -L 8265:localhost:8265 -L 6006:localhost:6006 -L 9191:localhost:9191 root@gpu400");
    b.Summary("SUCCESS (exit 0)", "1h 0m 0s");
    testing::WriteSlurmJob(out, spec, b.str());
    LogBuilder w(JobSpec{.ntasks = 8});
    for (int s = 0; s <= 99; ++s) w.Step(s, 30.0, 3290.0, 0);
    // Worker files carry unlabelled lines: strip the builder's label.
    std::string body;
    std::istringstream in(w.str());
    for (std::string l; std::getline(in, l);) body += l.substr(3) + "\n";
    std::string dir = testing::JobDirName(spec) + "/ray_logs/gpu400/";
    if (session_layout) dir += "session_2026-02-24_18-01-02_123456_1/logs/";
    out.Write(dir + "worker-0123abcd-01000000-4242.out", ":actor_name:MaxTextTrainerActor\n" + body);
    JobFacts f = Triage(out, "9101");
    EXPECT_EQ(f.steps.size(), 100u) << "session layout " << session_layout;
    EXPECT_EQ(f.worker_logs.size(), 1u);
    EXPECT_TRUE(f.header.ray);
    EXPECT_EQ(f.tunnel.head_host, "gpu400");
    EXPECT_EQ(f.tunnel.prometheus_port, 9191);
    EXPECT_EQ(f.progress.last_step, 99);
  }
}

TEST(TriageTest, RestoreDetectedFromLineAndFromFirstStep) {
  JobSpec spec;
  spec.ntasks = 8;
  spec.passthrough = "steps=400 enable_checkpointing=true enable_single_replica_ckpt_restoring=true";
  LogBuilder b(spec);
  b.Header();
  for (int t = 0; t < 8; ++t) b.Line(t, "restoring from this run's directory step 200");
  b.NcclWave();
  for (int t = 0; t < 8; ++t) b.Line(t, "Started an asynchronous checkpoint save for step 300");
  b.Line(-1, "some unrelated batch-script line");
  for (int i = 0; i < 60; ++i) b.Line(i % 8, "[py-spy] Wrapper installed: dump/record will redirect to training subprocess");
  b.NcclWave();
  b.Steps(201, 320, 30.0, 3260.0);
  b.Summary("SUCCESS (exit 0)", "1h 10m 0s");
  JobFacts f = TriageBuiltLog(b);
  EXPECT_TRUE(f.restore.restored);
  EXPECT_EQ(f.restore.restore_step, 200);
  EXPECT_TRUE(f.restore.single_replica_restore);
  EXPECT_EQ(f.nccl_init_bursts, 2);
  EXPECT_EQ(f.checkpoint_saves, (std::vector<int64_t>{300}));
  EXPECT_EQ(f.progress.checkpoint_period, 200);   // default from the rules when checkpointing is on
}

TEST(TriageTest, K8sRankLogsAreTasks) {
  TempOutputs out;
  std::string id = "k8s-20260310-080957-475e";
  std::string name = id + "-JAX-llama2-70b";
  std::string primary = "JOB_ID=" + id + "\nNNODES=2\nJOB_NODELIST=podhost-a\nPASSTHROUGH_ARGS=\"steps=10\"\n"
                        "[0] Starting on podhost-a (10.0.0.1)\n";
  for (int s = 0; s < 10; ++s)
    primary += "completed step: " + std::to_string(s) + ", seconds: 10.000, TFLOP/s/device: 1.0, Tokens/s/device: 100.000, total_weights: 1, loss: 1.000\n";
  out.Write(name + ".log", primary);
  out.Write(name + "/rank-1.log",
            "[1] Starting on podhost-b (10.0.0.2)\nF0310 08:30:00.000000 1 client.h:77] Terminating process because the JAX distributed service detected fatal errors.\n"
            "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):\n/job:jax_worker/replica:0/task:1\n");
  out.Symlink("../" + name + ".log", name + "/log");
  JobFacts f = Triage(out, id, false);
  EXPECT_EQ(f.header.launcher, "k8s");
  ASSERT_EQ(f.header.hosts.size(), 2u);
  EXPECT_EQ(f.header.hosts[1], "podhost-b");
  EXPECT_EQ(f.heartbeat.accused_tasks, (std::vector<int>{1}));
  EXPECT_EQ(f.heartbeat.self_reported_death_tasks, (std::vector<int>{1}));
  ASSERT_TRUE(f.heartbeat.crash_time.has_value());
  EXPECT_EQ(f.heartbeat.crash_time->year_source, "job-id");
  EXPECT_EQ(f.failure_class, "heartbeat-timeout");
}


TEST(TriageTest, TwoThreadSplitEqualsSequentialScan) {
  TempOutputs out;
  JobSpec spec;
  spec.passthrough = "steps=400 enable_checkpointing=true checkpoint_period=50 jax_distributed_heartbeat_timeout_seconds=600";
  LogBuilder b(spec);
  b.Header().Setup().Steps(0, 120, 30.0, 3300.0);
  for (int t = 0; t < 24; ++t) b.Line(t, "Saved a checkpoint at step 100.");
  b.Line(4, "gpu404:1:1 [0] NCCL WARN Timeout waiting for peer");
  b.Steps(121, 260, 38.0, 2600.0);
  b.Line(0, "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):");
  b.Line(0, "/job:jax_worker/replica:0/task:4");
  b.Line(4, "E0224 20:01:00.000001 77 coordination_service_agent.cc:332] Polled an error from coordination service");
  b.Line(-1, "srun: error: gpu404: task 4: Exited with exit code 1");
  b.Summary("FAILED (exit 1) \xe2\x80\x94 Training FAILED (exit=1)", "2h 50m 0s");
  testing::WriteSlurmJob(out, b.spec(), b.str());
  auto job = ResolveJob("9101", out.path());
  ASSERT_TRUE(job.ok());
  TriageOptions one;
  one.rules_dir = testing::RulesDir();
  one.now = kFarFuture;
  one.scan_threads = 1;
  TriageOptions two = one;
  two.scan_threads = 2;
  two.split_min_bytes = 0;
  auto a = TriageJob(*job, one);
  auto c = TriageJob(*job, two);
  ASSERT_TRUE(a.ok() && c.ok());
  EXPECT_EQ(nlohmann::json(*a).dump(1), nlohmann::json(*c).dump(1));
  EXPECT_EQ(a->steps.size(), 261u);
  EXPECT_EQ(a->heartbeat.accused_hosts, (std::vector<std::string>{"gpu404"}));
  EXPECT_GT(a->events.size(), 0u);
}


TEST(LogAssessmentTest, OomDecidesFromLogsHeartbeatAsksTheTsdb) {
  auto table = LoadSignatureTable(testing::RulesDir() + "/triage/failure-signatures.yaml");
  ASSERT_TRUE(table.ok());
  {
    JobSpec spec;
    spec.ntasks = 8;
    LogBuilder b(spec);
    b.Header().Setup().Steps(0, 3, 30.0, 3290.0);
    b.Line(2, "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 12.50GiB.");
    b.Summary("FAILED (exit 1) \xe2\x80\x94 Training FAILED (exit=1)", "9m 0s");
    LogAssessment r = AssessLogs(TriageBuiltLog(b), *table);
    EXPECT_EQ(r.verdict.root_cause, "gpu-oom");
    EXPECT_EQ(r.verdict.domain, "gpu");
    EXPECT_EQ(r.decision.action, DecisionAction::kNoRetry);
    ASSERT_FALSE(r.findings.empty());
    EXPECT_EQ(r.findings[0].id, "log-triage/oom-gpu");
    ASSERT_FALSE(r.findings[0].evidence.empty());
    EXPECT_EQ(r.findings[0].evidence[0].query.rfind("9101-JAX-llama2-70b.log:", 0), 0u);
    EXPECT_NE(r.verdict.summary.find("12.50GiB"), std::string::npos);
    EXPECT_EQ(r.job.id, "9101");
    EXPECT_TRUE(r.tsdb_questions.empty());   // the logs named the cause
  }
  {
    TempOutputs out;
    JobSpec spec;
    spec.ntasks = 8;
    LogBuilder b(spec);
    b.Header().Setup().Steps(0, 30, 30.0, 3290.0);
    b.Line(0, "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):");
    b.Line(0, "/job:jax_worker/replica:0/task:6");
    b.Summary("FAILED (exit 1) \xe2\x80\x94 Training FAILED (exit=1)", "40m 0s");
    testing::WriteSlurmJob(out, b.spec(), b.str());
    LogAssessment r = AssessLogs(Triage(out, "9101"), *table);
    EXPECT_EQ(r.verdict.root_cause, "unknown");
    EXPECT_EQ(r.job.failure_class, "heartbeat-timeout");
    EXPECT_EQ(r.tsdb_questions, table->Find("heartbeat-timeout")->tsdb_questions);
    EXPECT_FALSE(r.tsdb_questions.empty());
  }
}

// ---- Bad input: never a crash, a clear status or a best-effort report.

JobFacts TriageRaw(const TempOutputs& out, const std::string& content) {
  out.Write("9200-JAX-bad.log", content);
  return Triage(out, "9200");
}

TEST(TriageBadInputTest, EmptyLog) {
  TempOutputs out;
  JobFacts f = TriageRaw(out, "");
  EXPECT_TRUE(f.steps.empty());
  EXPECT_EQ(f.status, JobStatus::kUnknownDeath);
}

TEST(TriageBadInputTest, BinaryGarbage) {
  TempOutputs out;
  std::string g(200 * 1024, '\0');
  uint32_t x = 12345;
  for (auto& c : g) {
    x = x * 1103515245 + 12345;
    c = static_cast<char>(x >> 16);
  }
  // Not a job log: refused with one message that is itself valid, printable text.
  out.Write("9200-JAX-bad.log", g);
  auto job = ResolveJob("9200", out.path());
  ASSERT_TRUE(job.ok());
  TriageOptions opt;
  opt.rules_dir = testing::RulesDir();
  opt.now = kFarFuture;
  auto facts = TriageJob(*job, opt);
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("not a maxtext-slurm job log"), std::string::npos);
  EXPECT_NO_THROW(nlohmann::json(facts.status().message()).dump());
  // Garbage inside a job log still triages, and its facts serialise (quoted text is sanitised).
  JobFacts f = TriageRaw(out, "JOB_ID=9200\nNNODES=1\nJOB_NODELIST=h1\n0: " + g);
  EXPECT_TRUE(f.steps.empty());
  EXPECT_NO_THROW(nlohmann::json(f).dump());
}

TEST(TriageBadInputTest, MegabyteLineCrlfInvalidUtf8TruncatedLastLine) {
  TempOutputs out;
  std::string log = "JOB_ID=9200\r\nNNODES=1\r\nJOB_NODELIST=h1\r\n";
  log += std::string(1 << 20, 'x') + "\r\n";
  log += "0: completed step: 0, seconds: 1.000, TFLOP/s/device: 1.000, Tokens/s/device: 50.000, total_weights: 1, loss: 1.000\r\n";
  log += "0: bad \xff\xfe utf8 Traceback (most recent call last): \xc3\r\n";
  log += "0: completed step: 1, seconds: 1.000, TFLOP/s/dev";   // truncated, no newline
  JobFacts f = TriageRaw(out, log);
  EXPECT_EQ(f.header.hosts, (std::vector<std::string>{"h1"}));
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_NEAR(f.steps[0].tokens_per_sec_per_device, 50.0, 1e-9);
  EXPECT_TRUE(std::any_of(f.notes.begin(), f.notes.end(), [](const std::string& n) { return n.find("longer than the limit log.line_bytes") != std::string::npos && n.find("--limit log.line_bytes=N") != std::string::npos; }));
  EXPECT_EQ(f.failure_class, "python-exception");
  EXPECT_NO_THROW(nlohmann::json(f).dump());
}

TEST(TriageBadInputTest, PermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can read anything";
  TempOutputs out;
  std::string p = out.Write("9200-JAX-bad.log", "JOB_ID=9200\n");
  ::chmod(p.c_str(), 0);
  auto job = ResolveJob("9200", out.path());
  if (job.ok()) {
    TriageOptions opt;
    opt.rules_dir = testing::RulesDir();
    auto facts = TriageJob(*job, opt);
    ASSERT_FALSE(facts.ok());
    EXPECT_EQ(facts.status().code(), StatusCode::kPermissionDenied);
  }
}

TEST(TriageBadInputTest, BadRulesFileNamesLineAndColumn) {
  TempOutputs out;
  out.Write("rules/triage/failure-signatures.yaml", "classes:\n  - id: x\n    priority: [1\n");
  out.Write("9200-JAX-bad.log", "JOB_ID=9200\n");
  auto job = ResolveJob("9200", out.path());
  ASSERT_TRUE(job.ok());
  TriageOptions opt;
  opt.rules_dir = out.path() + "/rules";
  auto facts = TriageJob(*job, opt);
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("failure-signatures.yaml:"), std::string::npos) << facts.status().message();
}

}  // namespace
}  // namespace diagnose

namespace diagnose {
namespace {

// `diagnose /etc/passwd`: a file without the launcher's marks is not a job log. Before, its silence
// became a hang and the sweep was told to retry.
TEST(TriageTest, AFileWithoutLauncherMarksIsNotAJobLog) {
  TempOutputs out;
  const std::string passwd = out.Write("9300-notes.log",
                                       "root:x:0:0:root:/root:/bin/bash\n"
                                       "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
                                       "Traceback (most recent call last):\n");
  auto job = ResolveJob(passwd, "");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  TriageOptions opt;
  opt.rules_dir = testing::RulesDir();
  opt.now = kFarFuture;
  auto facts = TriageJob(*job, opt);
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(facts.status().message().find("not a maxtext-slurm job log"), std::string::npos);
  // One srun-labelled line is enough to be a (truncated) job log.
  out.Write("9301-x.log", "3: Traceback (most recent call last):\n");
  auto labelled = ResolveJob(out.path() + "/9301-x.log", "");
  ASSERT_TRUE(labelled.ok());
  EXPECT_TRUE(TriageJob(*labelled, opt).ok());
}

}  // namespace
}  // namespace diagnose

namespace diagnose {
namespace {

// When the job ran, for an endpoint that holds more than the job: from the artifact id (the
// submit), the JOB SUMMARY wall time and the log's last write.
class RunWindowTest : public ::testing::Test {
 protected:
  static constexpr int64_t kSubmit = 1771956062;            // artifact_20260224_180102
  static constexpr int64_t kWall = 3 * 3600 + 21 * 60 + 5;  // "3h 21m 5s"

  // A completed job whose log was last written `mtime`; summary only when `wall` is given.
  JobFacts Completed(int64_t mtime, int64_t now, bool summary = true) {
    LogBuilder b(JobSpec{});
    b.Header().Setup().Steps(0, 399, 30.0, 3290.0);
    if (summary) b.Summary("SUCCESS (exit 0)", "3h 21m 5s");
    const std::string log = testing::WriteSlurmJob(out_, b.spec(), b.str());
    const struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
    EXPECT_EQ(::utimensat(AT_FDCWD, log.c_str(), times, 0), 0);
    return Triage(out_, "9101", std::nullopt, now);
  }
  TempOutputs out_;
};

TEST_F(RunWindowTest, EndFromTheLogsLastWriteStartFromTheWallTime) {
  const int64_t end = kSubmit + 900 + kWall;   // queued 15 minutes
  JobFacts f = Completed(end, end + 86400);
  ASSERT_TRUE(f.run_window.start && f.run_window.end);
  EXPECT_EQ(*f.run_window.end, end);
  EXPECT_EQ(f.run_window.end_source, "log-mtime");
  EXPECT_EQ(*f.run_window.start, end - kWall);   // later than the submit: the tighter bound
  EXPECT_EQ(f.run_window.start_source, "end-minus-wall");
}

TEST_F(RunWindowTest, ALogFromTheFutureGivesTheEndFromTheSubmitAndWallTime) {
  const int64_t now = kSubmit + 86400;
  JobFacts f = Completed(now + 7200, now);   // the file server's clock is two hours ahead
  ASSERT_GT(f.log_clock_skew_seconds, 0);
  ASSERT_TRUE(f.run_window.start && f.run_window.end);
  EXPECT_EQ(*f.run_window.start, kSubmit);
  EXPECT_EQ(f.run_window.start_source, "artifact-id");
  EXPECT_EQ(*f.run_window.end, kSubmit + kWall);
  EXPECT_EQ(f.run_window.end_source, "start-plus-wall");
}

TEST_F(RunWindowTest, ARunningJobEndsNow) {
  const int64_t now = kSubmit + 5000;
  JobFacts f = Completed(now - 5, now, /*summary=*/false);
  ASSERT_EQ(f.status, JobStatus::kRunning);
  ASSERT_TRUE(f.run_window.start && f.run_window.end);
  EXPECT_EQ(*f.run_window.start, kSubmit);
  EXPECT_EQ(*f.run_window.end, now);
  EXPECT_EQ(f.run_window.end_source, "now");
}

TEST_F(RunWindowTest, ALogLastWrittenBeforeItsSubmitGivesNoWindow) {
  JobFacts f = Completed(kSubmit - 86400, kSubmit + 86400);   // e.g. copied with another clock's mtime
  EXPECT_FALSE(f.run_window.start);
  EXPECT_FALSE(f.run_window.end);
}

// A node that crashed mid-write on a shared file system leaves a hole of NULs: one "line" of
// gigabytes. The deadline was looked at every 65,536 lines only, so `--deadline 5` read a 4 GiB hole
// for 20-35 s (adversarial test 17, defect 07). The reader now looks every few MiB.
TEST(TriageTest, ADeadlineStopsReadingInsideOneLineOfGigabytes) {
  TempOutputs out;
  LogBuilder b(JobSpec{});
  b.Header().Setup().Steps(0, 20, 30.0, 3290.0);
  const std::string log = testing::WriteSlurmJob(out, b.spec(), b.str());
  {
    // A sparse hole: no disk used, read back as NULs.
    std::error_code ec;
    std::filesystem::resize_file(log, std::filesystem::file_size(log) + (int64_t{1} << 30), ec);
    ASSERT_FALSE(ec) << ec.message();
    std::ofstream(log, std::ios::app) << "completed step: 60, seconds: 1.0\n";
  }
  auto job = ResolveJob("9101", out.path());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  TriageOptions options;
  options.rules_dir = testing::RulesDir();
  options.now = kFarFuture;
  options.scan_threads = 1;
  options.deadline = std::chrono::steady_clock::now();
  const auto started = std::chrono::steady_clock::now();
  auto facts = TriageJob(*job, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(facts.ok()) << "read the whole hole past the deadline in " << seconds << " s";
  EXPECT_EQ(facts.status().code(), StatusCode::kDeadlineExceeded) << facts.status().ToString();
  EXPECT_NE(facts.status().message().find("deadline passed while reading"), std::string::npos)
      << facts.status().ToString();
  EXPECT_LT(seconds, 0.5) << "the deadline was seen only after reading most of the 1 GiB hole";
}

}  // namespace
}  // namespace diagnose
