#include "engine/core/cleanup_registry.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

// Adversarial test 17 (12): a SIGTERM sent before the report was written, still pending because
// the signal thread had not run yet, let the report be written and the run exit 0. A child with
// the signal blocked and pending (no signal thread at all: the thread "not yet scheduled" for
// ever) must write no report.
TEST(CleanupRegistry, APendingTerminationSignalStopsTheReportBeforeItIsWritten) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    ::kill(::getpid(), SIGTERM);   // pending: blocked in every thread, nobody waits for it
    std::FILE* out = ::fdopen(fds[1], "w");
    WriteWholeReport(out, "{\"report\": \"whole\"}\n");
    ::_exit(0);
  }
  ::close(fds[1]);
  pollfd readable{fds[0], POLLIN, 0};
  const int ready = ::poll(&readable, 1, 2000);
  std::string got;
  if (ready > 0) {
    char buf[256];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) got.assign(buf, static_cast<size_t>(n));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(fds[0]);
  EXPECT_EQ(got, "") << "the report was written though the signal came first";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the writer went on to exit " << status;
}

}  // namespace
}  // namespace diagnose
