// The watch loop on a temp outputs dir where jobs appear, progress, fail and stall over time.
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "engine/decision/sweep_history.h"
#include "engine/job/job_location.h"
#include "engine/triage/triage.h"
#include "engine/watch/watcher.h"
#include "tests/support/files.h"
#include "tests/support/job_logs.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

const DecisionRules& Rules() {
  static const DecisionRules rules = [] {
    auto loaded = LoadDecisionRules(DIAGNOSE_SOURCE_DIR);
    if (!loaded.ok()) throw std::runtime_error(loaded.status().ToString());
    return std::move(loaded).value();
  }();
  return rules;
}

// A diagnosis stand-in: records each call and answers with a report carrying triage-like facts,
// whose decision the sweep policy makes against the history, as the pipeline does.
struct FakeDiagnosis {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> calls;   // (job, trigger)
  std::map<std::string, std::string> failure_class;         // scripted per job
  std::map<std::string, Decision> found;                    // scripted root cause (verdict) per job
  std::map<std::string, int64_t> last_step_seen;
  // Diagnoses in flight at once; with wait_for_company, each waits (up to 10 s) for a second one
  // before deciding, so a watcher that runs several at a time surely shows it.
  std::atomic<int> in_flight{0}, most_in_flight{0};
  bool wait_for_company = false;

  DiagnoseFn Fn() {
    return [this](const WatchEvent& e, const SweepContext& sweep, const std::string& history_file,
                  const AwaitEarlierFn& await_turn_to_decide) -> StatusOr<DecidedReport> {
      {
        std::lock_guard<std::mutex> lock(mu);
        calls.emplace_back(e.job.id, e.trigger);
        last_step_seen[e.job.id] = e.progress.last_step.value_or(-1);
      }
      const int now_in_flight = ++in_flight;
      for (int seen = most_in_flight.load(); now_in_flight > seen && !most_in_flight.compare_exchange_weak(seen, now_in_flight);) {
      }
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (wait_for_company && most_in_flight.load() < 2 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      Report r;
      JobEntry entry;
      entry.id = e.job.id;
      r.jobs.push_back(entry);
      JobFacts f;
      f.id = e.job.id;
      f.header.model_name = e.progress.model;
      f.header.hosts = e.progress.hosts;
      for (const auto& [k, v] : SplitPassthrough(e.progress.passthrough)) f.header.passthrough[k] = v;
      if (auto steps = f.header.passthrough.find("steps"); steps != f.header.passthrough.end())
        f.progress.total_steps = std::stoll(steps->second);
      const bool success = e.progress.summary_status == "SUCCESS";
      f.status = !e.progress.summary_seen ? JobStatus::kRunning : success ? JobStatus::kCompleted : JobStatus::kFailed;
      f.progress.last_step = e.progress.last_step;
      // The step lines and config as the pipeline's triage reads them: the line's throughput is
      // measured from them by the sweep's code, as in `diagnose watch`.
      JobLocation location;
      location.id = e.job.id;
      location.name = e.job.name;
      location.log_path = e.job.log_path;
      TriageOptions triage;
      triage.rules_dir = std::string(DIAGNOSE_SOURCE_DIR) + "/rules";
      if (auto triaged = TriageJob(location, triage); triaged.ok()) {
        f.steps = triaged->steps;
        f.config = triaged->config;
      }
      auto it = failure_class.find(e.job.id);
      if (it != failure_class.end()) {
        f.failure_class = it->second;
        ClassMatch m;
        m.failure_class = it->second;
        m.host = e.progress.hosts.empty() ? "" : e.progress.hosts[0];
        m.where.text = it->second == "oom-gpu" ? "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 12.5GiB"
                                                : "";
        f.classes.push_back(m);
        if (it->second == "oom-gpu") f.oom_allocation = "12.5GiB";
      }
      r.facts[e.job.id] = f;
      Diagnosis diagnosis;
      diagnosis.verdict.root_cause = success ? "none" : "unknown";
      if (auto cause = found.find(e.job.id); cause != found.end()) {
        diagnosis.verdict.root_cause = cause->second.notes.at(0);
        diagnosis.decision = cause->second;
        diagnosis.decision.notes.clear();
      }
      r.verdict = diagnosis.verdict;
      await_turn_to_decide();
      StatusOr<SweepDecision> decided = DecideSweep(Rules(), history_file, sweep, diagnosis, f);
      --in_flight;
      if (!decided.ok()) return decided.status();
      r.decision = decided->decision;
      return DecidedReport{std::move(r), std::move(decided).value()};
    };
  }
  int CallsFor(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    int n = 0;
    for (const auto& c : calls) n += c.first == id;
    return n;
  }
};

class WatchTest : public OutputsDirTest {
 protected:
  WatchTest() : OutputsDirTest("watch-test", "sweep-a.jsonl") {}

