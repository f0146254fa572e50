#include "engine/job/job_location.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <system_error>

#include "engine/core/bounded_regex.h"
#include "engine/core/limits.h"
#include "engine/core/regular_file.h"

namespace diagnose {

namespace fs = std::filesystem;

namespace {

// Upstream job-id grammar (formats §1.1): a Slurm integer, k8s-YYYYMMDD-HHMMSS-xxxx or
// local_YYYYMMDD_HHMMSS_xxxx, followed by '-' and the job name.
const std::regex& JobIdPrefix() {
  static const std::regex re(R"(^(k8s-\d{8}-\d{6}-[0-9a-f]+|local_\d{8}_\d{6}_[0-9a-f]+|\d+)-)");
  return re;
}

bool IsBareId(const std::string& ref) {
  static const std::regex re(R"(^(k8s-\d{8}-\d{6}-[0-9a-f]+|local_\d{8}_\d{6}_[0-9a-f]+|\d+)$)");
  return BoundedRegexMatch(ref, re);
}

std::string IdOf(const std::string& basename) {
  std::smatch m;
  if (std::regex_search(basename, m, JobIdPrefix())) return m[1];
  return "";
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsWithin(const fs::path& child, const fs::path& root) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(child, ec);
  if (ec) return false;
  fs::path r = fs::weakly_canonical(root, ec);
  if (ec) return false;
  auto [ri, ci] = std::mismatch(r.begin(), r.end(), c.begin(), c.end());
  return ri == r.end();
}

int RankOf(const std::string& name) {
  // rank-<N>.log
  try {
    return std::stoi(name.substr(5, name.size() - 9));
  } catch (...) {
    return -1;
  }
}

// One rule for every file found through the outputs dir (the log, the job dir, prometheus/, rank
// and worker logs): followed only while it resolves inside that dir. What lies outside is refused or
// left out with a note, never read.
std::string OutsideNote(const fs::path& p, const fs::path& outputs) {
  std::error_code ec;
  return p.string() + " resolves outside the outputs dir " + outputs.string() + " (" +
         fs::weakly_canonical(p, ec).string() + "); not followed";
}

void CollectDirFiles(JobLocation* job, const fs::path& outputs) {
  if (!job->job_dir) return;
  std::error_code ec;
  fs::path dir(*job->job_dir);
  if (fs::is_directory(dir / "prometheus", ec)) {
    if (IsWithin(dir / "prometheus", outputs)) job->prometheus_dir = (dir / "prometheus").string();
    else job->notes.push_back(OutsideNote(dir / "prometheus", outputs));
  }
  int outside = 0;
  std::vector<std::pair<int, std::string>> ranks;
  for (const auto& e : fs::directory_iterator(dir, fs::directory_options::skip_permission_denied, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("rank-", 0) != 0 || !EndsWith(name, ".log")) continue;
    if (const std::string kind = NonRegularKind(e.path().string()); !kind.empty()) {
      job->notes.push_back(e.path().string() + " is " + kind + ", not a regular file; not read");
      continue;
    }
    if (IsWithin(e.path(), outputs)) ranks.emplace_back(RankOf(name), e.path().string());
    else ++outside;
  }
  std::sort(ranks.begin(), ranks.end());
  for (auto& r : ranks) job->rank_logs.push_back(r.second);
  // Ray worker logs: flat ray_logs/<host>/worker-*.out or ray_logs/<host>/session_*/logs/worker-*.out.
  fs::path ray = dir / "ray_logs";
  if (!fs::is_directory(ray, ec)) {
    if (outside > 0)
      job->notes.push_back(std::to_string(outside) + " rank log(s) in " + dir.string() +
                           " resolve outside the outputs dir " + outputs.string() + "; not read");
    return;
  }
  if (!IsWithin(ray, outputs)) {
    job->notes.push_back(OutsideNote(ray, outputs));
    return;
  }
  std::set<std::string> seen;
  auto scan = [&](const fs::path& d) {
    std::error_code ec2;
    for (const auto& f : fs::directory_iterator(d, fs::directory_options::skip_permission_denied, ec2)) {
      std::string n = f.path().filename().string();
      if (n.rfind("worker-", 0) != 0 || !EndsWith(n, ".out")) continue;
      // As for rank logs: what is not a file (a directory, a FIFO, through a symlink or not) is named.
      if (const std::string kind = NonRegularKind(f.path().string()); !kind.empty()) {
        job->notes.push_back(f.path().string() + " is " + kind + ", not a regular file; not read");
        continue;
      }
      if (!f.is_regular_file(ec2)) continue;   // a dangling symlink: nothing to read
      if (!IsWithin(f.path(), outputs)) {
        ++outside;
        continue;
      }
      std::error_code ec3;
      std::string key = fs::weakly_canonical(f.path(), ec3).string();
      if (seen.insert(key).second) job->ray_worker_logs.push_back(f.path().string());
    }
  };
  for (const auto& host : fs::directory_iterator(ray, fs::directory_options::skip_permission_denied, ec)) {
    if (!host.is_directory(ec)) continue;
    scan(host.path());
    std::error_code ec2;
    for (const auto& s : fs::directory_iterator(host.path(), fs::directory_options::skip_permission_denied, ec2)) {
      if (s.path().filename().string().rfind("session_", 0) == 0 && fs::is_directory(s.path() / "logs", ec2))
        scan(s.path() / "logs");
    }
  }
  std::sort(job->ray_worker_logs.begin(), job->ray_worker_logs.end());
  const auto max_files = static_cast<size_t>(GetLimit(LimitId::kLogFiles));
  if (job->ray_worker_logs.size() > max_files) {
    job->notes.push_back(LimitExceeded(LimitId::kLogFiles, std::to_string(job->ray_worker_logs.size()) +
                                                               " Ray worker logs under " + ray.string())
                             .message() +
                         "; the first " + std::to_string(max_files) + " by path were read");
    job->ray_worker_logs.resize(max_files);
  }
  if (outside > 0)
    job->notes.push_back(std::to_string(outside) + " rank/worker log(s) in " + dir.string() +
                         " resolve outside the outputs dir " + outputs.string() + "; not read");
}

bool IsEmptyDir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && fs::is_empty(dir, ec) && !ec;
}

// A job directory carries a `log` symlink, or is empty: the prolog creates the dir and a job killed
// there never writes anything. Shared checkpoint dirs have contents and no `log`.
bool IsJobDir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_symlink(fs::symlink_status(dir / "log", ec)) || IsEmptyDir(dir);
}

