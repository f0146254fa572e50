// `diagnose profile PATH... [--compare PATH...]`: the profile drill (engine/profile/drill.h) over one
// profiling window's trace files, or several windows side by side.
#include <cstdio>
#include <string>
#include <vector>

#include "engine/core/data_dir.h"
#include "engine/core/json.h"
#include "engine/profile/drill.h"
#include "src/commands.h"

namespace diagnose::cli {

namespace {

struct ProfileArgs {
  std::vector<std::string> paths;
  std::vector<std::string> compare;
  int profile_steps = 3;
  double step_seconds = 0;
  double compare_step_seconds = 0;
  int expected_gpus = 0;
  int threads = 0;
  std::string format = "text";
};

StatusOr<profile::ProfileDrill> Drill(const std::vector<std::string>& paths, double step_seconds,
                                      const profile::KernelFamilies& families, const ProfileArgs& args,
                                      bool profile_steps_given) {
  ASSIGN_OR_RETURN(const std::vector<std::string> files, profile::FindTraceFiles(paths));
  profile::DrillOptions options;
  options.profile_steps = args.profile_steps;
  options.profile_steps_given = profile_steps_given;
  options.step_seconds = step_seconds;
  if (step_seconds > 0) options.step_source = "--step-seconds";
  options.expected_gpus = args.expected_gpus;
  options.threads = args.threads;
  return profile::RunDrill(files, families, options);
}

int RunProfile(const ProfileArgs& args, bool profile_steps_given) {
  const std::string families_path = profile::KernelFamiliesPath(DefaultDataDir());
  StatusOr<profile::KernelFamilies> families = profile::LoadKernelFamilies(families_path);
  if (!families.ok()) {
    PrintError("diagnose profile", families.status().message());
    return 2;
  }
  std::vector<std::string> labels = {"profile"};
  std::vector<profile::ProfileDrill> drills;
  StatusOr<profile::ProfileDrill> main = Drill(args.paths, args.step_seconds, *families, args, profile_steps_given);
  if (!main.ok()) {
    PrintError("diagnose profile", main.status().message());
    return 1;
  }
  drills.push_back(std::move(*main));
  if (!args.compare.empty()) {
    StatusOr<profile::ProfileDrill> other =
        Drill(args.compare, args.compare_step_seconds, *families, args, profile_steps_given);
    if (!other.ok()) {
      PrintError("diagnose profile", other.status().message());
      return 1;
    }
    labels.push_back("compare");
    drills.push_back(std::move(*other));
  }
  std::string out;
  if (args.format == "json") {
    nlohmann::json j = profile::DrillJson(drills[0]);
    if (drills.size() > 1) {
      j["compare"] = profile::DrillJson(drills[1]);
      j["comparison_warnings"] = profile::ComparisonWarnings(labels, drills);
    }
    out = DumpJson(j, 2) + "\n";
  } else {
    out = profile::FormatDrillText(drills[0]);
    if (drills.size() > 1) out += "\n" + profile::FormatComparisonText(labels, drills);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void RegisterProfile(CLI::App& app, CommandRegistry& registry) {
  static ProfileArgs args;
  CLI::App* sub = app.add_subcommand(
      "profile",
      "The profile drill: kernel families per GPU per step, step-time decomposition, main-stream blocker and "
      "slowest GPU from the JAX profiler's *.trace.json.gz (files, or directories searched for them)");
  sub->add_option("paths", args.paths, "trace files, or a job / profile directory (every timestamp directory is read)")
      ->required();
  sub->add_option("--compare", args.compare, "a second window, shown beside the first with deltas");
  CLI::Option* steps = sub->add_option(
      "--profile-steps", args.profile_steps,
      "profiled steps when the host's step annotations name none (default 3, the runbook's profiler_steps)");
  sub->add_option("--step-seconds", args.step_seconds,
                  "the healthy step time from outside the window (the log's steady state or a run without "
                  "profiler); default: the host's step annotations inside the window");
  sub->add_option("--compare-step-seconds", args.compare_step_seconds, "--step-seconds for the --compare window");
  sub->add_option("--expected-gpus", args.expected_gpus, "nodes x GPUs per node the job ran; checked against the GPUs found");
  sub->add_option("--threads", args.threads, "files read at once (default: up to 2; each holds one file in memory)");
  sub->add_option("--format", args.format, "text | json")->check(CLI::IsMember({"text", "json"}));
  registry.Add(sub, [steps] { return RunProfile(args, steps->count() > 0); });
}

}  // namespace diagnose::cli
