// One job, one judgement: `diagnose watch --once`, `diagnose nodes` and `diagnose JOB` over every
// bundled fixture job that has a log, and no sentence of those reports names an empty list. The
// built binary is run, as a sweep driver runs it.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "engine/core/json.h"
#include "engine/core/subprocess.h"
#include "engine/decision/decision_rules.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

// A sentence with a hole where a list was: "OOM killer fired on  during the job", "on []", "on ,".
// Scanned by hand: std::regex recurses per character and overflows the stack on long summaries.
bool HasHole(const std::string& text) {
  for (const char* literal : {"[]", "[\"", ": ,", "()", "( )"})
    if (text.find(literal) != std::string::npos) return true;
  for (size_t at = text.find("on"); at != std::string::npos; at = text.find("on", at + 1)) {
    const bool word = (at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]))) &&
                      (at + 2 == text.size() || !std::isalnum(static_cast<unsigned char>(text[at + 2])));
    if (!word) continue;
    size_t next = at + 2;
    while (next < text.size() && text[next] == ' ') ++next;
    const size_t spaces = next - at - 2;   // "went on." and "on, then" are English; "on ," is a hole
    if (spaces >= 2 || (spaces == 1 && (next == text.size() || std::string(",;.)").find(text[next]) != std::string::npos)))
      return true;
  }
  return false;
}

void ExpectNoEmptyListSentence(const std::string& where, const std::string& text) {
  EXPECT_FALSE(HasHole(text)) << where << ": " << text;
}

void ExpectNoEmptyListSentences(const nlohmann::json& report) {
  ExpectNoEmptyListSentence("verdict.summary", report["verdict"].value("summary", ""));
  for (const auto& f : report.value("findings", nlohmann::json::array()))
    ExpectNoEmptyListSentence("finding " + f.value("id", ""), f.value("summary", ""));
  const nlohmann::json& decision = report["decision"];
  for (const auto& n : decision.value("notes", nlohmann::json::array()))
    if (n.is_string()) ExpectNoEmptyListSentence("decision note", n.get<std::string>());
  for (const auto& x : decision.value("exclude", nlohmann::json::array()))
    ExpectNoEmptyListSentence("exclusion of " + x.value("host", ""), x.value("reason", ""));
  const nlohmann::json changes = decision.value("changes", nlohmann::json::object());
  for (const auto& [key, value] : changes.items())
    if (value.is_string()) ExpectNoEmptyListSentence("change " + key, value.get<std::string>());
}

// The fields of a watch line, split at its em dashes: "<job>: <tgs>", cause, outcome, action, why.
std::vector<std::string> LineFields(const std::string& line) {
  const std::string dash = " \xE2\x80\x94 ";
  std::vector<std::string> fields;
  size_t from = 0;
  for (size_t at = line.find(dash); at != std::string::npos; from = at + dash.size(), at = line.find(dash, from))
    fields.push_back(line.substr(from, at - from));
  fields.push_back(line.substr(from));
  return fields;
}

// The action a watch line shows ("none" when a PASS line shows none), without its hosts.
std::string LineAction(const std::string& line) {
  const std::vector<std::string> fields = LineFields(line);
  for (size_t i = 0; i + 1 < fields.size(); ++i)
    if (fields[i] == "PASS" || fields[i] == "DEGRADED" || fields[i] == "FAIL")
      return fields[i + 1].substr(0, fields[i + 1].find(' '));
  return "none";
}

// The policy step a watch line names as the reason for its action ("" when it names none).
std::string LineWhy(const std::string& line) {
  for (const auto& field : LineFields(line))
    if (field.starts_with("why: ")) return field.substr(5);
  return "";
}

// job id -> its line, from the output of `watch --once`.
std::map<std::string, std::string> LinesByJob(const std::string& watch) {
  std::map<std::string, std::string> lines;
  const std::regex job_of(R"(\(job ([^)]+)\): )");
  std::istringstream in(watch);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, job_of)) lines[m[1]] = line;
  }
  return lines;
}

class CommandAgreementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = fs::temp_directory_path() / ("diagnose-agreement-" + std::to_string(::getpid()));
    fs::create_directories(scratch_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(scratch_, ec);
  }

  // stdout of the command (stderr apart, so that JSON stays parseable).
  std::string Stdout(const std::vector<std::string>& argv, int* exit_code) {
    SpawnOptions spawn;
    spawn.argv = argv;
    spawn.stdout_path = (scratch_ / "out").string();
    spawn.stderr_path = (scratch_ / "err").string();
    auto child = ChildProcess::Spawn(spawn);
    EXPECT_TRUE(child.ok()) << child.status().ToString();
    if (!child.ok()) return "";
    auto code = child->Wait(std::chrono::milliseconds(240000));
    EXPECT_TRUE(code.ok());
    *exit_code = code.ok() ? *code : -1;
    return testing::ReadFileOrEmpty(scratch_ / "out");
  }

  // stdout of `watch --once` over every fixture job. Under ctest that command ran once for all the
  // tests here (the agreement_watch_once fixture, tests/CMakeLists.txt, which fails unless it exits
  // 0): the same command over the same jobs, so each test reads the lines it would get by running it.
  std::string WatchOnceOverEveryJob(int* exit_code) {
    if (const char* shared = std::getenv("DIAGNOSE_AGREEMENT_WATCH_ONCE")) {
      const bool written = fs::is_regular_file(shared);
      EXPECT_TRUE(written) << "the agreement_watch_once fixture wrote no " << shared;
      *exit_code = written ? 0 : -1;
      return testing::ReadFileOrEmpty(shared);
    }
    return Stdout({DIAGNOSE_BINARY, "watch", DIAGNOSE_FIXTURE_OUTPUTS, "--once"}, exit_code);
  }

  fs::path scratch_;
};

