#include "engine/tsdb/xor_chunk.h"

#include <bit>
#include <cstring>

namespace diagnose {
namespace {

// xor.go's bitRange: whether a delta-of-delta fits the signed bucket of `nbits` bits.
bool FitsBits(int64_t x, int nbits) {
  const int64_t bound = int64_t{1} << (nbits - 1);
  return -(bound - 1) <= x && x <= bound;
}

}  // namespace

XorChunkEncoder::XorChunkEncoder() : stream_(2, 0) { stream_.reserve(128); }

void XorChunkEncoder::WriteBit(bool bit) {
  if (free_bits_ == 0) {
    stream_.push_back(0);
    free_bits_ = 8;
  }
  if (bit) stream_.back() |= static_cast<uint8_t>(1u << (free_bits_ - 1));
  --free_bits_;
}

void XorChunkEncoder::WriteByte(uint8_t byte) {
  if (free_bits_ == 0) {
    stream_.push_back(0);
    free_bits_ = 8;
  }
  stream_.back() |= static_cast<uint8_t>(byte >> (8 - free_bits_));
  stream_.push_back(static_cast<uint8_t>(byte << free_bits_));
}

// bstream.go's writeBits: whole bytes through writeByte, then the rest bit by bit; the rest is
// placed here in at most two steps with the same result (the same trailing bytes included).
void XorChunkEncoder::WriteBits(uint64_t value, int nbits) {
  for (; nbits >= 8; nbits -= 8) WriteByte(static_cast<uint8_t>(value >> (nbits - 8)));
  if (nbits == 0) return;
  const unsigned rest = static_cast<unsigned>(value) & ((1u << nbits) - 1);
  if (free_bits_ == 0) {
    stream_.push_back(0);
    free_bits_ = 8;
  }
  if (nbits <= free_bits_) {
    stream_.back() |= static_cast<uint8_t>(rest << (free_bits_ - nbits));
    free_bits_ = static_cast<uint8_t>(free_bits_ - nbits);
    return;
  }
  const int spill = nbits - free_bits_;
  stream_.back() |= static_cast<uint8_t>(rest >> spill);
  stream_.push_back(static_cast<uint8_t>(rest << (8 - spill)));
  free_bits_ = static_cast<uint8_t>(8 - spill);
}

// xor.go's xorWrite: a 0 bit for an unchanged value, else the XOR's meaningful bits, reusing the
// previous leading/trailing-zero window when the new XOR fits inside it.
void XorChunkEncoder::WriteValueXor(uint64_t bits) {
  const uint64_t delta = bits ^ value_bits_;
  if (delta == 0) {
    WriteBit(false);
    return;
  }
  WriteBit(true);
  uint8_t leading = static_cast<uint8_t>(std::countl_zero(delta));
  const uint8_t trailing = static_cast<uint8_t>(std::countr_zero(delta));
  if (leading >= 32) leading = 31;   // the field is 5 bits wide
  if (leading_ != 0xff && leading >= leading_ && trailing >= trailing_) {
    WriteBit(false);
    WriteBits(delta >> trailing_, 64 - leading_ - trailing_);
    return;
  }
  leading_ = leading;
  trailing_ = trailing;
  WriteBit(true);
  WriteBits(leading, 5);
  const int significant = 64 - leading - trailing;
  WriteBits(static_cast<uint64_t>(significant), 6);   // 64 wraps to 0, as Prometheus reads it back
  WriteBits(delta >> trailing, significant);
}

void XorChunkEncoder::Append(int64_t t, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  uint64_t t_delta = 0;
  if (samples_ == 0) {
    uint64_t zigzag = (static_cast<uint64_t>(t) << 1) ^ static_cast<uint64_t>(t >> 63);
    for (; zigzag >= 0x80; zigzag >>= 7) WriteByte(static_cast<uint8_t>(zigzag) | 0x80);
    WriteByte(static_cast<uint8_t>(zigzag));
    WriteBits(bits, 64);
  } else if (samples_ == 1) {
    t_delta = static_cast<uint64_t>(t - t_);
    uint64_t rest = t_delta;
    for (; rest >= 0x80; rest >>= 7) WriteByte(static_cast<uint8_t>(rest) | 0x80);
    WriteByte(static_cast<uint8_t>(rest));
    WriteValueXor(bits);
  } else {
    t_delta = static_cast<uint64_t>(t - t_);
    const int64_t dod = static_cast<int64_t>(t_delta - t_delta_);
    if (dod == 0) {
      WriteBit(false);
    } else if (FitsBits(dod, 14)) {
      WriteBits(0b10, 2);
      WriteBits(static_cast<uint64_t>(dod), 14);
    } else if (FitsBits(dod, 17)) {
      WriteBits(0b110, 3);
      WriteBits(static_cast<uint64_t>(dod), 17);
    } else if (FitsBits(dod, 20)) {
      WriteBits(0b1110, 4);
      WriteBits(static_cast<uint64_t>(dod), 20);
    } else {
      WriteBits(0b1111, 4);
      WriteBits(static_cast<uint64_t>(dod), 64);
    }
    WriteValueXor(bits);
  }
  t_ = t;
  value_bits_ = bits;
  t_delta_ = t_delta;
  ++samples_;
  stream_[0] = static_cast<uint8_t>(samples_ >> 8);
  stream_[1] = static_cast<uint8_t>(samples_);
}

}  // namespace diagnose
