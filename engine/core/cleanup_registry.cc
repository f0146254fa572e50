#include "engine/core/cleanup_registry.h"

#include <signal.h>
#include <unistd.h>

#include <map>
#include <string>
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

}  // namespace

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
    std::thread([set] {
      int sig = 0;
      while (sigwait(&set, &sig) != 0) {
      }
      AcquisitionMutex().lock();   // kept until _exit: see AcquisitionScope
      CleanupRegistry::Instance().RunAll();
      // A run that ends without a report says why: an epilog's log otherwise shows only 143.
      std::function<std::string(const std::string&)> line;
      {
        std::lock_guard<std::mutex> lock(RegistryMutex());
        line = TerminationLine();
      }
      const std::string name = SignalName(sig);
      const std::string text = (line ? line(name)
                                     : "diagnose: stopped by " + name +
                                           "; its child processes and temporary files were removed") + "\n";
      ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
      (void)ignored;
      // Not exit(): static destructors would race the threads still running.
      _exit(128 + sig);
    }).detach();
  });
}

}  // namespace diagnose
