#include "engine/sweep/sweep_jobs.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "engine/job/job_location.h"

namespace diagnose::sweep {

namespace {

int64_t ModificationTime(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::lstat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtime);
}

}  // namespace

bool JobIdSet::Contains(const std::string& id) const {
  if (std::find(ids.begin(), ids.end(), id) != ids.end()) return true;
  if (!IsNumericJobId(id)) return false;
  const int64_t n = std::stoll(id);
  return std::any_of(ranges.begin(), ranges.end(), [&](const auto& r) { return n >= r.first && n <= r.second; });
}

StatusOr<JobIdSet> ParseJobIdSet(const std::string& text) {
  JobIdSet set;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty()) continue;
    const size_t dash = part.find('-');
    if (dash != std::string::npos && IsNumericJobId(part.substr(0, dash)) && IsNumericJobId(part.substr(dash + 1))) {
      const int64_t lo = std::stoll(part.substr(0, dash)), hi = std::stoll(part.substr(dash + 1));
      if (lo > hi) return InvalidArgumentError("--jobs: range '" + part + "' runs backwards");
      set.ranges.emplace_back(lo, hi);
    } else if (IsNumericJobId(part)) {
      const int64_t n = std::stoll(part);
      set.ranges.emplace_back(n, n);
    } else if (part.find_first_not_of("0123456789-") == std::string::npos) {
      // Digits that are no id and no range (a bound past 18 digits, "9-", "1-2-3"): no job has them.
      return InvalidArgumentError("--jobs: '" + part + "' is neither a job id nor a range like 9801-9850 "
                                  "(numeric ids have at most 18 digits)");
    } else if (part.find_first_of(" \t/") == std::string::npos) {
      set.ids.push_back(part);
    } else {
      return InvalidArgumentError("--jobs: '" + part + "' is neither a job id nor a range like 9801-9850");
    }
  }
  if (set.ranges.empty() && set.ids.empty()) return InvalidArgumentError("--jobs: no job id given");
  return set;
}

StatusOr<CollectedJobs> CollectSweepJobs(const CollectOptions& options) {
  std::vector<RefusedJob> refused;
  StatusOr<std::vector<JobLocation>> listed = ListJobs(options.outputs_dir, &refused);
  if (!listed.ok()) return listed.status();
  CollectedJobs out;
  for (const auto& r : refused) out.warnings.push_back("job " + r.name + " refused: " + r.status.message());
  bool any_named = false;   // by --jobs
  for (const JobLocation& job : *listed) {
    if (options.jobs && !options.jobs->Contains(job.id)) continue;
    any_named = true;
    if (options.since && ModificationTime(job.log_path.value_or("")) < *options.since) continue;
    StatusOr<JobFacts> facts = TriageJob(job, options.triage);
    if (!facts.ok()) {
      out.warnings.push_back("job " + job.id + " not read: " + facts.status().message());
      continue;
    }
    SweepJobInput input;
    input.facts = std::move(*facts);
    input.artifact = ReadArtifact(job.job_dir.value_or(""), options.outputs_dir);
    out.jobs.push_back(std::move(input));
  }
  // An id no job has is a typo or the wrong --outputs, not an empty sweep.
  if (options.jobs && !any_named) return NotFoundError("--jobs: no job in " + options.outputs_dir + " has any of these ids");
  return out;
}

}  // namespace diagnose::sweep
