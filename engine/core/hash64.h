// Deterministic 64-bit hashing for names that must not change between runs or machines (generated
// noise, content-derived TSDB block names): unlike std::hash, the same bytes hash the same everywhere.
#pragma once

#include <cstdint>
#include <string_view>

namespace diagnose {

// splitmix64's finalizer: every input bit reaches every output bit.
inline uint64_t Mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a over the bytes, from its offset basis unless a seed continues another hash.
inline uint64_t Fnv1a64(std::string_view s, uint64_t seed = 0xcbf29ce484222325ULL) {
  uint64_t h = seed;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace diagnose
