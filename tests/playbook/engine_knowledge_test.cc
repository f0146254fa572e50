// Incident knowledge lives in rules/ and playbooks/, not in C++ (issue 18): no id the data defines
// appears as a string literal in engine/. A rename in the data can then never be silently skipped
// by a hard-coded comparison, and a new incident type needs no C++.
//
// The ids checked: verdict root causes (the contract vocabulary table in engine/report/report.cc,
// which validates them, is the one place allowed to list them, and `none`/`unknown` are the
// contract's sentinels), sweep signal and decision-rule ids (rules/sweep/decisions.yaml), playbook
// ids, shared and playbook rule ids made of several words (a one-word id such as `host` is also an
// ordinary JSON field name), shared window and macro names, and metric families (hw_*, ray_*, tb_*).
// Built-in analyses (engine/analysis) are engine capabilities: a rule may share an analysis's name.
// Failure classes are triage's output vocabulary, not checked here: the log-signature ones are
// defined in rules/triage/failure-signatures.yaml, and the few triage's own detectors compute
// (hang, cancelled, soft-success, tgs-degradation, ...) are named by the code that computes them;
// a sweep signal or rule named after such a class is not knowledge in C++.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "engine/analysis/analysis.h"
#include "engine/playbook/loader.h"
#include "engine/report/report.h"
#include "tests/support/files.h"

