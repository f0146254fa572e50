// `diagnose test`: playbook test files in promtool's notation (playbooks/README.md §9). Input
// series are served by a SeriesBackend (real: TSDB blocks + a private Prometheus; unit tests: a
// fake), log facts are a JobFacts JSON fragment merged onto defaults, and the combined verdict,
// decision and findings are compared with `expect`.
#pragma once

#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

// Serves a test's input series; the client must stay valid until the returned handle is destroyed.
class ServedSeries {
 public:
  virtual ~ServedSeries() = default;
  virtual QueryClient* client() = 0;
};

class SeriesBackend {
 public:
  virtual ~SeriesBackend() = default;
  // `start`/`end`: the span of the samples (epoch seconds). `name` identifies the test in errors.
  virtual StatusOr<std::unique_ptr<ServedSeries>> Serve(std::vector<Series> series, double start, double end,
                                                        const std::string& name) = 0;
  virtual std::string Describe() const = 0;
};

struct TestCaseResult {
  std::string file;
  std::string name;
  bool passed = false;
  bool skipped = false;                 // filtered out by --run
  std::vector<std::string> failures;    // one line per mismatch or error
  nlohmann::json actual;                // root_cause, action, confidence, exclude, findings
  double seconds = 0;
};

struct TestRunOptions {
  std::string data_dir;                  // rules/common is loaded from here
  std::vector<std::regex> run;           // --run (any match selects; empty = all)
  SeriesBackend* backend = nullptr;      // null: tests with input_series fail with a clear error
};

// Runs every test of one file. A file that cannot be read or loaded yields one failed result.
std::vector<TestCaseResult> RunTestFile(const std::string& path, const TestRunOptions& options);

// JUnit XML for CI (one testsuite per file).
std::string JunitXml(const std::vector<TestCaseResult>& results);

// Discovery JSON derived from input series (README §9): metrics, hosts, range, instance_hosts,
// step_times (from `step_metric`, rules/discovery.yaml's).
nlohmann::json DeriveDiscovery(const std::vector<Series>& series, const std::string& step_metric);

}  // namespace diagnose::dag