  WatchOptions Options(FakeDiagnosis* fake) {
    WatchOptions o;
    o.outputs_dir = outputs_.string();
    o.history_file = history_;
    o.stall_seconds = 600;
    o.poll_seconds = 60;
    o.rules = &Rules();
    o.diagnose = fake->Fn();
    o.now = [this] { return clock_.load(); };
    return o;
  }
  std::vector<std::string> Lines(const std::vector<WatchResult>& results) {
    std::vector<std::string> out;
    for (const auto& r : results) out.push_back(r.line);
    return out;
  }

  std::atomic<int64_t> clock_{1'700'000'000};
};

// A writer thread plays the sweep in phases; after each phase the watcher polls and the test checks
// who was diagnosed, when, and with what.
TEST_F(WatchTest, JobsAppearProgressFailAndStallEachDiagnosedOnceAtTheRightMoment) {
  FakeDiagnosis fake;
  fake.failure_class["9805"] = "oom-gpu";
  auto watcher_or = Watcher::Create(Options(&fake));
  ASSERT_TRUE(watcher_or.ok()) << watcher_or.status().ToString();
  Watcher& watcher = **watcher_or;

  std::mutex mu;
  std::condition_variable cv;
  int phase_written = 0, phase_checked = 0;
  auto await_check = [&](int phase) {
    std::unique_lock<std::mutex> lock(mu);
    phase_written = phase;
    cv.notify_all();
    cv.wait(lock, [&] { return phase_checked >= phase; });
  };
  auto await_write = [&](int phase) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return phase_written >= phase; });
  };
  auto checked = [&](int phase) {
    std::lock_guard<std::mutex> lock(mu);
    phase_checked = phase;
    cv.notify_all();
  };

  std::thread writer([&] {
    JobLog pass(outputs_, "9801", "llama2-70b", {"gpu101"});
    JobLog oom(outputs_, "9805", "grok-1", {"gpu101", "gpu102"});
    pass.Steps(0, 3, 700);
    oom.Steps(0, 0);
    await_check(1);
    pass.Steps(4, 14);
    pass.Summary(true, 0);
    oom.Write("1: jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 12.5GiB\n");
    await_check(2);
    oom.Summary(false, 1, "Training FAILED (exit=1)");
    JobLog hang(outputs_, "9807", "mixtral-8x22b", {"gpu103", "gpu104"});
    hang.Steps(0, 5);
    await_check(3);
    hang.Noise();   // output that is not progress keeps a hung job "alive" only to naive watchers
    await_check(4);
    hang.Noise();
    await_check(5);
    hang.Steps(6, 6);   // too late: it was already diagnosed as stalled
    hang.Summary(false, 143, "CANCELLED (scancel / SIGTERM)");
    JobLog late(outputs_, "9810", "llama2-70b", {"gpu105"});
    late.Steps(0, 14, 1995, 34.1);
    late.Summary(true, 0);
    await_check(6);
  });

  // Phase 1: two jobs running. Nothing to diagnose.
  await_write(1);
  auto r = watcher.PollOnce();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(watcher.followed_jobs(), 2u);
  checked(1);

  // Phase 2: 9801 succeeded (diagnosed, nothing found: PASS); 9805 logged an OOM but has not ended yet.
  await_write(2);
  clock_ += 60;
  r = watcher.PollOnce();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].line, "llama2-70b 1N (job 9801): 2,036 TGS/device, 34.9% MFU \xE2\x80\x94 PASS");
  EXPECT_TRUE((*r)[0].diagnosed);
  EXPECT_EQ(fake.CallsFor("9801"), 1);
  EXPECT_EQ(fake.CallsFor("9805"), 0);
  checked(2);

  // Phase 3: 9805's summary arrived: diagnosed now, once. 9807 appeared.
  await_write(3);
  clock_ += 60;
  r = watcher.PollOnce();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].line, "grok-1 2N (job 9805): OOM \xE2\x80\x94 FAIL \xE2\x80\x94 no-retry");
  EXPECT_EQ((*r)[0].event.trigger, "ended");
  EXPECT_EQ(fake.CallsFor("9805"), 1);
  checked(3);

  // Phase 4: 9807 only writes noise; 599 s without a new step is not yet a stall.
  await_write(4);
  clock_ += 599;
  r = watcher.PollOnce();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(fake.CallsFor("9807"), 0);
  checked(4);

  // Phase 5: the stall window has passed: diagnosed as stalled, hang after step 0 -> retry once.
  await_write(5);
  clock_ += 1;
  r = watcher.PollOnce();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].event.trigger, "stalled");
  EXPECT_EQ(fake.last_step_seen["9807"], 5);
  EXPECT_EQ((*r)[0].report.decision.action, DecisionAction::kRetrySameNodes);
  EXPECT_NE((*r)[0].line.find("hang after-step0"), std::string::npos) << (*r)[0].line;
  checked(5);

  // Phase 6: 9807 ends after all (cancelled): not diagnosed again. A late job passes.
  await_write(6);
  clock_ += 60;
  r = watcher.PollOnce();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].line, "llama2-70b 1N (job 9810): 1,995 TGS/device, 34.1% MFU \xE2\x80\x94 PASS");
  checked(6);
  writer.join();

  for (int i = 0; i < 3; ++i) {
    clock_ += 10000;
    r = watcher.PollOnce();
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->empty());
  }
  EXPECT_EQ(fake.calls.size(), 4u);
  EXPECT_EQ(fake.CallsFor("9805"), 1);
  EXPECT_EQ(fake.CallsFor("9807"), 1);
  EXPECT_EQ(watcher.followed_jobs(), 0u);   // per-job state released once handled
  EXPECT_EQ(watcher.results(), 4u);

  auto history = LoadSweepHistory(history_);
  ASSERT_TRUE(history.ok());
  EXPECT_TRUE(history->warnings.empty());
  ASSERT_EQ(history->entries.size(), 4u);
  std::map<std::string, HistoryEntry> by_job;
  for (const auto& e : history->entries) {
    by_job[e.job] = e;
    EXPECT_EQ(e.sweep, "sweep-a");
  }
  EXPECT_EQ(by_job["9801"].action, DecisionAction::kNone);
  EXPECT_EQ(by_job["9801"].status, JobStatus::kCompleted);
  EXPECT_EQ(by_job["9805"].action, DecisionAction::kNoRetry);
  EXPECT_EQ(by_job["9805"].oom_allocation, "12.5GiB");
  EXPECT_EQ(by_job["9805"].config.model, "grok-1");
  EXPECT_EQ(by_job["9805"].config.args.at("steps"), "15");
  EXPECT_EQ(by_job["9807"].status, JobStatus::kHanging);
  EXPECT_EQ(by_job["9807"].nodes, (std::vector<std::string>{"gpu103", "gpu104"}));
}

