// The exported alerting rules in vmalert (Debian's vmalert 1.79) against a VictoriaMetrics holding
// fixture jobs imported with `diagnose fleet import`. The jobs are recorded, so vmalert runs in its
// replay mode over each job's window: it evaluates every rule at the group interval with `for:`,
// and writes the ALERTS series it would have sent to the store, where the test reads them.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/iso_time.h"
#include "engine/core/subprocess.h"
#include "engine/core/url_encode.h"
#include "tests/support/fixture_reports.h"
#include "tests/pipeline/victoria_metrics_support.h"

namespace diagnose::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct JobWindow {
  double start = 0, end = 0;
};

// The job's data range, as `diagnose rules replay` reads it from the snapshot.
JobWindow WindowOf(const std::string& job) {
  const CliRun run = RunDiagnoseCli({"rules", "replay", job, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"});
  json j = json::parse(run.out, nullptr, false);
  if (!j.is_object()) {
    ADD_FAILURE() << job << ": " << run.err;
    return {};
  }
  return {j["window"]["start"].get<double>(), j["window"]["end"].get<double>()};
}

json Query(const std::string& url, const std::string& promql, double time) {
  auto run = RunCommand({"curl", "-sf", url + "/api/v1/query?query=" + UrlEncode(promql) + "&time=" + std::to_string(time)},
                        std::chrono::seconds(30));
  if (!run.ok() || run->exit_code != 0) return json();
  return json::parse(run->output, nullptr, false);
}

TEST(Vmalert, FiresTheRdmaAlertOn8308sFourBadHostsAndNothingOn8309OrAHealthyJob) {
  if (FindExecutable("vmalert").empty()) GTEST_SKIP() << "vmalert is not installed (scripts/install-deps.sh installs it)";
  std::string why;
  auto vm = VictoriaMetrics::Start(&why);
  ASSERT_NE(vm, nullptr) << why;

  const std::vector<std::string> jobs = {"8308", "8309", "9203"};
  std::vector<std::string> import = {"fleet", "import", DIAGNOSE_FIXTURE_OUTPUTS, "--vm", vm->url(), "--format", "json"};
  for (const auto& j : jobs) import.insert(import.end(), {"--job", j});
  const CliRun imported = RunDiagnoseCli(import);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;

  const fs::path rules = vm->dir() / "diagnose.vmalert.yml";
  const CliRun exported = RunDiagnoseCli({"rules", "export", "--for", "vmalert", "-o", rules.string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;

  std::map<std::string, JobWindow> windows;
  for (const auto& j : jobs) windows[j] = WindowOf(j);
  // The store holds several jobs and the rules do not name one: each replay window must hold one job.
  for (const auto& a : jobs)
    for (const auto& b : jobs)
      if (a < b) EXPECT_TRUE(windows[a].end < windows[b].start || windows[b].end < windows[a].start) << a << " " << b;

  for (const auto& j : jobs) {
    SpawnOptions spawn;
    spawn.argv = {"vmalert", "-rule=" + rules.string(), "-datasource.url=" + vm->url(), "-remoteWrite.url=" + vm->url(),
                  "-replay.timeFrom=" + IsoUtc(windows[j].start), "-replay.timeTo=" + IsoUtc(windows[j].end),
                  "-replay.rulesDelay=0s", "-replay.disableProgressBar", "-loggerLevel=ERROR",
                  // The default step of 5m is longer than the groups' interval: every point would look
                  // like a gap to for:, and no alert would get past pending.
                  "-datasource.queryStep=0s"};
    spawn.stderr_path = (vm->dir() / ("vmalert-" + j + ".log")).string();
    auto child = ChildProcess::Spawn(spawn);
    ASSERT_TRUE(child.ok()) << child.status().ToString();
    auto code = child->Wait(std::chrono::minutes(3));
    ASSERT_TRUE(code.ok()) << code.status().ToString();
    ASSERT_EQ(*code, 0) << ReadFileOrEmpty(spawn.stderr_path);
  }
  RunCommand({"curl", "-sf", vm->url() + "/internal/force_flush"}, std::chrono::seconds(30));

  auto firing_hosts = [&](const std::string& job, const std::string& alert_matcher) {
    const JobWindow& w = windows[job];
    const std::string span = std::to_string(static_cast<long long>(w.end - w.start + 60)) + "s";
    json r = Query(vm->url(), "count by (alertname, host) (max_over_time(ALERTS{alertstate=\"firing\"" + alert_matcher +
                                  "}[" + span + "]))",
                   w.end);
    std::set<std::string> out;
    if (!r.is_object()) {
      ADD_FAILURE() << "no answer from " << vm->url();
      return out;
    }
    for (const auto& s : r["data"]["result"])
      out.insert(s["metric"].value("alertname", "?") + "/" + s["metric"].value("host", ""));
    return out;
  };
  EXPECT_EQ(firing_hosts("8308", ""),
            (std::set<std::string>{"DiagnoseRdmaLinkDegraded/chi2822", "DiagnoseRdmaLinkDegraded/chi2834",
                                   "DiagnoseRdmaLinkDegraded/chi2835", "DiagnoseRdmaLinkDegraded/chi2882"}));
  EXPECT_EQ(firing_hosts("8309", ""), std::set<std::string>{});
  EXPECT_EQ(firing_hosts("9203", ""), std::set<std::string>{});
}

}  // namespace
}  // namespace diagnose::e2e
