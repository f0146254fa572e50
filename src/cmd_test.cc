// `diagnose test FILE... [--run REGEX] [--junit FILE]`: runs playbook test files (promtool
// notation; playbooks/README.md §9). Input series become TSDB blocks served by a private Prometheus.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "engine/dag/prometheus_series_backend.h"
#include "engine/dag/test_runner.h"
#include "engine/playbook/loader.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {
struct TestArgs {
  std::vector<std::string> files;
  std::vector<std::string> run;
  std::string junit;
  bool verbose = false;
};

int RunTests(const TestArgs& args) {
  dag::TestRunOptions options;
  options.data_dir = playbook::PlaybookDataDir();
  for (const auto& r : args.run) {
    try {
      options.run.emplace_back(r);
    } catch (const std::regex_error& e) {
      std::fprintf(stderr, "diagnose test: --run '%s' is not a valid regex: %s\n", r.c_str(), e.what());
      return 2;
    }
  }
  auto backend = dag::MakePrometheusSeriesBackend();
  options.backend = backend.get();
  std::vector<dag::TestCaseResult> all;
  std::vector<std::string> files;
  for (const auto& f : args.files)
    for (const auto& x : playbook::FindYamlFiles(f, true)) files.push_back(x);
  for (const auto& f : args.files)
    if (playbook::FindYamlFiles(f, true).empty()) files.push_back(f);   // a file named without .test.
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& f : files) {
    auto results = dag::RunTestFile(f, options);
    for (const auto& r : results) {
      if (r.skipped) {
        ++skipped;
        continue;
      }
      if (r.passed) {
        ++passed;
        std::printf("PASS %s: %s (%.2fs)\n", r.file.c_str(), r.name.c_str(), r.seconds);
      } else {
        ++failed;
        std::printf("FAIL %s: %s\n", r.file.c_str(), r.name.c_str());
        for (const auto& why : r.failures) std::printf("  %s\n", why.c_str());
      }
      if (args.verbose && !r.actual.is_null()) std::printf("%s\n", r.actual.dump(2).c_str());
      all.push_back(r);
    }
  }
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  if (!args.junit.empty()) {
    std::ofstream out(args.junit);
    out << dag::JunitXml(all);
    if (!out) {
      std::fprintf(stderr, "diagnose test: cannot write %s\n", args.junit.c_str());
      return 1;
    }
  }
  return failed == 0 && passed + skipped > 0 ? 0 : 1;
}
}  // namespace

void RegisterTest(CLI::App& app, CommandRegistry& registry) {
  static TestArgs args;
  CLI::App* sub = app.add_subcommand("test", "run playbook tests (promtool notation) against a private Prometheus");
  sub->add_option("files", args.files, "test files or directories (*.test.yaml)")->required();
  sub->add_option("--run", args.run, "only tests whose name matches this regex (repeatable)");
  sub->add_option("--junit", args.junit, "write JUnit XML here");
  sub->add_flag("-v,--verbose", args.verbose, "print each test's actual verdict, decision and findings");
  registry.Add(sub, [] { return RunTests(args); });
}

}  // namespace diagnose::cli
