// When diagnose itself fails (its private Prometheus killed, an endpoint that refuses, answers HTML,
// 500, broken JSON or bytes that are not UTF-8), it must say so and never hand a sweep driver a
// different decision: either the undisturbed answer, or the documented "diagnosis incomplete"
// (exit 3, decision none, a `failed` tsdb entry). Run as a sweep driver runs it: the real binary.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/subprocess.h"
#include "tests/support/fixture_reports.h"
#include "tests/support/fake_http_server.h"

namespace diagnose::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Direct children of `parent` whose command name is `comm`.
std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& comm) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...; comm may hold spaces and parentheses, so read from the last ')'.
    const auto open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && line.substr(open + 1, close - open - 1) == comm) out.push_back(std::stoi(name));
  }
  return out;
}

struct Outcome {
  int exit_code = -1;
  json report;
  std::string err;
  int kills = 0;
};

// `diagnose ARGS --format json`; the first `kills` private Prometheus children are SIGKILLed,
// each `delay` after it appears.
Outcome RunKillingServer(const std::vector<std::string>& args, int kills, std::chrono::milliseconds delay) {
  const std::string base = (fs::temp_directory_path() / ("diagnose-kill-" + std::to_string(getpid()))).string();
  SpawnOptions options;
  options.argv = {DIAGNOSE_BINARY};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  for (const char* a : {"--format", "json"}) options.argv.push_back(a);
  options.stdout_path = base + ".out";
  options.stderr_path = base + ".err";
  Outcome outcome;
  auto child = ChildProcess::Spawn(options);
  EXPECT_TRUE(child.ok()) << child.status().message();
  if (!child.ok()) return outcome;
  std::set<pid_t> killed;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (child->Running() && std::chrono::steady_clock::now() < deadline) {
    if (outcome.kills < kills) {
      for (pid_t server : ChildrenNamed(child->pid(), "prometheus")) {
        if (killed.count(server)) continue;
        std::this_thread::sleep_for(delay);
        if (::kill(server, SIGKILL) == 0) {
          killed.insert(server);
          ++outcome.kills;
        }
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  auto code = child->Wait(std::chrono::seconds(10));
  outcome.exit_code = code.ok() ? *code : -1;
  outcome.err = e2e::ReadFileOrEmpty(options.stderr_path);
  outcome.report = json::parse(e2e::ReadFileOrEmpty(options.stdout_path), nullptr, false);
  fs::remove(options.stdout_path);
  fs::remove(options.stderr_path);
  return outcome;
}

// No private server or copy outlives the run that made it.
void ExpectNothingLeftBehind(const Outcome& outcome) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("diagnose-prom-", 0) != 0) continue;
    std::ifstream owner(entry.path() / "owner");
    pid_t pid = 0;
    if (owner >> pid) EXPECT_NE(::kill(pid, 0), 0) << "copy " << name << " of a live process " << pid;
  }
  (void)outcome;
}

void ExpectIncomplete(const Outcome& run, const std::string& what) {
  EXPECT_EQ(run.exit_code, kIncompleteExit) << what << ": " << run.err;
  ASSERT_TRUE(run.report.is_object()) << what << ": stdout is not one JSON document";
  EXPECT_TRUE(run.report.contains("incomplete")) << what;
  EXPECT_EQ(run.report["decision"]["action"], "none") << what;
  EXPECT_TRUE(run.report["decision"]["exclude"].empty()) << what;
  ASSERT_FALSE(run.report["tsdb"].empty()) << what;
  EXPECT_EQ(run.report["tsdb"][0]["state"], "failed") << what;
  // One line on stderr says so.
  EXPECT_NE(run.err.find("diagnosis incomplete"), std::string::npos) << what << ": " << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << what << ": " << run.err;
}

