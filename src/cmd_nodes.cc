// `diagnose nodes JOB...`: per-node TGS table of a node perf sweep (1N jobs) with the exclusion
// recommendation, or, for multi-node group jobs, the network bisection analysis.
#include <cmath>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

#include "engine/decision/decision_rules.h"
#include "engine/decision/node_health.h"
#include "engine/job/job_location.h"
#include "engine/pipeline/group_diagnosis.h"
#include "engine/pipeline/pipeline.h"
#include "engine/triage/hostlist.h"
#include "engine/triage/triage.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {

struct NodesArgs {
  std::vector<std::string> jobs;
  std::string outputs;
  std::string format;
  std::string mode = "auto";
  double expected_tgs = 0;
  bool throughput_only = false;
};

std::string Pct(const std::optional<double>& v) {
  if (!v) return "—";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%+.1f%%", *v);
  return buf;
}

std::string Upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void PrintDecision(const Decision& d) {
  std::printf("\nDecision: %s", std::string(ToString(d.action)).c_str());
  for (const auto& x : d.exclude) std::printf("\n  exclude %s (priority %d): %s", x.host.c_str(), x.priority, x.reason.c_str());
  for (const auto& n : d.notes) std::printf("\n  - %s", n.c_str());
  std::printf("\n");
}

// nodes judges throughput only; every output says so, so that a "healthy" row is not read as a
// diagnosis of the job (diagnose may still find a cause that costs no throughput).
constexpr const char* kScope =
    "Throughput only, no diagnosis run: `diagnose JOB` names the cause of a slow or failed job.";
constexpr const char* kDiagnosedScope =
    "Throughput per group; the jobs of the groups that are not healthy were diagnosed as `diagnose JOB` "
    "diagnoses them, and the decision is theirs.";

void PrintNodeTable(const NodeHealthTable& t, const Decision& d) {
  std::printf("| Node | Job | TGS/device | vs. median | Status |\n|------|-----|------------|------------|--------|\n");
  for (const auto& r : t.rows) {
    const std::string word(ToString(r.status));
    const std::string status = r.status == NodeStatus::kHealthy || r.status == NodeStatus::kMarginal ? word : Upper(word);
    std::printf("| %s | %s | %s | %s | %s |\n", r.node.c_str(), r.job.c_str(),
                r.tgs ? WithThousands(*r.tgs).c_str() : "—", Pct(r.delta_pct).c_str(), status.c_str());
  }
  if (t.median_tgs) std::printf("\nMedian steady TGS/device (steps 5-14): %s\n", WithThousands(*t.median_tgs).c_str());
  else
    for (const auto& [model, median] : t.median_by_model)
      std::printf("\nMedian steady TGS/device (steps 5-14) of %s: %s", model.c_str(), WithThousands(median).c_str());
  if (!t.median_tgs && !t.median_by_model.empty()) std::printf("\n");
  std::printf("%s\n", kScope);
  PrintDecision(d);
}

void PrintBisection(const BisectionResult& r, const Decision& d, const char* scope) {
  std::printf("| Group | Job | Model | Nodes | TGS/device | vs. expected | Status |\n"
              "|-------|-----|-------|-------|------------|--------------|--------|\n");
  for (const auto& g : r.rows) {
    const std::string word(ToString(g.status));
    const std::string status = g.status == GroupStatus::kHealthy ? word : Upper(word);
    std::printf("| %s | %s | %s | %s | %s | %s | %s |\n", g.name.c_str(), g.job.c_str(), g.model.c_str(),
                g.nodelist.c_str(), g.tgs ? WithThousands(*g.tgs).c_str() : "—", Pct(g.delta_pct).c_str(),
                status.c_str());
  }
  std::printf("\n");
  for (const auto& [model, expected] : r.expected_by_model)
    std::printf("Expected TGS/device%s: %s\n", r.expected_by_model.size() > 1 ? (" of " + model).c_str() : "",
                WithThousands(expected).c_str());
  if (!r.degraded_groups.empty()) {
    std::string names;
    for (const auto& n : r.degraded_groups) names += (names.empty() ? "" : ", ") + n;
    std::printf("Degraded groups: %s\n", names.c_str());
  }
  for (const auto& g : r.rows)
    if (!g.reason.empty()) std::printf("  %s: %s\n", g.name.c_str(), g.reason.c_str());
  if (!r.bad_pair.empty()) std::printf("Isolated: %s\n", CompressHostlist(r.bad_pair).c_str());
  std::printf("Conclusion: %s\n", r.conclusion.c_str());
  std::printf("%s\n", scope);
  PrintDecision(d);
}

