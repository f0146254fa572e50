// The faults an unattended run meets on a shared login node or in a Slurm epilog, each run through
// the real binary with a real private Prometheus: a signal at a random moment, two runs appending
// to one sweep history, a temp filesystem that is full, no `prometheus` on PATH. In every case the
// job dir stays byte-identical and nothing of the run (child process, temp dir) is left behind.
#include <signal.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/subprocess.h"
#include "tests/support/fixture_reports.h"
#include "tests/support/fake_http_server.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Sets an environment variable for the children this test starts, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (previous_) setenv(name_, previous_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

fs::path FreshDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("diagnose-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Processes whose command line mentions `needle` (a private temp dir: the private Prometheus is
// started with its storage path inside it).
std::vector<std::string> ProcessesMentioning(const std::string& needle) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(::getpid())) continue;
    std::string cmdline = e2e::ReadFileOrEmpty((e.path() / "cmdline").string());
    for (auto& c : cmdline)
      if (c == '\0') c = ' ';
    if (cmdline.find(needle) != std::string::npos) found.push_back(pid + ": " + cmdline.substr(0, 200));
  }
  return found;
}

std::vector<std::string> EntriesOf(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

// Every leftover is waited for briefly: a child reaped by init may still be exiting.
std::vector<std::string> LeftoversAfter(const fs::path& tmp) {
  std::vector<std::string> left;
  for (int i = 0; i < 50; ++i) {
    left = ProcessesMentioning(tmp.string());
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return left;
}

TEST(ProcessFaults, ASignalAtTenRandomMomentsLeavesNoChildNoTempDirAndTheJobDirUntouched) {
  REQUIRE_FIXTURE("8308");
  const std::string job_dir = e2e::FixtureJobDir("8308");
  const auto before = e2e::DirSnapshot(job_dir);
  const fs::path tmp = FreshDir("signal-tmp");
  ScopedEnv tmpdir("TMPDIR", tmp.string());
  const std::vector<std::string> argv = {DIAGNOSE_BINARY, "8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"};

  // How long a whole run takes here (sanitizers and load stretch it): signals land across it.
  const auto started = Clock::now();
  ASSERT_EQ(e2e::RunDiagnoseCli({argv.begin() + 1, argv.end()}).exit_code, 0);
  const auto full = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);

  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed) + ", a full run takes " + std::to_string(full.count()) + " ms");
  const int signals[] = {SIGINT, SIGTERM, SIGHUP};
  for (int round = 0; round < 10; ++round) {
    const int sig = signals[round % 3];
    const auto delay = std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(0, full.count())(rng));
    SCOPED_TRACE("round " + std::to_string(round) + ": signal " + std::to_string(sig) + " after " +
                 std::to_string(delay.count()) + " ms");
    SpawnOptions options;
    options.argv = argv;
    auto child = ChildProcess::Spawn(options);
    ASSERT_TRUE(child.ok()) << child.status().message();
    std::this_thread::sleep_for(delay);
    ::kill(child->pid(), sig);
    auto code = child->Wait(std::chrono::seconds(60));
    ASSERT_TRUE(code.ok()) << "diagnose did not exit after the signal";
    // Killed by it (128+sig, or the handler's exit with that status), or finished before it landed.
    EXPECT_TRUE(*code == 128 + sig || *code == 0) << "exit " << *code;
    EXPECT_EQ(LeftoversAfter(tmp), std::vector<std::string>{}) << "a child of the run survived it";
    EXPECT_EQ(EntriesOf(tmp), std::vector<std::string>{}) << "the run left files in TMPDIR";
  }
  EXPECT_EQ(e2e::DirSnapshot(job_dir), before) << "the job dir was written";
  fs::remove_all(tmp);
}

