// Deterministic noise: every random value is a pure function of (scenario seed, stream name, index),
// so fixtures are byte-identical across runs and independent of generation order.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "engine/core/hash64.h"

namespace diagnose::fixturegen {

inline uint64_t SplitMix64(uint64_t x) { return Mix64(x + 0x9e3779b97f4a7c15ULL); }

inline uint64_t HashString(std::string_view s, uint64_t seed = 0xcbf29ce484222325ULL) {
  return SplitMix64(Fnv1a64(s, seed));
}

class Rng {
 public:
  Rng(uint64_t seed, std::string_view stream) : state_(HashString(stream, SplitMix64(seed))) {}
  uint64_t Next() { return state_ = SplitMix64(state_); }
  double Uniform() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  double Normal(double mean, double stddev) {
    double u1 = Uniform(), u2 = Uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace diagnose::fixturegen
