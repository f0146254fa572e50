#include "engine/core/subprocess.h"
#include "tests/support/files.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

bool ProcessExists(int pid) { return kill(pid, 0) == 0; }

SpawnOptions Options(std::vector<std::string> argv, std::string out = "", std::string err = "",
                     std::string working_dir = "") {
  SpawnOptions options;
  options.argv = std::move(argv);
  options.stdout_path = std::move(out);
  options.stderr_path = std::move(err);
  options.working_dir = std::move(working_dir);
  return options;
}

class SubprocessTest : public ::testing::Test {
 protected:
  testing::TempDir scratch_{"subprocess-test"};
  const std::string dir_ = scratch_.path().string();
};

TEST_F(SubprocessTest, RunCommandCapturesStdoutAndStderrAndExitCode) {
  auto r = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 3"}, milliseconds(5000));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_NE(r->output.find("out"), std::string::npos);
  EXPECT_NE(r->output.find("err"), std::string::npos);
}

TEST_F(SubprocessTest, ArgumentsAreNotInterpretedByAShell) {
  auto r = RunCommand({"echo", "$HOME; rm -rf /nonexistent", "*"}, milliseconds(5000));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->output, "$HOME; rm -rf /nonexistent *\n");
}

TEST_F(SubprocessTest, RunCommandTimesOutAndKillsTheChild) {
  auto start = std::chrono::steady_clock::now();
  auto r = RunCommand({"sleep", "30"}, milliseconds(200));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("sleep 30"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(SubprocessTest, RunCommandLeavesNoCaptureFile) {
  ASSERT_TRUE(RunCommand({"true"}, milliseconds(5000)).ok());
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
    EXPECT_EQ(e.path().filename().string().rfind("diagnose-run-", 0), std::string::npos) << e.path();
  }
}

TEST_F(SubprocessTest, MissingExecutableIsNotFound) {
  auto r = RunCommand({"definitely-not-a-program-xyz"}, milliseconds(1000));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("definitely-not-a-program-xyz"), std::string::npos);
}

TEST_F(SubprocessTest, ExecFailureOfAnAbsolutePathIsReported) {
  auto child = ChildProcess::Spawn(Options({dir_ + "/nope"}));
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.status().message().find("nope"), std::string::npos);
}

TEST_F(SubprocessTest, EmptyArgvIsInvalid) {
  auto r = RunCommand({}, milliseconds(1000));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SubprocessTest, SpawnRedirectsToFilesAndHonoursWorkingDir) {
  const std::string out = dir_ + "/out.txt", err = dir_ + "/err.txt";
  auto child = ChildProcess::Spawn(Options({"sh", "-c", "pwd; echo oops >&2"}, out, err, dir_));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  auto code = child->Wait(milliseconds(5000));
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0);
  EXPECT_EQ(testing::ReadFileOrEmpty(out), fs::canonical(dir_).string() + "\n");
  EXPECT_EQ(testing::ReadFileOrEmpty(err), "oops\n");
  EXPECT_EQ(child->ExitCode(), 0);
}

TEST_F(SubprocessTest, DefaultEnvironmentFillsOnlyWhatTheCallerLeftUnset) {
  ASSERT_NE(std::getenv("PATH"), nullptr);
  ::unsetenv("DIAGNOSE_SUBPROCESS_TEST_DEFAULT");
  const std::string out = dir_ + "/env.txt";
  SpawnOptions options = Options({"/usr/bin/env"}, out);
  options.default_environment = {"DIAGNOSE_SUBPROCESS_TEST_DEFAULT=400", "PATH=/nowhere", "=nameless"};
  auto child = ChildProcess::Spawn(options);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  ASSERT_TRUE(child->Wait(milliseconds(5000)).ok());
  const std::string env = testing::ReadFileOrEmpty(out);
  EXPECT_NE(env.find("\nDIAGNOSE_SUBPROCESS_TEST_DEFAULT=400\n"), std::string::npos) << env;
  EXPECT_NE(env.find("PATH=" + std::string(std::getenv("PATH")) + "\n"), std::string::npos) << env;
  EXPECT_EQ(env.find("PATH=/nowhere"), std::string::npos) << env;
  EXPECT_EQ(env.find("=nameless"), std::string::npos) << env;
}

