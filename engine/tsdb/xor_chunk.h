// Prometheus' XOR ("Gorilla") float chunk encoding (tsdb/chunkenc/xor.go, chunks.md), bit for bit:
// a 2-byte sample count, the first timestamp as a varint and value as raw bits, the second as a
// delta and XORed value, then delta-of-delta timestamps in Prometheus' 14/17/20/64-bit buckets.
#pragma once

#include <cstdint>
#include <vector>

namespace diagnose {

class XorChunkEncoder {
 public:
  XorChunkEncoder();
  // `t` (ms) must be above the previous sample's; the value's bits are stored as given (NaN payloads
  // included, so a staleness marker stays one).
  void Append(int64_t t, double v);
  int samples() const { return samples_; }
  // The chunk's bytes as the chunks file and the index's chunk reference carry them.
  const std::vector<uint8_t>& bytes() const { return stream_; }

 private:
  void WriteBit(bool bit);
  void WriteByte(uint8_t byte);
  void WriteBits(uint64_t value, int nbits);
  void WriteValueXor(uint64_t bits);

  std::vector<uint8_t> stream_;
  uint8_t free_bits_ = 0;   // unwritten low bits of the stream's last byte
  int samples_ = 0;
  int64_t t_ = 0;
  uint64_t t_delta_ = 0;
  uint64_t value_bits_ = 0;
  uint8_t leading_ = 0xff;  // 0xff: no leading/trailing window chosen yet
  uint8_t trailing_ = 0;
};

}  // namespace diagnose
