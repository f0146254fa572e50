#include "engine/tsdb/crc32c.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

TEST(Crc32cTest, MatchesTheCastagnoliCheckValue) {
  const std::string check = "123456789";
  EXPECT_EQ(Crc32c(reinterpret_cast<const uint8_t*>(check.data()), check.size()), 0xE3069283u);
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
}

// The definition, one bit at a time: whichever implementation this CPU runs (8 bytes per
// instruction, then a byte tail) must agree with it at every length and alignment.
uint32_t BitwiseCrc32c(const uint8_t* data, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = crc & 1 ? 0x82F63B78u ^ (crc >> 1) : crc >> 1;
  }
  return crc ^ 0xFFFFFFFFu;
}

TEST(Crc32cTest, AgreesWithTheBitwiseDefinitionAtEveryLengthAndAlignment) {
  std::vector<uint8_t> bytes(4096);
  std::mt19937 random(3);
  for (auto& b : bytes) b = static_cast<uint8_t>(random());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{15}, size_t{16}, size_t{63},
                        size_t{1000}, size_t{4088}}) {
      EXPECT_EQ(Crc32c(bytes.data() + offset, size), BitwiseCrc32c(bytes.data() + offset, size))
          << "offset " << offset << ", " << size << " bytes";
    }
  }
}

}  // namespace
}  // namespace diagnose
