#include "engine/playbook/loader.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "engine/core/limits.h"

namespace diagnose::playbook {
namespace {

std::string TestData(const std::string& name) { return std::string(DIAGNOSE_SOURCE_DIR) + "/tests/playbook/testdata/" + name; }

const LoadDiagnostic* Find(const LoadResult& r, LoadCode code) {
  for (const auto& d : r.diagnostics())
    if (d.code == code) return &d;
  return nullptr;
}

int Count(const LoadResult& r, LoadCode code) {
  int n = 0;
  for (const auto& d : r.diagnostics()) n += d.code == code;
  return n;
}

LoadResult LoadText(const std::string& text, Library* lib = nullptr, const std::string& common = "") {
  Loader loader;
  // The shipped shared windows (heartbeat_stop, checkpoints) and the threshold they read.
  loader.LoadCommonText("thresholds: {checkpoint_window_settle_seconds: 60}\n", "windows-thresholds.yaml");
  loader.LoadCommonFile(PlaybookDataDir() + "/rules/common/windows.yaml");
  if (!common.empty()) loader.LoadCommonText(common, "common.yaml");
  loader.LoadPlaybookText(text, "pb.yaml");
  if (lib) *lib = loader.TakeLibrary();
  return loader.result();
}

// The acceptance case: one file, five different mistakes, every one reported with its position.
TEST(LoaderTest, FiveErrorsInOneFileAllReportedWithPositions) {
  Loader loader;
  std::string path = TestData("five_errors.bad.yaml");
  loader.LoadPlaybookFile(path);
  const auto diags = loader.result().ForFile(path);
  ASSERT_EQ(loader.result().errors(), 5) << [&] {
    std::string s;
    for (const auto& d : diags) s += d.ToString() + "\n";
    return s;
  }();
  struct Want {
    LoadCode code;
    int line, col;
    std::string rule, field;
  };
  std::vector<Want> want = {
      {LoadCode::kParamType, 8, 44, "retx_rate", "args.rate_window"},       // bad PromQL template parameter
      {LoadCode::kUnknownKey, 13, 5, "accused", "treshold"},                // typo'd key
      {LoadCode::kCycle, 14, 5, "first", "needs"},                          // two-rule cycle
      {LoadCode::kUnknownReference, 20, 41, "verdict_main", "verdict.when"},  // unknown rule
      {LoadCode::kExprSyntax, 25, 35, "verdict_other", "verdict.when"},      // condition syntax error
  };
  ASSERT_EQ(diags.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(diags[i].ToString());
    EXPECT_EQ(diags[i].code, want[i].code);
    EXPECT_EQ(diags[i].pos.file, path);
    EXPECT_EQ(diags[i].pos.line, want[i].line);
    EXPECT_EQ(diags[i].pos.col, want[i].col);
    EXPECT_EQ(diags[i].rule, want[i].rule);
    EXPECT_EQ(diags[i].field, want[i].field);
    EXPECT_EQ(diags[i].playbook, "five-errors");
  }
  EXPECT_EQ(diags[2].message, fmt::format(fmt::runtime(msg::kCycle), "first -> second -> first"));
  EXPECT_EQ(diags[3].message, fmt::format(fmt::runtime(msg::kUnknownRule), "verdict.when", "missing_rule"));
  EXPECT_NE(diags[0].ToString().find(path + ":8:44: playbook \"five-errors\", rule \"retx_rate\": "), std::string::npos);
}

TEST(LoaderTest, ValidPlaybookLoadsWithResolvedNeeds) {
  Library lib;
  auto r = LoadText(R"(playbook: p
description: d
triggers:
  - failure_class: [heartbeat-timeout]
rules:
  - id: accused
    fact: facts.heartbeat.accused_hosts
  - id: power
    query: 'avg by (host) (hw_gpu_power_watts{host=~"{{ hosts }}"})'
    window: heartbeat_stop
    at: start
    args:
      hosts: {type: hosts, value: accused.hosts}
  - id: v
    verdict:
      when: "power.min > common.thresholds_ok.value"
      root_cause: heartbeat-false-positive
      action: retry-with-changes
      changes: {jax_distributed_heartbeat_timeout_seconds: "14400"}
)", &lib, "rules:\n  - id: thresholds_ok\n    fact: thresholds.gpu_power_active_min_w\nthresholds:\n  gpu_power_active_min_w: 800\n");
  ASSERT_TRUE(r.ok()) << r.AsJson().dump(2);
  EXPECT_EQ(r.warnings(), 0) << r.AsJson().dump(2);
  const auto* pb = lib.FindPlaybook("p");
  ASSERT_NE(pb, nullptr);
  EXPECT_EQ(pb->FindRule("power")->needs, std::vector<std::string>{"p/accused"});
  EXPECT_EQ(pb->FindRule("v")->needs, (std::vector<std::string>{"common/thresholds_ok", "p/power"}));
  EXPECT_EQ(pb->precedence, std::vector<std::string>{"v"});
  EXPECT_EQ(pb->FindRule("power")->query.placeholders, std::vector<std::string>{"hosts"});
}

// A playbook whose verdict `v` (its `when` on line 8, column 14) reads the query rule `q`.
std::string VerdictOnAQuery(const std::string& when) {
  return "playbook: p\ndescription: d\nrules:\n  - id: q\n    query: 'up'\n  - id: v\n    verdict:\n"
         "      when: \"" + when + "\"\n      root_cause: none\n";
}

TEST(LoaderTest, UnknownFieldOfRuleIsATypeError) {
  auto r = LoadText(VerdictOnAQuery("q.valuez > 1"));
  const auto* d = Find(r, LoadCode::kTypeMismatch);
  ASSERT_NE(d, nullptr) << r.AsJson().dump(2);
  EXPECT_EQ(d->pos.line, 8);
  EXPECT_EQ(d->pos.col, 14);
  EXPECT_NE(d->message.find("has no field 'valuez'"), std::string::npos);
}

// A shared file's `gpu_models:` table is read as thresholds.gpu_models.<model>.<level>: a map of
// maps of numbers, each level that is not a number reported with its position.
TEST(LoaderTest, GpuModelTableIsAThresholdMapAndItsLevelsAreNumbers) {
  Library lib;
  const std::string table = "gpu_models:\n  MI300X: {busy_wait_max_w: 350, sclk_rated_mhz: 2100}\n"
                            "rules:\n  - id: ceiling\n    fact: \"thresholds.gpu_models['MI300X'].busy_wait_max_w\"\n";
  auto r = LoadText(VerdictOnAQuery("q.max > common.ceiling.value and len(thresholds.gpu_models) > 0"), &lib, table);
  ASSERT_TRUE(r.ok()) << r.AsJson().dump(2);
  EXPECT_EQ(lib.thresholds["gpu_models"]["MI300X"]["busy_wait_max_w"], 350.0);
  EXPECT_EQ(lib.thresholds["gpu_models"]["MI300X"]["sclk_rated_mhz"], 2100.0);

  auto bad = LoadText(VerdictOnAQuery("q.max > 1"), nullptr, "gpu_models:\n  MI300X: {busy_wait_max_w: lots}\n  MI250X: 5\n");
  EXPECT_EQ(Count(bad, LoadCode::kFieldType), 2) << bad.AsJson().dump(2);
  const auto* d = Find(bad, LoadCode::kFieldType);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->pos.line, 2);
}

// A level of zero or below is refused (a rule divides by sclk_rated_mhz); two files holding the
// table merge model by model, the later one replacing only the levels it names; a literal path to
// a level no model has, or to a model the table lacks, is an unknown threshold, not a fallback.
TEST(LoaderTest, GpuModelLevelsArePositiveMergePerModelAndTyposAreErrors) {
  auto zero = LoadText(VerdictOnAQuery("q.max > 1"), nullptr, "gpu_models:\n  MI300X: {sclk_rated_mhz: 0, idle_w: 100}\n");
  EXPECT_EQ(Count(zero, LoadCode::kFieldType), 1) << zero.AsJson().dump(2);

  Loader loader;
  loader.LoadCommonText("gpu_models:\n  MI300X: {idle_w: 100, sclk_rated_mhz: 2100}\n  MI250X: {idle_w: 90}\n", "a.yaml");
  loader.LoadCommonText("gpu_models:\n  MI300X: {idle_w: 120}\n  MI325X: {idle_w: 110}\n", "b.yaml");
  loader.LoadPlaybookText(VerdictOnAQuery("q.max > thresholds.gpu_models.MI300X.idle_w"), "pb.yaml");
  ASSERT_TRUE(loader.result().ok()) << loader.result().AsJson().dump(2);
  Library lib = loader.TakeLibrary();
  EXPECT_EQ(lib.thresholds["gpu_models"]["MI300X"], nlohmann::json({{"idle_w", 120.0}, {"sclk_rated_mhz", 2100.0}}));
  EXPECT_EQ(lib.thresholds["gpu_models"]["MI250X"]["idle_w"], 90.0);
  EXPECT_EQ(lib.thresholds["gpu_models"]["MI325X"]["idle_w"], 110.0);

  const std::string table = "gpu_models:\n  MI300X: {idle_w: 100}\n";
  auto level_typo = LoadText(VerdictOnAQuery("q.max > thresholds.gpu_models.MI300X.idel_w"), nullptr, table);
  EXPECT_NE(Find(level_typo, LoadCode::kUnknownReference), nullptr) << level_typo.AsJson().dump(2);
  auto model_typo = LoadText(VerdictOnAQuery("q.max > thresholds.gpu_models.MI300Y.idle_w"), nullptr, table);
  EXPECT_NE(Find(model_typo, LoadCode::kUnknownReference), nullptr) << model_typo.AsJson().dump(2);
  EXPECT_TRUE(LoadText(VerdictOnAQuery("q.max > thresholds.gpu_models.MI300X.idle_w"), nullptr, table).ok());
}

TEST(LoaderTest, AnAliasBombOrAnOversizedFileIsOneLimitDiagnostic) {
  std::string bomb = "playbook: bomb\nx0: &x0 [a, a, a, a, a, a, a, a, a, a]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += "x" + std::to_string(i) + ": &x" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += std::string(k ? ", " : "") + "*x" + std::to_string(i - 1);
    bomb += "]\n";
  }
  auto r = LoadText(bomb);
  const auto* d = Find(r, LoadCode::kLimit);
  ASSERT_NE(d, nullptr) << r.AsJson().dump(2);
  EXPECT_NE(d->message.find("exceeds the limit yaml.nodes"), std::string::npos) << d->message;
  EXPECT_EQ(r.errors(), 1) << "nothing walks the bomb after the refusal: " << r.AsJson().dump(2);
  EXPECT_EQ(LoadCodeName(LoadCode::kLimit), std::string("limit"));

