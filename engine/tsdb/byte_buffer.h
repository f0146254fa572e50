// Bytes in the encodings of Prometheus' on-disk formats (tsdb/encoding.Encbuf): big-endian fixed
// widths, Go's varints, length-prefixed strings, and the CRC-32C its sections end with.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/tsdb/crc32c.h"

namespace diagnose {

class ByteBuffer {
 public:
  void Byte(uint8_t b) { bytes_.push_back(b); }
  void Be16(uint16_t v) {
    bytes_.push_back(static_cast<uint8_t>(v >> 8));
    bytes_.push_back(static_cast<uint8_t>(v));
  }
  void Be32(uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes_.push_back(static_cast<uint8_t>(v >> shift));
  }
  void Be64(uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) bytes_.push_back(static_cast<uint8_t>(v >> shift));
  }
  void Uvarint(uint64_t v) {
    for (; v >= 0x80; v >>= 7) bytes_.push_back(static_cast<uint8_t>(v) | 0x80);
    bytes_.push_back(static_cast<uint8_t>(v));
  }
  void Varint(int64_t v) { Uvarint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void String(std::string_view s) {
    Uvarint(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void Append(const std::vector<uint8_t>& other) { bytes_.insert(bytes_.end(), other.begin(), other.end()); }
  void Append(const uint8_t* data, size_t size) { bytes_.insert(bytes_.end(), data, data + size); }
  void ZeroPadTo(size_t size) { bytes_.resize(std::max(bytes_.size(), size), 0); }
  // CRC-32C of the bytes from `from` on, appended big endian (Go's hash.Sum).
  void Crc32cFrom(size_t from) { Be32(Crc32c(bytes_.data() + from, bytes_.size() - from)); }
  void SetBe32(size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
  }
  size_t size() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  void Clear() { bytes_.clear(); }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace diagnose
