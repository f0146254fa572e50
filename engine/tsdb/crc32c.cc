#include "engine/tsdb/crc32c.h"

#include <array>
#include <cstring>

namespace diagnose {

#if defined(__x86_64__)
// SSE 4.2's crc32 instruction computes CRC-32C: 8 bytes per instruction instead of a table lookup
// per byte (the native block writer checksums every chunk and index section).
namespace {

__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(const uint8_t* data, size_t size) {
  uint64_t crc = 0xFFFFFFFFu;
  for (; size >= 8; data += 8, size -= 8) {
    uint64_t word;
    std::memcpy(&word, data, sizeof word);
    crc = __builtin_ia32_crc32di(crc, word);
  }
  uint32_t crc32 = static_cast<uint32_t>(crc);
  for (; size > 0; ++data, --size) crc32 = __builtin_ia32_crc32qi(crc32, *data);
  return crc32 ^ 0xFFFFFFFFu;
}

}  // namespace
#endif

uint32_t Crc32c(const uint8_t* data, size_t size) {
#if defined(__x86_64__)
  static const bool sse42 = __builtin_cpu_supports("sse4.2");
  if (sse42) return Crc32cSse42(data, size);
#endif
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace diagnose