TEST_F(WatchTest, RestartDoesNotRediagnoseJobsInHistoryOrAlreadyEnded) {
  FakeDiagnosis fake;
  {
    JobLog failed(outputs_, "1001", "grok-1", {"gpu1", "gpu2"});
    failed.Steps(0, 2);
    failed.Summary(false, 1, "Training FAILED (exit=1)");
    auto w = Watcher::Create([&] {
      auto o = Options(&fake);
      o.include_already_ended = true;
      return o;
    }());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->PollOnce().ok());
    EXPECT_EQ(fake.CallsFor("1001"), 1);
  }
  auto at = [](int64_t epoch) {
    return std::chrono::file_clock::from_sys(std::chrono::sys_seconds(std::chrono::seconds(epoch)));
  };
  JobLog old(outputs_, "1002", "grok-1", {"gpu1", "gpu2"});
  old.Summary(false, 1, "Training FAILED (exit=1)");
  fs::last_write_time(old.path(), at(clock_.load() - 3600));   // ended before the last decision
  JobLog missed(outputs_, "1003", "grok-1", {"gpu1", "gpu2"});
  missed.Summary(false, 1, "Training FAILED (exit=1)");
  fs::last_write_time(missed.path(), at(clock_.load() + 60));   // ended while the watcher was down
  clock_ += 3600;
  auto w = Watcher::Create(Options(&fake));
  ASSERT_TRUE(w.ok());
  auto r = (*w)->PollOnce();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].event.job.id, "1003");
  EXPECT_EQ(fake.CallsFor("1001"), 1);   // in the history
  EXPECT_EQ(fake.CallsFor("1002"), 0);   // had ended before the sweep's latest decision
}

