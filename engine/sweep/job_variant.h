// Where a job sits in a sweep: its cell (model x node count x parallelism/config overrides) and its
// variant (the tuning profile, else the passthrough args that differ inside the cell), plus the
// provenance the runbooks read from the frozen artifact (maxtext-slurm-formats.md §1.2, §2.1-2.2):
// the TUNE_PROFILE case arms of `train_env.sh` (which flags a profile sets) and the commit line of
// `git_summary.txt`. Artifact files are untrusted text: read bounded, only through the job dir's
// `artifact` link when it stays inside the outputs dir.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/report/job_facts.h"

namespace diagnose::sweep {

// The profile name of `baseline-deployed` (xla-tuning Wave 1): TUNE_PROFILE empty or "baseline".
inline constexpr const char* kBaselineProfile = "baseline-deployed";

struct CellKey {
  std::string model;
  int nodes = 0;
  std::string config;    // the parallelism/config overrides, "k=v k=v" sorted ("" = the yml's)
  std::string Label() const;   // "llama2-70b 8N" or "llama2-70b 8N dcn_fsdp_parallelism=8"
  auto operator<=>(const CellKey&) const = default;
};

struct ArtifactInfo {
  std::string dir;                                   // the artifact dir, as resolved
  std::map<std::string, std::vector<std::string>> profile_flags;   // TUNE_PROFILE arm -> flags
  std::string commit;                                // "<sha> <subject>" from [LAST COMMIT]
  std::string branch;
  std::vector<std::string> notes;                    // why something could not be read
};

// The passthrough keys that define a cell rather than a variant (parallelism and MoE/config tags).
bool IsCellKey(const std::string& passthrough_key);
// Keys that never distinguish jobs (run length, data, timeouts, the profile itself).
bool IsBookkeepingKey(const std::string& passthrough_key);

CellKey CellOf(const JobFacts& facts);

// The job's TUNE_PROFILE: `_env_TUNE_PROFILE` in PASSTHROUGH_ARGS, mapped to kBaselineProfile when
// empty or "baseline"; nullopt when the job carries none.
std::optional<std::string> TuneProfileOf(const JobFacts& facts);

// The user's part of the job's tag (maxtext-slurm-formats.md §1.1): EXP_TAG is the model spec's
// `model[:alias]:tag` tag joined with `-` to the encoded passthrough args (`k=v` -> `k_v`, joined
// with `-`), so what remains once every encoded arg is taken off its end is what the user typed;
// prefixed with the alias (`alias:tag`) when the spec set one. "" when neither was given.
std::string UserTagOf(const JobFacts& facts);

// Reads <job_dir>/artifact/{train_env.sh,git_summary.txt}. Never fails: what it cannot read is a note.
ArtifactInfo ReadArtifact(const std::string& job_dir, const std::string& outputs_dir);

// The case arms of a train_env.sh: profile name -> the XLA flags and exported env vars it sets.
std::map<std::string, std::vector<std::string>> ParseTuneProfiles(const std::string& train_env_text);
// "<sha> <subject>" under [LAST COMMIT], and the [BRANCH] line.
void ParseGitSummary(const std::string& text, std::string* commit, std::string* branch);

}  // namespace diagnose::sweep
