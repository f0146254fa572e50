#include "engine/core/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

namespace diagnose {
namespace {

using Clock = std::chrono::steady_clock;

// Output kept by RunCommand: tools like promtool can print a table per block; the head and the tail
// carry what a user needs (the command's error is at the end).
constexpr size_t kMaxCapturedOutput = 256 * 1024;

std::string Joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += a;
  }
  return out;
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Writes errno to the parent through the close-on-exec pipe and dies; async-signal-safe only.
[[noreturn]] void ChildFail(int report_fd, int stage) {
  int payload[2] = {stage, errno};
  ssize_t ignored = write(report_fd, payload, sizeof payload);
  (void)ignored;
  _exit(127);
}

struct ChildFds {
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// fork+exec rather than posix_spawn because the child must call prctl(PR_SET_PDEATHSIG) itself.
// Everything the child needs is prepared before fork so it only makes async-signal-safe calls.
// This process's environment plus each default whose name it does not set.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& defaults) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  for (const auto& setting : defaults) {
    const size_t eq = setting.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string name = setting.substr(0, eq);
    if (std::getenv(name.c_str()) == nullptr) env.push_back(setting);
  }
  return env;
}

StatusOr<int> ForkExec(const std::vector<std::string>& argv, const std::string& working_dir,
                       const std::vector<std::string>& default_environment, ChildFds fds) {
  if (argv.empty()) return InvalidArgumentError("cannot spawn an empty argument vector");
  std::string program = argv[0];
  if (program.find('/') == std::string::npos) {
    program = FindExecutable(argv[0]);
    if (program.empty()) return NotFoundError("executable '" + argv[0] + "' not found in PATH");
  }
  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const std::vector<std::string> environment = ChildEnvironment(default_environment);
  std::vector<char*> cenv;
  cenv.reserve(environment.size() + 1);
  for (const auto& e : environment) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    return InternalError(std::string("pipe2 failed: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(report[0]);
    close(report[1]);
    return UnavailableError("fork failed for '" + Joined(argv) + "': " + std::strerror(err));
  }
  if (pid == 0) {
    close(report[0]);
    // The calling process may block signals for its sigwait thread; the child must not inherit
    // that mask or it would ignore our SIGTERM.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT}) signal(sig, SIG_DFL);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail(report[1], 1);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    setpgid(0, 0);  // own process group: a terminal's Ctrl-C reaches us, we decide what the child gets
    int devnull = -1;
    if (fds.stdout_fd < 0 || fds.stderr_fd < 0) {
      devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (devnull < 0) ChildFail(report[1], 2);
    }
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0 || dup2(in, STDIN_FILENO) < 0) ChildFail(report[1], 2);
    if (dup2(fds.stdout_fd >= 0 ? fds.stdout_fd : devnull, STDOUT_FILENO) < 0) ChildFail(report[1], 2);
    if (dup2(fds.stderr_fd >= 0 ? fds.stderr_fd : devnull, STDERR_FILENO) < 0) ChildFail(report[1], 2);
    if (!working_dir.empty() && chdir(working_dir.c_str()) != 0) ChildFail(report[1], 3);
    execve(program.c_str(), cargv.data(), cenv.data());
    ChildFail(report[1], 4);
  }
  close(report[1]);
  int payload[2] = {0, 0};
  ssize_t n;
  do {
    n = read(report[0], payload, sizeof payload);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n > 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string where;
    switch (payload[0]) {
      case 1: where = "prctl(PR_SET_PDEATHSIG)"; break;
      case 2: where = "redirecting output"; break;
      case 3: where = "chdir to '" + working_dir + "'"; break;
      default: where = "exec of '" + program + "'"; break;
    }
    return UnavailableError("cannot start '" + Joined(argv) + "': " + where + " failed: " +
                            std::strerror(payload[1]));
  }
  return static_cast<int>(pid);
}

// PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the process. Forking
// from one process-lifetime thread keeps a child started by a short-lived worker thread (e.g. a
// baseline TSDB opened in parallel) alive until the process itself dies.
class SpawnerThread {
 public:
  static SpawnerThread& Instance() {
    // Never destroyed: outlives every caller. A fork()ed copy of this process has no spawner
    // thread (threads do not survive fork), so it makes its own and leaks the inherited one,
    // whose mutex may have been held at the fork.
    static std::atomic<SpawnerThread*> instance{nullptr};
    static std::mutex create_mutex;
    SpawnerThread* current = instance.load();
    if (current && current->owner_ == getpid()) return *current;
    std::lock_guard<std::mutex> lock(create_mutex);
    current = instance.load();
    if (!current || current->owner_ != getpid()) {
      current = new SpawnerThread();
      instance.store(current);
    }
    return *current;
  }

  StatusOr<int> Run(const std::vector<std::string>& argv, const std::string& working_dir,
                    const std::vector<std::string>& default_environment, ChildFds fds) {
    std::packaged_task<StatusOr<int>()> task([&] { return ForkExec(argv, working_dir, default_environment, fds); });
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
    return result.get();
  }

 private:
  SpawnerThread() : owner_(getpid()) {
    std::thread([this] {
      // Termination signals belong to the sigwait thread (cleanup_registry.cc) or the main thread.
      sigset_t set;
      sigemptyset(&set);
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
      pthread_sigmask(SIG_BLOCK, &set, nullptr);
      while (true) {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return !tasks_.empty(); });
        auto task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
      }
    }).detach();
  }
  const pid_t owner_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<StatusOr<int>()>> tasks_;
};

