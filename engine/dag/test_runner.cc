#include "engine/dag/test_runner.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <set>

#include <yaml-cpp/yaml.h>

#include "engine/analysis/analysis.h"
#include "engine/core/bounded_yaml.h"
#include "engine/core/limits.h"
#include "engine/dag/evaluate.h"
#include "engine/dag/query_result.h"
#include "engine/discovery/discovery.h"
#include "engine/dag/graph.h"
#include "engine/dag/run_playbooks.h"
#include "engine/playbook/loader.h"
#include "engine/playbook/series_notation.h"
#include "engine/report/job_facts.h"
#include "engine/verdict/verdict.h"

namespace diagnose::dag {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::set<std::string> kFileKeys = {"playbooks", "tests"};
const std::set<std::string> kTestKeys = {"name", "interval", "start", "input_series", "baseline_input_series", "facts",
                                         "baseline_facts", "discovery", "baseline_discovery", "requested", "expect"};
const std::set<std::string> kExpectKeys = {"root_cause", "action", "confidence", "exclude", "findings", "changes",
                                           "selected", "domain", "summary_contains", "notes_contains"};

// Test files are untrusted input: the file as a whole is checked against the yaml.* limits when
// loaded (engine/core/bounded_yaml.h); this conversion keeps its own budget as well because it
// may run over any part of it.
struct YamlBudget {
  int64_t values_left = GetLimit(LimitId::kYamlNodes);
  int64_t max_depth = GetLimit(LimitId::kYamlDepth);
  bool exceeded = false;
};

// YAML -> JSON (scalars typed the way YAML 1.2 core schema would: bool, int/float, null, string).
json YamlToJsonBounded(const YAML::Node& n, YamlBudget& budget, int depth) {
  if (budget.exceeded || --budget.values_left < 0 || depth > budget.max_depth) {
    budget.exceeded = true;
    return json();
  }
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return json();
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;   // quoted
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
      if (s == "null" || s == "~") return json();
      char* end = nullptr;
      long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end && *end == '\0') return i;
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == '\0') return d;
      return s;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& x : n) {
        out.push_back(YamlToJsonBounded(x, budget, depth + 1));
        if (budget.exceeded) return json();
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (auto it = n.begin(); it != n.end(); ++it) {
        out[it->first.Scalar()] = YamlToJsonBounded(it->second, budget, depth + 1);
        if (budget.exceeded) return json();
      }
      return out;
    }
  }
  return json();
}

StatusOr<json> YamlToJson(const YAML::Node& n, const std::string& field) {
  YamlBudget budget;
  json out = YamlToJsonBounded(n, budget, 0);
  if (budget.exceeded) {
    return LimitExceeded(budget.values_left < 0 ? LimitId::kYamlNodes : LimitId::kYamlDepth,
                         "line " + std::to_string(n.Mark().line + 1) + ": '" + field + "'");
  }
  return out;
}

StatusOr<double> ParseStart(const YAML::Node& n) {
  if (!n) return 0.0;
  std::string s = n.Scalar();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (!s.empty() && end && *end == '\0') return v;
  std::tm tm{};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr || (*rest != '\0' && std::string(rest) != "Z"))
    return InvalidArgumentError("start '" + s + "' is neither epoch seconds nor RFC 3339 UTC (2026-02-24T19:00:00Z)");
  return static_cast<double>(timegm(&tm));
}

struct ParsedSeries {
  std::vector<Series> series;
  double start = 0;
  double end = 0;
};

StatusOr<ParsedSeries> ParseInputSeries(const YAML::Node& list, double start, double interval, const std::string& where) {
  ParsedSeries out;
  out.start = start;
  out.end = start;
  if (!list) return out;
  if (!list.IsSequence()) return InvalidArgumentError(where + ": must be a list of {series, values}");
  for (const auto& item : list) {
    std::string pos = where + " (line " + std::to_string(item.Mark().line + 1) + ")";
    if (!item.IsMap() || !item["series"] || !item["values"])
      return InvalidArgumentError(pos + ": each input series needs 'series' and 'values'");
    auto labels = playbook::ParseSeriesSelector(item["series"].Scalar());
    if (!labels.ok()) return InvalidArgumentError(pos + ": " + labels.status().message());
    auto points = playbook::ExpandSeriesValues(item["values"].Scalar());
    if (!points.ok()) return InvalidArgumentError(pos + ": " + points.status().message());
    out.series.push_back(playbook::MaterializeSeries(*labels, *points, start, interval));
    if (!points->empty()) out.end = std::max(out.end, start + interval * (points->size() - 1));
  }
  return out;
}

