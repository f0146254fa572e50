// `campaign generate`: plans the campaign and writes every job through fixturegen's own
// parse-and-generate path, plus the scenarios and truth.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/tsdb/block_writer.h"

namespace diagnose::campaign {

struct GenerateCampaignOptions {
  uint64_t seed = 1;
  int jobs = 40;
  std::string out_dir;        // receives outputs/, scenarios/, truth.json (and a scratch dir it removes)
  int parallel = 2;
  bool write_tsdb = true;     // false: logs only (fast determinism checks)
  BlockEncoder block_encoder = BlockEncoder::kNative;
  // A share of the jobs, so that ctest can generate one campaign in several processes at once:
  // shard k of n generates every n-th job of the cost-ordered plan, starting at the k-th, and
  // writes neither scenarios/ nor truth.json (plan_only writes those, and generates nothing).
  int shard = 0;
  int shards = 1;
  bool plan_only = false;
  bool wide = false;          // the widened job shapes and families (PlanCampaign)
  bool wider = false;         // wide plus the shapes it never draws (PlanCampaign)
  bool widest = false;        // wider plus the shapes it still never draws (PlanCampaign)
  bool perf = false;          // the performance-regression families (PlanCampaign)
  // Only the planned jobs whose kind starts with one of these (and the baselines they compare
  // with): the same seed plans the same jobs, so one family can be examined without the rest.
  std::vector<std::string> kinds;
};

Status GenerateCampaign(const GenerateCampaignOptions& options);

}  // namespace diagnose::campaign
