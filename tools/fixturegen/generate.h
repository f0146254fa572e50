// Turns one scenario into its job output directory below an outputs dir (the launcher workspace).
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"
#include "engine/tsdb/block_writer.h"
#include "tools/fixturegen/scenario.h"

namespace diagnose::fixturegen {

struct GenerateOptions {
  std::string out_dir;              // the workspace the job's files are written into
  BlockEncoder block_encoder = BlockEncoder::kNative;
  std::string scratch_dir;          // the promtool encoder's OpenMetrics staging; empty = system temp dir
  bool write_tsdb = true;           // false: skip prometheus blocks even when the scenario asks
  // Non-empty: the series go to <series_out>/<job dir>.series.jsonl (VictoriaMetrics import lines)
  // instead of TSDB blocks: what a live exporter replays (tests/support/live_job.py).
  std::string series_out;
};

struct GenerateReport {
  std::string job_dir;
  int64_t series = 0;
  int64_t samples = 0;
  int64_t samples_in_blocks = 0;
  int blocks = 0;
  int64_t tsdb_bytes = 0;
  int64_t log_bytes = 0;
  double seconds = 0;
};

StatusOr<GenerateReport> Generate(const Scenario& scenario, const GenerateOptions& options);

}  // namespace diagnose::fixturegen
