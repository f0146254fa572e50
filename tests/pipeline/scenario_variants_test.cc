// The fault scenarios again, under another allocation: other host names, job ids and seeds (so
// other noise), and the launcher's real scrape intervals (node_hw 10 s, Ray 5 s instead of the
// fixtures' 30 s). Their expectations, renamed the same way, must still hold: nothing in the engine
// may lean on the bundled fixtures' names, ids, noise or sampling.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "engine/core/subprocess.h"
#include "tests/pipeline/scenario_expect_support.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

constexpr int kIdOffset = 20000;


std::string EscapeRegex(const std::string& text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\-])");
  return std::regex_replace(text, special, R"(\$&)");
}

// The scenario rewritten for another allocation; empty when it has no TSDB to vary.
std::string Variant(const std::string& text, int index) {
  YAML::Node root = YAML::Load(text);
  if (!root["metrics"] || !root["metrics"]["tsdb"] || !root["metrics"]["tsdb"].as<bool>()) return "";
  const std::string hosts = root["job"]["hosts"].as<std::string>();
  std::smatch m;
  if (!std::regex_search(hosts, m, std::regex(R"(^([A-Za-z][A-Za-z-]*?)(?=[\[0-9]))"))) return "";
  // A host prefix is renamed only where a host name continues (digit or hostlist bracket).
  const std::string prefix = m[1].str();
  const std::string renamed = std::string("v") + static_cast<char>('a' + index % 26) + "-x";
  std::string out = std::regex_replace(text, std::regex(EscapeRegex(prefix) + R"((?=[\[0-9]))"), renamed);
  const std::string id = root["job"]["id"].as<std::string>();
  const std::string new_id = std::to_string(std::stoi(id) + kIdOffset);
  out = std::regex_replace(out, std::regex("id: \"" + id + "\""), "id: \"" + new_id + "\"");
  out = std::regex_replace(out, std::regex("seed: " + id + R"(\b)"), "seed: " + std::to_string(std::stoi(id) * 7 + 3));
  if (root["expect"] && root["expect"]["baseline"]) {
    const std::string base = root["expect"]["baseline"].as<std::string>();
    out = std::regex_replace(out, std::regex("baseline: \"" + base + "\""),
                             "baseline: \"" + std::to_string(std::stoi(base) + kIdOffset) + "\"");
  }
  out = std::regex_replace(out, std::regex(R"(node_hw_interval: [0-9]+)"), "node_hw_interval: 10");
  out = std::regex_replace(out, std::regex(R"(ray_interval: [0-9]+)"), "ray_interval: 5");
  return out;
}

// The fault scenarios with a TSDB, by file name, each rewritten for another allocation (the new host
// prefix letter follows the sorted order, so a failure names the same hosts every run).
std::map<std::string, std::string> VariedScenarios() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(fs::path(e2e::kScenarioDir))) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("fault-", 0) == 0 && entry.path().extension() == ".yaml") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::map<std::string, std::string> variants;
  int index = 0;
  for (const auto& path : paths) {
    std::string variant = Variant(e2e::Slurp(path), index++);
    if (!variant.empty()) variants[path.filename().string()] = std::move(variant);
  }
  return variants;
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/diagnose-variants-XXXXXX";
    if (::mkdtemp(tmpl)) path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// One test, not one per scenario: ctest runs every gtest case in its own process, and generating
// the variants once (one fixturegen run, ~20 s of CPU) is most of the cost.
TEST(ScenarioVariants, ExpectationsHoldUnderOtherNamesNoiseAndScrapeIntervals) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  fs::create_directories(dir.path / "scenarios");
  const std::map<std::string, std::string> variants = VariedScenarios();
  ASSERT_GE(variants.size(), 20u) << "the fault scenarios went missing";
  for (const auto& [name, text] : variants) std::ofstream(dir.path / "scenarios" / name) << text;
  auto generated = RunCommand({std::string(DIAGNOSE_BUILD_DIR) + "/fixturegen", "--all", (dir.path / "scenarios").string(),
                               "--out", (dir.path / "outputs").string(), "--jobs", "2"},
                              std::chrono::minutes(10));
  ASSERT_TRUE(generated.ok()) << generated.status().message();
  ASSERT_EQ(generated->exit_code, 0) << generated->output;
  for (const auto& [name, text] : variants) {
    SCOPED_TRACE("variant of " + name);
    const YAML::Node root = YAML::Load(text);
    e2e::CliRun run = e2e::RunDiagnoseCli(e2e::ScenarioCliArgs(root, (dir.path / "outputs").string()));
    e2e::ExpectScenarioReport(run, root, "variant of " + name);
  }
}

}  // namespace
}  // namespace diagnose