// `diagnose JOB | head -c 10`: the reader goes away mid-report. The run used to die by SIGPIPE (141,
// no stderr line, its private Prometheus' temp dir left behind); the contract says exit 1 and one
// stderr line.
TEST(ProcessFaults, AClosedStdoutPipeIsExitOneWithOneLineAndNoTempDir) {
  REQUIRE_FIXTURE("8308");
  const fs::path out = FreshDir("closed-pipe-out");
  const fs::path tmp = FreshDir("closed-pipe-tmp");
  ScopedEnv tmpdir("TMPDIR", tmp.string());
  const std::string script = "(\"$0\" 8308 --outputs \"$1\" --format json 2>\"$2/err\"; echo $? >\"$2/rc\") | head -c 10 >/dev/null";
  const auto run = e2e::RunProgram({"sh", "-c", script, DIAGNOSE_BINARY, DIAGNOSE_FIXTURE_OUTPUTS, out.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(e2e::ReadFileOrEmpty((out / "rc").string()), "1\n");
  const std::string err = e2e::ReadFileOrEmpty((out / "err").string());
  EXPECT_EQ(err.rfind("diagnose: writing to standard output failed", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(LeftoversAfter(tmp), std::vector<std::string>{});
  EXPECT_EQ(EntriesOf(tmp), std::vector<std::string>{}) << "the run left files in TMPDIR";
  fs::remove_all(tmp);
  fs::remove_all(out);
}

// SIGTERM while the report goes to a reader that is not reading: the report used to stop at the
// pipe's 64 KiB, unterminated JSON. It is whole (the pipe is enlarged to take it in one write, or
// the signal waits a few seconds for the write) or absent, never part of one.
TEST(ProcessFaults, SigtermDuringTheReportsWriteLeavesItWholeOrAbsent) {
  REQUIRE_FIXTURE("8308");
  const fs::path dir = FreshDir("sigterm-write");
  const fs::path fifo = dir / "report";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  SpawnOptions options;
  options.argv = {DIAGNOSE_BINARY, "8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--logs-only", "--format", "json"};
  options.stdout_path = fifo.string();
  options.stderr_path = (dir / "err").string();
  auto child = ChildProcess::Spawn(options);
  ASSERT_TRUE(child.ok()) << child.status().message();
  int queued = 0;   // bytes in the pipe: the report's write has begun
  for (int i = 0; i < 6000 && queued == 0 && child->Running(); ++i) {
    ::ioctl(reader, FIONREAD, &queued);
    if (queued == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::ioctl(reader, FIONREAD, &queued);   // the run may have written it all and ended while we slept
  ASSERT_GT(queued, 0) << "the report was never written: " << e2e::ReadFileOrEmpty(options.stderr_path);
  ::kill(child->pid(), SIGTERM);
  std::string report;
  char buffer[65536];
  auto code = child->Wait(std::chrono::seconds(30));
  ::fcntl(reader, F_SETFL, 0);   // the writer has gone: read to end of file
  for (ssize_t n; (n = ::read(reader, buffer, sizeof buffer)) > 0;) report.append(buffer, static_cast<size_t>(n));
  ::close(reader);
  ASSERT_TRUE(code.ok());
  EXPECT_TRUE(*code == 0 || *code == 128 + SIGTERM) << *code;
  EXPECT_GT(report.size(), size_t{65536}) << "the case this guards: a report larger than a pipe's default";
  EXPECT_TRUE(json::accept(report)) << report.size() << " bytes, not one JSON document";
  fs::remove_all(dir);
}

// Stopped by a signal, the run still exits 128+signal after its cleanups, and one stderr line says
// what stopped it: an epilog's log otherwise shows a bare 143.
TEST(ProcessFaults, ASignalIsNamedInOneStderrLine) {
  REQUIRE_FIXTURE("8043");
  // An endpoint that holds every request, so the run is surely in flight when the signal lands.
  testing::FakeHttpServer slow([](const testing::FakeRequest&) {
    testing::FakeResponse r;
    r.stall = std::chrono::milliseconds(1500);
    r.drop_connection = true;
    return r;
  });
  const fs::path dir = FreshDir("signal-line");
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const std::string name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
    SCOPED_TRACE(name);
    SpawnOptions options;
    options.argv = {DIAGNOSE_BINARY, "8043", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--prometheus", slow.url(),
                    "--format", "json"};
    options.stdout_path = (dir / "out").string();
    options.stderr_path = (dir / "err").string();
    const int asked_before = slow.requests();
    auto child = ChildProcess::Spawn(options);
    ASSERT_TRUE(child.ok()) << child.status().message();
    // Once this run has asked the endpoint, its handler is surely installed.
    for (int i = 0; i < 500 && slow.requests() == asked_before; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(::kill(child->pid(), sig), 0);
    auto code = child->Wait(std::chrono::seconds(30));
    ASSERT_TRUE(code.ok());
    EXPECT_EQ(*code, 128 + sig);
    const std::string err = e2e::ReadFileOrEmpty(options.stderr_path);
    EXPECT_NE(err.find("diagnose: stopped by " + name), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  fs::remove_all(dir);
}

// A summary diagnosing two jobs at a time holds two private Prometheus servers and two temp copies
// when SIGTERM lands: the termination thread stops both, whichever worker started them.
TEST(ProcessFaults, SigtermMidParallelSummaryLeavesNoChildAndNoTempDir) {
  REQUIRE_FIXTURE("8308");
  const fs::path out = FreshDir("summary-signal-out");   // before TMPDIR points into the watched dir
  const fs::path tmp = FreshDir("summary-signal-tmp");
  ScopedEnv tmpdir("TMPDIR", tmp.string());
  SpawnOptions options;
  options.argv = {DIAGNOSE_BINARY, "summary", DIAGNOSE_FIXTURE_OUTPUTS, "--parallel", "2", "--format", "json"};
  options.stdout_path = (out / "out").string();
  options.stderr_path = (out / "err").string();
  auto child = ChildProcess::Spawn(options);
  ASSERT_TRUE(child.ok()) << child.status().message();
  // Two servers of this run alive at once: the signal surely lands mid-summary, with both workers busy.
  size_t most = 0;
  for (int i = 0; i < 1500 && most < 2; ++i) {
    size_t servers = 0;
    for (const auto& p : ProcessesMentioning(tmp.string())) servers += p.find("prometheus") != std::string::npos;
    most = std::max(most, servers);
    if (most < 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(::kill(child->pid(), SIGTERM), 0);
  auto code = child->Wait(std::chrono::seconds(60));
  ASSERT_TRUE(code.ok()) << "diagnose summary did not exit after SIGTERM";
  EXPECT_EQ(most, 2u) << "never saw two private Prometheus servers of the summary at once";
  EXPECT_EQ(*code, 128 + SIGTERM) << e2e::ReadFileOrEmpty(options.stderr_path);
  EXPECT_EQ(LeftoversAfter(tmp), std::vector<std::string>{}) << "a child of the summary survived it";
  EXPECT_EQ(EntriesOf(tmp), std::vector<std::string>{}) << "the summary left files in TMPDIR";
  const std::string err = e2e::ReadFileOrEmpty(options.stderr_path);
  EXPECT_NE(err.find("diagnose: stopped by SIGTERM"), std::string::npos) << err;
  fs::remove_all(tmp);
  fs::remove_all(out);
}

TEST(ProcessFaults, ConcurrentRunsAppendingToOneHistoryLoseNoLineAndTearNone) {
  REQUIRE_FIXTURE("8308");
  REQUIRE_FIXTURE("8043");
  const fs::path dir = FreshDir("history-race");
  const std::string history = (dir / "sweep.jsonl").string();
  constexpr int kRounds = 3;
  const std::vector<std::string> jobs = {"8308", "8043", "8308", "8043"};
  for (int round = 0; round < kRounds; ++round) {
    std::vector<ChildProcess> children;
    for (size_t i = 0; i < jobs.size(); ++i) {
      SpawnOptions options;
      options.argv = {DIAGNOSE_BINARY, jobs[i], "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json",
                      "--history", history};
      auto child = ChildProcess::Spawn(options);
      ASSERT_TRUE(child.ok()) << child.status().message();
      children.push_back(std::move(child).value());
    }
    for (auto& child : children) {
      auto code = child.Wait(std::chrono::minutes(3));
      ASSERT_TRUE(code.ok());
      EXPECT_EQ(*code, 0);
    }
  }
  std::ifstream in(history);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    json entry = json::parse(line, nullptr, false);
    ASSERT_FALSE(entry.is_discarded()) << "line " << lines << " is not JSON: " << line.substr(0, 300);
    EXPECT_TRUE(entry.contains("job") && entry.contains("action")) << line.substr(0, 300);
  }
  // Twelve runs of two jobs: one line per job, each run replacing the job's line (a re-run must not
  // count twice against the sweep's limits), none lost, none torn.
  EXPECT_EQ(lines, static_cast<int>(std::set<std::string>(jobs.begin(), jobs.end()).size()))
      << "a decision was lost or a job recorded twice";
  fs::remove_all(dir);
}

TEST(ProcessFaults, AFullTempFilesystemIsAnIncompleteDiagnosisThatSaysWhyAndLeavesNothing) {
  REQUIRE_FIXTURE("8308");
  const fs::path mount_point = FreshDir("full-tmpfs");
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=64k,mode=0700") != 0) {
    fs::remove_all(mount_point);
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno) << "; needs root)";
  }
  // Fill it to the last block, so the private copy's first write fails.
  {
    std::ofstream filler(mount_point / "filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (filler.write(block.data(), block.size())) {
    }
  }
  const std::string job_dir = e2e::FixtureJobDir("8308");
  const auto before = e2e::DirSnapshot(job_dir);
  const fs::path outputs = FreshDir("full-tmpfs-out");
  SpawnOptions options;
  options.argv = {DIAGNOSE_BINARY, "8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"};
  options.stdout_path = (outputs / "out").string();
  options.stderr_path = (outputs / "err").string();
  e2e::CliRun run;
  {
    ScopedEnv tmpdir("TMPDIR", mount_point.string());
    auto child = ChildProcess::Spawn(options);
    ASSERT_TRUE(child.ok()) << child.status().message();
    auto code = child->Wait(std::chrono::minutes(3));
    run.exit_code = code.ok() ? *code : -1;
  }
  run.out = e2e::ReadFileOrEmpty(options.stdout_path);
  run.err = e2e::ReadFileOrEmpty(options.stderr_path);
  fs::remove_all(outputs);
  const auto left = EntriesOf(mount_point);
  ::umount(mount_point.c_str());
  fs::remove_all(mount_point);
  // The job's metrics exist but this machine could not serve them: not the job's fault, so not a
  // logs-only verdict either. The report is still written (stdout is elsewhere), says the
  // diagnosis is incomplete (exit 3, decision none) and why, naming where space ran out.
  json r = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << "exit " << run.exit_code << ", stderr: " << run.err;
  EXPECT_EQ(run.exit_code, e2e::kIncompleteExit) << run.err;
  EXPECT_EQ(r["tsdb"][0]["state"], "failed") << e2e::Dump(r["tsdb"]);
  EXPECT_EQ(r["decision"]["action"], "none");
  const std::string reason = r["tsdb"][0].value("reason", "");
  EXPECT_NE(reason.find("No space left on device"), std::string::npos) << reason;
  EXPECT_NE(reason.find(mount_point.string()), std::string::npos) << "names the full temp dir: " << reason;
  EXPECT_NE(run.err.find("No space left on device"), std::string::npos) << "one line on stderr says why: " << run.err;
  EXPECT_EQ(left, std::vector<std::string>{"filler"}) << "the run left files in the full temp dir";
  EXPECT_EQ(e2e::DirSnapshot(job_dir), before) << "the job dir was written";
}

TEST(ProcessFaults, NoPrometheusOnPathIsAnIncompleteDiagnosisThatSaysWhichPackage) {
  REQUIRE_FIXTURE("8043");
  const fs::path empty_path = FreshDir("empty-path");
  e2e::CliRun run;
  {
    ScopedEnv path("PATH", empty_path.string());
    run = e2e::RunDiagnoseCli({"8043", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"});
  }
  fs::remove_all(empty_path);
  // This machine lacks a tool, the job lacks nothing: incomplete (exit 3, decision none), saying
  // what to install; the log's facts are still reported.
  EXPECT_EQ(run.exit_code, e2e::kIncompleteExit) << run.err;
  json r = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << run.out.substr(0, 300);
  EXPECT_EQ(r["tsdb"][0]["state"], "failed") << e2e::Dump(r["tsdb"]);
  EXPECT_EQ(r["decision"]["action"], "none");
  const std::string reason = r["tsdb"][0].value("reason", "");
  EXPECT_NE(reason.find("'prometheus' not found in PATH (Debian package 'prometheus')"), std::string::npos) << reason;
  EXPECT_EQ(r["jobs"][0]["status"], "failed");
}

// A `prometheus` first on PATH that appends its pid to `starts` and then runs `then` (a shell
// command): a server that never gets ready, or one that dies at once.
fs::path FakePrometheusDir(const std::string& name, const fs::path& starts, const std::string& then) {
  const fs::path dir = FreshDir(name);
  const fs::path script = dir / "prometheus";
  std::ofstream(script) << "#!/bin/sh\necho $$ >> '" << starts.string() << "'\n" << then << "\n";
  fs::permissions(script, fs::perms::owner_all);
  return dir;
}

// The dirs of a run whose `prometheus` is such a fake, removed after it: its outputs, its TMPDIR,
// the fake's record of its starts, the fake itself.
struct FakeServerDirs {
  FakeServerDirs(const std::string& name, const std::string& then)
      : out(FreshDir(name + "-out")), tmp(FreshDir(name + "-tmp")), starts(out / "starts"),
        bin(FakePrometheusDir(name + "-bin", starts, then)) {}
  ~FakeServerDirs() {
    for (const fs::path& dir : {out, tmp, bin}) fs::remove_all(dir);
  }
  std::string SearchPath() const { return bin.string() + ":" + std::getenv("PATH"); }
  fs::path out, tmp, starts, bin;
};

std::vector<std::string> LinesOf(const fs::path& file) {
  std::vector<std::string> lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// A pid that still runs (a zombie waiting for its reaper has stopped).
bool StillRunning(const std::string& pid) {
  const std::string stat = e2e::ReadFileOrEmpty("/proc/" + pid + "/stat");
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// The private server starts while the logs are triaged: SIGTERM landing while it starts (here it
// never gets ready) still stops it and removes its copy, whichever thread started it.
TEST(ProcessFaults, SigtermWhileTheServerStartsBesideTriageLeavesNoChildAndNoTempDir) {
  REQUIRE_FIXTURE("8308");
  const FakeServerDirs dirs("early-start-signal", "exec sleep 120");
  const fs::path &out = dirs.out, &tmp = dirs.tmp, &starts = dirs.starts;
  ScopedEnv tmpdir("TMPDIR", tmp.string());
  ScopedEnv path("PATH", dirs.SearchPath());
  SpawnOptions options;
  options.argv = {DIAGNOSE_BINARY, "8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"};
  options.stdout_path = (out / "out").string();
  options.stderr_path = (out / "err").string();
  auto child = ChildProcess::Spawn(options);
  ASSERT_TRUE(child.ok()) << child.status().message();
  for (int i = 0; i < 3000 && LinesOf(starts).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::vector<std::string> started = LinesOf(starts);
  ASSERT_EQ(started.size(), 1u) << "the server was not started, or not once: " << e2e::ReadFileOrEmpty(options.stderr_path);
  ASSERT_EQ(::kill(child->pid(), SIGTERM), 0);
  auto code = child->Wait(std::chrono::seconds(60));
  ASSERT_TRUE(code.ok()) << "diagnose did not exit after SIGTERM";
  EXPECT_EQ(*code, 128 + SIGTERM) << e2e::ReadFileOrEmpty(options.stderr_path);
  bool server_alive = StillRunning(started[0]);
  for (int i = 0; i < 50 && server_alive; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server_alive = StillRunning(started[0]);
  }
  EXPECT_FALSE(server_alive) << "the starting server (pid " << started[0] << ") survived the run";
  EXPECT_EQ(EntriesOf(tmp), std::vector<std::string>{}) << "the run left files in TMPDIR";
}

// A server that dies as it starts beside triage counts as the first start: it is started once
// more, with the log's choice of blocks, and never a third time; the diagnosis is incomplete.
TEST(ProcessFaults, AServerThatDiesStartingBesideTriageIsRestartedOnceNeverTwice) {
  REQUIRE_FIXTURE("8308");
  const FakeServerDirs dirs("early-start-dies", "exit 7");
  e2e::CliRun run;
  {
    ScopedEnv tmpdir("TMPDIR", dirs.tmp.string());
    ScopedEnv path("PATH", dirs.SearchPath());
    run = e2e::RunDiagnoseCli({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"});
  }
  EXPECT_EQ(run.exit_code, e2e::kIncompleteExit) << run.err;
  EXPECT_EQ(LinesOf(dirs.starts).size(), 2u);
  json r = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << run.out.substr(0, 300);
  EXPECT_EQ(r["tsdb"][0]["state"], "failed") << e2e::Dump(r["tsdb"]);
  const std::string reason = r["tsdb"][0].value("reason", "");
  EXPECT_NE(reason.find("failed after one restart"), std::string::npos) << reason;
  EXPECT_NE(reason.find("exited with code 7"), std::string::npos) << reason;
  EXPECT_EQ(EntriesOf(dirs.tmp), std::vector<std::string>{}) << "the run left files in TMPDIR";
}

// The playbooks parse while the job is triaged, its server starts and its metrics are discovered:
// a playbook that does not parse is still the run's one error, and the server started meanwhile
// is stopped with its copy.
TEST(ProcessFaults, APlaybookThatDoesNotParseStopsTheServerStartedMeanwhile) {
  REQUIRE_FIXTURE("8308");
  const fs::path playbooks = FreshDir("broken-playbooks");
  std::ofstream(playbooks / "broken.yaml") << "playbook: [unclosed\n";
  const fs::path tmp = FreshDir("broken-playbooks-tmp");
  e2e::CliRun run;
  {
    ScopedEnv tmpdir("TMPDIR", tmp.string());
    run = e2e::RunDiagnoseCli(
        {"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json", "--playbooks", playbooks.string()});
  }
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(run.out.empty()) << run.out.substr(0, 300);
  EXPECT_NE(run.err.find("invalid playbook: " + (playbooks / "broken.yaml").string()), std::string::npos) << run.err;
  EXPECT_EQ(LeftoversAfter(tmp), std::vector<std::string>{}) << "the server started meanwhile survived the run";
  EXPECT_EQ(EntriesOf(tmp), std::vector<std::string>{}) << "the run left files in TMPDIR";
  fs::remove_all(tmp);
  fs::remove_all(playbooks);
}

}  // namespace
}  // namespace diagnose
