#include "engine/core/cleanup_registry.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <mutex>
#include <thread>

namespace diagnose {
namespace {

struct Entry {
  std::string what;
  std::function<void()> cleanup;
};

std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<CleanupRegistry::Id, Entry>& Entries() {
  static auto* entries = new std::map<CleanupRegistry::Id, Entry>();  // never destroyed: used at exit
  return *entries;
}

std::recursive_mutex& AcquisitionMutex() {
  static auto* mutex = new std::recursive_mutex();   // never destroyed: held by the exiting thread
  return *mutex;
}

std::function<std::string(const std::string&)>& TerminationLine() {
  static auto* line = new std::function<std::string(const std::string&)>();   // read at exit
  return *line;
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(sig);
  }
}

// Reports being written (WriteWholeReport), and whether a termination signal came: the termination
// thread waits for the first to drop to 0, and a write that ends after the signal parks its thread
// so that nothing runs on towards exit() while the cleanups run.
std::atomic<int> reports_in_progress{0};
std::atomic<bool> terminating{false};

// How long a termination signal waits for a report write under way: long enough for any reader
// that reads, short of the 30 s Slurm gives between SIGTERM and SIGKILL.
constexpr auto kReportWriteGrace = std::chrono::seconds(5);

[[noreturn]] void ParkUntilExit() {
  for (;;) pause();
}

// True when every report write under way ended within the grace period.
bool AwaitReportWrites() {
  const auto until = std::chrono::steady_clock::now() + kReportWriteGrace;
  while (reports_in_progress.load() > 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// A termination signal came: taken by the signal thread, or still pending because that thread was
// not yet scheduled (a loaded machine; 2 of 25 signalled runs of adversarial test 17 ended with exit
// 0 and a whole report though the signal came first). Every thread blocks these signals, so a sent
// one stays pending for the process until sigwait takes it.
bool TerminationRequested() {
  if (terminating.load()) return true;
  sigset_t pending;
  if (sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
         sigismember(&pending, SIGHUP) == 1;
}

}  // namespace

bool WriteWholeReport(std::FILE* out, std::string_view text) {
  ++reports_in_progress;
  if (TerminationRequested()) {
    --reports_in_progress;
    ParkUntilExit();   // the signal came first: no report at all rather than part of one
  }
  // A pipe that holds the whole report takes it in one write(2) that never waits for the reader,
  // so a signal cannot land between its halves. Enlarging may be refused (pipe-max-size); the
  // grace period above then covers a reader that reads.
  const int fd = fileno(out);
  if (const int capacity = fcntl(fd, F_GETPIPE_SZ); capacity > 0 && static_cast<size_t>(capacity) < text.size() + 1)
    (void)fcntl(fd, F_SETPIPE_SZ, static_cast<int>(std::min<size_t>(text.size() + 1, 1u << 30)));
  std::fflush(out);
  const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0;
  --reports_in_progress;
  if (TerminationRequested()) ParkUntilExit();   // the report is whole; the exit is the signal's
  return ok;
}

void SetTerminationLine(std::function<std::string(const std::string& signal_name)> line) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  TerminationLine() = std::move(line);
}

AcquisitionScope::AcquisitionScope() { AcquisitionMutex().lock(); }
AcquisitionScope::~AcquisitionScope() { AcquisitionMutex().unlock(); }

CleanupRegistry& CleanupRegistry::Instance() {
  static CleanupRegistry registry;
  return registry;
}

CleanupRegistry::Id CleanupRegistry::Register(std::string what, std::function<void()> cleanup) {
  static Id next = 1;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Id id = next++;
  Entries()[id] = Entry{std::move(what), std::move(cleanup)};
  return id;
}

void CleanupRegistry::Unregister(Id id) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Entries().erase(id);
}

size_t CleanupRegistry::size() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Entries().size();
}

void CleanupRegistry::RunAll() {
  std::map<Id, Entry> taken;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    taken.swap(Entries());
  }
  for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
    if (it->second.cleanup) it->second.cleanup();
  }
}

void InstallTerminationHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    // A reader that closed its end (`diagnose ... | head`) must make the write fail with EPIPE, so
    // the run says so on stderr, exits 1 and removes its temp dirs, instead of dying silently by
    // SIGPIPE. Child processes restore the default (subprocess.cc).
    signal(SIGPIPE, SIG_IGN);
    std::thread([set] {
      int sig = 0;
      while (sigwait(&set, &sig) != 0) {
      }
      terminating = true;
      const bool report_whole = AwaitReportWrites();
      AcquisitionMutex().lock();   // kept until _exit: see AcquisitionScope
      CleanupRegistry::Instance().RunAll();
      // A run that ends without a report says why: an epilog's log otherwise shows only 143.
      std::function<std::string(const std::string&)> line;
      {
        std::lock_guard<std::mutex> lock(RegistryMutex());
        line = TerminationLine();
      }
      const std::string name = SignalName(sig);
      std::string text = (line ? line(name)
                               : "diagnose: stopped by " + name +
                                     "; its child processes and temporary files were removed") + "\n";
      if (!report_whole)
        text += "diagnose: the report on standard output is cut short: its reader did not take it within " +
                std::to_string(kReportWriteGrace.count()) + " s\n";
      ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
      (void)ignored;
      // Not exit(): static destructors would race the threads still running.
      _exit(128 + sig);
    }).detach();
  });
}

}  // namespace diagnose