std::vector<std::string> StringList(const json& v) {
  std::vector<std::string> out;
  if (v.is_array())
    for (const auto& x : v)
      if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}

void Compare(const json& expect, const json& actual, std::vector<std::string>* failures) {
  for (const char* key : {"root_cause", "action", "confidence", "domain"}) {
    if (!expect.contains(key)) continue;
    if (expect[key] != actual[key])
      failures->push_back(std::string(key) + ": expected " + expect[key].dump() + ", got " + actual[key].dump());
  }
  if (expect.contains("exclude")) {
    std::map<std::string, json> got;
    for (const auto& e : actual["exclude"]) got[e["host"].get<std::string>()] = e;
    std::set<std::string> want;
    for (const auto& e : expect["exclude"]) {
      std::string host = e.is_string() ? e.get<std::string>() : e.value("host", "");
      want.insert(host);
      auto it = got.find(host);
      if (it == got.end()) {
        failures->push_back("exclude: expected host " + host + " is not excluded");
        continue;
      }
      if (e.is_object() && e.contains("priority") && e["priority"] != it->second["priority"])
        failures->push_back("exclude: host " + host + " priority expected " + e["priority"].dump() + ", got " +
                            it->second["priority"].dump());
    }
    for (const auto& [h, e] : got)
      if (!want.count(h)) failures->push_back("exclude: unexpected host " + h + " (" + e.value("reason", "") + ")");
  }
  if (expect.contains("changes")) {
    for (const auto& [k, v] : expect["changes"].items()) {
      json got = actual["changes"].contains(k) ? actual["changes"][k] : json();
      std::string want = v.is_string() ? v.get<std::string>() : v.dump();
      if (!got.is_string() || got.get<std::string>() != want)
        failures->push_back("changes." + k + ": expected " + json(want).dump() + ", got " + got.dump());
    }
  }
  for (const auto& text : StringList(expect.value("summary_contains", json::array()))) {
    const std::string summary = actual.value("summary", "");
    if (summary.find(text) == std::string::npos)
      failures->push_back("summary: expected it to contain " + json(text).dump() + ", got " + json(summary).dump());
  }
  for (const auto& text : StringList(expect.value("notes_contains", json::array()))) {
    const auto notes = StringList(actual["notes"]);
    if (std::none_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; }))
      failures->push_back("notes: expected one to contain " + json(text).dump() + ", got " + json(notes).dump());
  }
  if (expect.contains("selected")) {
    auto want = StringList(expect["selected"]);
    std::sort(want.begin(), want.end());
    auto got = StringList(actual["selected"]);
    std::sort(got.begin(), got.end());
    if (want != got) failures->push_back("selected: expected " + json(want).dump() + ", got " + json(got).dump());
  }
  if (expect.contains("findings")) {
    for (const auto& ef : expect["findings"]) {
      std::string id = ef.value("id", "");
      const json* found = nullptr;
      for (const auto& f : actual["findings"])
        if (f["id"] == id) found = &f;
      if (!found) {
        failures->push_back("finding " + id + ": not produced (is the playbook selected?)");
        continue;
      }
      if (ef.contains("status") && ef["status"] != (*found)["status"])
        failures->push_back("finding " + id + ": status expected " + ef["status"].dump() + ", got " +
                            (*found)["status"].dump() + " (" + (*found).value("summary", "") + ")");
      if (ef.contains("hosts")) {
        auto want = StringList(ef["hosts"]);
        auto got = StringList((*found)["hosts"]);
        std::sort(want.begin(), want.end());
        std::sort(got.begin(), got.end());
        if (want != got)
          failures->push_back("finding " + id + ": hosts expected " + json(want).dump() + ", got " + json(got).dump());
      }
    }
  }
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