TEST_F(WatchTest, LogUntouchedForTheStallWindowStallsOnFirstSight) {
  FakeDiagnosis fake;
  auto o = Options(&fake);
  o.now = nullptr;   // wall clock: compared with the log's mtime
  o.include_already_ended = true;
  JobLog quiet(outputs_, "3001", "grok-1", {"gpu1", "gpu2"});
  quiet.Steps(0, 3);
  JobLog fresh(outputs_, "3002", "grok-1", {"gpu3", "gpu4"});
  fresh.Steps(0, 3);
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
  fs::last_write_time(quiet.path(), old);
  auto w = Watcher::Create(o);
  ASSERT_TRUE(w.ok());
  auto r = (*w)->PollOnce();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].event.job.id, "3001");
  EXPECT_EQ((*r)[0].event.trigger, "stalled");
  EXPECT_EQ(fake.CallsFor("3002"), 0);
}

// A run that completes is still diagnosed: when the diagnosis finds a cause (a degraded link cost
// throughput), the line says so, as `diagnose JOB` would, instead of PASS.
TEST_F(WatchTest, CompletedJobWithACauseIsDegradedNotPass) {
  FakeDiagnosis fake;
  Decision exclude;
  exclude.action = DecisionAction::kRetryExcludingNodes;
  exclude.exclude.push_back({"gpu2", 1, "RDMA retransmits aligned with the slow phase"});
  exclude.notes.push_back("rdma-link-degradation");
  fake.found["4001"] = exclude;
  auto w = Watcher::Create(Options(&fake));
  ASSERT_TRUE(w.ok());
  JobLog job(outputs_, "4001", "mixtral-8x22b", {"gpu1", "gpu2"});
  ASSERT_TRUE((*w)->PollOnce().ok());
  job.Steps(0, 20, 3293, 8.4);
  job.Summary(true, 0);
  auto r = (*w)->PollOnce();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(fake.CallsFor("4001"), 1);
  EXPECT_EQ((*r)[0].line, "mixtral-8x22b 2N (job 4001): 3,293 TGS/device, 8.4% MFU \xE2\x80\x94 rdma-link-degradation "
                          "\xE2\x80\x94 DEGRADED \xE2\x80\x94 retry-excluding-nodes gpu2");
}

