// Writes series as a Prometheus write-ahead log (wal/00000000, ...) and nothing else: the TSDB a
// job shorter than two hours leaves when its Prometheus dies with it (no block was ever cut). The
// format is Prometheus 2.x's (tsdb/wlog pages and tsdb/record series and sample records), so the
// real server replays it exactly as it would its own; tests/tsdb/wal_writer_test.cc checks that
// every sample written is served back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/tsdb/crc32c.h"   // the WAL's page records carry it
#include "engine/tsdb/query_client.h"

namespace diagnose {

struct WalWriteStats {
  int64_t series = 0;
  int64_t samples = 0;
  int segments = 0;
  int64_t bytes = 0;
};

class WalWriter {
 public:
  // `tsdb_dir` is created; its wal/ must not exist yet.
  explicit WalWriter(std::string tsdb_dir);
  // Each series needs labels["__name__"]; its samples must be strictly increasing in time (the
  // head drops out-of-order samples on replay, so they are refused here instead).
  Status Add(Series series);
  // Writes every series record, then the samples in time order, in 128 MiB segments.
  StatusOr<WalWriteStats> Finish();

 private:
  std::string tsdb_dir_;
  std::vector<Series> series_;
};

}  // namespace diagnose
