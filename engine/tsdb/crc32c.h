// CRC-32C (Castagnoli), the checksum of Prometheus' WAL records, chunks and index sections.
#pragma once

#include <cstddef>
#include <cstdint>

namespace diagnose {

uint32_t Crc32c(const uint8_t* data, size_t size);

}  // namespace diagnose