// Four jobs end in the same scan, each with a node to exclude; the sweep allows two exclusions, so
// what a job's decision is depends on the decisions before it. Three at a time, the diagnoses
// overlap, yet every job decides after the jobs before it: the lines and the history are those of
// the one-at-a-time run, byte for byte.
TEST_F(WatchTest, JobsEndingInOneScanDiagnosedConcurrentlyDecideInJobOrder) {
  auto run = [&](int parallel, int* most_in_flight) {
    FakeDiagnosis fake;
    fake.wait_for_company = parallel > 1;
    for (const std::string id : {"5001", "5002", "5003", "5004"}) {
      Decision exclude;
      exclude.action = DecisionAction::kRetryExcludingNodes;
      exclude.exclude.push_back({"gpu" + id, 1, "RDMA retransmits aligned with the slow phase"});
      exclude.notes.push_back("rdma-link-degradation");
      fake.found[id] = exclude;
    }
    std::filesystem::remove(history_);
    auto o = Options(&fake);
    o.include_already_ended = true;
    o.parallel = parallel;
    std::vector<std::string> delivered;
    o.on_result = [&](const WatchResult& r) { delivered.push_back(r.event.job.id); };
    auto w = Watcher::Create(std::move(o));
    EXPECT_TRUE(w.ok());
    auto r = (*w)->PollOnce();
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(delivered, (std::vector<std::string>{"5001", "5002", "5003", "5004"}));
    *most_in_flight = fake.most_in_flight.load();
    return std::make_pair(Lines(*r), testing::ReadFileOrEmpty(history_));
  };
  for (const std::string id : {"5001", "5002", "5003", "5004"}) {
    JobLog job(outputs_, id, "mixtral-8x22b", {"gpu" + id, "gpu9" + id});
    job.Steps(0, 14, 3293, 8.4);
    job.Summary(false, 1, "Training FAILED (exit=1)");
  }
  int one_in_flight = 0, three_in_flight = 0;
  const auto one = run(1, &one_in_flight);
  const auto three = run(3, &three_in_flight);
  EXPECT_EQ(one_in_flight, 1);
  EXPECT_GE(three_in_flight, 2);
  ASSERT_EQ(one.first.size(), 4u);
  EXPECT_EQ(three.first, one.first);
  EXPECT_EQ(three.second, one.second);
  // The order mattered: the first two exclude their node, the sweep's budget stops the later ones.
  EXPECT_NE(one.first[0].find("retry-excluding-nodes gpu5001"), std::string::npos) << one.first[0];
  EXPECT_NE(one.first[1].find("retry-excluding-nodes gpu5002"), std::string::npos) << one.first[1];
  EXPECT_NE(one.first[3].find("stop-sweep"), std::string::npos) << one.first[3];
}

// With the profiler on, steps 5-8 sit in the capture window: the runbook's steady state is steps
// 9-14, and watch says the figure `diagnose sweep` says (the launcher's 5-14 mean would be 1,822).
TEST_F(WatchTest, TheLinesThroughputIsTheSweepsSteadyState) {
  FakeDiagnosis fake;
  auto w = Watcher::Create(Options(&fake));
  ASSERT_TRUE(w.ok());
  JobLog job(outputs_, "9820", "llama2-70b", {"gpu1"});
  job.Write("Config param profiler: xplane\n");
  ASSERT_TRUE((*w)->PollOnce().ok());
  job.Steps(0, 8, 1500, 25.0);
  job.Steps(9, 14, 2036, 34.9);
  job.Summary(true, 0);
  auto r = (*w)->PollOnce();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].line, "llama2-70b 1N (job 9820): 2,036 TGS/device, 34.9% MFU \xE2\x80\x94 PASS");
}