TestCaseResult Failed(const std::string& file, const std::string& name, const std::string& why) {
  TestCaseResult r;
  r.file = file;
  r.name = name;
  r.failures.push_back(why);
  return r;
}

}  // namespace

json DeriveDiscovery(const std::vector<Series>& series, const std::string& step_metric) {
  std::set<std::string> metrics, hosts;
  json instance_hosts = json::object();
  double lo = 1e300, hi = -1e300;
  std::map<double, double> step_times;   // step -> first time seen
  for (const auto& s : series) {
    auto name = s.labels.find("__name__");
    if (name != s.labels.end()) metrics.insert(name->second);
    auto host = s.labels.find("host");
    auto instance = s.labels.find("instance");
    if (host != s.labels.end() && instance != s.labels.end()) instance_hosts[instance->second] = host->second;
    for (const auto& smp : s.samples) {
      lo = std::min(lo, smp.t);
      hi = std::max(hi, smp.t);
    }
    if (name != s.labels.end() && !step_metric.empty() && name->second == step_metric)
      for (const auto& smp : s.samples)
        if (!step_times.count(smp.v)) step_times[smp.v] = smp.t;
  }
  for (const auto& s : series) {
    std::string h = HostOfSeries(s.labels, instance_hosts);
    if (!h.empty()) hosts.insert(h);
  }
  json out;
  out["metrics"] = std::vector<std::string>(metrics.begin(), metrics.end());
  out["hosts"] = std::vector<std::string>(hosts.begin(), hosts.end());
  out["range"] = lo <= hi ? json{{"start", lo}, {"end", hi}} : json();
  out["instance_hosts"] = instance_hosts;
  json st = json::array();
  for (const auto& [step, t] : step_times) st.push_back({step, t});
  out["step_times"] = st;
  return out;
}

