// `diagnose sweep OUTPUTS`: a tuning or model sweep's results table, leaderboard and failures
// (engine/sweep/), and `diagnose sweep compare A B [C...]`: sweeps side by side with the runbook's
// regression reading.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/core/data_dir.h"
#include "engine/core/json.h"
#include "engine/core/regular_file.h"
#include "engine/core/untrusted_json.h"
#include "engine/sweep/sweep_html.h"
#include "engine/sweep/sweep_jobs.h"
#include "engine/sweep/sweep_render.h"
#include "engine/triage/signature_table.h"
#include "engine/watch/sweep_summary.h"
#include "engine/job/job_location.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {

struct SweepArgs {
  std::string outputs;
  std::string since;
  std::string jobs;
  std::string format = "text";
  bool include_off_nodelist = false;
  int64_t now = 0;
};

struct CompareArgs {
  std::vector<std::string> sweeps;
  std::string outputs;
  std::string format = "text";
  bool include_off_nodelist = false;
};

// A saved `sweep --format json` is at most this large (a few hundred jobs take well under 1 MiB).
constexpr std::streamsize kSavedSweepBytes = std::streamsize{64} << 20;

// `commit_prefix`: only the jobs whose artifact ran that commit, analysed as a sweep of their own (a
// profile dropped for an OOM at one commit must not take the other commit's jobs with it).
StatusOr<sweep::SweepResult> Analyze(const std::string& outputs_flag, const std::string& since_text,
                                     const std::string& jobs_text, bool include_off_nodelist, int64_t now_flag,
                                     const std::string& commit_prefix = "") {
  sweep::CollectOptions collect;
  collect.outputs_dir = DefaultOutputsDir(outputs_flag);
  const int64_t now = now_flag > 0 ? now_flag : static_cast<int64_t>(std::time(nullptr));
  if (!since_text.empty()) {
    StatusOr<int64_t> since = ParseSince(since_text, now);
    if (!since.ok()) return since.status();
    collect.since = *since;
  }
  if (!jobs_text.empty()) {
    StatusOr<sweep::JobIdSet> ids = sweep::ParseJobIdSet(jobs_text);
    if (!ids.ok()) return ids.status();
    collect.jobs = *ids;
  }
  const std::string data_dir = DefaultDataDir();
  StatusOr<SignatureTable> signatures = LoadSignatureTable(data_dir + "/rules/triage/failure-signatures.yaml");
  if (!signatures.ok()) return signatures.status();
  collect.triage.rules_dir = data_dir + "/rules";
  collect.triage.signatures = &*signatures;
  if (now_flag > 0) collect.triage.now = now_flag;
  StatusOr<sweep::CollectedJobs> jobs = sweep::CollectSweepJobs(collect);
  if (!jobs.ok()) return jobs.status();
  if (!commit_prefix.empty()) {
    std::erase_if(jobs->jobs, [&](const sweep::SweepJobInput& j) { return j.artifact.commit.rfind(commit_prefix, 0) != 0; });
    if (jobs->jobs.empty()) return NotFoundError("no job in " + collect.outputs_dir + " ran commit " + commit_prefix);
  }
  sweep::SweepOptions options;
  options.include_off_nodelist = include_off_nodelist;
  sweep::SweepResult result = sweep::AnalyzeSweep(jobs->jobs, options);
  result.warnings.insert(result.warnings.begin(), jobs->warnings.begin(), jobs->warnings.end());
  return result;
}

int WriteStdout(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;   // main checks that stdout was written and closed
}

