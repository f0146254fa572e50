// `diagnose rules export [--playbook ID]... [--for prometheus|vmalert] [-o FILE]`: the playbooks'
// early warnings as Prometheus rule groups. `diagnose rules test [--keep DIR]`: the same rules
// against promtool tests generated from the playbooks' own tests (positive cases must fire, near
// misses must not), run by `promtool test rules`.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "engine/alerting/alert_replay.h"
#include "engine/alerting/alert_rules.h"
#include "engine/alerting/rule_export.h"
#include "engine/alerting/rule_tests.h"
#include "engine/analysis/analysis.h"
#include "engine/core/iso_time.h"
#include "engine/core/json.h"
#include "engine/pipeline/pipeline.h"
#include "engine/playbook/loader.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {

namespace pb = diagnose::playbook;

struct ExportArgs {
  std::vector<std::string> playbooks;
  std::string target = "prometheus";
  std::string output;
  std::string interval = "30s";
  std::string job_label;
  std::string query_url;
};

struct RuleTestArgs {
  std::string target = "prometheus";
  std::string keep;
  std::string promtool = "promtool";
};

struct ReplayArgs {
  DiagnoseOptions options;
  std::string window;
  std::string format = "text";
  std::string interval = "30s";
};

struct LoadedRules {
  pb::Library library;
  alerting::AlertBook book;
  std::string data_dir;
};

// The playbooks, shared rules and alert files of the data dir; every error printed with its
// file:line:col.
bool LoadRules(const std::string& command, LoadedRules* out) {
  out->data_dir = pb::PlaybookDataDir();
  pb::LoadResult result;
  out->library = pb::LoadLibraryDir(out->data_dir, &result);
  if (result.ok()) out->book = alerting::LoadAlertBook(out->data_dir, out->library, &result);
  for (const auto& d : result.diagnostics())
    if (!d.warning()) std::fprintf(stderr, "%s\n", d.ToString().c_str());
  if (!result.ok()) PrintError(command, "invalid rules (run `diagnose lint`)");
  return result.ok();
}

StatusOr<alerting::RuleExport> Export(const LoadedRules& rules, const std::vector<std::string>& playbooks,
                                      const std::string& target, const std::string& interval,
                                      const std::string& job_label = "", const std::string& query_url = "") {
  alerting::ExportOptions options;
  options.job_label = job_label;
  options.query_url = query_url;
  options.playbooks = playbooks;
  options.target = target == "vmalert" ? alerting::RuleTarget::kVmalert : alerting::RuleTarget::kPrometheus;
  options.interval = interval;
  return alerting::ExportRules(rules.book, rules.library, options);
}

int RunExport(const ExportArgs& args) {
  LoadedRules rules;
  if (!LoadRules("diagnose rules export", &rules)) return 1;
  auto exported = Export(rules, args.playbooks, args.target, args.interval, args.job_label, args.query_url);
  if (!exported.ok()) {
    PrintError("diagnose rules export", exported.status().message());
    return exported.status().code() == StatusCode::kNotFound ? 2 : 1;
  }
  std::string text = alerting::RuleFileYaml(*exported, "rules/alerts and rules/common of " + rules.data_dir);
  if (args.output.empty() || args.output == "-") {
    std::cout << text;
  } else {
    std::ofstream out(args.output);
    if (!(out << text)) {
      PrintError("diagnose rules export", "cannot write " + args.output);
      return 1;
    }
  }
  std::fprintf(stderr, "diagnose rules export: %zu alerts, %zu recording rules for %s\n", exported->alerts.size(),
               exported->records.size(), args.target.c_str());
  for (const auto& n : exported->not_exportable)
    std::fprintf(stderr, "  not exportable: %s -> %s: %s\n", n.playbook.c_str(), n.root_cause.c_str(), n.reason.c_str());
  return 0;
}

int RunRuleTests(const RuleTestArgs& args) {
  LoadedRules rules;
  if (!LoadRules("diagnose rules test", &rules)) return 1;
  auto exported = Export(rules, {}, args.target, "30s");
  if (!exported.ok()) {
    PrintError("diagnose rules test", exported.status().message());
    return 1;
  }
  auto run = alerting::RunRuleTests(*exported, pb::FindYamlFiles(rules.data_dir + "/playbooks/tests", true),
                                    args.promtool, args.keep);
  if (!run.ok()) {
    PrintError("diagnose rules test", run.status().message());
    return 1;
  }
  std::fprintf(stderr, "diagnose rules test: %zu alerts; %d cases that must fire, %d near misses that must not\n",
               exported->alerts.size(), run->tests.positive, run->tests.negative);
  std::cout << run->output;
  return run->passed ? 0 : 1;
}

