// Colour on a real terminal: `diagnose` runs on a pseudo-terminal, as under an SRE's shell, so the
// isatty() branch that pipes never reach is the one under test (no-color.org, TERM=dumb, --color).
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace diagnose::e2e {
namespace {

struct TerminalRun {
  int exit_code = -1;
  std::string screen;   // stdout and stderr, as the terminal showed them
};

// `diagnose ARGS...` with stdout and stderr on a fresh pty; `env` entries (NAME=value, or NAME alone
// to unset) change the inherited environment in the child only.
TerminalRun RunOnTerminal(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<std::string> argv_storage{DIAGNOSE_BINARY};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  TerminalRun run;
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) {
    ADD_FAILURE() << "forkpty: " << std::strerror(errno);
    return run;
  }
  if (pid == 0) {
    for (const auto& e : env) {
      const auto eq = e.find('=');
      if (eq == std::string::npos) {
        unsetenv(e.c_str());
      } else {
        setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
      }
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = read(master, buf, sizeof buf);
    if (n > 0) {
      run.screen.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;   // EIO once the child closed its side of the terminal
  }
  close(master);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

bool HasEscapeCodes(const std::string& screen) { return screen.find('\x1b') != std::string::npos; }

// The degraded 8308 report colours its verdict; logs only, so no Prometheus is needed.
const std::vector<std::string> kTextReport = {"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "text",
                                              "--logs-only"};

TEST(ColorCli, ATerminalGetsColourUnlessNoColorOrADumbTerminalSaysOtherwise) {
  const TerminalRun plain_terminal = RunOnTerminal(kTextReport, {"NO_COLOR", "TERM=xterm-256color"});
  ASSERT_EQ(plain_terminal.exit_code, 0) << plain_terminal.screen;
  // Without this, the checks below could pass on a build that never colours anything.
  EXPECT_TRUE(HasEscapeCodes(plain_terminal.screen)) << plain_terminal.screen;

  const TerminalRun no_color = RunOnTerminal(kTextReport, {"NO_COLOR=1", "TERM=xterm-256color"});
  EXPECT_EQ(no_color.exit_code, 0);
  EXPECT_FALSE(HasEscapeCodes(no_color.screen)) << no_color.screen;
  EXPECT_NE(no_color.screen.find("8308"), std::string::npos) << no_color.screen;

  const TerminalRun dumb = RunOnTerminal(kTextReport, {"NO_COLOR", "TERM=dumb"});
  EXPECT_FALSE(HasEscapeCodes(dumb.screen)) << dumb.screen;

  std::vector<std::string> never = kTextReport;
  never.insert(never.end(), {"--color", "never"});
  EXPECT_FALSE(HasEscapeCodes(RunOnTerminal(never, {"NO_COLOR", "TERM=xterm-256color"}).screen));
}

TEST(ColorCli, AnEmptyNoColorIsNotSetAndAlwaysOverridesIt) {
  // no-color.org: only a non-empty NO_COLOR counts; an explicit --color always wins over it.
  EXPECT_TRUE(HasEscapeCodes(RunOnTerminal(kTextReport, {"NO_COLOR=", "TERM=xterm-256color"}).screen));
  std::vector<std::string> always = kTextReport;
  always.insert(always.end(), {"--color", "always"});
  EXPECT_TRUE(HasEscapeCodes(RunOnTerminal(always, {"NO_COLOR=1", "TERM=xterm-256color"}).screen));
}

}  // namespace
}  // namespace diagnose::e2e