TEST_F(SubprocessTest, SameFileForStdoutAndStderrKeepsBoth) {
  const std::string log = dir_ + "/log.txt";
  auto child = ChildProcess::Spawn(Options({"sh", "-c", "echo a; echo b >&2"}, log, log));
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Wait(milliseconds(5000)).ok());
  EXPECT_EQ(testing::ReadFileOrEmpty(log), "a\nb\n");
}

TEST_F(SubprocessTest, TerminateSendsSigtermThenReaps) {
  auto child = ChildProcess::Spawn(Options({"sleep", "30"}));
  ASSERT_TRUE(child.ok());
  const int pid = child->pid();
  EXPECT_TRUE(child->Running());
  child->Terminate(milliseconds(2000));
  EXPECT_FALSE(child->Running());
  EXPECT_EQ(child->ExitCode(), 128 + SIGTERM);
  EXPECT_FALSE(ProcessExists(pid));  // reaped, not a zombie
}

TEST_F(SubprocessTest, TerminateEscalatesToSigkillWhenSigtermIsIgnored) {
  auto child = ChildProcess::Spawn(
      Options({"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"}, dir_ + "/ready"));
  ASSERT_TRUE(child.ok());
  for (int i = 0; i < 200 && testing::ReadFileOrEmpty(dir_ + "/ready").empty(); ++i) usleep(10000);
  child->Terminate(milliseconds(200));
  EXPECT_EQ(child->ExitCode(), 128 + SIGKILL);
}

TEST_F(SubprocessTest, WaitTimesOutWhileRunning) {
  auto child = ChildProcess::Spawn(Options({"sleep", "30"}));
  ASSERT_TRUE(child.ok());
  auto code = child->Wait(milliseconds(50));
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().code(), StatusCode::kDeadlineExceeded);
}

TEST_F(SubprocessTest, DestructorTerminatesTheChild) {
  int pid;
  {
    auto child = ChildProcess::Spawn(Options({"sleep", "30"}));
    ASSERT_TRUE(child.ok());
    pid = child->pid();
    ChildProcess moved = std::move(*child);  // the moved-from object must not kill it
    EXPECT_TRUE(moved.Running());
  }
  EXPECT_FALSE(ProcessExists(pid));
}

TEST_F(SubprocessTest, ChildDoesNotInheritBlockedSignals) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  auto child = ChildProcess::Spawn(Options({"sleep", "30"}));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(child.ok());
  child->Terminate(milliseconds(2000));
  EXPECT_EQ(child->ExitCode(), 128 + SIGTERM);
}

TEST_F(SubprocessTest, ChildDiesWithItsParent) {
  // A forked intermediate parent spawns `sleep` and is then SIGKILLed: PR_SET_PDEATHSIG must take
  // the grandchild with it, since nobody would ever terminate it otherwise.
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t parent = fork();
  if (parent == 0) {
    close(pipefd[0]);
    auto child = ChildProcess::Spawn(Options({"sleep", "30"}));
    int pid = child.ok() ? child->pid() : -1;
    if (write(pipefd[1], &pid, sizeof pid) != sizeof pid) _exit(1);
    pause();
    _exit(0);
  }
  close(pipefd[1]);
  int grandchild = -1;
  ASSERT_EQ(read(pipefd[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
  close(pipefd[0]);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(ProcessExists(grandchild));
  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    // The grandchild is reparented to init (or a subreaper) once killed; /proc shows it gone or a zombie.
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string content;
    std::getline(stat, content);
    gone = content.empty() || content.find(") Z") != std::string::npos;
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone) << "child survived its parent's SIGKILL";
}

TEST_F(SubprocessTest, FindExecutableSearchesPath) {
  EXPECT_FALSE(FindExecutable("sh").empty());
  EXPECT_TRUE(FindExecutable("definitely-not-a-program-xyz").empty());
}

}  // namespace
}  // namespace diagnose

namespace diagnose {
namespace {

TEST(SubprocessThreadTest, ChildOutlivesTheThreadThatSpawnedIt) {
  std::optional<ChildProcess> child;
  std::thread([&] {
    auto c = ChildProcess::Spawn(Options({"sleep", "30"}));
    ASSERT_TRUE(c.ok());
    child.emplace(std::move(c).value());
  }).join();
  ASSERT_TRUE(child.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(child->Running()) << "PR_SET_PDEATHSIG fired when the spawning thread exited";
  child->Terminate(std::chrono::milliseconds(2000));
  EXPECT_EQ(child->ExitCode(), 128 + SIGTERM);
}

}  // namespace
}  // namespace diagnose