  ScopedLimit small(LimitId::kYamlFileBytes, 1024);
  auto big = LoadText("playbook: big\n# " + std::string(2000, 'x') + "\n");
  const auto* too_big = Find(big, LoadCode::kLimit);
  ASSERT_NE(too_big, nullptr) << big.AsJson().dump(2);
  EXPECT_NE(too_big->message.find("yaml.file_bytes (1 KiB"), std::string::npos) << too_big->message;
}

// Found by fuzz/playbook_yaml: diagnostics quote the file's bytes, and JSON of them threw on a byte
// that is not UTF-8.
TEST(LoaderTest, DiagnosticsOfAFileThatIsNotUtf8SerialiseAsJson) {
  auto r = LoadText("playbook: p\xff\nbad\xfe_key: 1\n");
  ASSERT_FALSE(r.ok());
  std::string dumped;
  EXPECT_NO_THROW(dumped = r.AsJson().dump()) << "invalid UTF-8 reached the JSON";
  EXPECT_NE(dumped.find("bad?_key"), std::string::npos) << dumped;
}

TEST(LoaderTest, StaticTypeMismatchInArithmetic) {
  auto r = LoadText(VerdictOnAQuery("q.hosts * 2 > 1"));
  const auto* d = Find(r, LoadCode::kTypeMismatch);
  ASSERT_NE(d, nullptr) << r.AsJson().dump(2);
  EXPECT_NE(d->message.find("cannot apply '*' to list and number"), std::string::npos) << d->message;
}

