#include "tests/pipeline/scenario_expect_support.h"

#include <cctype>
#include <set>

#include <gtest/gtest.h>

#include "engine/report/report.h"
#include "tests/support/fixture_reports.h"

namespace diagnose::e2e {

using nlohmann::json;

namespace {

// Words that promise something after them: a sentence that ends on one, or a clause that does
// (";" right after it), had an empty list rendered into it ("... line up with the TGS phases on ").
// Commas and colons after such a word are left alone: "five steps in, peak ..." reads whole.
bool IsConnective(const std::string& word) {
  static const std::set<std::string> kConnectives = {
      "on", "of", "in", "with", "and", "or", "for", "to", "by", "from", "at", "than", "vs", "the", "a", "an",
      "between", "during", "while", "after", "before", "including", "excluding", "over", "under", "across"};
  std::string lower;
  for (char c : word) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return kConnectives.count(lower) > 0;
}

// The first hole in `text`, or "" when it reads whole.
std::string SentenceHole(const std::string& text) {
  std::string word;
  auto punct = [](char c) { return c == ';'; };
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : '\0';
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '\'') {
      word += c;
      continue;
    }
    if (!word.empty() && IsConnective(word)) {
      size_t j = i;
      while (j < text.size() && text[j] == ' ') ++j;
      if (j == text.size()) return "ends in '" + word + "'";
      if (punct(text[j])) return "'" + word + "' followed by '" + std::string(1, text[j]) + "'";
    }
    word.clear();
  }
  return "";
}

}  // namespace

void ExpectReadableReport(const json& report, const std::string& file) {
  auto check = [&](const std::string& where, const json& text) {
    if (!text.is_string()) return;
    const std::string hole = SentenceHole(text.get<std::string>());
    EXPECT_TRUE(hole.empty()) << file << ": " << where << " has a hole (" << hole << "): " << text;
  };
  check("verdict.summary", report["verdict"].value("summary", json()));
  for (const auto& n : report["decision"].value("notes", json::array())) check("decision note", n);
  for (const auto& e : report["decision"].value("exclude", json::array())) check("exclusion reason", e.value("reason", json()));
  for (const auto& f : report.value("findings", json::array())) {
    if (f.value("status", "") != "fired") continue;
    check("finding " + f.value("id", std::string()) + " summary", f.value("summary", json()));
    // The per-host evidence tables that list the finding's hosts must not all show only zeros for
    // them (a finding may carry context queries that are zero for its hosts, e.g. the RDMA counters
    // of a hang, but some table has to show what it blames them for).
    std::set<std::string> blamed;
    for (const auto& h : f.value("hosts", json::array())) blamed.insert(h.get<std::string>());
    if (blamed.empty()) continue;
    int tables = 0, zero_tables = 0;
    std::string queries;
    for (const auto& ev : f.value("evidence", json::array())) {
      const json value = ev.value("value", json());
      if (!value.is_object()) continue;
      // Zero is the finding when the query asks for it: a selection of zeros (a port state == 0)
      // or the changes of a series that should move (a flatlined exporter).
      const std::string query = ev.value("query", std::string());
      if (query.find("== 0") != std::string::npos || query.find("changes(") != std::string::npos) continue;
      int listed = 0, zero = 0;
      for (const auto& [key, v] : value.items()) {
        const std::string host = key.substr(0, key.find('/'));
        if (!blamed.count(host) || !v.is_number()) continue;
        ++listed;
        zero += v.get<double>() == 0;
      }
      if (listed == 0) continue;
      ++tables;
      if (zero == listed) ++zero_tables, queries += "\n  " + ev.value("query", std::string());
    }
    EXPECT_FALSE(tables > 0 && zero_tables == tables)
        << file << ": finding " << f.value("id", std::string()) << " blames hosts its evidence shows only as 0:" << queries;
  }
}

std::set<std::string> StringSet(const YAML::Node& node) {
  std::set<std::string> out;
  for (const auto& item : node) out.insert(item.IsMap() ? item["host"].as<std::string>() : item.as<std::string>());
  return out;
}

std::string ScenarioJobId(const YAML::Node& root) {
  return root["job"]["id"] ? root["job"]["id"].as<std::string>() : root["id"].as<std::string>();
}

std::vector<std::string> ScenarioCliArgs(const YAML::Node& root, const std::string& outputs) {
  const YAML::Node expect = root["expect"];
  std::vector<std::string> args{ScenarioJobId(root), "--outputs", outputs, "--format", "json"};
  // Running/hanging depend on "now": a scenario pins it (epoch seconds) so the verdict is stable.
  if (expect["now"]) {
    args.push_back("--now");
    args.push_back(expect["now"].as<std::string>());
  }
  if (expect["baseline"]) {
    args.push_back("--baseline");
    args.push_back(expect["baseline"].as<std::string>());
  }
  return args;
}

