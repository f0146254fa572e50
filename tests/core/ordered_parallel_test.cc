#include "engine/core/ordered_parallel.h"

#include <atomic>
#include <mutex>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/core/status.h"

namespace diagnose {
namespace {

// Job i takes longer the earlier it is, so with several at a time the later ones finish first: the
// order results are handed on in is the runner's doing, not the finishing order's.
std::chrono::milliseconds DurationOf(size_t i, size_t count) { return std::chrono::milliseconds(3 * (count - i)); }

TEST(RunInOrder, ResultsAndCallbacksComeInIndexOrderWhateverOrderTheyFinishIn) {
  constexpr size_t kJobs = 12;
  for (int parallel : {1, 2, 3, 8, 64}) {
    SCOPED_TRACE("parallel " + std::to_string(parallel));
    std::vector<size_t> finished, reported;
    std::mutex finished_mutex;
    const auto results = RunInOrder<std::string>(
        kJobs, parallel,
        [&](size_t i) {
          std::this_thread::sleep_for(DurationOf(i, kJobs));
          std::lock_guard<std::mutex> lock(finished_mutex);
          finished.push_back(i);
          return "job " + std::to_string(i);
        },
        [&](size_t i, const std::string& r) {
          EXPECT_EQ(r, "job " + std::to_string(i));
          reported.push_back(i);
        });
    ASSERT_EQ(results.size(), kJobs);
    for (size_t i = 0; i < kJobs; ++i) {
      EXPECT_EQ(results[i], "job " + std::to_string(i));
      ASSERT_LT(i, reported.size());
      EXPECT_EQ(reported[i], i);
    }
    EXPECT_EQ(finished.size(), kJobs);
  }
}

TEST(RunInOrder, NeverMoreThanParallelAtOnceAndReachesTheBoundWhenThereIsWork) {
  constexpr size_t kJobs = 16;
  for (int parallel : {1, 2, 4}) {
    SCOPED_TRACE("parallel " + std::to_string(parallel));
    std::atomic<int> running{0}, most{0};
    RunInOrder<int>(kJobs, parallel, [&](size_t i) {
      const int now = ++running;
      for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
      }
      // Each job waits (up to 10 s, for a loaded machine) until the bound was reached once, so the
      // workers surely overlap; a runner that started too few would show here as most < parallel.
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (most.load() < parallel && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      --running;
      return static_cast<int>(i);
    });
    EXPECT_LE(most.load(), parallel);
    EXPECT_GE(most.load(), 1);
    EXPECT_EQ(most.load(), parallel);
  }
}

TEST(RunInOrder, OneJobsErrorStaysWithItsJobAndTheOthersStillRun) {
  std::atomic<int> ran{0};
  const auto results = RunInOrder<StatusOr<int>>(5, 2, [&](size_t i) -> StatusOr<int> {
    ++ran;
    if (i == 1 || i == 3) return NotFoundError("job " + std::to_string(i) + " has no log");
    return static_cast<int>(i * 10);
  });
  EXPECT_EQ(ran.load(), 5);
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(*results[0], 0);
  EXPECT_EQ(results[1].status().message(), "job 1 has no log");
  EXPECT_EQ(*results[2], 20);
  EXPECT_EQ(results[3].status().message(), "job 3 has no log");
  EXPECT_EQ(*results[4], 40);
}

TEST(RunInOrder, TheOrderedPartOfEachJobRunsInIndexOrderAfterTheEarlierJobsAreDone) {
  constexpr size_t kJobs = 10;
  for (int parallel : {1, 2, 4}) {
    SCOPED_TRACE("parallel " + std::to_string(parallel));
    std::mutex mutex;
    std::vector<size_t> prepared, decided;
    std::vector<size_t> reported_before_deciding(kJobs, 0);
    size_t reported = 0;
    const auto results = RunInOrder<size_t>(
        kJobs, parallel,
        [&](size_t i, const AwaitEarlierFn& await_earlier) {
          std::this_thread::sleep_for(DurationOf(i, kJobs));   // later jobs are ready first
          {
            std::lock_guard<std::mutex> lock(mutex);
            prepared.push_back(i);
          }
          await_earlier();
          std::lock_guard<std::mutex> lock(mutex);
          reported_before_deciding[i] = reported;
          decided.push_back(i);
          return i;
        },
        [&](size_t, const size_t&) { ++reported; });   // under the runner's lock
    std::vector<size_t> in_order(kJobs);
    for (size_t i = 0; i < kJobs; ++i) in_order[i] = i;
    EXPECT_EQ(decided, in_order);
    EXPECT_EQ(results, in_order);
    // Every earlier job's result was handed on before a job's ordered part began.
    for (size_t i = 0; i < kJobs; ++i) EXPECT_EQ(reported_before_deciding[i], i) << "job " << i;
    EXPECT_EQ(prepared.size(), kJobs);
  }
}

TEST(RunInOrder, NoJobsAndNonPositiveParallelism) {
  EXPECT_TRUE((RunInOrder<int>(0, 4, [](size_t) { return 1; })).empty());
  std::vector<int> results = RunInOrder<int>(3, 0, [](size_t i) { return static_cast<int>(i); });
  EXPECT_EQ(results, (std::vector<int>{0, 1, 2}));
  results = RunInOrder<int>(3, -5, [](size_t i) { return static_cast<int>(i); });
  EXPECT_EQ(results, (std::vector<int>{0, 1, 2}));
}

}  // namespace
}  // namespace diagnose
