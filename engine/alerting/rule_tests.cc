#include "engine/alerting/rule_tests.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include <unistd.h>

#include "engine/analysis/analysis.h"
#include "engine/core/scratch_dir.h"
#include "engine/core/subprocess.h"
#include "engine/core/bounded_yaml.h"
#include "engine/playbook/series_notation.h"
#include "engine/report/finding_status.h"
#include "engine/tsdb/promql_escape.h"

namespace diagnose::alerting {

namespace {

std::string AlertRegex(const std::vector<const RenderedAlert*>& alerts) {
  std::vector<std::string> names;
  for (const auto* a : alerts) names.push_back(a->alert);
  return PromqlAlternation(names);
}

std::string Fired(const std::string& alert_regex, const std::string& span, const std::string& extra_matcher = "") {
  return "max_over_time(ALERTS{alertname=~\"" + alert_regex + "\",alertstate=\"firing\"" + extra_matcher + "}[" + span + "])";
}

// A vector with one series per host, so PromQL can take a set difference against it.
std::string HostVector(const std::vector<std::string>& hosts) {
  std::string out;
  for (const auto& h : hosts)
    out += (out.empty() ? "" : " or ") + std::string("label_replace(vector(1), \"host\", \"") + EscapePromqlString(h) + "\", \"\", \"\")";
  return out;
}

void ExpectValue(YAML::Emitter& y, const std::string& expr, const std::string& eval_time, double value) {
  y << YAML::BeginMap << YAML::Key << "expr" << YAML::Value << expr;
  y << YAML::Key << "eval_time" << YAML::Value << eval_time;
  y << YAML::Key << "exp_samples" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "labels" << YAML::Value << "{}" << YAML::Key << "value" << YAML::Value << value;
  y << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
}

// The expanded points in promtool's notation, equal runs folded ("5x3"): promtool 2.42 reads `NaN`
// and `Inf` as values but not in a repeat ("NaNx19"), which our notation allows.
std::string PromtoolValues(const std::vector<playbook::SeriesPoint>& points) {
  using Kind = playbook::SeriesPoint::Kind;
  auto text = [](const playbook::SeriesPoint& p) -> std::string {
    if (p.kind == Kind::kMissing) return "_";
    if (p.kind == Kind::kStale) return "stale";
    if (std::isnan(p.value)) return "NaN";
    if (std::isinf(p.value)) return p.value > 0 ? "Inf" : "-Inf";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.15g", p.value);
    if (std::strtod(buf, nullptr) != p.value) std::snprintf(buf, sizeof buf, "%.17g", p.value);
    return buf;
  };
  std::string out;
  for (size_t i = 0; i < points.size();) {
    std::string v = text(points[i]);
    size_t j = i + 1;
    bool foldable = v != "NaN" && v != "Inf" && v != "-Inf" && v != "stale";
    while (foldable && j < points.size() && text(points[j]) == v) ++j;
    out += (out.empty() ? "" : " ") + v;
    if (j - i > 1) out += "x" + std::to_string(j - i - 1);
    i = j;
  }
  return out;
}

std::string Stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

}  // namespace

StatusOr<GeneratedRuleTests> GenerateRuleTests(const RuleExport& rules, const std::vector<std::string>& playbook_test_files,
                                               const std::string& rule_file) {
  GeneratedRuleTests out;
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "rule_files" << YAML::Value << YAML::BeginSeq << rule_file << YAML::EndSeq;
  y << YAML::Key << "evaluation_interval" << YAML::Value << rules.interval;
  y << YAML::Key << "tests" << YAML::Value << YAML::BeginSeq;
  for (const auto& file : playbook_test_files) {
    auto root = LoadBoundedYamlFile(file);
    if (!root.ok()) return root.status();
    std::set<std::string> playbooks;
    for (const auto& p : (*root)["playbooks"])
      if (p.IsScalar()) playbooks.insert(Stem(p.Scalar()));
    std::vector<const RenderedAlert*> relevant;
    for (const auto& a : rules.alerts)
      if (playbooks.count(a.spec->playbook)) relevant.push_back(&a);
    if (relevant.empty()) continue;
    for (const auto& test : (*root)["tests"]) {
      if (!test.IsMap()) continue;
      const YAML::Node series = test["input_series"];
      if (!series || !series.IsSequence() || series.size() == 0 || test["baseline_input_series"]) continue;
      // `diagnose test` reports a malformed test with its position; here it is left out.
      bool well_formed = test["expect"] && test["expect"].IsMap();
      for (const auto& s : series)
        well_formed = well_formed && s.IsMap() && s["series"] && s["series"].IsScalar() && s["values"] && s["values"].IsScalar();
      if (!well_formed) continue;
      const std::string name = test["name"] ? test["name"].Scalar() : "?";
      const std::string interval = test["interval"] ? test["interval"].Scalar() : "1m";
      double step = 0;
      if (!analysis::ParseDurationSeconds(interval, &step) || step <= 0)
        return InvalidArgumentError(file + ": test '" + name + "': interval '" + interval + "' is not a duration");
      size_t points = 0;
      std::vector<std::string> promtool_values;
      for (const auto& s : series) {
        auto values = playbook::ExpandSeriesValues(s["values"].Scalar());
        if (!values.ok()) return InvalidArgumentError(file + ": test '" + name + "': " + values.status().message());
        points = std::max(points, values->size());
        promtool_values.push_back(PromtoolValues(*values));
      }
      if (points < 2) continue;
      const long long end = std::llround((points - 1) * step);
      const std::string eval_time = std::to_string(end) + "s";
      const std::string span = std::to_string(end + std::llround(step)) + "s";

      const YAML::Node expect = test["expect"];
      const std::string root_cause = expect && expect["root_cause"] ? expect["root_cause"].Scalar() : "";
      std::vector<std::string> excluded;
      for (const auto& e : expect["exclude"]) {
        if (e.IsMap() && e["host"]) excluded.push_back(e["host"].Scalar());
        else if (e.IsScalar()) excluded.push_back(e.Scalar());
      }
      // What the test expects of each finding (none when it names no status, or one outside the
      // vocabulary: that finding is not expected to fire).
      std::map<std::string, std::optional<FindingStatus>> finding_status;
      bool names_a_host = false;
      for (const auto& f : expect["findings"]) {
        if (!f["id"]) continue;
        const std::optional<FindingStatus> status = f["status"] ? ParseFindingStatus(f["status"].Scalar()) : std::nullopt;
        finding_status[f["id"].Scalar()] = status;
        if (status == FindingStatus::kFired && f["hosts"] && f["hosts"].size() > 0) names_a_host = true;
      }
      // Positive: the test expects one of the alert's evidence rules to fire; or, when it lists no
      // findings at all, its verdict is the alert's root cause with hosts excluded.
      std::vector<const RenderedAlert*> by_evidence, by_verdict;
      bool evidence_fired_anywhere = false;
      for (const auto* a : relevant) {
        bool fired = false;
        for (const auto& rule : a->spec->evidence) {
          // Findings are named "<playbook>/<rule>", shared ones "common/<rule>".
          const std::string id = rule.rfind("common.", 0) == 0 ? "common/" + rule.substr(7) : a->spec->playbook + "/" + rule;
          auto it = finding_status.find(id);
          fired |= it != finding_status.end() && it->second == FindingStatus::kFired;
        }
        evidence_fired_anywhere |= fired;
        if (fired) by_evidence.push_back(a);
        else if (finding_status.empty() && root_cause == a->spec->root_cause && !excluded.empty()) by_verdict.push_back(a);
      }
      std::vector<const RenderedAlert*> positive = by_evidence;
      positive.insert(positive.end(), by_verdict.begin(), by_verdict.end());
      bool near_miss = root_cause == "none" && excluded.empty() && !names_a_host && !evidence_fired_anywhere;
      if (positive.empty() && !near_miss) continue;

      y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << Stem(file) + ": " + name;
      y << YAML::Key << "interval" << YAML::Value << interval;
      y << YAML::Key << "input_series" << YAML::Value << YAML::BeginSeq;
      for (size_t i = 0; i < series.size(); ++i)
        y << YAML::BeginMap << YAML::Key << "series" << YAML::Value << series[i]["series"].Scalar() << YAML::Key
          << "values" << YAML::Value << YAML::DoubleQuoted << promtool_values[i] << YAML::EndMap;
      y << YAML::EndSeq << YAML::Key << "promql_expr_test" << YAML::Value << YAML::BeginSeq;
      if (!positive.empty()) {
        // Each alert whose evidence the test expects fires itself; an expected verdict alone needs
        // one of its alerts.
        for (const auto* a : by_evidence)
          ExpectValue(y, "(count(" + Fired(AlertRegex({a}), span) + ") > bool 0) or vector(0)", eval_time, 1);
        if (!by_verdict.empty())
          ExpectValue(y, "(count(" + Fired(AlertRegex(by_verdict), span) + ") > bool 0) or vector(0)", eval_time, 1);
        if (!excluded.empty())
          ExpectValue(y, "count(count by (host) (" + Fired(AlertRegex(positive), span, ",host!=\"\"") +
                             ") unless on (host) (" + HostVector(excluded) + ")) or vector(0)",
                      eval_time, 0);
        ++out.positive;
      } else {
        ExpectValue(y, "count(" + Fired(AlertRegex(relevant), span) + ") or vector(0)", eval_time, 0);
        ++out.negative;
      }
      y << YAML::EndSeq << YAML::EndMap;
      out.case_names.push_back(Stem(file) + ": " + name);
    }
  }
  y << YAML::EndSeq << YAML::EndMap;
  out.yaml = std::string(y.c_str()) + "\n";
  return out;
}

StatusOr<RuleTestRun> RunRuleTests(const RuleExport& rules, const std::vector<std::string>& playbook_test_files,
                                   const std::string& promtool, const std::string& keep_dir) {
  namespace fs = std::filesystem;
  RuleTestRun run;
  auto tests = GenerateRuleTests(rules, playbook_test_files, "diagnose.rules.yml");
  if (!tests.ok()) return tests.status();
  run.tests = std::move(*tests);
  fs::path dir;
  std::optional<ScratchDir> scratch;
  if (!keep_dir.empty()) {
    dir = keep_dir;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return UnavailableError("cannot create " + keep_dir + ": " + ec.message());
  } else {
    ASSIGN_OR_RETURN(ScratchDir created, ScratchDir::Create("diagnose-rules", "promtool"));
    dir = created.path();
    scratch.emplace(std::move(created));
  }
  std::ofstream(dir / "diagnose.rules.yml") << RuleFileYaml(rules, "rules/alerts");
  std::ofstream(dir / "diagnose.rules.test.yml") << run.tests.yaml;
  SpawnOptions spawn;
  spawn.argv = {promtool, "test", "rules", "diagnose.rules.test.yml"};
  spawn.working_dir = dir.string();
  spawn.stdout_path = (dir / "promtool.out").string();
  spawn.stderr_path = spawn.stdout_path;
  Status status = Status::Ok();
  auto child = ChildProcess::Spawn(spawn);
  if (!child.ok()) {
    status = UnavailableError("cannot run " + promtool + " (Debian package 'prometheus'): " + child.status().message());
  } else {
    auto exit = child->Wait(std::chrono::minutes(5));
    std::ifstream in(dir / "promtool.out");
    std::ostringstream text;
    text << in.rdbuf();
    run.output = text.str();
    if (!exit.ok()) status = exit.status();
    run.passed = exit.ok() && *exit == 0;
  }
  if (!status.ok()) return status;
  return run;
}

}  // namespace diagnose::alerting