StatusOr<JobLocation> FromDir(const fs::path& dir, const fs::path& outputs) {
  std::error_code ec;
  fs::path link = dir / "log";
  JobLocation job;
  job.name = dir.filename().string();
  job.id = IdOf(job.name);
  job.outputs_dir = outputs.string();
  job.job_dir = dir.string();
  if (!IsWithin(dir, outputs))
    return PermissionDeniedError("job dir " + OutsideNote(dir, outputs));
  if (!fs::is_symlink(fs::symlink_status(link, ec))) {
    if (!IsEmptyDir(dir))
      return InvalidArgumentError(dir.string() +
                                  ": not a job directory (no `log` symlink; shared checkpoint dirs have none)");
    fs::path sibling = dir.parent_path() / (job.name + ".log");
    if (fs::exists(sibling, ec) && IsWithin(sibling, outputs)) job.log_path = sibling.string();
    else job.notes.push_back("job dir is empty and has no log: the job died in the prolog before writing any output");
    return job;
  }
  fs::path target = fs::read_symlink(link, ec);
  fs::path resolved = target.is_absolute() ? target : dir / target;
  if (!IsWithin(resolved, outputs)) {
    return PermissionDeniedError(link.string() + ": `log` symlink points outside the outputs dir " +
                                 outputs.string() + " (" + target.string() + "); refusing to follow");
  }
  if (fs::exists(resolved, ec)) {
    RETURN_IF_ERROR(RequireRegularFile(resolved.string()).WithContext("job log"));
    job.log_path = resolved.lexically_normal().string();
  } else {
    // Fall back to the sibling <JOB_DIR>.log (TGS tagging may have renamed it before the link).
    fs::path sibling = dir.parent_path() / (job.name + ".log");
    if (fs::exists(sibling, ec) && IsWithin(sibling, outputs)) job.log_path = sibling.string();
    else job.log_link_dangles = true;
    job.notes.push_back("log symlink dangles (" + target.string() + "): job not started or log removed");
  }
  CollectDirFiles(&job, outputs);
  return job;
}

StatusOr<JobLocation> FromLog(const fs::path& log, const fs::path& outputs) {
  if (!IsWithin(log, outputs)) return PermissionDeniedError("job log " + OutsideNote(log, outputs));
  RETURN_IF_ERROR(RequireRegularFile(log.string()).WithContext("job log"));
  JobLocation job;
  std::string base = log.filename().string();
  job.name = EndsWith(base, ".log") ? base.substr(0, base.size() - 4) : base;
  job.id = IdOf(job.name);
  job.outputs_dir = outputs.string();
  job.log_path = log.string();
  std::error_code ec;
  fs::path dir = log.parent_path() / job.name;
  if (fs::is_directory(dir, ec)) {
    if (IsWithin(dir, outputs)) job.job_dir = dir.string();
    else job.notes.push_back("job dir " + OutsideNote(dir, outputs));
  }
  CollectDirFiles(&job, outputs);
  return job;
}

}  // namespace

std::string DefaultOutputsDir(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("DIAGNOSE_OUTPUTS"); env != nullptr && *env != '\0') return env;
  return "./outputs";
}

