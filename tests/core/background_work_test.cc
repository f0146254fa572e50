#include "engine/core/background_work.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

using namespace std::chrono_literals;

TEST(BackgroundWork, WorkRunsBesideItsOwnerAndIsDoneWhenTheOwnerIsGone) {
  std::atomic<bool> release{false}, done{false};
  std::thread::id worker;
  {
    BackgroundWork work;
    work.Run([&] {
      worker = std::this_thread::get_id();
      while (!release) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(20ms);
      done = true;
    });
    // Run returned while the work still waits: it runs on another thread.
    EXPECT_FALSE(done);
    release = true;
  }
  EXPECT_TRUE(done);
  EXPECT_NE(worker, std::this_thread::get_id());
}

TEST(BackgroundWork, WaitEndsAfterEveryWorkAndTheOwnerTakesMoreAfterwards) {
  BackgroundWork work;
  std::atomic<int> finished{0};
  for (int i = 0; i < 20; ++i) {
    work.Run([&finished, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(i % 4));
      ++finished;
    });
  }
  work.Wait();
  EXPECT_EQ(finished, 20);
  work.Run([&] { ++finished; });
  work.Wait();
  EXPECT_EQ(finished, 21);
}

// Counts its destructions and the threads they ran on.
struct Tracked {
  std::atomic<int>* destroyed;
  std::thread::id* destroyed_on;
  explicit Tracked(std::atomic<int>* d, std::thread::id* on) : destroyed(d), destroyed_on(on) {}
  Tracked(Tracked&& other) noexcept : destroyed(std::exchange(other.destroyed, nullptr)), destroyed_on(other.destroyed_on) {}
  Tracked(const Tracked&) = delete;
  ~Tracked() {
    if (!destroyed) return;
    *destroyed_on = std::this_thread::get_id();
    ++*destroyed;
  }
};

TEST(BackgroundWork, ADiscardedValueIsFreedOffTheCallersThreadByTheTimeTheWorkIsDone) {
  std::atomic<int> destroyed{0};
  std::thread::id destroyed_on;
  BackgroundWork work;
  work.Discard(Tracked(&destroyed, &destroyed_on));
  work.Wait();
  EXPECT_EQ(destroyed, 1);
  EXPECT_NE(destroyed_on, std::this_thread::get_id());
}

TEST(BackgroundWork, AnOwnerThatExitsNextLeavesWhatItDiscardsToTheExit) {
  std::atomic<int> destroyed{0};
  std::thread::id destroyed_on;
  {
    BackgroundWork work;
    work.LeaveDiscardsToTheExit();
    work.Discard(Tracked(&destroyed, &destroyed_on));
    work.Wait();
  }
  // Kept reachable, never freed: the exit takes it back. Other work still runs and is waited for.
  EXPECT_EQ(destroyed, 0);
  std::atomic<bool> ran{false};
  {
    BackgroundWork work;
    work.LeaveDiscardsToTheExit();
    work.Run([&] { ran = true; });
  }
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace diagnose