int RunSweep(const SweepArgs& args) {
  StatusOr<sweep::SweepResult> result = Analyze(args.outputs, args.since, args.jobs, args.include_off_nodelist, args.now);
  if (!result.ok()) {
    PrintError("diagnose sweep", result.status().message());
    return result.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  if (args.format == "json") return WriteStdout(DumpJson(sweep::SweepJson(*result), 2) + "\n");
  if (args.format == "md") return WriteStdout(sweep::FormatSweepMarkdown(*result));
  if (args.format == "html") return WriteStdout(sweep::RenderSweepHtml(*result));
  return WriteStdout(sweep::FormatSweepText(*result));
}

// A sweep named on the command line: a saved JSON file, `commit=PREFIX` or `jobs=RANGE` over OUTPUTS.
StatusOr<sweep::SweepSnapshot> LoadSweep(const std::string& spec, const CompareArgs& args) {
  if (spec.rfind("jobs=", 0) == 0) {
    ASSIGN_OR_RETURN(sweep::SweepResult r, Analyze(args.outputs, "", spec.substr(5), args.include_off_nodelist, 0));
    return sweep::SnapshotOf(r, spec.substr(5));
  }
  if (spec.rfind("commit=", 0) == 0) {
    const std::string prefix = spec.substr(7);
    if (prefix.empty()) return InvalidArgumentError("commit= needs a commit (a prefix of git_summary's [LAST COMMIT])");
    ASSIGN_OR_RETURN(sweep::SweepResult r, Analyze(args.outputs, "", "", args.include_off_nodelist, 0, prefix));
    return sweep::SnapshotOf(r, prefix);
  }
  // A FIFO with no writer blocked the ifstream forever.
  RETURN_IF_ERROR(RequireRegularFile(spec));
  std::ifstream in(spec, std::ios::binary);
  if (!in) return NotFoundError("cannot open " + spec + " (a saved `diagnose sweep --format json`, commit=SHA or jobs=RANGE)");
  std::ostringstream text;
  char buffer[65536];
  std::streamsize total = 0;
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    total += in.gcount();
    if (total > kSavedSweepBytes) return ResourceExhaustedError(spec + " is larger than a saved sweep can be (64 MiB)");
    text.write(buffer, in.gcount());
  }
  const nlohmann::json j = ParseUntrustedJson(text.str());
  if (j.is_discarded()) return ParseError(spec + " is not JSON");
  return sweep::SnapshotFromJson(j, spec);
}

int RunCompare(const CompareArgs& args) {
  std::vector<sweep::SweepSnapshot> snapshots;
  for (const auto& spec : args.sweeps) {
    StatusOr<sweep::SweepSnapshot> s = LoadSweep(spec, args);
    if (!s.ok()) {
      PrintError("diagnose sweep compare", s.status().message());
      return s.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
    }
    snapshots.push_back(std::move(*s));
  }
  const sweep::SweepComparison cmp = sweep::CompareSweeps(snapshots);
  if (args.format == "json") return WriteStdout(DumpJson(sweep::ComparisonJson(cmp), 2) + "\n");
  return WriteStdout(sweep::FormatComparisonMarkdown(cmp));
}

}  // namespace

void RegisterSweep(CLI::App& app, CommandRegistry& registry) {
  static SweepArgs args;
  static CompareArgs compare_args;
  CLI::App* sub = app.add_subcommand(
      "sweep", "A tuning or model sweep's results: steady-state TGS per job, cells and variants, the leaderboard "
               "against the baseline with noise-aware verdicts, failures with the runbook's recovery rule, the "
               "pinned-nodelist check");
  CLI::App* compare = sub->add_subcommand(
      "compare", "Sweeps side by side (commits, job ranges or saved --format json files): one table per model x "
                 "node count, adjacent deltas judged against noise, regressions and new breakage named");
  compare->add_option("sweeps", compare_args.sweeps,
                      "two or more sweeps: a saved `diagnose sweep --format json` file, commit=SHA_PREFIX or "
                      "jobs=RANGE (both over --outputs)")
      ->required()
      ->expected(2, 64);
  compare->add_option("--outputs", compare_args.outputs, "outputs directory for commit= and jobs= (default "
                                                          "$DIAGNOSE_OUTPUTS, else ./outputs)");
  compare->add_option("--format", compare_args.format, "text|md (the runbook's tables) | json")
      ->check(CLI::IsMember({"text", "md", "json"}));
  compare->add_flag("--include-off-nodelist", compare_args.include_off_nodelist,
                    "count jobs that ran on another nodelist than their cell's");
  registry.Add(compare, [] { return RunCompare(compare_args); });

  sub->add_option("outputs", args.outputs, "outputs directory (default $DIAGNOSE_OUTPUTS, else ./outputs)");
  sub->add_option("--since", args.since,
                  "only jobs whose log was last written at or after this: ISO-8601 or a duration before now (6h, 2d)");
  sub->add_option("--jobs", args.jobs, "only these job ids: ids and inclusive ranges, e.g. 9801-9850,9860");
  sub->add_option("--format", args.format,
                  "text | md (the runbook's <MODEL_TAG>-tuning.md skeleton) | json (docs/sweep.md) | html (a page "
                  "with each variant's delta and interval charted)")
      ->check(CLI::IsMember({"text", "md", "json", "html"}));
  sub->add_flag("--include-off-nodelist", args.include_off_nodelist,
                "keep jobs that ran on another nodelist than their cell's in the leaderboard");
  sub->add_option("--now", args.now, "treat this epoch second as now (--since durations, running jobs; for tests)");
  registry.Add(sub, [] { return RunSweep(args); });
}

}  // namespace diagnose::cli