TEST_F(WatchTest, DiagnosisFailureIsReportedOnceAndNotRetriedForever) {
  FakeDiagnosis fake;
  auto o = Options(&fake);
  int calls = 0;
  o.diagnose = [&](const WatchEvent&, const SweepContext&, const std::string&,
                   const AwaitEarlierFn&) -> StatusOr<DecidedReport> {
    ++calls;
    return NotFoundError("no TSDB for job 77");
  };
  auto w = Watcher::Create(o);
  ASSERT_TRUE(w.ok());
  JobLog job(outputs_, "77", "grok-1", {"gpu1"});
  ASSERT_TRUE((*w)->PollOnce().ok());
  job.Summary(false, 1, "Training FAILED (exit=1)");
  auto r = (*w)->PollOnce();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_FALSE((*r)[0].status.ok());
  EXPECT_NE((*r)[0].line.find("diagnosis failed"), std::string::npos);
  ASSERT_TRUE((*w)->PollOnce().ok());
  EXPECT_EQ(calls, 1);
}

TEST_F(WatchTest, DeletedLogIsDroppedWithoutDiagnosis) {
  FakeDiagnosis fake;
  auto w = Watcher::Create(Options(&fake));
  ASSERT_TRUE(w.ok());
  JobLog job(outputs_, "55", "grok-1", {"gpu1"});
  job.Steps(0, 1);
  ASSERT_TRUE((*w)->PollOnce().ok());
  fs::remove(job.path());
  clock_ += 100000;
  auto r = (*w)->PollOnce();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(fake.CallsFor("55"), 0);
  EXPECT_EQ((*w)->followed_jobs(), 0u);
}

// Free-running: the loop on its own thread with the wall clock, a writer appending over time, and a
// stop flag like the CLI's SIGINT/SIGTERM handler sets.
TEST_F(WatchTest, RunLoopStopsCleanlyAndHandlesEachJobOnce) {
  FakeDiagnosis fake;
  auto o = Options(&fake);
  o.now = nullptr;   // wall clock
  o.poll_seconds = 0.05;
  o.stall_seconds = 1;
  std::mutex lines_mu;
  std::vector<std::string> lines;
  o.on_result = [&](const WatchResult& r) {
    std::lock_guard<std::mutex> lock(lines_mu);
    lines.push_back(r.line);
  };
  auto w = Watcher::Create(o);
  ASSERT_TRUE(w.ok());
  std::atomic<bool> stop{false};
  Status run_status;
  std::thread loop([&] { run_status = (*w)->Run(stop); });

  JobLog a(outputs_, "2001", "grok-1", {"gpu1", "gpu2"});
  JobLog b(outputs_, "2002", "llama2-70b", {"gpu3"});
  for (int s = 0; s < 15; ++s) {
    a.Steps(s, s);
    b.Steps(s, s);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  b.Summary(true, 0);
  a.Summary(false, 1, "Training FAILED (exit=1)");
  JobLog c(outputs_, "2003", "grok-1", {"gpu4", "gpu5"});
  c.Steps(0, 2);   // then silence: stalls after ~1 s
  for (int i = 0; i < 100; ++i) {
    {
      std::lock_guard<std::mutex> lock(lines_mu);
      if (lines.size() >= 3) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop = true;
  loop.join();
  EXPECT_TRUE(run_status.ok()) << run_status.ToString();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(fake.CallsFor("2001"), 1);
  EXPECT_EQ(fake.CallsFor("2002"), 1);
  EXPECT_EQ(fake.CallsFor("2003"), 1);
  auto history = LoadSweepHistory(history_);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->entries.size(), 3u);
}

TEST(WatchScan, JobIdsFromLogNames) {
  const fs::path dir = fs::temp_directory_path() / ("watch-scan-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "8308-JAX-mixtral-8x22b-24N-TGS_2610.123");
  for (const char* name : {"8308-JAX-mixtral-8x22b-24N-TGS_2610.123.log", "k8s-20260310-080957-475e-JAX-grok-1.log",
                           "notes.txt"})
    std::ofstream(dir / name) << "JOB_ID=x\n";
  auto jobs = ScanOutputsForJobLogs(dir.string());
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, "8308");
  EXPECT_EQ((*jobs)[1].id, "k8s-20260310-080957-475e");
  EXPECT_FALSE(ScanOutputsForJobLogs((dir / "missing").string()).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace diagnose
