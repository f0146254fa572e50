// What a Prometheus TSDB directory holds, read from disk without a server: block dirs (ULID names
// with a meta.json) and the WAL. Used to validate a job's snapshot before serving it, to take the
// data time range from block metadata, and to verify blocks written by promtool.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace diagnose {

struct BlockMeta {
  std::string ulid;             // directory name
  int64_t min_time_ms = 0;      // first sample
  int64_t max_time_ms = 0;      // last sample + 1 ms (exclusive end)
  int64_t num_samples = 0;
  int64_t num_series = 0;
};

// True for a 26-character Crockford base32 ULID, the name Prometheus gives block directories.
bool IsUlid(const std::string& name);

// One block's meta.json (`file` names it in errors): minTime and maxTime are required integers;
// anything else malformed is kDataLoss naming the file.
StatusOr<BlockMeta> ParseBlockMeta(std::string_view text, const std::string& ulid, const std::string& file);

// Block directories (real directories only; symlinks are ignored, as Prometheus ignores them) whose
// meta.json parses. A meta.json that does not parse is kDataLoss naming the file.
StatusOr<std::vector<BlockMeta>> ListBlockDirs(const std::string& tsdb_dir);

}  // namespace diagnose
