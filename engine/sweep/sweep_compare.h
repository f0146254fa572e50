// Sweep against sweep (batch-sweep "Model sweep", multi-sweep evaluation): one table per cell
// (model x node count x config) with the sweeps as columns and the delta between adjacent sweeps,
// each delta judged against noise, and the runbook's outcome table applied:
//   all deltas within +-2 %            -> no regression
//   a delta beyond -5 % (beyond noise) -> regression introduced by that sweep
//   FAIL in sweep N, PASS in N-1       -> new breakage introduced by sweep N
//   FAIL in both                       -> pre-existing, not blamed on sweep N
//   every cell FAIL in a sweep         -> the commit is broken
// and the early stop: 2+ cells newly broken by one sweep -> the commit is clearly broken.
// A sweep is a snapshot: from a live analysis, or from a saved `diagnose sweep --format json`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/core/json.h"
#include "engine/core/status.h"
#include "engine/sweep/noise_comparison.h"
#include "engine/sweep/tuning_sweep.h"

namespace diagnose::sweep {

struct CellJobSnapshot {
  std::string id;
  std::string outcome;        // JobOutcomeName
  std::string detail;
  bool measured = false;      // in the leaderboard: successful, steady window, pinned nodelist
  JobSample sample;
  std::optional<double> mfu_pct;
};

struct CellSnapshot {
  CellKey key;
  std::vector<CellJobSnapshot> jobs;   // submission order
};

struct SweepSnapshot {
  std::string label;                   // what the user named it: a file, commit=..., jobs=...
  std::vector<std::string> commits;
  std::vector<CellSnapshot> cells;
};

SweepSnapshot SnapshotOf(const SweepResult& result, const std::string& label);
// A saved `diagnose sweep --format json` (untrusted: wrong types are refused with the field named).
StatusOr<SweepSnapshot> SnapshotFromJson(const nlohmann::json& j, const std::string& label);

enum class PairOutcome { kNoRegression, kWithinNoise, kUnclear, kRegression, kImprovement, kNewBreakage,
                         kPreExisting, kFixed, kNotRun };
const char* PairOutcomeName(PairOutcome o);

inline constexpr double kNoRegressionPct = 2.0;
inline constexpr double kRegressionPct = 5.0;

struct CellColumn {
  bool ran = false;
  bool pass = false;
  std::vector<std::string> jobs;
  double tgs = 0;
  std::optional<double> mfu_pct;
  std::string failure;                 // outcome and detail of the last failing job
  std::optional<Comparison> vs_previous;
  std::optional<PairOutcome> outcome;  // against the previous sweep (none for the first)
};

struct CellComparison {
  CellKey key;
  std::vector<CellColumn> columns;     // one per sweep, in the order given
};

struct SweepVerdict {
  std::string label;
  int cells_run = 0;
  int cells_failed = 0;
  std::vector<std::string> regressions;    // cell labels
  std::vector<std::string> new_breakage;
  std::vector<std::string> pre_existing;
  bool broken_commit = false;              // every cell it ran failed
  bool stop_early = false;                 // 2+ new breakages
  std::string summary;
};

struct SweepComparison {
  std::vector<std::string> labels;
  std::vector<CellComparison> cells;
  std::vector<SweepVerdict> sweeps;        // one per sweep
};

SweepComparison CompareSweeps(const std::vector<SweepSnapshot>& sweeps);

}  // namespace diagnose::sweep