TEST(ToolFailure, KilledPrivateServerNeverChangesTheDecision) {
  REQUIRE_FIXTURE("8308");
  const std::vector<std::string> args = {"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS};
  const Outcome undisturbed = RunKillingServer(args, 0, std::chrono::milliseconds(0));
  ASSERT_EQ(undisturbed.exit_code, 0) << undisturbed.err;
  const json& want = undisturbed.report["decision"];
  ASSERT_EQ(want["action"], "retry-excluding-nodes");
  // At start-up (before it listens), while discovery runs, and while the playbooks ask.
  for (int delay_ms : {0, 60, 200, 450}) {
    SCOPED_TRACE("killed " + std::to_string(delay_ms) + " ms after it appeared");
    const Outcome run = RunKillingServer(args, 1, std::chrono::milliseconds(delay_ms));
    ASSERT_TRUE(run.report.is_object()) << run.err;
    if (run.exit_code == kIncompleteExit) {
      ExpectIncomplete(run, "one kill");
    } else {
      EXPECT_EQ(run.exit_code, 0) << run.err;
      EXPECT_EQ(run.report["decision"]["action"], want["action"]);
      EXPECT_EQ(ExcludedHosts(run.report), ExcludedHosts(undisturbed.report));
      EXPECT_EQ(run.report["verdict"]["root_cause"], undisturbed.report["verdict"]["root_cause"]);
      EXPECT_EQ(run.report["tsdb"][0]["state"], "served");
    }
    ExpectNothingLeftBehind(run);
  }
}

TEST(ToolFailure, AServerThatKeepsDyingIsRestartedOnceThenDiagnosisIncomplete) {
  REQUIRE_FIXTURE("8308");
  // Every server it starts is killed soon after it appears.
  const Outcome run =
      RunKillingServer({"8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS}, 5, std::chrono::milliseconds(150));
  EXPECT_EQ(run.kills, 2) << "one start and one restart, no more: " << run.err;
  ExpectIncomplete(run, "every server killed");
  // The log verdict stays visible, but nothing is asked of the sweep.
  EXPECT_NE(run.report["verdict"]["summary"].get<std::string>().find("Diagnosis incomplete"), std::string::npos);
  ExpectNothingLeftBehind(run);
}

// A port nothing listens on: bound, then closed.
int ClosedPort() {
  testing::FakeHttpServer probe([](const testing::FakeRequest&) { return testing::FakeResponse{}; });
  return probe.port();
}

TEST(ToolFailure, BrokenEndpointsAreDiagnosisIncompleteNeverAVerdict) {
  REQUIRE_FIXTURE("8043");
  const json good = DiagnoseFixtureJson({"8043"});
  ASSERT_EQ(good["decision"]["action"], "retry-with-changes");

  struct Fault {
    std::string name;
    int status;
    std::string body;
    std::string content_type;
  };
  const std::vector<Fault> faults = {
      {"HTML page", 200, "<html><body>Sign in</body></html>", "text/html"},
      {"HTTP 500", 500, "Internal Server Error", "text/plain"},
      {"invalid JSON", 200, "{\"status\":\"success\",\"data\":{\"resultType\":", "application/json"},
      {"invalid UTF-8", 200, std::string(100, '\xff'), "application/json"},
  };
  for (const auto& fault : faults) {
    SCOPED_TRACE(fault.name);
    testing::FakeHttpServer server([&](const testing::FakeRequest&) {
      testing::FakeResponse r;
      r.status = fault.status;
      r.body = fault.body;
      r.content_type = fault.content_type;
      return r;
    });
    CliRun run = RunDiagnoseCli({"8043", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--prometheus", server.url(),
                                 "--format", "json"});
    Outcome outcome{run.exit_code, json::parse(run.out, nullptr, false), run.err, 0};
    ExpectIncomplete(outcome, fault.name);
    EXPECT_NE(run.err.find(server.url()), std::string::npos) << run.err;
  }
  const std::string closed = "http://127.0.0.1:" + std::to_string(ClosedPort());
  CliRun run = RunDiagnoseCli({"8043", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--prometheus", closed, "--format", "json"});
  ExpectIncomplete({run.exit_code, json::parse(run.out, nullptr, false), run.err, 0}, "closed port");
  EXPECT_NE(run.err.find(closed), std::string::npos) << run.err;
  // The text report says it too, and still exits 3.
  CliRun text = RunDiagnoseCli({"8043", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--prometheus", closed, "--format", "text"});
  EXPECT_EQ(text.exit_code, kIncompleteExit);
  EXPECT_NE(text.out.find("incomplete"), std::string::npos) << text.out.substr(0, 2000);
}

TEST(ToolFailure, AReportThatCannotBeWrittenIsAFailure) {
  REQUIRE_FIXTURE("8308");
  SpawnOptions options;
  options.argv = {DIAGNOSE_BINARY, "8308", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--logs-only", "--format", "json"};
  options.stdout_path = "/dev/full";
  const std::string err = (fs::temp_directory_path() / ("diagnose-full-" + std::to_string(getpid()))).string();
  options.stderr_path = err;
  auto child = ChildProcess::Spawn(options);
  ASSERT_TRUE(child.ok()) << child.status().message();
  auto code = child->Wait(std::chrono::minutes(1));
  ASSERT_TRUE(code.ok());
  EXPECT_NE(*code, 0);
  const std::string message = e2e::ReadFileOrEmpty(err);
  fs::remove(err);
  EXPECT_NE(message.find("standard output"), std::string::npos) << message;
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
}

}  // namespace
}  // namespace diagnose::e2e

namespace diagnose::e2e {
namespace {

// Input that is not a job gets one line naming it, never a verdict: a system file, an id carrying
// a newline (echoed escaped, so it cannot forge a second line of output).
TEST(ToolFailure, NotAJobIsOneLineNeverAVerdict) {
  CliRun passwd = RunDiagnoseCli({"/etc/passwd", "--format", "json"});
  EXPECT_EQ(passwd.exit_code, 1) << passwd.out.substr(0, 300);
  EXPECT_TRUE(passwd.out.empty());
  EXPECT_NE(passwd.err.find("not a maxtext-slurm job log"), std::string::npos) << passwd.err;
  EXPECT_EQ(std::count(passwd.err.begin(), passwd.err.end(), '\n'), 1) << passwd.err;

  CliRun forged = RunDiagnoseCli({"88\ndiagnose: all good", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS});
  EXPECT_EQ(forged.exit_code, 1);
  EXPECT_EQ(std::count(forged.err.begin(), forged.err.end(), '\n'), 1) << forged.err;
  EXPECT_NE(forged.err.find("88\\ndiagnose: all good"), std::string::npos) << forged.err;
}

}  // namespace
}  // namespace diagnose::e2e

namespace diagnose::e2e {
namespace {

// An endpoint that accepts and never answers must not hold an epilog: the run's deadline ends every
// request, however long its own timeout and retries, and the diagnosis is reported incomplete.
TEST(ToolFailure, AnEndpointThatNeverAnswersEndsAtTheDeadline) {
  REQUIRE_FIXTURE("8043");
  testing::FakeHttpServer silent([](const testing::FakeRequest&) {
    testing::FakeResponse r;
    r.stall = std::chrono::seconds(20);   // far past the deadline; the server's destructor waits it out
    r.drop_connection = true;
    return r;
  });
  const auto started = std::chrono::steady_clock::now();
  CliRun run = RunDiagnoseCli({"8043", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--prometheus", silent.url(),
                               "--query-timeout", "60", "--deadline", "2.5", "--format", "json"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ExpectIncomplete({run.exit_code, json::parse(run.out, nullptr, false), run.err, 0}, "silent endpoint");
  // Without the deadline: one 60 s timeout per attempt, three attempts.
  EXPECT_LT(seconds, 15) << "the deadline did not bound the run";
  EXPECT_NE(run.err.find("deadline"), std::string::npos) << run.err;
  EXPECT_NE((run.err + run.out).find("deadline of 2.5 s"), std::string::npos) << run.err;   // not "0 s" for 0.5
  // The report names every rule the spent budget left unevaluated, and why.
  const json report = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(report.contains("not_evaluated")) << run.out.substr(0, 300);
  int named = 0;
  for (const auto& entry : report["not_evaluated"]) {
    const std::string text = entry.get<std::string>();
    if (text.find("deadline") != std::string::npos && text.find('/') < text.find(':')) ++named;
  }
  EXPECT_GT(named, 5) << "rules the deadline left unevaluated are not named with it: " << report["not_evaluated"].dump().substr(0, 600);
}

}  // namespace
}  // namespace diagnose::e2e

namespace diagnose::e2e {
namespace {

// An answer past one of diagnose's own limits (engine/core/limits.h) is the tool's failure, like a
// closed port: not "the TSDB is missing or empty", and never a decision in the history.
struct LimitCase {
  std::string limit;         // what --limit sets, e.g. "http.series_per_query=100"
  std::string name;          // the limit the stderr line must name
  std::function<std::string(const testing::FakeRequest&)> body;
};

// An answer of `n` label values (or, for a query, `n` empty series).
std::string ManyValues(const testing::FakeRequest& request, int n) {
  std::string values;
  const bool labels = request.target.find("/label/") != std::string::npos;
  for (int i = 0; i < n; ++i) {
    if (i) values += ',';
    values += labels ? "\"host-" + std::to_string(i) + "\"" : R"({"metric":{"host":"h)" + std::to_string(i) + R"("},"values":[]})";
  }
  return labels ? R"({"status":"success","data":[)" + values + "]}"
                : R"({"status":"success","data":{"resultType":"matrix","result":[)" + values + "]}}";
}

TEST(ToolFailure, AnAnswerPastOneOfDiagnosesLimitsIsAnIncompleteDiagnosisNamingTheLimit) {
  REQUIRE_FIXTURE("8043");
  const std::vector<LimitCase> cases = {
      {"http.series_per_query=100", "http.series_per_query",
       [](const testing::FakeRequest& r) { return ManyValues(r, 1000); }},
      // 4 MiB answers against a 64 KiB bound: cut off at the bound, never held whole.
      {"http.response_bytes=64KiB", "http.response_bytes",
       [](const testing::FakeRequest& r) { return ManyValues(r, 200000); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.limit);
    testing::FakeHttpServer server([&](const testing::FakeRequest& request) {
      testing::FakeResponse r;
      r.body = c.body(request);
      return r;
    });
    const fs::path history = fs::temp_directory_path() / ("diagnose-limit-history-" + std::to_string(getpid()));
    fs::remove(history);
    CliRun run = RunDiagnoseCli({"8043", "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--prometheus", server.url(),
                                 "--limit", c.limit, "--history", history.string(), "--format", "json"});
    ExpectIncomplete({run.exit_code, json::parse(run.out, nullptr, false), run.err, 0}, c.limit);
    EXPECT_NE(run.err.find("limit " + c.name), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("--limit " + c.name + "="), std::string::npos) << "how to raise it: " << run.err;
    EXPECT_FALSE(fs::exists(history)) << "an incomplete diagnosis wrote to the history";
    fs::remove(history);
  }
}

}  // namespace
}  // namespace diagnose::e2e

namespace diagnose::e2e {
namespace {

// A FIFO where a job log belongs (by id, by path, in a watched dir) is refused by its type in one
// line; reading it would block until someone writes to it, wedging an epilog or a watcher.
TEST(ToolFailure, AFifoNamedLikeAJobLogIsOneErrorLineNeverAHang) {
  const fs::path outputs = fs::temp_directory_path() / ("diagnose-fifo-outputs-" + std::to_string(getpid()));
  fs::remove_all(outputs);
  fs::create_directories(outputs);
  const fs::path fifo = outputs / "9999-JAX-fifo.log";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> runs = {
      {"9999", "--outputs", outputs.string(), "--format", "json"},
      {fifo.string(), "--format", "json"},
      {"watch", outputs.string(), "--once"},
  };
  for (const auto& args : runs) {
    SCOPED_TRACE(args[0]);
    CliRun run = RunDiagnoseCli(args, std::chrono::seconds(20));
    ASSERT_FALSE(run.timed_out) << "diagnose blocked on the FIFO";
    EXPECT_NE(run.err.find("9999-JAX-fifo.log is a FIFO, not a regular file"), std::string::npos) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    if (args[0] != "watch") {
      EXPECT_EQ(run.exit_code, 1) << run.err;
    }
  }
  fs::remove_all(outputs);
}

}  // namespace
}  // namespace diagnose::e2e

namespace diagnose::e2e {
namespace {

// A job log alone (no TSDB) in a fresh outputs dir, with `damage` applied to its text.
std::string LogOnlyCopy(const std::string& id, const std::string& tag, const std::function<void(std::string*)>& damage) {
  const fs::path outputs = fs::temp_directory_path() / ("diagnose-damaged-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(outputs);
  fs::create_directories(outputs);
  for (const auto& entry : fs::directory_iterator(DIAGNOSE_FIXTURE_OUTPUTS)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(id + "-", 0) != 0 || entry.path().extension() != ".log" || !entry.is_regular_file()) continue;
    std::string text = ReadFileOrEmpty(entry.path().string());
    damage(&text);
    std::ofstream(outputs / name, std::ios::binary) << text;
  }
  return outputs.string();
}

// NUL bytes in a step line's loss (common in logs of nodes that crashed mid-write) must not become
// a loss of 0.000 and with it a training-instability verdict: the line is skipped and counted.
TEST(ToolFailure, ANulByteInALossFieldIsADamagedLineNotAValue) {
  const std::string id = "7882";   // a completed run: its log's steps are all a verdict rests on
  REQUIRE_FIXTURE(id);
  const std::string clean = LogOnlyCopy(id, "clean", [](std::string*) {});
  const std::string damaged = LogOnlyCopy(id, "nul", [](std::string* text) {
    // One step line mid-run, its loss's first digit a NUL byte ("loss: \0.568").
    const size_t at = text->find("loss: ", text->size() / 2);
    ASSERT_NE(at, std::string::npos);
    (*text)[at + 6] = '\0';
  });
  const json want = json::parse(RunDiagnoseCli({id, "--outputs", clean, "--format", "json"}).out, nullptr, false);
  CliRun run = RunDiagnoseCli({id, "--outputs", damaged, "--format", "json"});
  const json got = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(want.is_object() && got.is_object()) << run.err;
  EXPECT_NE(got["verdict"]["root_cause"], "training-instability") << Dump(got["verdict"]);
  EXPECT_EQ(got["verdict"]["root_cause"], want["verdict"]["root_cause"]) << Dump(got["verdict"]);
  EXPECT_EQ(got["decision"]["action"], want["decision"]["action"]);
  EXPECT_NE(got.dump().find("damaged log line(s)"), std::string::npos) << "the skipped lines are not counted in a note";
  fs::remove_all(clean);
  fs::remove_all(damaged);
}

}  // namespace
}  // namespace diagnose::e2e

namespace diagnose::e2e {
namespace {

std::string RootCauseOf(const json& report) {
  return report.is_object() ? report["verdict"].value("root_cause", "(none)") + "/" +
                                  report["verdict"].value("confidence", "(none)")
                            : "(no report)";
}

// A failure of diagnose or of the endpoint is never read as a fact about the job: 8308 (a RAY=1 job)
// whose metrics could not be read gets the logs' own verdict and `incomplete`, never "its TSDB is
// missing or empty" (observability-gap). An endpoint refusing diagnose's own discovery question
// (HTTP 400 bad_data) is such a failure too, and its error text carries no terminal escape into
// any report format.
TEST(ToolFailure, AFailureToReadTheMetricsIsNoFactAboutTheJob) {
  REQUIRE_FIXTURE("8308");
  const json logs_only = DiagnoseFixtureJson({"8308", "--logs-only"});
  ASSERT_NE(logs_only["verdict"]["root_cause"], "observability-gap");
  const std::string bad_data = R"({"status":"error","errorType":"bad_data","error":"parse error at char 1: )"
                               "\\u001b[31mred\"}";
  testing::FakeHttpServer refusing([&](const testing::FakeRequest&) {
    testing::FakeResponse r;
    r.status = 400;
    r.body = bad_data;
    return r;
  });
  testing::FakeHttpServer failing([](const testing::FakeRequest&) { return testing::FakeResponse{500, "oops", "text/plain"}; });
  const std::string outputs = DIAGNOSE_FIXTURE_OUTPUTS;
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"HTTP 400 bad_data", {DIAGNOSE_BINARY, "8308", "--outputs", outputs, "--prometheus", refusing.url()}},
      {"HTTP 500", {DIAGNOSE_BINARY, "8308", "--outputs", outputs, "--prometheus", failing.url()}},
      {"closed port", {DIAGNOSE_BINARY, "8308", "--outputs", outputs, "--prometheus",
                       "http://127.0.0.1:" + std::to_string(ClosedPort())}},
      {"no temp dir", {"env", "TMPDIR=/nonexistent/diagnose-no-tmp", DIAGNOSE_BINARY, "8308", "--outputs", outputs}},
  };
  for (const auto& [what, argv] : runs) {
    SCOPED_TRACE(what);
    std::vector<std::string> json_argv = argv;
    for (const char* a : {"--format", "json"}) json_argv.push_back(a);
    CliRun run = testing::RunProgram(json_argv);
    const json report = json::parse(run.out, nullptr, false);
    ExpectIncomplete({run.exit_code, report, run.err, 0}, what);
    EXPECT_EQ(RootCauseOf(report), RootCauseOf(logs_only)) << report["verdict"].dump();
    for (const auto& finding : report.value("findings", json::array()))
      EXPECT_FALSE(finding["id"] == "observability-gaps/no_tsdb" && finding["status"] == "fired") << finding.dump();
    for (const char* format : {"html", "md", "text"}) {
      std::vector<std::string> rendered = argv;
      for (const char* a : {"--format", format}) rendered.push_back(a);
      CliRun other = testing::RunProgram(rendered);
      EXPECT_EQ(other.exit_code, kIncompleteExit) << format << ": " << other.err;
      EXPECT_EQ(other.Printed().find('\x1b'), std::string::npos) << format << " carries a terminal escape";
    }
  }
}

}  // namespace
}  // namespace diagnose::e2e
