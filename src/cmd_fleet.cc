// `diagnose fleet import OUTPUTS --vm URL`: every job's persisted TSDB and diagnose's verdict into
// one VictoriaMetrics. `diagnose fleet nodes --prometheus URL`: each host's record across the jobs
// in such a store.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/iso_time.h"
#include "engine/core/logging.h"
#include "engine/core/utf8.h"
#include "engine/decision/node_health.h"
#include "engine/pipeline/fleet_import.h"
#include "engine/fleet/fleet_record.h"
#include "engine/triage/hostlist.h"
#include "engine/job/job_location.h"
#include "engine/pipeline/rulebook.h"
#include "engine/tsdb/http_query_client.h"
#include "engine/watch/sweep_summary.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {

struct StoreEndpointArgs {
  std::string url;
  std::vector<std::string> headers;
  std::string tenant;
  std::string ca_file;
  bool insecure = false;
  double timeout_seconds = 60;
};

void AddEndpointFlags(CLI::App* sub, StoreEndpointArgs& args, const std::string& url_flag, const std::string& url_help) {
  sub->add_option(url_flag, args.url, url_help)->required();
  sub->add_option("--header", args.headers, "extra HTTP header, 'Name: value' (repeatable)");
  sub->add_option("--tenant", args.tenant, "X-Scope-OrgID");
  sub->add_option("--cacert", args.ca_file, "CA bundle (PEM) that signed the endpoint's TLS certificate");
  sub->add_flag("--insecure", args.insecure, "skip TLS certificate verification");
  sub->add_option("--query-timeout", args.timeout_seconds, "per-request timeout in seconds (default 60)")
      ->check(Seconds(false));
}

StatusOr<RemoteEndpointOptions> EndpointOptions(const StoreEndpointArgs& args) {
  RemoteEndpointOptions o;
  o.url = args.url;
  o.tenant = args.tenant;
  o.ca_file = args.ca_file;
  o.insecure_skip_verify = args.insecure;
  o.timeout_seconds = args.timeout_seconds;
  for (const auto& raw : args.headers) {
    std::string name, value;
    if (!SplitHeader(raw, &name, &value)) {
      return InvalidArgumentError("--header '" + raw + "' is not of the form 'Name: value'");
    }
    o.headers[name] = value;
  }
  RETURN_IF_ERROR(CheckRequestHeaders(o));
  return o;
}

// The endpoint of a fleet command, or nothing after saying what is wrong with its flags.
std::optional<RemoteEndpointOptions> CheckedEndpoint(const std::string& command, const StoreEndpointArgs& store) {
  auto endpoint = EndpointOptions(store);
  if (!endpoint.ok()) {
    PrintError(command, endpoint.status().message());
    return std::nullopt;
  }
  return *endpoint;
}

// ---- fleet import ----

struct FleetImportArgs {
  std::string outputs;
  std::vector<std::string> jobs;
  StoreEndpointArgs store;
  std::string job_label = "slurm_job_id";
  bool force = false;
  std::string format = "text";
  double deadline_seconds = 120;
  int parallel = 2;
};

void PrintImportLine(const JobImport& r) {
  std::string verdict = r.root_cause + " -> " + std::string(ToString(r.action));
  if (!r.excluded.empty()) verdict += " (exclude " + CompressHostlist(r.excluded) + ")";
  const std::string series = r.series > 0 ? WithThousands(r.series) + " series" : "";
  std::printf("%-8s %-15s %12s samples %15s  %-58s %5.1f s\n", r.job.c_str(), r.outcome.c_str(),
              WithThousands(r.samples).c_str(), series.c_str(), verdict.c_str(), r.seconds);
  if (r.outcome == "failed" || r.outcome == "record-only") std::printf("         %s\n", r.detail.c_str());
}

