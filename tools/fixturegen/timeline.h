// One timeline drives everything a fixture contains: step lines in the logs, tb_* samples, TSDB
// activity (power, utilisation, I/O) and the JOB SUMMARY wall time all read from it, so log step
// seconds, wall-times and TSDB timestamps agree by construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "tools/fixturegen/scenario.h"

namespace diagnose::fixturegen {

struct StepRecord {
  int64_t step = 0;
  double begin = 0, end = 0;     // epoch seconds; end - begin == seconds
  double seconds = 0;
  double tgs = 0;                // Tokens/s/device as printed
  double tflops = 0;
  double mfu = 0;                // percent
  double loss = 0;
  double lb_loss = 0;
  double grad_norm = 0;           // after clipping (tb_learning_grad_norm)
  double raw_grad_norm = 0;       // before clipping (tb_learning_raw_grad_norm)
  double learning_rate = 0;
  int64_t total_weights = 0;     // tokens in the global batch
  bool after_checkpoint = false; // this step carries the previous step's checkpoint write
  bool checkpoint_saved = false; // a checkpoint of this step was saved
};

struct StageTiming {
  std::string name;       // preflight | pull | ecc | train
  std::string desc;       // Preflight | Docker pull | ECC check | Training
  int timeout = 0;        // 0 = none
  double begin = 0, end = 0;
  StageOutcome outcome;
};

enum class Activity { kIdle, kInit, kCompile, kTrain, kCheckpoint, kHang, kGone };

struct Timeline {
  double job_start = 0;
  double job_end = 0;           // batch script exit (or "now" of a running job)
  double train_start = 0;       // training stage begin; Ray/Prometheus start shortly after
  double prometheus_start = 0;
  double first_step_begin = 0;  // compile of the first step starts
  double memstats_time = 0;
  std::vector<StageTiming> stages;
  std::vector<StepRecord> steps;
  double tokens_per_step = 0;   // per device

  Activity ActivityAt(double t) const;
  // [begin, end] of a step range clipped to the steps that ran; false when none ran.
  bool StepWindow(const StepRange& range, double* begin, double* end) const;
  const StepRecord* FindStep(int64_t step) const;
};

StatusOr<Timeline> BuildTimeline(const Scenario& scenario);

}  // namespace diagnose::fixturegen
