#include "engine/core/background_work.h"

#include <system_error>
#include <utility>

namespace diagnose {

BackgroundWork::~BackgroundWork() { Wait(); }

void BackgroundWork::Run(std::function<void()> work) {
  std::future<void> started;
  try {
    started = std::async(std::launch::async, work);
  } catch (const std::system_error&) {   // no thread to be had: done here, as it was before
    work();
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // A long-lived owner (`watch`) hands work on every diagnosis: what has ended is let go here.
  std::erase_if(running_, [](const std::future<void>& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
  running_.push_back(std::move(started));
}

void LeaveToTheExit(std::shared_ptr<const void> value) {
  static std::mutex mutex;
  static auto* left = new std::vector<std::shared_ptr<const void>>();
  std::lock_guard<std::mutex> lock(mutex);
  left->push_back(std::move(value));
}

void BackgroundWork::Wait() {
  std::vector<std::future<void>> running;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running.swap(running_);
  }
  for (auto& f : running) f.get();
}

}  // namespace diagnose
