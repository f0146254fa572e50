// Writes Prometheus 2.x persistent blocks directly (meta.json v1, index format v2, chunks/000001...
// of XOR chunks, an empty tombstones file), the layout `promtool tsdb create-blocks-from` leaves:
// one block per block window, chunks cut where Prometheus' head cuts them (the promtool path's
// head; tsdb/head_append.go), so both give the same samples in the same chunks.
// Streaming: Add() encodes a series' chunks and appends them to its window's chunk segment file at
// once, keeping only interned labels and chunk metadata (~24 B per chunk) in memory; Finish()
// writes each block's index. A block is built in `<ULID>.tmp-for-creation` (which Prometheus
// deletes on startup) and renamed into place only once complete.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "engine/core/status.h"
#include "engine/tsdb/query_client.h"

namespace diagnose {

struct TimedSample {
  int64_t ms;
  double v;
};

struct NativeBlockStats {
  int blocks = 0;
  int64_t bytes = 0;
  int64_t samples = 0;
  int64_t chunks = 0;
};

inline constexpr uint64_t kDefaultChunkSegmentBytes = 512ull * 1024 * 1024;

class NativeBlockWriter {
 public:
  // `window_ms`: blocks never straddle a multiple of it (PromtoolBlockWindowMs). A chunk segment
  // file holds at most `segment_bytes` (Prometheus' 512 MiB; smaller in tests).
  NativeBlockWriter(std::string output_dir, int64_t window_ms, uint64_t segment_bytes = kDefaultChunkSegmentBytes);
  ~NativeBlockWriter();   // removes the unfinished blocks of a writer that did not Finish()
  NativeBlockWriter(const NativeBlockWriter&) = delete;
  NativeBlockWriter& operator=(const NativeBlockWriter&) = delete;

  // `labels` needs __name__; empty-valued labels are dropped, as Prometheus' head drops them. A
  // label set seen before (after that drop) is refused. `samples`: strictly increasing ms.
  Status Add(const Labels& labels, std::span<const TimedSample> samples);
  StatusOr<NativeBlockStats> Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A ULID (26 Crockford base32 characters) from its 48-bit millisecond time and 80 random bits.
std::string FormatUlid(uint64_t time_ms, const uint8_t (&entropy)[10]);

}  // namespace diagnose
