// `diagnose explain PLAYBOOK [JOB] [--facts F] [--baseline-facts F] [--discovery F]`: prints the
// compiled graph of one playbook (and the shared rules it uses) as deterministic JSON: topological
// order, levels, edges, rule definitions and, when facts are given, the resolved PromQL/windows.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "engine/core/regular_file.h"
#include "engine/core/untrusted_json.h"
#include "engine/dag/graph.h"
#include "engine/pipeline/pipeline.h"
#include "engine/playbook/loader.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {
struct ExplainArgs {
  std::string playbook;
  std::string job;
  std::string outputs;
  std::string baseline;
  bool logs_only = false;
  std::string facts;
  std::string baseline_facts;
  std::string discovery;
  std::string baseline_discovery;
};

bool ReadJson(const std::string& path, nlohmann::json* out) {
  // A FIFO with no writer blocked the ifstream forever.
  if (Status regular = RequireRegularFile(path); !regular.ok()) {
    PrintError("diagnose explain", regular.message());
    return false;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "diagnose explain: cannot read %s\n", path.c_str());
    return false;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Bounded: a facts file is anyone's file, and a tree nested 200,000 deep overflowed the stack
  // when it was copied into the evaluation context.
  StatusOr<nlohmann::json> parsed = ParseUntrustedJsonBounded(text, JsonParseBounds{std::nullopt, std::nullopt, path});
  if (!parsed.ok()) {
    PrintError("diagnose explain", parsed.status().message());
    return false;
  }
  if (parsed->is_discarded()) {
    try {
      (void)nlohmann::json::parse(text);   // only for nlohmann's message, which places the error
      std::fprintf(stderr, "diagnose explain: %s: invalid JSON\n", path.c_str());
    } catch (const nlohmann::json::parse_error& e) {
      std::fprintf(stderr, "diagnose explain: %s: invalid JSON: %s\n", path.c_str(), e.what());
    }
    return false;
  }
  *out = std::move(parsed).value();
  return true;
}

int RunExplain(const ExplainArgs& args) {
  namespace pb = diagnose::playbook;
  std::string data_dir = pb::PlaybookDataDir();
  pb::Loader loader;
  loader.LoadCommonFiles(pb::FindYamlFiles(data_dir + "/rules/common", false));
  std::string id = args.playbook;
  if (std::filesystem::is_regular_file(args.playbook)) {
    loader.LoadPlaybookFile(std::filesystem::absolute(args.playbook).lexically_normal().string());
    if (!loader.library().playbooks.empty()) id = loader.library().playbooks.back().id;
  } else {
    for (const auto& f : pb::FindYamlFiles(data_dir + "/playbooks", false))
      if (f.find("/examples/") == std::string::npos && pb::LooksLikePlaybook(f)) loader.LoadPlaybookFile(f);
  }
  if (!loader.result().ok()) {
    for (const auto& d : loader.result().diagnostics())
      if (!d.warning()) std::fprintf(stderr, "%s\n", d.ToString().c_str());
    std::fprintf(stderr, "diagnose explain: invalid playbooks (run `diagnose lint`)\n");
    return 1;
  }
  auto graph = dag::CompiledGraph::Compile(loader.library(), {id});
  if (!graph.ok()) {
    PrintError("diagnose explain", graph.status().message());
    return 1;
  }
  dag::EvaluationContext ctx;
  bool have_ctx = false;
  if (!args.job.empty() && args.facts.empty()) {
    DiagnoseOptions options;
    options.job_ref = args.job;
    options.outputs_dir = args.outputs;
    options.data_dir = data_dir;
    options.logs_only = args.logs_only;
    if (!args.baseline.empty()) options.baseline_ref = args.baseline;
    auto inputs = PrepareJobInputs(options);
    if (!inputs.ok()) {
      PrintError("diagnose explain", inputs.status().message());
      return 1;
    }
    for (const auto& note : inputs->notes) std::fprintf(stderr, "diagnose explain: note: %s\n", note.c_str());
    ctx.facts = inputs->facts;
    ctx.discovery = inputs->discovery;
    ctx.baseline_facts = inputs->baseline_facts;
    ctx.baseline_discovery = inputs->baseline_discovery;
    have_ctx = true;
  }
  if (!args.facts.empty()) {
    if (!ReadJson(args.facts, &ctx.facts)) return 1;
    have_ctx = true;
  }
  if (!args.baseline_facts.empty() && !ReadJson(args.baseline_facts, &ctx.baseline_facts)) return 1;
  if (!args.discovery.empty()) {
    if (!ReadJson(args.discovery, &ctx.discovery)) return 1;
    have_ctx = true;
  }
  if (!args.baseline_discovery.empty() && !ReadJson(args.baseline_discovery, &ctx.baseline_discovery)) return 1;
  std::cout << DumpJson(dag::ExplainJson(*graph, have_ctx ? &ctx : nullptr, data_dir), 2) << "\n";
  return 0;
}
}  // namespace

void RegisterExplain(CLI::App& app, CommandRegistry& registry) {
  static ExplainArgs args;
  CLI::App* sub = app.add_subcommand("explain", "print a playbook's compiled rule graph as deterministic JSON");
  sub->add_option("playbook", args.playbook, "playbook id or file")->required();
  sub->add_option("job", args.job, "job id, directory or log: its facts and TSDB discovery resolve the PromQL");
  sub->add_option("--outputs", args.outputs, "where job outputs live (default: $DIAGNOSE_OUTPUTS, else ./outputs)");
  sub->add_option("--baseline", args.baseline, "baseline job for playbooks that compare two jobs");
  sub->add_flag("--logs-only", args.logs_only, "resolve from the logs only; do not open the TSDB");
  sub->add_option("--facts", args.facts, "subject JobFacts JSON (triage output)");
  sub->add_option("--baseline-facts", args.baseline_facts, "baseline JobFacts JSON");
  sub->add_option("--discovery", args.discovery, "subject TSDB discovery JSON");
  sub->add_option("--baseline-discovery", args.baseline_discovery, "baseline TSDB discovery JSON");
  registry.Add(sub, [] { return RunExplain(args); });
}

}  // namespace diagnose::cli
