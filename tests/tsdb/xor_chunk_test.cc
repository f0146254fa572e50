#include "engine/tsdb/xor_chunk.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

TEST(XorChunkEncoderTest, OneSampleIsCountVarintTimeRawValueAndAnEmptyTrailingByte) {
  XorChunkEncoder chunk;
  chunk.Append(1000, 1.0);   // zigzag(1000) = 2000 = varint d0 0f; 1.0 = 3ff0000000000000
  const std::vector<uint8_t> expected = {0x00, 0x01, 0xd0, 0x0f, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x00};
  EXPECT_EQ(chunk.bytes(), expected);
  EXPECT_EQ(chunk.samples(), 1);
}

TEST(XorChunkEncoderTest, AnUnchangedValueAtTheSameStepCostsTwoBits) {
  XorChunkEncoder chunk;
  chunk.Append(0, 5.0);
  chunk.Append(10'000, 5.0);   // delta 10000 = varint 90 4e, value unchanged: one 0 bit
  const size_t after_two = chunk.bytes().size();
  for (int i = 2; i < 10; ++i) chunk.Append(i * 10'000, 5.0);   // dod 0 and xor 0: two 0 bits each
  EXPECT_EQ(chunk.samples(), 10);
  EXPECT_EQ(chunk.bytes()[0], 0);
  EXPECT_EQ(chunk.bytes()[1], 10);
  EXPECT_EQ(chunk.bytes().size(), after_two + 2);   // 16 more bits, in the partial byte and two more
}

TEST(XorChunkEncoderTest, TheBitsOfANaNAreKept) {
  XorChunkEncoder chunk;
  const uint64_t stale_bits = 0x7ff0000000000002ull;   // Prometheus' staleness marker
  double stale;
  std::memcpy(&stale, &stale_bits, sizeof stale);
  chunk.Append(0, stale);
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i) stored = stored << 8 | chunk.bytes()[3 + i];   // after count and varint(0)
  EXPECT_EQ(stored, stale_bits);
}

}  // namespace
}  // namespace diagnose
