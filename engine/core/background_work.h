// Work taken off a run's critical path that must still be done before its owner is gone: a
// diagnosis hands it the private servers it no longer asks (stopping one and removing its copy
// took 10-60 ms at the end of every run, with nothing else to do meanwhile), and the command that
// owns it writes the report while they close. The destructor waits for all of it, so whoever
// returns past the owner finds the work done, as if it had been done in line.
//
// What must also happen on a signal stays registered with the CleanupRegistry until the work itself
// unregisters it: the termination thread runs it whatever this class has started.
#pragma once

#include <functional>
#include <future>
#include <mutex>
#include <vector>

namespace diagnose {

class BackgroundWork {
 public:
  BackgroundWork() = default;
  BackgroundWork(const BackgroundWork&) = delete;
  BackgroundWork& operator=(const BackgroundWork&) = delete;
  ~BackgroundWork();   // Wait()

  // Starts `work` on a thread of its own; runs it before returning where no thread can be started.
  void Run(std::function<void()> work);
  // Until every work handed to Run has ended.
  void Wait();

 private:
  std::mutex mutex_;
  std::vector<std::future<void>> running_;
};

}  // namespace diagnose
