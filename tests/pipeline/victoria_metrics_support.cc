#include "tests/pipeline/victoria_metrics_support.h"

#include <signal.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/support/fixture_reports.h"

namespace diagnose::e2e {

namespace fs = std::filesystem;

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::unique_ptr<VictoriaMetrics> VictoriaMetrics::Start(std::string* why) {
  if (FindExecutable("victoria-metrics").empty()) {
    *why = "victoria-metrics is not installed (scripts/install-deps.sh installs it)";
    return nullptr;
  }
  const fs::path root = fs::path(DIAGNOSE_BUILD_DIR) / "fleet-store-test";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {   // runs that were killed
    const std::string name = entry.path().filename().string();
    const int pid = std::atoi(name.c_str());
    if (pid > 0 && ::kill(pid, 0) != 0) fs::remove_all(entry.path(), ec);
  }
  auto vm = std::unique_ptr<VictoriaMetrics>(new VictoriaMetrics);
  static std::atomic<int> started{0};   // several stores in one test process get their own dirs
  vm->dir_ = root / (std::to_string(::getpid()) + "-" + std::to_string(started++));
  fs::remove_all(vm->dir_, ec);
  fs::create_directories(vm->dir_, ec);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int port = FreePort();
    SpawnOptions spawn;
    spawn.argv = {"victoria-metrics", "-storageDataPath=" + (vm->dir_ / "data").string(), "-retentionPeriod=100y",
                  "-dedup.minScrapeInterval=1ms", "-httpListenAddr=127.0.0.1:" + std::to_string(port),
                  "-loggerLevel=ERROR"};
    spawn.stderr_path = (vm->dir_ / "vm.log").string();
    auto child = ChildProcess::Spawn(spawn);
    if (!child.ok()) {
      *why = child.status().ToString();
      return nullptr;
    }
    vm->url_ = "http://127.0.0.1:" + std::to_string(port);
    for (int i = 0; i < 100 && child->Running(); ++i) {
      auto health = RunCommand({"curl", "-sf", vm->url_ + "/health"}, std::chrono::seconds(5));
      if (health.ok() && health->exit_code == 0) {
        vm->child_ = std::move(*child);
        return vm;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  *why = "victoria-metrics did not become ready; its log: " + ReadFileOrEmpty((vm->dir_ / "vm.log").string());
  return nullptr;
}

VictoriaMetrics::~VictoriaMetrics() {
  child_.reset();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

}  // namespace diagnose::e2e
