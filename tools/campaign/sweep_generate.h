// Randomized sweeps with a known truth (issue 34): tuning sweeps of 36-50 jobs on one cell (true
// effects of 1-3 % and zero under 0.3-1 % step noise, outlier steps, the profile-dump step, RCCL
// init flakes, an unknown flag, an OOM, sometimes a repeat on another nodelist), and model sweeps
// (6-8 models over three commits: one regression, one new breakage, one pre-existing failure,
// everything else within noise). Logs follow maxtext-slurm's formats (formats reference §1-2); the
// truth is written beside them. Nothing is written outside --out.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace diagnose::campaign {

struct SweepGenerateOptions {
  uint64_t seed = 1;
  int tuning_sweeps = 0;
  int model_sweeps = 0;
  std::string out_dir;
};

// DIR/tuning-<k>/outputs + truth.json, DIR/model-<k>/outputs + truth.json.
Status GenerateSweeps(const SweepGenerateOptions& options);

struct SweepScoreOptions {
  std::string diagnose;
  std::string dir;
  std::string json_out;
  double min_winner = 0;          // share of winner sweeps whose true winner is named
  double max_false_winner = 1;    // share of null sweeps where any winner is named
  double min_rules = 0;           // share of planted failures, model outcomes and summary agreements right
};

// Runs `diagnose sweep` (and `sweep compare` for model sweeps) as an argument vector on each
// generated sweep and prints the scores; exit 1 when a threshold is missed.
int ScoreSweeps(const SweepScoreOptions& options);

}  // namespace diagnose::campaign