namespace diagnose::playbook {
namespace {

namespace fs = std::filesystem;

// The string literals of a C++ source, with the line each starts on; comments are skipped.
std::vector<std::pair<int, std::string>> StringLiterals(const std::string& src) {
  std::vector<std::pair<int, std::string>> out;
  int line = 1;
  for (size_t i = 0; i < src.size(); ++i) {
    char c = src[i];
    if (c == '\n') ++line;
    if (c == '/' && i + 1 < src.size() && src[i + 1] == '/') {
      while (i < src.size() && src[i] != '\n') ++i;
      ++line;
      continue;
    }
    if (c == '/' && i + 1 < src.size() && src[i + 1] == '*') {
      for (i += 2; i + 1 < src.size() && !(src[i] == '*' && src[i + 1] == '/'); ++i)
        if (src[i] == '\n') ++line;
      ++i;
      continue;
    }
    if (c == '\'' && i > 0 && std::isxdigit(static_cast<unsigned char>(src[i - 1])) && i + 1 < src.size() &&
        std::isxdigit(static_cast<unsigned char>(src[i + 1])))
      continue;   // a digit separator: 200'000
    if (c == '\'') {   // a character literal, e.g. '"'
      for (++i; i < src.size() && src[i] != '\''; ++i)
        if (src[i] == '\\') ++i;
      continue;
    }
    if (c == 'R' && i + 1 < src.size() && src[i + 1] == '"') {   // raw string: R"delim( ... )delim"
      size_t open = src.find('(', i);
      std::string close = ")" + src.substr(i + 2, open - i - 2) + "\"";
      size_t end = src.find(close, open);
      std::string body = src.substr(open + 1, end - open - 1);
      out.emplace_back(line, body);
      for (char b : body)
        if (b == '\n') ++line;
      i = end + close.size() - 1;
      continue;
    }
    if (c == '"') {
      std::string s;
      for (++i; i < src.size() && src[i] != '"'; ++i) {
        if (src[i] == '\\' && i + 1 < src.size()) s += src[++i];
        else s += src[i];
      }
      out.emplace_back(line, s);
    }
  }
  return out;
}

struct Knowledge {
  std::multimap<std::string, std::string> ids;   // id -> each thing that defines it
};

const std::set<std::string> kTriageComputedClasses = {"hang", "cancelled", "cancelled-after-hang", "soft-success",
                                                      "tgs-degradation", "unknown-death", "prolog-kill-no-log"};

Knowledge DataIds(const std::string& data_dir) {
  Knowledge k;
  LoadResult result;
  Library library = LoadLibraryDir(data_dir, &result);
  EXPECT_TRUE(result.ok()) << result.AsJson().dump(2);
  auto add = [&](const std::string& id, const std::string& what) {
    if (!id.empty() && !kTriageComputedClasses.count(id)) k.ids.emplace(id, what);
  };
  auto several_words = [](const std::string& id) { return id.find_first_of("_-") != std::string::npos; };
  auto add_rule = [&](const RuleSpec& r, const std::string& where) {
    if (several_words(r.id) && !analysis::FindAnalysis(r.id)) add(r.id, "rule id in " + where);
    if (r.kind == RuleKind::kVerdict && r.verdict.root_cause != "none" && r.verdict.root_cause != "unknown")
      add(r.verdict.root_cause, "root cause of " + r.qualified_id);
  };
  for (const auto& pb : library.playbooks) {
    add(pb.id, "playbook " + pb.file);
    for (const auto& r : pb.rules) add_rule(r, pb.file);
    for (const auto& [name, w] : pb.windows)
      if (several_words(name)) add(name, "window of " + pb.id);
  }
  for (const auto& r : library.common_rules) add_rule(r, "rules/common");
  for (const auto& w : library.shared_windows) add(w.name, "shared window");
  for (const auto& m : library.common_macros) add(m.name, "shared macro");

  const std::string decisions = testing::ReadFileOrEmpty(fs::path(data_dir) / "rules/sweep/decisions.yaml");
  EXPECT_FALSE(decisions.empty());
  static const std::regex rule_id(R"(^\s*- id: ([a-z0-9-]+)\s*$)", std::regex::multiline);
  for (std::sregex_iterator m(decisions.begin(), decisions.end(), rule_id), end; m != end; ++m)
    add((*m)[1].str(), "sweep decision rule");
  const size_t signals = decisions.find("\nsignals:\n");
  EXPECT_NE(signals, std::string::npos);
  std::istringstream in(decisions.substr(signals + 10));
  static const std::regex signal_key(R"(^  ([a-z0-9-]+):\s*$)");
  for (std::string l; std::getline(in, l) && (l.empty() || l[0] == ' ' || l[0] == '#');) {
    std::smatch m;
    if (std::regex_match(l, m, signal_key)) add(m[1].str(), "sweep signal");
  }

  static const std::regex metric(R"(\b((hw|ray|tb)_[a-z0-9_]+))");
  // Only rules/ and playbooks/: the data dir may be the source tree, whose build/ other tests
  // write and delete in while this one walks.
  for (const char* sub : {"rules", "playbooks"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(data_dir) / sub)) {
      if (entry.path().extension() != ".yaml") continue;
      const std::string rel = fs::relative(entry.path(), data_dir).string();
      if (rel.find("/tests/") != std::string::npos) continue;
      const std::string text = testing::ReadFileOrEmpty(entry.path());
      for (std::sregex_iterator m(text.begin(), text.end(), metric), end; m != end; ++m) add((*m)[1].str(), "metric in " + rel);
    }
  }
  return k;
}

TEST(EngineKnowledge, NoIdDefinedInTheDataIsWrittenInTheEngine) {
  const Knowledge k = DataIds(PlaybookDataDir());
  // The data defines enough for the test to mean something.
  ASSERT_GT(k.ids.size(), 300u);
  for (const char* expected : {"rdma-link-degradation", "heartbeat_stop", "checkpoints", "hw_rdma_tx_retx_pkts_total",
                               "tb_step", "gpu-oom", "hang-before-memstats"})
    if (!k.ids.count(expected)) ADD_FAILURE() << "the scan missed '" << expected << "'";
  std::vector<std::string> violations;
  const fs::path engine(DIAGNOSE_ENGINE_SOURCE_DIR);
  for (const auto& entry : fs::recursive_directory_iterator(engine)) {
    const auto ext = entry.path().extension();
    if (ext != ".cc" && ext != ".h") continue;
    const std::string rel = fs::relative(entry.path(), engine.parent_path()).string();
    for (const auto& [line, literal] : StringLiterals(testing::ReadFileOrEmpty(entry.path()))) {
      auto [first, last] = k.ids.equal_range(literal);
      if (first == last) continue;
      bool root_cause = false;
      std::string what;
      for (auto it = first; it != last; ++it) {
        root_cause |= it->second.rfind("root cause", 0) == 0;
        what += (what.empty() ? "" : "; ") + it->second;
      }
      // The contract's vocabulary table (it validates what the data writes).
      if (rel == "engine/report/report.cc" && (root_cause || IsKnownRootCause(literal))) continue;
      violations.push_back(rel + ":" + std::to_string(line) + ": \"" + literal + "\" (" + what + ")");
    }
  }
  std::string list;
  for (const auto& v : violations) list += "\n  " + v;
  EXPECT_TRUE(violations.empty()) << "incident knowledge written in C++; move it to the data:" << list;
}

TEST(EngineKnowledge, TheScannerFindsLiteralsAndSkipsComments) {
  auto lits = StringLiterals(
      "int a; // \"tb_step\"\nauto s = \"hw_x\"; /* \"no\" */ char q = '\"';\nauto r = R\"(raw\")\";\nint n = 200'000; auto t = \"tb_y\";\n");
  ASSERT_EQ(lits.size(), 3u);
  EXPECT_EQ(lits[0], (std::pair<int, std::string>{2, "hw_x"}));
  EXPECT_EQ(lits[1], (std::pair<int, std::string>{3, "raw\""}));
  EXPECT_EQ(lits[2], (std::pair<int, std::string>{4, "tb_y"})) << "a digit separator is not a character literal";
}

}  // namespace
}  // namespace diagnose::playbook