int RunImport(const FleetImportArgs& args) {
  const std::string command = "diagnose fleet import";
  auto endpoint = CheckedEndpoint(command, args.store);
  if (!endpoint) return 2;
  const std::string outputs = DefaultOutputsDir(args.outputs);
  std::vector<JobLocation> jobs;
  if (args.jobs.empty()) {
    auto listed = ListJobs(outputs);
    if (!listed.ok()) {
      PrintError(command, listed.status().message());
      return 1;
    }
    jobs = std::move(*listed);
  } else {
    for (const auto& ref : args.jobs) {
      auto loc = ResolveJob(ref, outputs);
      if (!loc.ok()) {
        PrintError(command, loc.status().message());
        return 1;
      }
      jobs.push_back(std::move(*loc));
    }
  }
  if (jobs.empty()) {
    PrintError(command, "no jobs under " + outputs);
    return 1;
  }
  auto store = VictoriaMetricsStore::Connect(*endpoint);
  if (!store.ok()) {
    PrintError(command, store.status().message());
    return 1;
  }
  FleetImportOptions options;
  options.job_label = args.job_label;
  options.force = args.force;
  options.diagnose.data_dir = DefaultDataDir();
  auto rulebook = LoadRulebook(options.diagnose.data_dir);
  if (!rulebook.ok()) {
    PrintError(command, rulebook.status().message());
    return 2;
  }
  options.diagnose.rulebook = *rulebook;
  options.diagnose.deadline_seconds = args.deadline_seconds;
  if (args.format == "text") std::printf("Importing %zu job(s) from %s into %s as %s=\"<job id>\", %d at a time\n",
                                         jobs.size(), outputs.c_str(), (*store)->url().c_str(), args.job_label.c_str(),
                                         args.parallel);
  int failed = 0;
  std::vector<JobImport> results =
      ImportJobs(**store, jobs, outputs, options, args.parallel, [&args, &failed](const JobImport& r) {
        failed += r.outcome == "failed";
        if (args.format == "text") {
          PrintImportLine(r);
          std::fflush(stdout);
        }
      });
  if (args.format == "json") {
    nlohmann::json j{{"schema", "diagnose-fleet-import/v1"}, {"store", (*store)->url()},
                     {"job_label", args.job_label}, {"jobs", results}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    int64_t samples = 0;
    for (const auto& r : results) samples += r.samples;
    std::printf("%zu job(s): %zu imported or present, %d failed; %s samples written\n", results.size(),
                results.size() - failed, failed, WithThousands(samples).c_str());
  }
  return failed > 0 ? 1 : 0;
}

// ---- fleet nodes ----

struct FleetNodesArgs {
  StoreEndpointArgs store;
  std::string job_label = "slurm_job_id";
  std::string since = "30d";
  std::string format = "text";
  int64_t now = 0;
  int repeat = 2;
};

std::string Day(double t) { return t > 0 ? IsoUtc(t).substr(0, 10) : "?"; }

void PrintExclusions(const FleetHost& h, size_t max_records) {
  size_t shown = 0;
  for (const auto& r : h.records) {
    if (r.state != "excluded") continue;
    if (shown++ == max_records) {
      std::printf("      ... (--format json lists every record)\n");
      break;
    }
    std::printf("      job %s, %s, %s, priority %d: %s\n", PrintableLine(r.job).c_str(), Day(r.time).c_str(),
                PrintableLine(r.root_cause).c_str(), r.priority, PrintableLine(r.reason).c_str());
  }
}

// Hosts, job ids, reasons and causes are label values of the fleet store: each passes PrintableLine,
// so a stored escape sequence or newline is shown, never obeyed (adversarial test 17, defect 10).
void PrintFleetNodes(const FleetNodes& t) {
  std::printf("Fleet record: %zu hosts in %d jobs ending %s .. %s\n  store %s, jobs told apart by %s\n\n",
              t.hosts.size(), t.jobs, Day(t.window.start).c_str(), Day(t.window.end).c_str(),
              PrintableLine(t.store).c_str(), PrintableLine(t.job_label).c_str());
  constexpr size_t kMaxHosts = 20;
  auto section = [&](const std::string& title, auto keep) {
    std::vector<const FleetHost*> hosts;
    for (const auto& h : t.hosts)
      if (keep(h)) hosts.push_back(&h);
    if (hosts.empty()) return;
    std::printf("%s: %zu\n", title.c_str(), hosts.size());
    for (size_t i = 0; i < hosts.size() && i < kMaxHosts; ++i) {
      const FleetHost& h = *hosts[i];
      std::printf("  %-20s excluded in %d of %d job(s)\n", PrintableLine(h.host).c_str(), h.excluded, h.jobs);
      PrintExclusions(h, 5);
    }
    if (hosts.size() > kMaxHosts) std::printf("  ... and %zu more (--format json lists them)\n", hosts.size() - kMaxHosts);
  };
  section("Excluded in " + std::to_string(t.repeat_threshold) + " or more jobs (take out of the pool)",
          [&](const FleetHost& h) { return h.excluded >= t.repeat_threshold; });
  section("Excluded in fewer jobs", [&](const FleetHost& h) { return h.excluded > 0 && h.excluded < t.repeat_threshold; });
  // A finding names hosts for good news too (accused but alive, not a hang): a list, not a charge.
  std::vector<std::string> named, clean;
  for (const auto& h : t.hosts)
    if (h.excluded == 0) (h.named > 0 ? named : clean).push_back(h.host);
  std::sort(named.begin(), named.end());
  std::sort(clean.begin(), clean.end());
  if (!named.empty())
    std::printf("Never excluded, named by a finding in some job (--format json has which): %zu: %s\n", named.size(),
                PrintableLine(CompressHostlist(named)).c_str());
  if (!clean.empty())
    std::printf("Never excluded or named: %zu: %s\n", clean.size(), PrintableLine(CompressHostlist(clean)).c_str());
}

int RunFleetNodes(const FleetNodesArgs& args) {
  const std::string command = "diagnose fleet nodes";
  auto endpoint = CheckedEndpoint(command, args.store);
  if (!endpoint) return 2;
  const int64_t now = args.now > 0 ? args.now : static_cast<int64_t>(std::time(nullptr));
  StatusOr<int64_t> since = ParseSince(args.since, now);
  if (!since.ok()) {
    PrintError(command, "--since " + since.status().message());
    return 2;
  }
  if (*since >= now) {
    PrintError(command, "--since " + args.since + " is not before now (" + IsoUtc(static_cast<double>(now)) + ")");
    return 2;
  }
  auto client = HttpQueryClient::Create(*endpoint);
  if (!client.ok()) {
    PrintError(command, client.status().message());
    return 1;
  }
  auto table = ReadFleetNodes(**client, args.job_label,
                              TimeRange{static_cast<double>(*since), static_cast<double>(now)}, args.repeat);
  if (!table.ok()) {
    PrintError(command, table.status().message());
    return 1;
  }
  if (args.format == "json") {
    nlohmann::json j = *table;
    j["schema"] = "diagnose-fleet-nodes/v1";
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    PrintFleetNodes(*table);
  }
  return 0;
}

}  // namespace