TEST(EmptyListSentence, TheCheckSeesTheHolesThatWereShipped) {
  for (const char* broken : {"OOM killer fired on  during the job", "PCIe fatal errors on  (host/gpu)",
                             "I/O pressure (full) reached 80 % on , above the 80 %", "retry exhaustion on []",
                             "TCP retransmits on [\"chi2853\",\"chi2875\"]", "dmesg GPU errors grew on "})
    EXPECT_TRUE(HasHole(broken)) << broken;
  for (const char* fine : {"RDMA anomalies: sustained retransmits on chi2822, chi2834", "noted, not acted on (RCCL uses RDMA)",
                           "hosts whose OOM-kill counter increased during the job", "the job went on. Then"})
    EXPECT_FALSE(HasHole(fine)) << fine;
}

// Sharded by job: each shard reads `watch --once` over every job (its judgement of one job must not
// depend on which others it saw) and compares a quarter of them, so that no ctest process nears its
// time limit and two shards run at once. tests/CMakeLists.txt sets their number: it names each shard.
constexpr int kAgreementShards = DIAGNOSE_AGREEMENT_SHARDS;

class CommandAgreementShards : public CommandAgreementTest, public ::testing::WithParamInterface<int> {};

TEST_P(CommandAgreementShards, WatchNodesAndDiagnoseShowOneJudgementPerFixtureJob) {
  auto rules = LoadDecisionRules(DIAGNOSE_SOURCE_DIR);
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  int code = 0;
  const std::string watch = WatchOnceOverEveryJob(&code);
  ASSERT_EQ(code, 0) << watch;
  const std::map<std::string, std::string> lines = LinesByJob(watch);
  ASSERT_GE(lines.size(), 20u) << watch;

  int degraded_seen = 0, named_seen = 0, index = 0;
  for (const auto& [id, line] : lines) {
    if (index++ % kAgreementShards != GetParam()) continue;
    SCOPED_TRACE("job " + id + ": " + line);
    const std::string out = Stdout({DIAGNOSE_BINARY, id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--format", "json"}, &code);
    const auto report = nlohmann::json::parse(out, nullptr, false);
    ASSERT_FALSE(report.is_discarded()) << out.substr(0, 400);
    ExpectNoEmptyListSentences(report);
    const std::string cause = report["verdict"].value("root_cause", "");
    const nlohmann::json& decision = report["decision"];
    const bool pass = line.find("\xE2\x80\x94 PASS") != std::string::npos;
    const bool degraded = line.find("\xE2\x80\x94 DEGRADED") != std::string::npos;
    degraded_seen += degraded;
    if (rules->NamesMechanism(cause)) {
      // The cause diagnose names is the one the line names (or its sweep label: "OOM").
      ++named_seen;
      const auto label = rules->progress_labels.find(cause);
      const bool named = line.find(cause) != std::string::npos ||
                         (label != rules->progress_labels.end() && line.find(label->second.label) != std::string::npos);
      EXPECT_TRUE(named) << "diagnose: " << cause;
      EXPECT_FALSE(pass) << "diagnose: " << cause;
    } else if (pass) {
      // Nothing found by either; a PASS line with an action carries diagnose's action.
      EXPECT_TRUE(line.find(decision.value("action", "")) != std::string::npos || decision.value("action", "") == "none")
          << decision.dump();
    } else {
      // diagnose named no mechanism; the line shows the sweep rule's reading, which diagnose's
      // decision cites too.
      bool cites_rule = false;
      for (const auto& note : decision.value("notes", nlohmann::json::array()))
        cites_rule = cites_rule || (note.is_string() && note.get<std::string>().find("[sweep rule ") != std::string::npos);
      const bool same_words = line.find(cause) != std::string::npos;
      EXPECT_TRUE(cites_rule || same_words) << decision.dump();
    }

    // One policy view: where the sweep acts otherwise than `diagnose JOB`, the line says which limit
    // and diagnose says what a sweep would do with its answer.
    const std::string line_action = LineAction(line);
    if (line_action != decision.value("action", "")) {
      EXPECT_TRUE(decision.contains("in_sweep")) << "watch: " << line_action << "; diagnose: " << decision.dump();
      if (decision.contains("in_sweep")) {
        EXPECT_EQ(decision["in_sweep"].value("to", ""), line_action);
        EXPECT_NE(LineWhy(line).find(decision["in_sweep"].value("reason", "?")), std::string::npos)
            << "the line does not say why: " << decision["in_sweep"].dump();
      }
    }

    // nodes judges throughput only: it says so, and calls no group healthy whose own run lost
    // throughput in diagnose's TGS analysis, nor a job that did not finish.
    const std::string nodes = Stdout({DIAGNOSE_BINARY, "nodes", id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--mode",
                                      "bisect", "--format", "json", "--throughput-only"}, &code);
    const auto table = nlohmann::json::parse(nodes, nullptr, false);
    ASSERT_FALSE(table.is_discarded()) << nodes.substr(0, 400);
    EXPECT_NE(table.value("scope", "").find("no diagnosis run"), std::string::npos);
    ASSERT_EQ(table["bisection"]["rows"].size(), 1u);
    const std::string group = table["bisection"]["rows"][0].value("status", "");
    ASSERT_EQ(report["facts"].size(), 1u);
    const nlohmann::json& facts = report["facts"].begin().value();
    const nlohmann::json& tgs = facts["tgs"];
    const bool lost_throughput = tgs.contains("degradation_onset_step") && tgs["degradation_onset_step"].is_number() &&
                                 tgs.value("degradation_pct", 0.0) >= rules->bisection.degraded_below_pct;
    if (lost_throughput) EXPECT_NE(group, "healthy") << tgs.dump();
    if (pass && facts.value("status", "") == "completed" && !lost_throughput) EXPECT_EQ(group, "healthy");
    // ... on diagnose's facts: the job's id, its healthy TGS as diagnose reports it (a job that
    // failed after measured steps included), and no comparison of a lone group with itself.
    const nlohmann::json& row = table["bisection"]["rows"][0];
    EXPECT_EQ(row.value("job", ""), id);
    const double healthy = tgs.value("steady_tgs", 0.0) > 0 ? tgs.value("steady_tgs", 0.0) : tgs.value("healthy_tgs", 0.0);
    if (healthy > 0) {
      ASSERT_TRUE(row.contains("tgs") && row["tgs"].is_number()) << row.dump();
      EXPECT_NEAR(row["tgs"].get<double>(), healthy, 1e-6) << row.dump();
    }
    EXPECT_FALSE(row.contains("delta_pct") && row["delta_pct"].is_number()) << row.dump();

    // Without --throughput-only, a group that is not healthy carries diagnose's own decision.
    if (group != "healthy") {
      const auto diagnosed = nlohmann::json::parse(
          Stdout({DIAGNOSE_BINARY, "nodes", id, "--outputs", DIAGNOSE_FIXTURE_OUTPUTS, "--mode", "bisect", "--format",
                  "json"}, &code), nullptr, false);
      ASSERT_FALSE(diagnosed.is_discarded());
      EXPECT_EQ(diagnosed["decision"].value("action", "?"), decision.value("action", "")) << diagnosed["decision"].dump();
      EXPECT_EQ(diagnosed["decision"]["exclude"].size(), decision["exclude"].size()) << diagnosed["decision"].dump();
      EXPECT_EQ(diagnosed["decision"].contains("in_sweep"), decision.contains("in_sweep"));
      EXPECT_EQ(diagnosed.value("scope", "").find("no diagnosis run"), std::string::npos);
    }
  }
  // Every share of the fixtures holds both kinds: a completed run with a cause, and named causes.
  EXPECT_GT(degraded_seen, 0);
  EXPECT_GT(named_seen, 0);
}

INSTANTIATE_TEST_SUITE_P(Jobs, CommandAgreementShards, ::testing::Range(0, kAgreementShards));

// A sweep with a history: earlier jobs' exclusions and retries count, so the sweep may act otherwise
// than on a job alone. Every such line names the limit and its numbers.
TEST_F(CommandAgreementTest, WatchWithAHistorySaysWhichLimitChangedEachAction) {
  int code = 0;
  const auto alone = LinesByJob(WatchOnceOverEveryJob(&code));
  ASSERT_EQ(code, 0);
  const std::string history = (scratch_ / "history.jsonl").string();
  const std::string swept_out =
      Stdout({DIAGNOSE_BINARY, "watch", DIAGNOSE_FIXTURE_OUTPUTS, "--once", "--history", history}, &code);
  ASSERT_EQ(code, 0) << swept_out;
  const auto swept = LinesByJob(swept_out);
  ASSERT_EQ(swept.size(), alone.size()) << swept_out;
  int changed = 0;
  for (const auto& [id, line] : swept) {
    const auto before = alone.find(id);
    ASSERT_NE(before, alone.end()) << id;
    if (LineAction(line) == LineAction(before->second)) continue;
    ++changed;
    const std::string why = LineWhy(line);
    EXPECT_NE(why.find("limits."), std::string::npos) << "job " << id << ": " << line;
  }
  EXPECT_GT(changed, 0) << "the history changed no action: the check checked nothing";
}

}  // namespace
}  // namespace diagnose
