#include "tools/fixturegen/timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tools/fixturegen/random.h"

namespace diagnose::fixturegen {
namespace {

struct StageDefault {
  const char* name;
  const char* desc;
  int timeout;
  double elapsed;
};
constexpr StageDefault kStages[] = {
    {"preflight", "Preflight", 900, 38},
    {"pull", "Docker pull", 900, 14},
    {"ecc", "ECC check", 300, 7},
    {"train", "Training", 0, 0},
};

double PhaseTgs(const Scenario& s, int64_t step) {
  for (const Phase& p : s.phases) {
    if (!p.steps.Contains(step)) continue;
    if (p.tgs_end <= 0 || p.steps.last == p.steps.first) return p.tgs;
    double f = static_cast<double>(step - p.steps.first) / static_cast<double>(p.steps.last - p.steps.first);
    return p.tgs + (p.tgs_end - p.tgs) * f;
  }
  return s.phases.empty() ? 3000 : s.phases.back().tgs;
}

void Shift(Timeline* t, double delta) {
  t->job_start += delta;
  t->job_end += delta;
  t->train_start += delta;
  t->prometheus_start += delta;
  t->first_step_begin += delta;
  t->memstats_time += delta;
  for (auto& st : t->stages) st.begin += delta, st.end += delta;
  for (auto& r : t->steps) r.begin += delta, r.end += delta;
}

// Divergence, NaN and grad-norm spikes (training-stability fixtures). Draws no noise from the
// step stream, so scenarios without these keys keep their exact values.
void ApplyTrainingDynamics(const Scenario& s, StepRecord* r) {
  r->raw_grad_norm = r->grad_norm * 1.02;
  bool touched = false;
  if (s.loss_diverge_step && r->step >= *s.loss_diverge_step) {
    double grow = std::exp(s.loss_diverge_rate * static_cast<double>(r->step - *s.loss_diverge_step + 1));
    r->loss *= grow;
    r->raw_grad_norm *= grow * grow;   // the gradients blow up faster than the loss
    touched = true;
  }
  if (std::find(s.grad_spike_steps.begin(), s.grad_spike_steps.end(), r->step) != s.grad_spike_steps.end()) {
    r->raw_grad_norm *= s.grad_spike_factor;
    touched = true;
  }
  if (s.loss_nan_step && r->step >= *s.loss_nan_step) {
    r->loss = r->raw_grad_norm = std::numeric_limits<double>::quiet_NaN();
    touched = true;
  }
  if (s.grad_clip > 0) r->grad_norm = std::isnan(r->raw_grad_norm) ? r->raw_grad_norm : std::min(r->raw_grad_norm, s.grad_clip);
  else if (touched) r->grad_norm = r->raw_grad_norm / 1.02;
}

}  // namespace

StatusOr<Timeline> BuildTimeline(const Scenario& s) {
  Timeline t;
  t.job_start = s.start_time;
  t.tokens_per_step = s.per_device_batch_size * s.seq_len;
  double now = s.start_time + 2;  // header + provenance
  bool failed_before_train = false;
  if (s.stop_phase == "before_stages") {
    t.job_end = now + 1;
    t.prometheus_start = t.job_end;
    return t;
  }
  for (const StageDefault& d : kStages) {
    StageTiming st;
    st.name = d.name;
    st.desc = d.desc;
    st.timeout = d.timeout;
    auto it = s.stages.find(d.name);
    if (it != s.stages.end()) st.outcome = it->second;
    st.begin = now;
    if (st.name == "train") {
      if (!s.training) break;
      t.train_start = now;
      t.stages.push_back(st);
      break;
    }
    double elapsed = st.outcome.elapsed > 0 ? st.outcome.elapsed : d.elapsed;
    if (st.outcome.result == "timeout" && st.outcome.elapsed <= 0) elapsed = d.timeout;
    st.end = now + elapsed;
    now = st.end + 1;
    t.stages.push_back(st);
    if (st.outcome.result != "ok") {
      failed_before_train = true;
      break;
    }
  }
  if (failed_before_train || !s.training) {
    t.job_end = now + 1;
    t.prometheus_start = t.job_end;
    return t;
  }

  t.prometheus_start = t.train_start + (s.ray ? 28 : 0);
  t.first_step_begin = t.train_start + s.init_seconds;
  Rng rng(s.seed, "step-noise");
  double clock = t.first_step_begin;
  if (s.stop_phase == "setup") {
    t.prometheus_start = t.job_end = t.train_start + std::max(s.hang_seconds, 12.0);
    t.stages.back().end = t.job_end - 2;
    return t;
  }
  if (s.stop_phase != "steps") {
    t.memstats_time = s.stop_phase == "before_step0" ? clock + s.step0_seconds * 0.5 : 0;
    t.job_end = clock + std::max(s.hang_seconds, 1.0);
  } else {
    int64_t total = s.last_step - s.first_step + 1;
    double lr_peak = 3e-5;
    for (int64_t step = s.first_step; step <= s.last_step; ++step) {
      StepRecord r;
      r.step = step;
      r.begin = clock;
      double tgs = PhaseTgs(s, step) * (1.0 + rng.Normal(0, s.step_jitter));
      double seconds = t.tokens_per_step / tgs;
      if (step == s.first_step) seconds = s.step0_seconds * (1.0 + rng.Normal(0, 0.01));
      bool prev_saved = s.checkpoint_period > 0 && step > s.first_step && ((step - 1) % s.checkpoint_period == 0) &&
                        !(s.first_step > 0 && step - 1 < s.first_step);
      // A fresh start saves step 0 too (cheap: tiny optimizer state yet); the heavy write follows periodic saves.
      if (prev_saved) {
        r.after_checkpoint = true;
        seconds += (step - 1 == 0 ? 0.25 : 1.0) * s.checkpoint_save_seconds * (1.0 + rng.Normal(0, 0.03));
      }
      if (auto pin = s.pinned_seconds.find(step); pin != s.pinned_seconds.end()) seconds = pin->second;
      r.seconds = std::round(seconds * 1000.0) / 1000.0;
      r.end = r.begin + r.seconds;
      r.tgs = t.tokens_per_step / r.seconds;
      r.total_weights = static_cast<int64_t>(t.tokens_per_step) * s.gpus_per_node * static_cast<int64_t>(s.hosts.size());
      r.tflops = s.tflops_per_tgs * r.tgs;
      r.mfu = 100.0 * r.tflops / s.peak_tflops;
      double progress = total > 1 ? static_cast<double>(step) / std::max<int64_t>(s.total_steps, s.last_step + 1) : 0;
      r.loss = s.loss_end + (s.loss_start - s.loss_end) * std::exp(-6.0 * progress) + rng.Normal(0, 0.02);
      r.lb_loss = s.lb_loss * (1.0 + rng.Normal(0, 0.02));
      if (s.lb_loss_change_step && step >= *s.lb_loss_change_step) {
        // spike at the change point, then a new, higher plateau
        double since = static_cast<double>(step - *s.lb_loss_change_step);
        r.lb_loss = s.lb_loss_after * (1.0 + 1.5 * std::exp(-since / 6.0)) * (1.0 + rng.Normal(0, 0.02));
      }
      r.grad_norm = 0.35 + 2.0 * std::exp(-8.0 * progress) + std::abs(rng.Normal(0, 0.03));
      ApplyTrainingDynamics(s, &r);
      r.learning_rate = lr_peak * std::min(1.0, (step + 1) / 50.0);
      r.checkpoint_saved = s.checkpoint_period > 0 && step % s.checkpoint_period == 0 &&
                           !(s.first_step > 0 && step < s.first_step);
      clock = r.end;
      t.steps.push_back(r);
    }
    t.memstats_time = t.steps.front().end;
    double tail = 25;
    if (s.hang_seconds > 0) tail = s.hang_seconds;
    t.job_end = clock + tail;
  }

  if (s.heartbeat) {
    // The crash lands mid-step after the last logged step; everything shifts so the scenario's
    // crash time is exact and job.start is nominal.
    if (t.steps.empty()) {
      Shift(&t, s.heartbeat->time - (t.job_end - 1));
      t.job_end = s.heartbeat->time + 18;
    } else {
      // A kill after a silence (hang_seconds: the steps stopped first, e.g. a node died) or in the
      // middle of the next step (the false positive: training went on until the kill).
      double step_s = t.steps.back().seconds;
      double crash_at = t.steps.back().end + (s.hang_seconds > 0 ? s.hang_seconds : 0.45 * step_s);
      Shift(&t, s.heartbeat->time - crash_at);
      t.job_end = s.heartbeat->time + 18;
    }
  }
  if (!t.stages.empty()) t.stages.back().end = t.job_end - 2;
  return t;
}

Activity Timeline::ActivityAt(double time) const {
  if (time < prometheus_start || time > job_end) return Activity::kGone;
  if (time < first_step_begin - 0.6 * (first_step_begin - train_start)) return Activity::kIdle;
  if (time < first_step_begin) return Activity::kInit;
  if (steps.empty()) return memstats_time > 0 ? Activity::kCompile : Activity::kHang;
  if (time < steps.front().end) return Activity::kCompile;
  if (time <= steps.back().end) {
    auto it = std::upper_bound(steps.begin(), steps.end(), time,
                               [](double v, const StepRecord& r) { return v < r.end; });
    if (it != steps.end() && it->after_checkpoint) {
      // the write occupies most of the slow step
      double write_end = it->end - (it->end - it->begin) * 0.1;
      if (time < write_end && it->seconds > 60) return Activity::kCheckpoint;
    }
    return Activity::kTrain;
  }
  return Activity::kHang;  // after the last step: hang, crash-in-progress or teardown (callers refine)
}

bool Timeline::StepWindow(const StepRange& range, double* begin, double* end) const {
  bool found = false;
  for (const auto& r : steps) {
    if (!range.Contains(r.step)) continue;
    if (!found) *begin = r.begin;
    *end = r.end;
    found = true;
  }
  return found;
}

const StepRecord* Timeline::FindStep(int64_t step) const {
  for (const auto& r : steps)
    if (r.step == step) return &r;
  return nullptr;
}

}  // namespace diagnose::fixturegen