StatusOr<JobLocation> ResolveJob(const std::string& ref, const std::string& outputs_flag) {
  if (ref.empty()) return InvalidArgumentError("empty job reference");
  std::error_code ec;
  fs::path p(ref);
  if (!IsBareId(ref) && fs::exists(fs::symlink_status(p, ec))) {
    // The directories on the way are resolved; the named entry itself, when a symlink, obeys the
    // same rule as one found by id (a watched outputs dir names its logs this way).
    fs::path abs = fs::absolute(p, ec).lexically_normal();
    if (abs.filename().empty()) abs = abs.parent_path();
    abs = fs::weakly_canonical(abs.parent_path(), ec) / abs.filename();
    if (ec) return NotFoundError(ref + ": " + ec.message());
    // The outputs dir it belongs to: --outputs when the job lies in it, else its own parent.
    fs::path outputs = abs.parent_path();
    if (!outputs_flag.empty() && IsWithin(abs, outputs_flag)) outputs = fs::path(outputs_flag);
    if (fs::is_directory(abs, ec)) return FromDir(abs, outputs);
    if (::access(abs.c_str(), R_OK) != 0)
      return PermissionDeniedError(abs.string() + ": cannot read job log");
    return FromLog(abs, outputs);
  }
  std::string outputs = DefaultOutputsDir(outputs_flag);
  if (!fs::is_directory(outputs, ec)) {
    return NotFoundError("job " + ref + ": outputs dir " + outputs + " does not exist (use --outputs or $DIAGNOSE_OUTPUTS)");
  }
  std::string id = ref;
  // Candidates grouped by JOB_DIR name: <id>-*.log and <id>-*/ (dirs need a `log` symlink).
  std::set<std::string> names_with_log, names_with_dir;
  for (const auto& e : fs::directory_iterator(outputs, fs::directory_options::skip_permission_denied, ec)) {
    std::string n = e.path().filename().string();
    if (n.rfind(id + "-", 0) != 0 || IdOf(n) != id) continue;
    std::error_code ec2;
    if (e.is_directory(ec2)) {
      if (IsJobDir(e.path())) names_with_dir.insert(n);
    } else if (EndsWith(n, ".log")) {
      names_with_log.insert(n.substr(0, n.size() - 4));
    }
  }
  // A TGS-tagged log whose dir is not renamed yet: the dir's `log` link names the log, so pair them
  // through the link instead of by name.
  std::set<std::string> jobs;
  for (const auto& d : names_with_dir) jobs.insert(d);
  for (const auto& l : names_with_log) {
    bool claimed = jobs.count(l) > 0;
    for (const auto& d : names_with_dir) {
      std::error_code ec2;
      fs::path t = fs::read_symlink(fs::path(outputs) / d / "log", ec2);
      if (!ec2 && t.filename().string() == l + ".log") claimed = true;
    }
    if (!claimed) jobs.insert(l);
  }
  if (jobs.empty()) {
    return NotFoundError("job " + ref + " not found in outputs dir " + outputs +
                         " (no " + id + "-*.log, no " + id + "-*/ with a `log` symlink, no empty " + id + "-*/)");
  }
  if (jobs.size() > 1) {
    std::string list;
    for (const auto& j : jobs) list += (list.empty() ? "" : ", ") + j;
    return InvalidArgumentError("job " + ref + " is ambiguous in " + outputs + ": " + list);
  }
  const std::string& name = *jobs.begin();
  fs::path out(outputs);
  if (names_with_dir.count(name)) return FromDir(out / name, out);
  return FromLog(out / (name + ".log"), out);
}

StatusOr<std::vector<JobLocation>> ListJobs(const std::string& outputs_dir, std::vector<RefusedJob>* refused) {
  std::error_code ec;
  if (!fs::is_directory(outputs_dir, ec)) return NotFoundError("outputs dir " + outputs_dir + " does not exist");
  fs::path out(outputs_dir);
  std::set<std::string> dirs, logs, claimed;
  for (const auto& e : fs::directory_iterator(out, fs::directory_options::skip_permission_denied, ec)) {
    std::string n = e.path().filename().string();
    if (IdOf(n).empty()) continue;
    std::error_code ec2;
    if (e.is_directory(ec2)) {
      if (!IsJobDir(e.path())) continue;   // shared checkpoint dir
      dirs.insert(n);
      claimed.insert(n + ".log");
      fs::path t = fs::read_symlink(e.path() / "log", ec2);
      if (!ec2) claimed.insert(t.filename().string());
    } else if (EndsWith(n, ".log")) {
      logs.insert(n);
    }
  }
  std::vector<JobLocation> jobs;
  auto keep = [&](StatusOr<JobLocation> job, const std::string& name) {
    if (job.ok()) jobs.push_back(std::move(job).value());
    else if (refused != nullptr) refused->push_back({IdOf(name), name, job.status()});
  };
  for (const auto& d : dirs) keep(FromDir(out / d, out), d);
  for (const auto& l : logs)
    if (!claimed.count(l)) keep(FromLog(out / l, out), l.substr(0, l.size() - 4));
  return jobs;
}

}  // namespace diagnose