void ExpectScenarioReport(const CliRun& run, const YAML::Node& root, const std::string& file) {
  const YAML::Node expect = root["expect"];
  ASSERT_TRUE(expect) << file << " has no expect: block";
  const std::string id = ScenarioJobId(root);
  if (expect["status"] && expect["status"].as<std::string>() == "no-report") {
    EXPECT_NE(run.exit_code, 0) << file;
    EXPECT_TRUE(run.out.empty()) << "no partial JSON on stdout";
    EXPECT_NE(run.err.find(id), std::string::npos) << "the error names the job: " << run.err;
    return;
  }
  ASSERT_EQ(run.exit_code, 0) << file << ": " << run.err;
  json report = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << run.out.substr(0, 400);

  // Contract invariants hold on every report.
  EXPECT_EQ(report["schema"], "diagnose/v1");
  EXPECT_TRUE(IsKnownRootCause(report["verdict"]["root_cause"])) << report["verdict"];
  EXPECT_TRUE(IsKnownDomain(report["verdict"]["domain"]));
  EXPECT_TRUE(IsKnownConfidence(report["verdict"]["confidence"]));
  EXPECT_TRUE(ParseDecisionAction(report["decision"]["action"].get<std::string>())) << report["decision"];
  EXPECT_TRUE(IsKnownJobStatus(report["jobs"][0]["status"]));
  for (const auto& f : report["findings"])
    if (f["status"] == "fired") EXPECT_FALSE(f["evidence"].empty()) << "fired finding without evidence: " << f["id"];
  ExpectReadableReport(report, file);

  const json& job = report["jobs"][0];
  if (expect["status"]) EXPECT_EQ(job["status"], expect["status"].as<std::string>()) << file;
  if (expect["failure_class"]) {
    // `failure_class: null` in a scenario means "no failure class": the report carries "".
    std::string expected = expect["failure_class"].IsNull() ? "" : expect["failure_class"].as<std::string>();
    EXPECT_EQ(job["failure_class"], expected) << file;
  }
  if (expect["root_cause"])
    EXPECT_EQ(report["verdict"]["root_cause"], expect["root_cause"].as<std::string>())
        << file << ": " << report["verdict"].dump();
  if (expect["domain"]) EXPECT_EQ(report["verdict"]["domain"], expect["domain"].as<std::string>());
  if (expect["action"])
    EXPECT_EQ(report["decision"]["action"], expect["action"].as<std::string>())
        << file << ": " << report["decision"].dump();
  std::set<std::string> excluded;
  for (const auto& e : report["decision"]["exclude"]) excluded.insert(e["host"].get<std::string>());
  if (expect["exclude"]) EXPECT_EQ(excluded, StringSet(expect["exclude"])) << file;
  if (expect["not_excluded"])
    for (const auto& host : StringSet(expect["not_excluded"]))
      EXPECT_EQ(excluded.count(host), 0u) << host << " must never be excluded (" << file << ")";
  // An `exclude` entry given as {host, priority} also pins the priority.
  if (expect["exclude"])
    for (const auto& item : expect["exclude"]) {
      if (!item.IsMap() || !item["priority"]) continue;
      for (const auto& e : report["decision"]["exclude"])
        if (e["host"] == item["host"].as<std::string>())
          EXPECT_EQ(e["priority"], item["priority"].as<int>()) << e.dump() << " (" << file << ")";
    }
  if (expect["changes"])
    for (const auto& kv : expect["changes"])
      EXPECT_EQ(report["decision"]["changes"].value(kv.first.as<std::string>(), ""), kv.second.as<std::string>());
  // `findings: [{id, status, hosts}]`: each finding is in the report with that status (fired,
  // clear, suppressed, ...) and, when `hosts` is given, exactly that host set.
  for (const auto& want : expect["findings"]) {
    const std::string id = want["id"].as<std::string>();
    const json* found = nullptr;
    for (const auto& f : report["findings"])
      if (f.value("id", "") == id) found = &f;
    if (!found) {
      ADD_FAILURE() << file << ": finding " << id << " is not in the report";
      continue;
    }
    EXPECT_EQ(found->value("status", ""), want["status"].as<std::string>()) << file << ": " << found->dump();
    if (want["hosts"]) {
      std::set<std::string> hosts;
      for (const auto& h : (*found)["hosts"]) hosts.insert(h.get<std::string>());
      EXPECT_EQ(hosts, StringSet(want["hosts"])) << file << ": finding " << id;
    }
  }
  // `refuted`: failure classes the metrics showed to be false alarms (verdict.refuted extension).
  if (expect["refuted"]) {
    std::set<std::string> refuted;
    for (const auto& r : report["verdict"].value("refuted", json::array())) refuted.insert(r.get<std::string>());
    EXPECT_EQ(refuted, StringSet(expect["refuted"])) << file;
  }
  // `report_contains: [text]`: what the reader must be told, somewhere in the verdict summary, the
  // decision notes or a finding's summary.
  std::string told = report["verdict"].value("summary", "");
  for (const auto& n : report["decision"]["notes"]) told += "\n" + n.get<std::string>();
  for (const auto& f : report["findings"])
    if (f.value("status", "") != "clear") told += "\n" + f.value("summary", "");
  for (const auto& text : expect["report_contains"])
    EXPECT_NE(told.find(text.as<std::string>()), std::string::npos)
        << file << ": the report never says '" << text.as<std::string>() << "':\n" << told;
}

}  // namespace diagnose::e2e