int RunNodes(const NodesArgs& args) {
  const std::string data_dir = DefaultDataDir();
  StatusOr<DecisionRules> rules = LoadDecisionRules(data_dir);
  if (!rules.ok()) {
    PrintError("diagnose nodes", rules.status().message());
    return 2;
  }
  StatusOr<SignatureTable> signatures = LoadSignatureTable(data_dir + "/rules/triage/failure-signatures.yaml");
  if (!signatures.ok()) {
    PrintError("diagnose nodes", signatures.status().message());
    return 2;
  }
  TriageOptions triage;
  triage.signatures = &*signatures;   // parsed once for every job
  std::vector<NodeRun> runs;
  bool multi_node = false;
  for (const auto& ref : args.jobs) {
    StatusOr<JobLocation> loc = ResolveJob(ref, args.outputs);
    if (!loc.ok()) {
      PrintError("diagnose nodes", loc.status().message());
      return 1;
    }
    StatusOr<JobFacts> facts = TriageJob(*loc, triage);
    if (!facts.ok()) {
      PrintError("diagnose nodes", facts.status().message());
      return 1;
    }
    runs.push_back(NodeRunFromFacts(*facts));
    // A job alias names the group in a bisection ("70b:group-a:" -> JOB_NAME carries it).
    if (!facts->header.model_alias.empty()) runs.back().name = facts->header.model_alias;
    multi_node = multi_node || runs.back().hosts.size() > 1;
  }
  const bool bisect = args.mode == "bisect" || (args.mode == "auto" && multi_node);
  const std::string format = !args.format.empty() ? args.format : (::isatty(STDOUT_FILENO) ? "text" : "json");
  if (bisect) {
    BisectionResult result = AnalyzeBisection(runs, rules->bisection,
                                              args.expected_tgs > 0 ? std::optional<double>(args.expected_tgs)
                                                                    : std::nullopt);
    std::vector<GroupDiagnosis> diagnoses;
    if (!args.throughput_only) {
      DiagnoseOptions options;
      options.outputs_dir = args.outputs;
      options.data_dir = data_dir;
      options.deadline_seconds = kDefaultDeadlineSeconds;
      diagnoses = DiagnoseUnhealthyGroups(result, options);
    }
    const Decision d = DecisionWithDiagnoses(DecisionFromBisection(result), diagnoses);
    const char* scope = diagnoses.empty() ? kScope : kDiagnosedScope;
    if (format == "json") {
      nlohmann::json j{{"schema", "diagnose-nodes/v1"}, {"mode", "network-bisection"}, {"bisection", result},
                       {"decision", ToJson(d)}, {"scope", scope}};
      if (!diagnoses.empty()) j["diagnoses"] = diagnoses;
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      PrintBisection(result, d, scope);
    }
    return 0;
  }
  NodeHealthTable table = BuildNodeHealthTable(runs, rules->node_health);
  const Decision d = DecisionFromNodeHealth(table);
  if (format == "json") {
    nlohmann::json j{{"schema", "diagnose-nodes/v1"}, {"mode", "node-perf"}, {"nodes", table}, {"decision", ToJson(d)},
                     {"scope", kScope}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    PrintNodeTable(table, d);
  }
  return 0;
}

}  // namespace

void RegisterNodes(CLI::App& app, CommandRegistry& registry) {
  static NodesArgs args;
  CLI::App* sub = app.add_subcommand(
      "nodes", "Per-node TGS table of a node perf sweep (1N jobs), or network bisection over group jobs");
  sub->add_option("jobs", args.jobs, "job ids, directories or logs")->required();
  sub->add_option("--outputs", args.outputs, "where job outputs live (default $DIAGNOSE_OUTPUTS, else ./outputs)");
  sub->add_option("--format", args.format, "text|json (default: text on a terminal, else json)")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--mode", args.mode, "auto|perf|bisect (auto: bisect when any job spans several nodes)")
      ->check(CLI::IsMember({"auto", "perf", "bisect"}));
  sub->add_option("--expected-tgs", args.expected_tgs, "bisection: healthy TGS/device (default: best group)");
  sub->add_flag("--throughput-only", args.throughput_only,
                 "bisection: do not diagnose the jobs of groups that are not healthy (the decision is then the "
                 "throughput analysis's alone)");
  registry.Add(sub, [] { return RunNodes(args); });
}

}  // namespace diagnose::cli