void RegisterFleet(CLI::App& app, CommandRegistry& registry) {
  static FleetImportArgs import_args;
  static FleetNodesArgs nodes_args;
  CLI::App* fleet = app.add_subcommand("fleet", "Many jobs in one store: import them into VictoriaMetrics, then read "
                                                "each host's record across jobs");
  fleet->require_subcommand(1);
  CLI::App* import = fleet->add_subcommand(
      "import", "Load every job's persisted TSDB (blocks and WAL, read through a private Prometheus) and diagnose's "
                "verdict into one VictoriaMetrics, each sample labelled with its job id; a job already held "
                "completely is skipped");
  import->add_option("outputs", import_args.outputs, "outputs directory (default $DIAGNOSE_OUTPUTS, else ./outputs)");
  AddEndpointFlags(import, import_args.store, "--vm",
                   "VictoriaMetrics base URL (run it with -retentionPeriod long enough for the jobs' dates)");
  import->add_option("--job", import_args.jobs, "import only this job (id, dir or log; repeatable)");
  import->add_option("--job-label", import_args.job_label, "label naming the job on every series (default slurm_job_id)");
  import->add_flag("--force", import_args.force, "re-import jobs the store already holds completely");
  import->add_option("--parallel", import_args.parallel,
                     "jobs imported at a time, each through its own private Prometheus (default 2)")
      ->check(CLI::Range(1, 64));
  import->add_option("--format", import_args.format, "text | json")->check(CLI::IsMember({"text", "json"}));
  import->add_option("--deadline", import_args.deadline_seconds,
                     "per job: seconds its diagnosis may spend reaching metrics (default 120)")
      ->check(Seconds(true));
  registry.Add(import, [] { return RunImport(import_args); });

  CLI::App* nodes = fleet->add_subcommand(
      "nodes", "Each host's record across the jobs in a fleet store: how often it was excluded or named by a "
               "finding, with the evidence; hosts excluded in several jobs first");
  AddEndpointFlags(nodes, nodes_args.store, "--prometheus", "the fleet store's PromQL base URL");
  nodes->add_option("--job-label", nodes_args.job_label, "label naming the job (default slurm_job_id)");
  nodes->add_option("--since", nodes_args.since,
                    "jobs that ended at or after this: ISO-8601 or a duration before now (default 30d)");
  nodes->add_option("--format", nodes_args.format, "text | json")->check(CLI::IsMember({"text", "json"}));
  nodes->add_option("--repeat", nodes_args.repeat,
                    "exclusions in this many jobs make a host a repeat offender (default 2)")
      ->check(CLI::Range(1, 1000));
  nodes->add_option("--now", nodes_args.now, "treat this epoch second as now (for tests)");
  registry.Add(nodes, [] { return RunFleetNodes(nodes_args); });
}

}  // namespace diagnose::cli
