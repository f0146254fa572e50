#include "engine/tsdb/wal_writer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "engine/tsdb/byte_buffer.h"

namespace diagnose {
namespace fs = std::filesystem;
namespace {

// tsdb/wlog: 32 KiB pages, 128 MiB segments; a record fragment is type (1 byte), length (2, big
// endian), CRC-32C of the fragment (4, big endian), then the bytes. A fragment never crosses a page,
// a record never crosses a segment, and a page with less than a header left is zero-padded.
constexpr size_t kPageSize = 32 * 1024;
constexpr size_t kRecordHeaderSize = 7;
constexpr size_t kPagesPerSegment = 128 * 1024 * 1024 / kPageSize;
enum FragmentType : uint8_t { kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4 };
// tsdb/record types.
constexpr uint8_t kSeriesRecord = 1;
constexpr uint8_t kSamplesRecord = 2;
// Records of this many entries keep each one small, as a scraping server's commits are.
constexpr size_t kEntriesPerRecord = 5000;

class SegmentedLog {
 public:
  explicit SegmentedLog(fs::path dir) : dir_(std::move(dir)) {}

  Status Append(const std::vector<uint8_t>& record) {
    // Room left in this segment: the current page and every page after it.
    const size_t room = (kPageSize - page_.size() - kRecordHeaderSize) +
                        (kPageSize - kRecordHeaderSize) * (kPagesPerSegment - pages_done_ - 1);
    if (!out_.is_open() || record.size() > room) RETURN_IF_ERROR(NextSegment());
    size_t offset = 0;
    for (bool first = true; first || offset < record.size(); first = false) {
      const size_t part = std::min(record.size() - offset, kPageSize - page_.size() - kRecordHeaderSize);
      const bool last = offset + part == record.size();
      const uint8_t type = first && last ? kFull : last ? kLast : first ? kFirst : kMiddle;
      const uint32_t crc = Crc32c(record.data() + offset, part);
      page_.Byte(type);
      page_.Be16(static_cast<uint16_t>(part));
      page_.Be32(crc);
      page_.Append(record.data() + offset, part);
      offset += part;
      if (kPageSize - page_.size() < kRecordHeaderSize) RETURN_IF_ERROR(FlushPage());
    }
    return Status::Ok();
  }

  // The last page is padded to its full size, as Prometheus closes a segment.
  Status Close() {
    if (!page_.empty()) RETURN_IF_ERROR(FlushPage());
    if (out_.is_open()) {
      out_.close();
      if (!out_) return InternalError(Current().string() + ": write failed");
    }
    return Status::Ok();
  }
  int segments() const { return segment_ + 1; }

 private:
  fs::path Current() const {
    char name[16];
    std::snprintf(name, sizeof name, "%08d", segment_);
    return dir_ / name;
  }
  Status NextSegment() {
    RETURN_IF_ERROR(Close());
    ++segment_;
    pages_done_ = 0;
    out_.open(Current(), std::ios::binary | std::ios::trunc);
    if (!out_) return InternalError(Current().string() + ": cannot create");
    return Status::Ok();
  }
  Status FlushPage() {
    page_.ZeroPadTo(kPageSize);
    out_.write(reinterpret_cast<const char*>(page_.bytes().data()), static_cast<std::streamsize>(page_.size()));
    if (!out_) return InternalError(Current().string() + ": write failed");
    page_.Clear();
    ++pages_done_;
    return Status::Ok();
  }

  fs::path dir_;
  std::ofstream out_;
  ByteBuffer page_;
  size_t pages_done_ = 0;
  int segment_ = -1;
};

}  // namespace

WalWriter::WalWriter(std::string tsdb_dir) : tsdb_dir_(std::move(tsdb_dir)) {}

Status WalWriter::Add(Series series) {
  if (!series.labels.count("__name__")) return InvalidArgumentError("WAL series without __name__");
  for (size_t i = 1; i < series.samples.size(); ++i)
    if (!(std::llround(series.samples[i].t * 1000) > std::llround(series.samples[i - 1].t * 1000)))
      return InvalidArgumentError("WAL series " + series.labels["__name__"] + ": samples not strictly increasing at t=" +
                                  std::to_string(series.samples[i].t));
  series_.push_back(std::move(series));
  return Status::Ok();
}

StatusOr<WalWriteStats> WalWriter::Finish() {
  const fs::path wal = fs::path(tsdb_dir_) / "wal";
  std::error_code ec;
  if (fs::exists(wal, ec)) return FailedPreconditionError(wal.string() + " already exists");
  fs::create_directories(wal, ec);
  if (ec) return InternalError(wal.string() + ": cannot create: " + ec.message());
  SegmentedLog log(wal);
  WalWriteStats stats;
  // Series records first: refs 1..N in the order added (labels sorted by name, as std::map keeps them).
  for (size_t begin = 0; begin < series_.size(); begin += kEntriesPerRecord) {
    ByteBuffer record;
    record.Byte(kSeriesRecord);
    for (size_t i = begin; i < std::min(series_.size(), begin + kEntriesPerRecord); ++i) {
      record.Be64(i + 1);
      record.Uvarint(series_[i].labels.size());
      for (const auto& [name, value] : series_[i].labels) {
        record.String(name);
        record.String(value);
      }
    }
    RETURN_IF_ERROR(log.Append(record.bytes()));
  }
  stats.series = static_cast<int64_t>(series_.size());
  // Samples in time order across series: a merge over each series' own (sorted) samples.
  struct Cursor {
    int64_t t;
    uint32_t series;
    uint32_t index;
  };
  auto later = [](const Cursor& a, const Cursor& b) { return a.t != b.t ? a.t > b.t : a.series > b.series; };
  std::vector<Cursor> heap;
  for (size_t i = 0; i < series_.size(); ++i)
    if (!series_[i].samples.empty())
      heap.push_back({std::llround(series_[i].samples[0].t * 1000), static_cast<uint32_t>(i), 0});
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    ByteBuffer record;
    record.Byte(kSamplesRecord);
    int64_t first_ref = 0, first_t = 0;
    for (size_t n = 0; n < kEntriesPerRecord && !heap.empty(); ++n) {
      std::pop_heap(heap.begin(), heap.end(), later);
      Cursor c = heap.back();
      heap.pop_back();
      const Sample& s = series_[c.series].samples[c.index];
      const int64_t ref = static_cast<int64_t>(c.series) + 1;
      if (n == 0) {
        first_ref = ref;
        first_t = c.t;
        record.Be64(static_cast<uint64_t>(first_ref));
        record.Be64(static_cast<uint64_t>(first_t));
      }
      record.Varint(ref - first_ref);
      record.Varint(c.t - first_t);
      uint64_t bits;
      std::memcpy(&bits, &s.v, sizeof bits);
      record.Be64(bits);
      ++stats.samples;
      if (++c.index < series_[c.series].samples.size()) {
        c.t = std::llround(series_[c.series].samples[c.index].t * 1000);
        heap.push_back(c);
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
    RETURN_IF_ERROR(log.Append(record.bytes()));
  }
  RETURN_IF_ERROR(log.Close());
  stats.segments = log.segments();
  for (const auto& entry : fs::directory_iterator(wal, ec)) stats.bytes += static_cast<int64_t>(entry.file_size(ec));
  series_.clear();
  return stats;
}

}  // namespace diagnose
