// Turns series into real Prometheus TSDB blocks (fixtures, `diagnose test`, campaign jobs, the scale
// benchmark). The native encoder (the default) writes the blocks itself (native_block_writer.h), in
// the layout the promtool encoder gets from `promtool tsdb create-blocks-from openmetrics`, which
// stays selectable as the oracle the native one is tested against.
// Both sort and de-duplicate every series and store the millisecond times promtool stores for the
// seconds text the promtool encoder writes.
// promtool silently drops out-of-order/duplicate samples inside a 5000-sample batch and misreads
// millisecond timestamps, so the promtool encoder writes sorted, de-duplicated seconds and verifies
// the sample count of the built blocks against what it wrote.
// promtool re-parses its whole input once per block window (and once more for the time range), so
// the text is written as one file per window: a 24 h job is parsed twice instead of six times. The
// scratch dir is best on RAM-backed storage (/dev/shm): the text is ~100x the size of the blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/tsdb/query_client.h"

namespace diagnose {

enum class BlockEncoder { kNative, kPromtool };
// "native" or "promtool" (the tools' --encoder); nullopt for anything else.
std::optional<BlockEncoder> BlockEncoderNamed(std::string_view name);

struct BlockWriteOptions {
  BlockEncoder encoder = BlockEncoder::kNative;
  std::string output_dir;                 // the TSDB dir (created; blocks are added to it)
  std::string max_block_duration = "6h";  // promtool --max-block-duration (both encoders' windows)
  // The rest is the promtool encoder's.
  std::string scratch_dir;                // where the OpenMetrics files are written (in a private
                                          // subdir, removed at the end); empty = temp dir
  double promtool_timeout_seconds = 1800; // promtool is killed after this long
  // promtool holds a whole block window (>= 2h) in memory, ~160 B per sample: a 1,024-node hour
  // (~170 M samples) needs ~27 GB in one run. Past this many samples the writer runs promtool on
  // what it has and starts new files; each run holds whole series, so the runs' blocks overlap in
  // time but not in series, which Prometheus merges at query time. promtool builds one batch (two
  // window files at a time) while the next is written, so the scratch dir holds up to two batches'
  // text (~130 B per sample).
  int64_t max_samples_per_promtool_run = 20'000'000;
};

struct BlockWriteStats {
  int64_t series = 0;
  int64_t samples_written = 0;            // after sort/dedupe
  int64_t samples_in_blocks = 0;          // from the blocks' meta.json
  int64_t duplicates_dropped = 0;
  int blocks = 0;
  int64_t bytes = 0;
  int promtool_runs = 0;                  // one per block window per batch (0 when native)
};

// promtool's block window for a --max-block-duration (its getCompatibleBlockDuration: the largest of
// 2h x 3^k not above it, at least 2h), in milliseconds; blocks never straddle a multiple of it.
StatusOr<int64_t> PromtoolBlockWindowMs(std::string_view max_block_duration);

// Each Series needs labels["__name__"]; empty-valued labels are dropped (as Prometheus drops them).
// NaN values are written as NaN: the native encoder keeps their bits (a staleness marker stays one),
// the promtool encoder cannot represent a staleness marker, so callers omit them.
StatusOr<BlockWriteStats> WriteBlocks(std::vector<Series> series, const BlockWriteOptions& options);

// Incremental form for large fixtures: Add() per series (any order), then Finish().
class BlockWriter {
 public:
  explicit BlockWriter(BlockWriteOptions options);
  ~BlockWriter();
  BlockWriter(const BlockWriter&) = delete;
  BlockWriter& operator=(const BlockWriter&) = delete;
  Status Add(Series series);
  StatusOr<BlockWriteStats> Finish();

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace diagnose
