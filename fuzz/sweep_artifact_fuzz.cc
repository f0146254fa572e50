// What `diagnose sweep` reads that others wrote: a frozen artifact's train_env.sh (its TUNE_PROFILE
// case arms) and git_summary.txt (mode 0 and 1), and a saved `diagnose sweep --format json` that
// `sweep compare` loads and compares with itself (mode 2).
#include <string>

#include "engine/core/untrusted_json.h"
#include "engine/sweep/job_variant.h"
#include "engine/sweep/sweep_compare.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace diagnose;
  std::string_view text = fuzz::AsText(data, size);
  const uint8_t mode = fuzz::TakeMode(&text);
  const std::string input(text);
  switch (mode % 3) {
    case 0:
      (void)sweep::ParseTuneProfiles(input);
      break;
    case 1: {
      std::string commit, branch;
      sweep::ParseGitSummary(input, &commit, &branch);
      break;
    }
    default: {
      const nlohmann::json j = ParseUntrustedJson(input);
      if (j.is_discarded()) break;
      StatusOr<sweep::SweepSnapshot> s = sweep::SnapshotFromJson(j, "fuzz.json");
      if (s.ok()) (void)sweep::CompareSweeps({*s, *s});
      break;
    }
  }
  return 0;
}
