#include "engine/watch/alert_watch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "engine/alerting/alert_replay.h"
#include "engine/core/utf8.h"

namespace diagnose {
namespace {

bool IsPlainJobId(const std::string& id) {
  if (id.empty() || id.size() > 128 || id.front() == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

std::string LabelText(const Labels& labels) {
  std::string who;
  for (const auto& [k, v] : labels) who += (who.empty() ? "" : ",") + k + "=" + OneLine(v);
  return who;
}

// One worker, first in first out: diagnoses of one job through one endpoint do not gain from running
// side by side, and the reports print whole, one after another.
class DiagnosisWorker {
 public:
  explicit DiagnosisWorker(const AlertWatchOptions& options) : options_(options), thread_([this] { Loop(); }) {}
  ~DiagnosisWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
      pending_.clear();   // a stopped watch does not start what it has not begun
    }
    changed_.notify_all();
    thread_.join();
  }
  void Push(std::string job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.push_back(std::move(job));
    }
    changed_.notify_all();
  }
  // Until every diagnosis pushed so far has printed.
  void Drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return pending_.empty() && !busy_; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      changed_.wait(lock, [this] { return closing_ || !pending_.empty(); });
      if (closing_) return;
      std::string job = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
      lock.unlock();
      auto report = options_.diagnose(job);
      options_.print(report.ok() ? *report
                                 : "  job " + job + ": diagnosis failed: " + OneLine(report.status().message()) + "\n");
      lock.lock();
      busy_ = false;
      changed_.notify_all();
    }
  }

  const AlertWatchOptions& options_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> pending_;
  bool busy_ = false;
  bool closing_ = false;
  std::thread thread_;   // last: starts once the members it reads exist
};

// What one firing alert leads to: a diagnosis queued the first time its (job, root cause) is seen.
void HandleFiring(const alerting::AlertFiring& firing, const AlertWatchOptions& options,
                  std::set<std::pair<std::string, std::string>>& diagnosed, DiagnosisWorker& worker) {
  const std::string who = LabelText(firing.labels);
  auto job = options.job_label.empty() ? options.default_job() : JobOfAlert(firing.labels, options.job_label);
  if (!job.ok()) {
    options.print("alert " + firing.alert + " {" + who + "} firing; " + job.status().message() + "\n");
    return;
  }
  if (!diagnosed.insert({*job, firing.root_cause}).second) {
    options.print("alert " + firing.alert + " {" + who + "} firing; job " + *job + " already diagnosed for " +
                  firing.root_cause + "\n");
    return;
  }
  options.print("alert " + firing.alert + " {" + who + "} firing: diagnosing job " + *job + " through " +
                options.endpoint + "\n");
  worker.Push(*job);
}

}  // namespace

StatusOr<std::string> JobOfAlert(const Labels& labels, const std::string& job_label) {
  auto it = labels.find(job_label);
  if (it == labels.end()) return NotFoundError("the alert has no " + job_label + " label to name its job");
  if (!IsPlainJobId(it->second))
    return InvalidArgumentError("its " + job_label + " label \"" + OneLine(it->second).substr(0, 80) +
                                "\" is not a job id (letters, digits, ._-)");
  return it->second;
}

Status RunAlertWatch(const alerting::RuleExport& rules, QueryClient& client, const AlertWatchOptions& options,
                     const std::atomic<bool>& stop) {
  // The worker's reports and the poll's alert lines come from two threads: one line or report at a time.
  std::mutex print_mutex;
  AlertWatchOptions guarded = options;
  guarded.print = [&print_mutex, &options](const std::string& text) {
    std::lock_guard<std::mutex> lock(print_mutex);
    options.print(text);
  };
  alerting::AlertPoller poller(rules, client);
  std::set<std::pair<std::string, std::string>> diagnosed;   // (job, root cause)
  DiagnosisWorker worker(guarded);
  // A failed poll is the endpoint's fault, not the job's: the watch waits and asks again, twice as
  // long after each failure in a row (capped at 5 minutes); the poller keeps its place, so the next
  // answer covers the evaluations the failed ones missed.
  int failures_in_a_row = 0;
  double wait_seconds = options.poll_seconds;
  while (!stop.load()) {
    const auto started = std::chrono::steady_clock::now();
    auto firing = poller.Poll(options.now());
    if (!firing.ok()) {
      if (options.once) return firing.status();
      ++failures_in_a_row;
      wait_seconds = std::min(300.0, options.poll_seconds * std::pow(2.0, std::min(failures_in_a_row - 1, 16)));
      char retry[64];
      std::snprintf(retry, sizeof retry, "; retrying in %.0f s", wait_seconds);
      options.note("poll failed (" + std::to_string(failures_in_a_row) + " in a row): " +
                   OneLine(firing.status().message()).substr(0, 300) + retry);
    } else {
      if (failures_in_a_row > 0)
        options.note(options.endpoint + " answers again after " + std::to_string(failures_in_a_row) +
                     " failed poll(s)");
      failures_in_a_row = 0;
      wait_seconds = options.poll_seconds;
      for (const auto& f : *firing) HandleFiring(f, guarded, diagnosed, worker);
    }
    if (options.once) break;
    while (!stop.load() &&
           std::chrono::steady_clock::now() - started < std::chrono::duration<double>(wait_seconds))
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (options.once) worker.Drain();
  return Status::Ok();
}

}  // namespace diagnose
