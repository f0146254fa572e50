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
#include <memory>
#include <mutex>
#include <optional>
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

  // `value` is no longer read: freed on a thread of its own, or, once LeaveDiscardsToTheExit was
  // called, kept reachable for the process's exit to take back with all its pages at once.
  template <typename T>
  void Discard(T value);
  // For an owner whose process exits once the work is done (the `diagnose` command): freeing a
  // run's answers, rules' values, report parts and rulebook node by node only delays that exit, and
  // the threads doing it take the cores from the report being written and the server being stopped.
  // Long-lived owners (`watch`, `summary`, tests) never call it: they must get the memory back.
  void LeaveDiscardsToTheExit() { leave_discards_to_the_exit_ = true; }

 private:
  std::mutex mutex_;
  std::vector<std::future<void>> running_;
  bool leave_discards_to_the_exit_ = false;
};

// Keeps `value` reachable until the process exits (so leak checkers see no leak), never freeing it.
void LeaveToTheExit(std::shared_ptr<const void> value);

template <typename T>
void BackgroundWork::Discard(T value) {
  // The box, not the value, is what the thread's copies of the work share, so the value is freed
  // there whichever copy goes last.
  auto box = std::make_shared<std::optional<T>>(std::move(value));
  if (leave_discards_to_the_exit_) return LeaveToTheExit(std::move(box));
  Run([box] { box->reset(); });
}

}  // namespace diagnose