namespace {

// A test file's playbooks, loaded with the shared rules of the data dir, and its test cases.
struct TestFile {
  playbook::Loader loader;
  std::vector<std::string> ids;   // the playbooks the file names, the only ones its tests run
  std::string step_metric;        // the metric discovery reads the step -> time map from
  YAML::Node tests;
};

// Loads `path` into `file`; on failure appends why to `results` and returns false.
bool LoadTestFile(const std::string& path, const TestRunOptions& options, TestFile* file,
                  std::vector<TestCaseResult>* results) {
  // Untrusted input: an alias bomb is refused before anything walks it.
  auto loaded = LoadBoundedYamlFile(path);
  if (!loaded.ok()) {
    results->push_back(Failed(path, "(file)", loaded.status().message()));
    return false;
  }
  const YAML::Node root = *loaded;
  if (!root.IsMap()) {
    results->push_back(Failed(path, "(file)", path + ": a test file is a map with 'playbooks' and 'tests'"));
    return false;
  }
  for (auto it = root.begin(); it != root.end(); ++it)
    if (!kFileKeys.count(it->first.Scalar())) {
      results->push_back(Failed(path, "(file)", path + ":" + std::to_string(it->first.Mark().line + 1) +
                                                    ": unknown key '" + it->first.Scalar() + "'"));
      return false;
    }
  auto discovery_rules = LoadDiscoveryRules(options.data_dir + "/rules/discovery.yaml");
  if (!discovery_rules.ok()) {
    results->push_back(Failed(path, "(load)", discovery_rules.status().message()));
    return false;
  }
  file->step_metric = discovery_rules->step_metric;
  playbook::Loader& loader = file->loader;
  loader.LoadCommonFiles(playbook::FindYamlFiles(options.data_dir + "/rules/common", false));
  fs::path dir = fs::path(path).parent_path();
  if (root["playbooks"] && root["playbooks"].IsSequence()) {
    for (const auto& p : root["playbooks"]) {
      size_t before = loader.library().playbooks.size();
      loader.LoadPlaybookFile((dir / p.Scalar()).lexically_normal().string());
      if (loader.library().playbooks.size() > before) file->ids.push_back(loader.library().playbooks.back().id);
    }
  }
  if (!loader.result().ok()) {
    std::string why = "playbooks do not load:";
    for (const auto& d : loader.result().diagnostics())
      if (!d.warning()) why += "\n  " + d.ToString();
    results->push_back(Failed(path, "(load)", why));
    return false;
  }
  file->tests = root["tests"];
  if (!file->tests || !file->tests.IsSequence()) {
    results->push_back(Failed(path, "(file)", path + ": 'tests' must be a list"));
    return false;
  }
  return true;
}

// What a test's expectations are compared with: the combined verdict and decision, the selected
// playbooks and every finding.
json Outcome(const EvaluationResult& eval, const EvaluationContext& ctx, const std::vector<std::string>& selected) {
  auto combined = verdict::Combine(eval.candidates, ParseJobStatus(ctx.facts.value("status", "")), FailureClassesOf(ctx.facts));
  json actual;
  actual["root_cause"] = combined.verdict.root_cause;
  actual["domain"] = combined.verdict.domain;
  actual["confidence"] = combined.verdict.confidence;
  actual["summary"] = combined.verdict.summary;
  actual["action"] = ToString(combined.decision.action);
  actual["exclude"] = combined.decision.exclude;
  actual["changes"] = combined.decision.changes;
  actual["notes"] = combined.decision.notes;
  actual["selected"] = selected;
  actual["findings"] = json::array();
  for (const auto& f : eval.findings)
    actual["findings"].push_back({{"id", f.id}, {"status", f.status}, {"hosts", f.hosts}, {"summary", f.summary}});
  actual["not_evaluated"] = eval.not_evaluated;
  return actual;
}

TestCaseResult RunTestCase(const std::string& path, const YAML::Node& t, int index, const TestFile& file,
                           const TestRunOptions& options) {
  std::string name = t["name"] ? t["name"].Scalar() : "test " + std::to_string(index);
  TestCaseResult r;
  r.file = path;
  r.name = name;
  if (!options.run.empty()) {
    bool selected = false;
    for (const auto& re : options.run) selected |= std::regex_search(name, re);
    if (!selected) {
      r.skipped = true;
      return r;
    }
  }
  auto started = std::chrono::steady_clock::now();
  auto fail = [&](const std::string& why) {
    r.failures.push_back(path + ":" + std::to_string(t.Mark().line + 1) + ": " + why);
  };
  for (auto kv = t.begin(); kv != t.end(); ++kv)
    if (!kTestKeys.count(kv->first.Scalar())) fail("unknown key '" + kv->first.Scalar() + "'");
  if (t["expect"])
    for (auto kv = t["expect"].begin(); kv != t["expect"].end(); ++kv)
      if (!kExpectKeys.count(kv->first.Scalar())) fail("unknown key 'expect." + kv->first.Scalar() + "'");
  double interval = 10;
  if (t["interval"] && !analysis::ParseDurationSeconds(t["interval"].Scalar(), &interval)) fail("bad interval '" + t["interval"].Scalar() + "'");
  auto start = ParseStart(t["start"]);
  if (!start.ok()) fail(start.status().message());
  if (!r.failures.empty()) return r;
  auto subject_series = ParseInputSeries(t["input_series"], *start, interval, "input_series");
  auto baseline_series = ParseInputSeries(t["baseline_input_series"], *start, interval, "baseline_input_series");
  if (!subject_series.ok() || !baseline_series.ok()) {
    fail(!subject_series.ok() ? subject_series.status().message() : baseline_series.status().message());
    return r;
  }
  // Within the file's limits, checked above, so this cannot fail.
  auto bounded = YamlToJson(t, name);
  const json whole = bounded.ok() ? std::move(bounded).value() : json();
  auto field = [&](const char* key) { return whole.is_object() ? whole.value(key, json()) : json(); };
  EvaluationContext ctx;
  ctx.facts = json(JobFacts{});
  if (t["facts"]) ctx.facts.merge_patch(field("facts"));
  if (t["baseline_facts"]) {
    ctx.baseline_facts = json(JobFacts{});
    ctx.baseline_facts.merge_patch(field("baseline_facts"));
  }
  std::unique_ptr<ServedSeries> served, served_baseline;
  auto serve = [&](ParsedSeries& ps, const char* role, std::unique_ptr<ServedSeries>* holder, json* discovery,
                   const char* override_key) -> bool {
    const json override_value = field(override_key);
    if (ps.series.empty()) {
      if (t[override_key]) *discovery = override_value;
      return true;
    }
    *discovery = DeriveDiscovery(ps.series, file.step_metric);
    if (t[override_key]) discovery->merge_patch(override_value);
    if (options.backend == nullptr) {
      fail(std::string("no series backend: cannot serve the ") + role + " input series");
      return false;
    }
    auto s = options.backend->Serve(ps.series, ps.start, ps.end, name + " (" + role + ")");
    if (!s.ok()) {
      fail(std::string("serving ") + role + " series with " + options.backend->Describe() + ": " + s.status().message());
      return false;
    }
    *holder = std::move(*s);
    return true;
  };
  if (!serve(*subject_series, "subject", &served, &ctx.discovery, "discovery") ||
      !serve(*baseline_series, "baseline", &served_baseline, &ctx.baseline_discovery, "baseline_discovery")) {
    return r;
  }
  ctx.subject = served ? served->client() : nullptr;
  ctx.baseline = served_baseline ? served_baseline->client() : nullptr;
  if (t["requested"]) ctx.requested_playbooks = StringList(field("requested"));
  // Only the playbooks of this file take part; triggers decide which of them run.
  const PlaybookSelection selection = SelectPlaybooks(file.loader.library(), ctx);
  std::vector<std::string> selected;
  for (const auto& s : selection.selected)
    if (std::find(file.ids.begin(), file.ids.end(), s.playbook) != file.ids.end()) selected.push_back(s.playbook);
  for (const auto& p : selection.trigger_problems) fail("trigger: " + p);
  auto graph = CompiledGraph::Compile(file.loader.library(), selected);
  if (!graph.ok()) {
    fail(graph.status().message());
    return r;
  }
  auto eval = Evaluate(*graph, ctx);
  const json actual = Outcome(eval, ctx, selected);
  if (t["expect"]) Compare(field("expect"), actual, &r.failures);
  else fail("no 'expect' block: a test must assert something");
  r.actual = actual;
  r.passed = r.failures.empty();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

}  // namespace

std::vector<TestCaseResult> RunTestFile(const std::string& path, const TestRunOptions& options) {
  std::vector<TestCaseResult> results;
  TestFile file;
  if (!LoadTestFile(path, options, &file, &results)) return results;
  int index = 0;
  for (const auto& t : file.tests) results.push_back(RunTestCase(path, t, ++index, file, options));
  return results;
}

std::string JunitXml(const std::vector<TestCaseResult>& results) {
  std::map<std::string, std::vector<const TestCaseResult*>> by_file;
  for (const auto& r : results) by_file[r.file].push_back(&r);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  for (const auto& [file, list] : by_file) {
    int failures = 0, skipped = 0;
    for (const auto* r : list) {
      failures += !r->passed && !r->skipped;
      skipped += r->skipped;
    }
    out += "  <testsuite name=\"" + XmlEscape(file) + "\" tests=\"" + std::to_string(list.size()) + "\" failures=\"" +
           std::to_string(failures) + "\" skipped=\"" + std::to_string(skipped) + "\">\n";
    for (const auto* r : list) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.3f", r->seconds);
      out += "    <testcase classname=\"" + XmlEscape(file) + "\" name=\"" + XmlEscape(r->name) + "\" time=\"" + secs + "\"";
      if (r->skipped) {
        out += "><skipped/></testcase>\n";
      } else if (r->passed) {
        out += "/>\n";
      } else {
        std::string text;
        for (const auto& f : r->failures) text += f + "\n";
        out += "><failure message=\"" + XmlEscape(r->failures.empty() ? "failed" : r->failures[0]) + "\">" +
               XmlEscape(text) + "</failure></testcase>\n";
      }
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace diagnose::dag
