// Many jobs' work, a bounded number at a time, with results handed on in the jobs' order: what
// `fleet import`, `summary` and `watch` do when they diagnose several jobs (each diagnosis holds a
// private Prometheus, so the bound is a memory bound as much as a CPU one).
//
// Cancellation is not this runner's: SIGINT/SIGTERM reach the process-wide termination thread
// (cleanup_registry.h), which stops every registered child and removes every temp dir whatever
// thread created it, then exits. A worker's exception ends in std::terminate, whose handler runs
// the same cleanups.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace diagnose {

// Blocks job i until every job before it has finished and had its result handed on: the part of
// a job that must happen in the jobs' order (`watch` appending decisions to a sweep history, each
// decided against the ones before it) waits on it; everything before that part still overlaps.
using AwaitEarlierFn = std::function<void()>;

// Runs work(i, await_earlier) for every i in [0, count), at most `parallel` at a time (the calling
// thread is one of them; parallel < 1 counts as 1). Jobs start in index order, so a job waiting on
// the ones before it waits only on jobs already running: no deadlock. `on_result(i, result)`, when
// given, is called for each result in index order, as soon as it and every one before it are done,
// never for two at once; the results come back in index order. A result type that carries its own
// error (StatusOr, a record with an outcome) keeps each job's failure with its job: one job's error
// never stops the others.
template <typename Result>
std::vector<Result> RunInOrder(size_t count, int parallel,
                               const std::function<Result(size_t, const AwaitEarlierFn&)>& work,
                               const std::function<void(size_t, const Result&)>& on_result = nullptr) {
  std::vector<std::optional<Result>> done(count);
  std::mutex mutex;
  std::condition_variable reported;
  size_t next_job = 0;
  size_t next_to_report = 0;
  auto worker = [&] {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (next_job >= count) return;
        i = next_job++;
      }
      const AwaitEarlierFn await_earlier = [&, i] {
        std::unique_lock<std::mutex> lock(mutex);
        reported.wait(lock, [&] { return next_to_report >= i; });
      };
      Result r = work(i, await_earlier);
      std::lock_guard<std::mutex> lock(mutex);
      done[i].emplace(std::move(r));
      for (; next_to_report < count && done[next_to_report]; ++next_to_report)
        if (on_result) on_result(next_to_report, *done[next_to_report]);
      reported.notify_all();
    }
  };
  const size_t threads = std::min(count, static_cast<size_t>(std::max(1, parallel)));
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(worker);
  worker();
  for (auto& w : workers) w.join();
  std::vector<Result> results;
  results.reserve(count);
  for (auto& r : done) results.push_back(std::move(*r));
  return results;
}

// The same for jobs with no ordered part.
template <typename Result>
std::vector<Result> RunInOrder(size_t count, int parallel, const std::function<Result(size_t)>& work,
                               const std::function<void(size_t, const Result&)>& on_result = nullptr) {
  return RunInOrder<Result>(
      count, parallel, std::function<Result(size_t, const AwaitEarlierFn&)>([&](size_t i, const AwaitEarlierFn&) {
        return work(i);
      }),
      on_result);
}

}  // namespace diagnose