int RunReplay(ReplayArgs& args) {
  const std::string command = "diagnose rules replay";
  LoadedRules rules;
  if (!LoadRules(command, &rules)) return 1;
  auto exported = Export(rules, {}, "vmalert", args.interval);
  if (!exported.ok()) {
    PrintError(command, exported.status().message());
    return 1;
  }
  if (!args.window.empty()) {
    auto window = ParseTimeRange(args.window);
    if (!window.ok()) {
      PrintError(command, "--window: " + window.status().message());
      return 2;
    }
    args.options.window = *window;
  }
  auto opened = OpenJobMetrics(args.options);
  if (!opened.ok()) {
    PrintError(command, "job " + args.options.job_ref + ": " + opened.status().message());
    return 1;
  }
  QueryClient* client = (*opened)->client();
  auto range = (*opened)->range();
  if (client == nullptr || !range) {
    PrintError(command, "job " + args.options.job_ref + ": no metrics to replay the alerts on: " +
                            (*opened)->unavailable_reason());
    return 1;
  }
  double step = 0;
  if (!analysis::ParseDurationSeconds(args.interval, &step) || step <= 0) {
    PrintError(command, "--interval: '" + args.interval + "' is not a duration such as 30s");
    return 2;
  }
  auto replay = alerting::ReplayAlerts(*exported, *client, range->start, range->end, step);
  if (!replay.ok()) {
    PrintError(command, replay.status().message());
    return 1;
  }
  const std::string job = (*opened)->facts().id;
  if (args.format == "json") {
    nlohmann::json firings = nlohmann::json::array();
    for (const auto& f : replay->firings)
      firings.push_back({{"alert", f.alert}, {"root_cause", f.root_cause}, {"labels", f.labels},
                         {"pending_since", f.pending_since}, {"fired_at", f.fired_at}, {"last_seen", f.resolved_at},
                         {"lead_seconds", replay->end - f.fired_at}});
    nlohmann::json alerts = nlohmann::json::array();
    for (const auto& a : exported->alerts) alerts.push_back({{"alert", a.alert}, {"root_cause", a.spec->root_cause}});
    nlohmann::json out = {{"job", job},
                          {"alerts", alerts},
                          {"source", (*opened)->source()},
                          {"window", {{"start", replay->start}, {"end", replay->end}, {"step", replay->step}}},
                          {"firings", firings},
                          {"queries", replay->queries},
                          {"failures", replay->failures}};
    std::cout << DumpJson(out, 2) << "\n";
  } else {
    std::printf("Alerts replayed on job %s (%s .. %s, every %s; %s)\n", job.c_str(), IsoUtc(replay->start).c_str(),
                IsoUtc(replay->end).c_str(), args.interval.c_str(), (*opened)->source().c_str());
    if (replay->firings.empty()) std::printf("  no alert fired\n");
    for (const auto& f : replay->firings) {
      std::string who;
      for (const char* key : {"host", "instance"})
        if (auto it = f.labels.find(key); it != f.labels.end()) {
          who = std::string(key) + "=" + it->second;
          break;
        }
      std::printf("  %s  %-32s %-28s fired %.0f min before the data ends (pending from %s)\n",
                  IsoUtc(f.fired_at).c_str(), f.alert.c_str(), who.empty() ? "(job-wide)" : who.c_str(),
                  (replay->end - f.fired_at) / 60, IsoUtc(f.pending_since).c_str());
    }
    for (const auto& failure : replay->failures) std::printf("  not evaluated: %s\n", failure.c_str());
  }
  return replay->failures.empty() ? 0 : 1;
}

}  // namespace

void RegisterRules(CLI::App& app, CommandRegistry& registry) {
  static ExportArgs export_args;
  static RuleTestArgs test_args;
  CLI::App* rules = app.add_subcommand("rules", "The playbooks' early warnings as Prometheus/vmalert alerting rules");
  rules->require_subcommand(1);
  CLI::App* exp = rules->add_subcommand(
      "export", "Write Prometheus rule groups: recording rules for shared per-host rates, alerting rules with for:, "
                "labels and annotations; lists the verdicts PromQL alone cannot say");
  exp->add_option("--playbook", export_args.playbooks, "only this playbook's alerts (repeatable)");
  exp->add_option("--for", export_args.target, "prometheus | vmalert (vmalert: records inlined into the alerts)")
      ->check(CLI::IsMember({"prometheus", "vmalert"}));
  exp->add_option("-o,--output", export_args.output, "write the rule file here (default stdout)");
  exp->add_option("--interval", export_args.interval, "the groups' evaluation interval (default 30s)");
  exp->add_option("--job-label", export_args.job_label,
                  "for a fleet store holding many jobs: the label naming the job, kept by every aggregation and match");
  exp->add_option("--query-url", export_args.query_url,
                  "the endpoint the alerts' command annotation names (default: the alerting server's external URL)");
  registry.Add(exp, [] { return RunExport(export_args); });

  CLI::App* test = rules->add_subcommand(
      "test", "Run the exported rules against promtool tests generated from playbooks/tests: cases with the alert's "
              "root cause must fire it, near misses must not");
  test->add_option("--for", test_args.target, "prometheus | vmalert")->check(CLI::IsMember({"prometheus", "vmalert"}));
  test->add_option("--keep", test_args.keep, "write the rule and test files to this directory and keep them");
  test->add_option("--promtool", test_args.promtool, "promtool to run (default from PATH)");
  registry.Add(test, [] { return RunRuleTests(test_args); });

  static ReplayArgs replay_args;
  CLI::App* replay = rules->add_subcommand(
      "replay", "When the exported alerts would have fired on a recorded job: each alert evaluated over the job's "
                "metrics at the groups' interval, with its for:");
  replay->add_option("job", replay_args.options.job_ref, "job id, directory or log")->required();
  replay->add_option("--outputs", replay_args.options.outputs_dir, "where job outputs live");
  replay->add_option("--prometheus", replay_args.options.remote.url, "an endpoint holding the job instead of its snapshot");
  replay->add_option("--job-label", replay_args.options.job_label, "with --prometheus: the label naming the job");
  replay->add_option("--window", replay_args.window, "with --prometheus: the job's time range START..END");
  replay->add_option("--interval", replay_args.interval, "evaluation interval (default 30s)");
  replay->add_option("--format", replay_args.format, "text | json")->check(CLI::IsMember({"text", "json"}));
  registry.Add(replay, [] { return RunReplay(replay_args); });
}

}  // namespace diagnose::cli
