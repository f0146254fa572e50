#include "engine/sweep/job_variant.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "engine/core/bounded_regex.h"
#include "engine/core/regular_file.h"

namespace diagnose::sweep {

namespace {

namespace fs = std::filesystem;

// A train_env.sh or git summary far larger than this is not one a launcher wrote.
constexpr size_t kArtifactFileBytes = size_t{4} << 20;

StatusOr<std::string> ReadBounded(const std::string& path) {
  StatusOr<int> fd = OpenRegularFileForReading(path);
  if (!fd.ok()) return fd.status();
  std::string text;
  char buffer[65536];
  while (text.size() < kArtifactFileBytes) {
    const ssize_t n = ::read(*fd, buffer, sizeof buffer);
    if (n < 0) {
      ::close(*fd);
      return UnavailableError("cannot read " + path);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(*fd);
  if (text.size() > kArtifactFileBytes) text.resize(kArtifactFileBytes);
  return text;
}

bool Inside(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p)
    if (p == path.end() || *p != *r) return false;
  return true;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::string CellKey::Label() const {
  std::string label = model.empty() ? "(unknown model)" : model;
  label += " " + std::to_string(nodes) + "N";
  if (!config.empty()) label += " " + config;
  return label;
}

bool IsCellKey(const std::string& key) {
  static const std::vector<std::string> prefixes = {"dcn_", "ici_", "num_pipeline_", "pipeline_",
                                                     "num_layers_per_pipeline_stage"};
  static const std::vector<std::string> exact = {"sparse_matmul",  "use_turbo_grouped_gemm", "use_deepep_dispatch",
                                                 "capacity_factor", "quantization",          "max_target_length"};
  for (const auto& p : prefixes)
    if (key.rfind(p, 0) == 0) return true;
  return std::find(exact.begin(), exact.end(), key) != exact.end();
}

bool IsBookkeepingKey(const std::string& key) {
  static const std::vector<std::string> keys = {"steps",
                                                "dataset_type",
                                                "jax_distributed_heartbeat_timeout_seconds",
                                                "_env_TUNE_PROFILE",
                                                "profiler",
                                                "skip_first_n_steps_for_profiler",
                                                "profiler_steps",
                                                "_env_ENABLE_XLA_DUMP",
                                                "enable_checkpointing",
                                                "checkpoint_period",
                                                "run_name"};
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

CellKey CellOf(const JobFacts& facts) {
  CellKey key;
  key.model = facts.header.model_name;
  key.nodes = facts.header.nnodes > 0 ? facts.header.nnodes : static_cast<int>(facts.header.hosts.size());
  std::vector<std::string> parts;
  for (const auto& [k, v] : facts.header.passthrough)   // std::map: sorted
    if (IsCellKey(k)) parts.push_back(k + "=" + v);
  std::ostringstream out;
  for (size_t i = 0; i < parts.size(); ++i) out << (i ? " " : "") << parts[i];
  key.config = out.str();
  return key;
}

std::optional<std::string> TuneProfileOf(const JobFacts& facts) {
  auto it = facts.header.passthrough.find("_env_TUNE_PROFILE");
  if (it == facts.header.passthrough.end()) return std::nullopt;
  const std::string value = Trim(it->second);
  if (value.empty() || value == "baseline" || value == kBaselineProfile) return std::string(kBaselineProfile);
  return value;
}

std::map<std::string, std::vector<std::string>> ParseTuneProfiles(const std::string& text) {
  // A case arm: `name)` or `a|b)` at the start of a line, its body up to `;;` (possibly on the
  // same line). Only arms inside a `case "${TUNE_PROFILE...}" in` block count.
  static const std::regex arm(R"(^\s*([A-Za-z0-9_.|*-]+)\)\s*(.*)$)");
  static const std::regex xla_flag(R"((--xla_[A-Za-z0-9_]+(=[^\s"']*)?))");
  static const std::regex env_export(R"(\bexport\s+([A-Za-z_][A-Za-z0-9_]*=[^\s;"']*))");
  std::map<std::string, std::vector<std::string>> profiles;
  std::istringstream in(text);
  std::string line;
  bool in_case = false;
  std::vector<std::string> current;   // the names of the arm being read
  auto collect = [&](const std::string& body) {
    for (auto it = std::sregex_iterator(body.begin(), body.end(), xla_flag); it != std::sregex_iterator(); ++it)
      for (const auto& name : current) profiles[name].push_back((*it)[1].str());
    for (auto it = std::sregex_iterator(body.begin(), body.end(), env_export); it != std::sregex_iterator(); ++it)
      for (const auto& name : current) profiles[name].push_back((*it)[1].str());
  };
  while (std::getline(in, line)) {
    // The script is the user's: a line's regexes read its first kRegexWindowBytes only (std::regex
    // recursed once per byte of a long flag value or arm body).
    const std::string t(RegexWindow(Trim(line)));
    if (!in_case) {
      if (t.rfind("case ", 0) == 0 && t.find("TUNE_PROFILE") != std::string::npos) in_case = true;
      continue;
    }
    if (t == "esac") {
      in_case = false;
      current.clear();
      continue;
    }
    std::smatch m;
    std::string body = t;
    if (current.empty() && std::regex_match(t, m, arm)) {
      std::istringstream names(m[1].str());
      std::string name;
      while (std::getline(names, name, '|'))
        if (!name.empty() && name != "*") {
          current.push_back(name);
          profiles[name];   // an arm without flags (baseline) still exists
        }
      body = m[2].str();
    }
    const size_t end = body.find(";;");
    collect(end == std::string::npos ? body : body.substr(0, end));
    if (end != std::string::npos) current.clear();
  }
  return profiles;
}

void ParseGitSummary(const std::string& text, std::string* commit, std::string* branch) {
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    const std::string t = Trim(line);
    if (t.size() > 2 && t.front() == '[' && t.back() == ']') {
      section = t;
      continue;
    }
    if (t.empty()) continue;
    if (section == "[LAST COMMIT]" && commit->empty()) *commit = t.substr(0, 200);
    if (section == "[BRANCH]" && branch->empty()) *branch = t.substr(0, 200);
  }
}

std::string UserTagOf(const JobFacts& facts) {
  std::set<std::string> encoded;
  for (const auto& [key, value] : facts.header.passthrough) {
    std::string arg = key + "_" + value;
    std::replace(arg.begin(), arg.end(), '=', '_');
    encoded.insert(arg);
  }
  std::string tag = facts.header.exp_tag;
  // The args are appended in the user's order, which the parsed map no longer has: peel any of them.
  for (bool peeled = true; peeled && !tag.empty();) {
    peeled = false;
    for (const auto& arg : encoded) {
      if (tag == arg) {
        tag.clear();
      } else if (tag.size() > arg.size() && tag.compare(tag.size() - arg.size(), arg.size(), arg) == 0 &&
                 tag[tag.size() - arg.size() - 1] == '-') {
        tag.resize(tag.size() - arg.size() - 1);
      } else {
        continue;
      }
      peeled = true;
      break;
    }
  }
  const std::string& alias = facts.header.model_alias;
  if (alias.empty() || alias == facts.header.model_name) return tag;
  return tag.empty() ? alias : alias + ":" + tag;
}

ArtifactInfo ReadArtifact(const std::string& job_dir, const std::string& outputs_dir) {
  ArtifactInfo info;
  if (job_dir.empty()) return info;
  std::error_code ec;
  const fs::path link = fs::path(job_dir) / "artifact";
  if (!fs::is_symlink(link, ec) && !fs::is_directory(link, ec)) return info;
  const fs::path resolved = fs::weakly_canonical(link, ec);
  const fs::path root = fs::weakly_canonical(outputs_dir, ec);
  if (ec || !Inside(resolved, root)) {
    info.notes.push_back(link.string() + " points outside the outputs dir; not read");
    return info;
  }
  info.dir = resolved.string();
  if (StatusOr<std::string> env = ReadBounded((resolved / "train_env.sh").string()); env.ok())
    info.profile_flags = ParseTuneProfiles(*env);
  else if (env.status().code() != StatusCode::kNotFound)
    info.notes.push_back(env.status().message());
  if (StatusOr<std::string> git = ReadBounded((resolved / "git_summary.txt").string()); git.ok())
    ParseGitSummary(*git, &info.commit, &info.branch);
  else if (git.status().code() != StatusCode::kNotFound)
    info.notes.push_back(git.status().message());
  return info;
}

}  // namespace diagnose::sweep