TEST(LoaderTest, TemplatePlaceholderMustBeAnArgOrParam) {
  auto r = LoadText(R"(playbook: p
description: d
rules:
  - id: q
    query: 'rate(x[{{ windw }}])'
    finding: {when: "q.count > 0"}
)");
  const auto* d = Find(r, LoadCode::kTemplateParam);
  ASSERT_NE(d, nullptr) << r.AsJson().dump(2);
  EXPECT_EQ(d->pos.line, 5);
  EXPECT_EQ(d->pos.col, 23);   // inside the quoted template, at the placeholder name
}

TEST(LoaderTest, WrongParamTypesAreLoadErrors) {
  auto r = LoadText(R"(playbook: p
description: d
params:
  limit: {type: number, default: lots}
  hosts: {type: hosts, default: [a, b]}
  flag: {type: colour, default: red}
rules:
  - id: q
    query: 'x > {{ limit }}'
    finding: {when: "q.count > 0"}
)");
  EXPECT_EQ(Count(r, LoadCode::kParamType), 2) << r.AsJson().dump(2);
}

TEST(LoaderTest, UnusedRuleIsAWarningNotAnError) {
  auto r = LoadText(R"(playbook: p
description: d
rules:
  - id: lonely
    fact: facts.status
  - id: v
    verdict: {when: "true", root_cause: none}
)");
  EXPECT_TRUE(r.ok());
  const auto* d = Find(r, LoadCode::kUnusedRule);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->rule, "lonely");
  EXPECT_TRUE(d->warning());
}

