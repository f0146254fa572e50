#include "engine/core/background_work.h"

#include <atomic>
#include <chrono>
#include <thread>

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

}  // namespace
}  // namespace diagnose