int OpenOutput(const std::string& path) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

}  // namespace

std::string FindExecutable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

StatusOr<ChildProcess> ChildProcess::Spawn(const SpawnOptions& options) {
  ChildFds fds;
  if (!options.stdout_path.empty()) {
    fds.stdout_fd = OpenOutput(options.stdout_path);
    if (fds.stdout_fd < 0) {
      return UnavailableError("cannot open '" + options.stdout_path + "' for the output of '" +
                              Joined(options.argv) + "': " + std::strerror(errno));
    }
  }
  if (!options.stderr_path.empty()) {
    if (options.stderr_path == options.stdout_path) {
      fds.stderr_fd = fds.stdout_fd;
    } else {
      fds.stderr_fd = OpenOutput(options.stderr_path);
      if (fds.stderr_fd < 0) {
        int err = errno;
        if (fds.stdout_fd >= 0) close(fds.stdout_fd);
        return UnavailableError("cannot open '" + options.stderr_path + "' for the errors of '" +
                                Joined(options.argv) + "': " + std::strerror(err));
      }
    }
  }
  auto pid = SpawnerThread::Instance().Run(options.argv, options.working_dir, options.default_environment, fds);
  if (fds.stdout_fd >= 0) close(fds.stdout_fd);
  if (fds.stderr_fd >= 0 && fds.stderr_fd != fds.stdout_fd) close(fds.stderr_fd);
  if (!pid.ok()) return pid.status();
  return ChildProcess(*pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), exit_code_(other.exit_code_) {
  other.pid_ = -1;
  other.exit_code_.reset();
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Terminate();
    pid_ = other.pid_;
    exit_code_ = other.exit_code_;
    other.pid_ = -1;
    other.exit_code_.reset();
  }
  return *this;
}

ChildProcess::~ChildProcess() { Terminate(); }

bool ChildProcess::Running() {
  if (pid_ <= 0 || exit_code_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = DecodeWaitStatus(status);
    return false;
  }
  if (r < 0 && errno == ECHILD) {  // reaped elsewhere; nothing left to wait for
    exit_code_ = -1;
    return false;
  }
  return true;
}

std::optional<int> ChildProcess::ExitCode() const { return exit_code_; }

namespace {

// A descriptor that becomes readable when the (unreaped) child exits, or -1 where the kernel has
// none (before Linux 5.3): the wait then polls.
int ExitDescriptor(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  return -1;
#endif
}

}  // namespace

StatusOr<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return FailedPreconditionError("no child process to wait for");
  const auto deadline = Clock::now() + timeout;
  // Woken by the exit itself: a server stopped at the end of every diagnosis is seen gone at once,
  // not at the next of the doubling polls (up to 20 ms later).
  const int exited = Running() ? ExitDescriptor(pid_) : -1;
  auto pause = std::chrono::milliseconds(1);
  while (Running()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      if (exited >= 0) close(exited);
      return DeadlineExceededError("process " + std::to_string(pid_) + " still running after " +
                                   std::to_string(timeout.count()) + " ms");
    }
    if (exited >= 0) {
      pollfd readable{exited, POLLIN, 0};
      poll(&readable, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  if (exited >= 0) close(exited);
  return *exit_code_;
}

void ChildProcess::Terminate(std::chrono::milliseconds grace) {
  if (pid_ <= 0 || !Running()) return;
  kill(pid_, SIGTERM);
  if (Wait(grace).ok()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  exit_code_ = r == pid_ ? DecodeWaitStatus(status) : -1;
}

StatusOr<RunResult> RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/diagnose-run-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    return UnavailableError("cannot create a temp file to capture '" + Joined(argv) + "': " +
                            std::strerror(errno));
  }
  // Unlinked at once: the capture is private and cannot be left behind, whatever happens next.
  unlink(name.data());
  auto pid = SpawnerThread::Instance().Run(argv, "", {}, ChildFds{fd, fd});
  if (!pid.ok()) {
    close(fd);
    return pid.status();
  }
  ChildProcess child(*pid);
  auto code = child.Wait(timeout);

  RunResult result;
  off_t size = lseek(fd, 0, SEEK_END);
  if (size > 0) {
    auto read_at = [&](off_t offset, size_t length) {
      std::string buf(length, '\0');
      ssize_t n = pread(fd, buf.data(), length, offset);
      buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
      return buf;
    };
    if (static_cast<size_t>(size) <= kMaxCapturedOutput) {
      result.output = read_at(0, static_cast<size_t>(size));
    } else {
      const size_t half = kMaxCapturedOutput / 2;
      result.output = read_at(0, half) + "\n[... " + std::to_string(size - 2 * half) +
                      " bytes omitted ...]\n" + read_at(size - static_cast<off_t>(half), half);
    }
  }
  close(fd);
  if (!code.ok()) {
    child.Terminate(std::chrono::milliseconds(500));
    std::string tail = result.output.size() > 2000 ? result.output.substr(result.output.size() - 2000)
                                                   : result.output;
    return DeadlineExceededError("'" + Joined(argv) + "' did not finish within " +
                                 std::to_string(timeout.count()) + " ms; output so far: " + tail);
  }
  result.exit_code = *code;
  return result;
}

}  // namespace diagnose