TEST(LoaderTest, VocabularyAndKindChecks) {
  auto r = LoadText(R"(playbook: p
description: d
rules:
  - id: both
    fact: facts.status
    query: up
  - id: v
    verdict:
      when: "true"
      root_cause: cosmic-rays
      action: reboot-the-planet
      confidence: certain
)");
  EXPECT_NE(Find(r, LoadCode::kRuleKind), nullptr);
  EXPECT_EQ(Count(r, LoadCode::kBadValue), 3) << r.AsJson().dump(2);
}

TEST(LoaderTest, UnknownAnalysisAndArg) {
  auto r = LoadText(R"(playbook: p
description: d
rules:
  - id: a
    analysis: change_points
    input: facts.steps
    args: {min_segmnt: 3, min_shift_pct: lots}
    finding: {when: "a.count > 0"}
  - id: b
    analysis: crystal_ball
    input: facts.steps
    finding: {when: "true"}
)");
  EXPECT_EQ(Count(r, LoadCode::kUnknownAnalysis), 2) << r.AsJson().dump(2);
  EXPECT_EQ(Count(r, LoadCode::kParamType), 1);
}

TEST(LoaderTest, YamlSyntaxErrorHasPosition) {
  auto r = LoadText("playbook: p\nrules: [\n  - id: x\n");
  const auto* d = Find(r, LoadCode::kYamlParse);
  ASSERT_NE(d, nullptr);
  EXPECT_GT(d->pos.line, 0);
}

TEST(LoaderTest, BlockScalarPositionsPointInsideTheText) {
  auto r = LoadText(R"(playbook: p
description: d
rules:
  - id: v
    verdict:
      root_cause: none
      when: |
        facts.status == 'failed'
          and (1 +)
)");
  const auto* d = Find(r, LoadCode::kExprSyntax);
  ASSERT_NE(d, nullptr) << r.AsJson().dump(2);
  EXPECT_EQ(d->pos.line, 9);
  EXPECT_EQ(d->pos.col, 19);
}

TEST(LoaderTest, ShippedPlaybooksAndRulesLint) {
  LoadResult result;
  LoadLibraryDir(DIAGNOSE_SOURCE_DIR, &result);
  EXPECT_TRUE(result.ok()) << result.AsJson().dump(2);
}

}  // namespace
}  // namespace diagnose::playbook
