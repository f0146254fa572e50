#include "engine/tsdb/native_block_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/core/cleanup_registry.h"
#include "engine/core/hash64.h"
#include "engine/tsdb/byte_buffer.h"
#include "engine/tsdb/crc32c.h"
#include "engine/tsdb/xor_chunk.h"

namespace diagnose {
namespace fs = std::filesystem;
namespace {

// tsdb/chunks: segment files of at most 512 MiB, each led by magic, version 1 and 3 padding bytes.
constexpr uint32_t kChunksMagic = 0x85BD40DD;
constexpr uint64_t kChunkSegmentHeaderBytes = 8;
constexpr uint8_t kXorEncoding = 1;
// tsdb/index: magic and format version 2.
constexpr uint32_t kIndexMagic = 0xBAAAD700;
constexpr uint8_t kIndexVersion = 2;
// tsdb/tombstones: magic and format version 1.
constexpr uint32_t kTombstonesMagic = 0x0130BA30;
// tsdb/head_append.go's appendPreprocessor: Prometheus' head aims at 120 samples per chunk.
constexpr int kSamplesPerChunk = 120;

// A file written sequentially through a buffer, knowing its position; fsync'd at Close so a
// renamed block is whole on disk.
class OutFile {
 public:
  ~OutFile() {
    if (file_) std::fclose(file_);
  }
  Status Open(const fs::path& path, size_t buffer_bytes) {
    path_ = path;
    pos_ = 0;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return UnavailableError("cannot create " + path.string() + ": " + std::strerror(errno));
    file_ = fdopen(fd, "w");
    if (!file_) {
      ::close(fd);
      return InternalError("fdopen failed for " + path.string());
    }
    std::setvbuf(file_, nullptr, _IOFBF, buffer_bytes);
    return Status::Ok();
  }
  Status Write(const uint8_t* data, size_t size) {
    if (size && std::fwrite(data, 1, size, file_) != size) {
      return UnavailableError("writing " + path_.string() + " failed: " + std::strerror(errno));
    }
    pos_ += size;
    return Status::Ok();
  }
  Status Write(const ByteBuffer& buffer) { return Write(buffer.bytes().data(), buffer.size()); }
  Status PadTo(uint64_t alignment) {
    static const uint8_t kZeros[16] = {};
    const uint64_t pad = (alignment - pos_ % alignment) % alignment;
    return Write(kZeros, pad);
  }
  Status Close() {
    if (!file_) return Status::Ok();
    const bool flushed = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!flushed || !closed) return UnavailableError("writing " + path_.string() + " failed: " + std::strerror(errno));
    return Status::Ok();
  }
  uint64_t pos() const { return pos_; }

 private:
  fs::path path_;
  std::FILE* file_ = nullptr;
  uint64_t pos_ = 0;
};

Status WriteWholeFile(const fs::path& path, const std::vector<uint8_t>& bytes) {
  OutFile out;
  RETURN_IF_ERROR(out.Open(path, 4096));
  RETURN_IF_ERROR(out.Write(bytes.data(), bytes.size()));
  return out.Close();
}

// head_append.go's rangeForTimestamp and computeChunkEndTime.
int64_t RangeEnd(int64_t t, int64_t width) { return (t / width) * width + width; }
int64_t ChunkEndTime(int64_t start, int64_t cur, int64_t max) {
  const int64_t n = (max - start) / ((cur - start + 1) * 4);
  return n <= 1 ? max : start + (max - start) / n;
}

struct ChunkMeta {
  int64_t min_t;
  int64_t max_t;
  uint64_t ref;   // segment index << 32 | offset in that segment
};


std::string MetaJson(const std::string& ulid, int64_t min_t, int64_t max_t, int64_t samples, size_t series,
                     size_t chunks) {
  // Go's json.MarshalIndent of tsdb.BlockMeta with a tab indent, as Prometheus writes it.
  return "{\n\t\"ulid\": \"" + ulid + "\",\n\t\"minTime\": " + std::to_string(min_t) + ",\n\t\"maxTime\": " +
         std::to_string(max_t + 1) + ",\n\t\"stats\": {\n\t\t\"numSamples\": " + std::to_string(samples) +
         ",\n\t\t\"numSeries\": " + std::to_string(series) + ",\n\t\t\"numChunks\": " + std::to_string(chunks) +
         "\n\t},\n\t\"compaction\": {\n\t\t\"level\": 1,\n\t\t\"sources\": [\n\t\t\t\"" + ulid +
         "\"\n\t\t]\n\t},\n\t\"version\": 1\n}";
}

// A section led by a 4-byte length (of what follows it, before the CRC) and ending in the CRC-32C
// of those bytes: the symbol table, label indices, and the two offset tables.
class LengthPrefixedSection {
 public:
  LengthPrefixedSection() { buffer.Be32(0); }
  Status WriteTo(OutFile& out) {
    buffer.SetBe32(0, static_cast<uint32_t>(buffer.size() - 4));
    buffer.Crc32cFrom(4);
    return out.Write(buffer);
  }
  ByteBuffer buffer;
};

struct Posting {
  uint32_t name;    // block-local symbol indexes, ordered as the strings are
  uint32_t value;
  uint32_t series;  // series reference: its offset in the index / 16
  bool operator<(const Posting& o) const {
    return name != o.name ? name < o.name : value != o.value ? value < o.value : series < o.series;
  }
};

Status WritePostingsList(OutFile& out, std::span<const Posting> list, std::string_view name, std::string_view value,
                         ByteBuffer& offset_table) {
  RETURN_IF_ERROR(out.PadTo(4));
  offset_table.Uvarint(2);
  offset_table.String(name);
  offset_table.String(value);
  offset_table.Uvarint(out.pos());
  ByteBuffer buffer;
  buffer.Be32(static_cast<uint32_t>(4 + 4 * list.size()));
  buffer.Be32(static_cast<uint32_t>(list.size()));
  for (const Posting& p : list) buffer.Be32(p.series);
  buffer.Crc32cFrom(4);
  return out.Write(buffer);
}

}  // namespace

std::string FormatUlid(uint64_t time_ms, const uint8_t (&entropy)[10]) {
  static constexpr char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  // 128 bits (48 time, 80 entropy) as 26 base32 digits, the first holding the top 3 bits.
  uint8_t raw[16];
  for (int i = 0; i < 6; ++i) raw[i] = static_cast<uint8_t>(time_ms >> (40 - 8 * i));
  std::memcpy(raw + 6, entropy, 10);
  std::string out(26, '0');
  for (int digit = 25, bit = 0; digit >= 0; --digit, bit += 5) {
    int value = 0;
    for (int k = 0; k < 5; ++k) {
      const int b = bit + k;   // bit index from the least significant end
      if (b < 128 && (raw[15 - b / 8] >> (b % 8) & 1)) value |= 1 << k;
    }
    out[static_cast<size_t>(digit)] = kAlphabet[value];
  }
  return out;
}

struct NativeBlockWriter::Impl {
  // One block window being filled: its chunk segments are written as series arrive.
  struct Block {
    int64_t window_start = 0;
    fs::path tmp_dir;
    fs::path final_dir;   // its ULID's name, chosen when sealed
    std::optional<CleanupRegistry::Id> cleanup_id;
    OutFile chunks;
    uint32_t segment = 0;   // index of the open segment file (000001 is 0)
    struct Entry {
      uint32_t series;       // into label_sets
      uint32_t first_chunk;  // into chunk_metas
      uint32_t chunk_count;
    };
    std::vector<Entry> entries;
    std::vector<ChunkMeta> chunk_metas;
    int64_t min_t = INT64_MAX;
    int64_t max_t = INT64_MIN;
    int64_t samples = 0;
    uint64_t content_hash = 0;   // order-independent: a sum over its series
  };

  fs::path output_dir;
  int64_t window_ms = 0;
  uint64_t segment_bytes = kDefaultChunkSegmentBytes;
  // Interned label strings; a label set is a run of (name, value) symbol ids in label_pool.
  std::unordered_map<std::string, uint32_t> symbol_ids;
  std::vector<std::string> symbols;
  std::vector<uint32_t> label_pool;
  struct LabelSetRef {
    uint64_t offset;
    uint32_t pairs;
  };
  std::vector<LabelSetRef> label_sets;
  struct LabelSetHash {
    const Impl* impl;
    size_t operator()(uint32_t id) const {
      uint64_t h = 0;
      for (uint32_t sym : impl->Pairs(id)) h = Mix64(h ^ sym);
      return h;
    }
  };
  struct LabelSetEqual {
    const Impl* impl;
    bool operator()(uint32_t a, uint32_t b) const {
      auto pa = impl->Pairs(a), pb = impl->Pairs(b);
      return std::equal(pa.begin(), pa.end(), pb.begin(), pb.end());
    }
  };
  std::unordered_set<uint32_t, LabelSetHash, LabelSetEqual> seen{16, LabelSetHash{this}, LabelSetEqual{this}};
  std::map<int64_t, std::unique_ptr<Block>> blocks;
  Status error;   // first write error; sticky
  bool finished = false;

  std::span<const uint32_t> Pairs(uint32_t id) const {
    const LabelSetRef& ref = label_sets[id];
    return {label_pool.data() + ref.offset, size_t{ref.pairs} * 2};
  }

  uint32_t Intern(const std::string& s) {
    auto [it, inserted] = symbol_ids.emplace(s, static_cast<uint32_t>(symbols.size()));
    if (inserted) symbols.push_back(s);
    return it->second;
  }

  ~Impl() { RemoveUnfinished(); }

  void RemoveUnfinished() {
    AcquisitionScope releasing;
    for (auto& [start, block] : blocks) Discard(*block);
    blocks.clear();
  }

  static void Discard(Block& block) {
    (void)block.chunks.Close();
    std::error_code ec;
    fs::remove_all(block.tmp_dir, ec);
    if (block.cleanup_id) CleanupRegistry::Instance().Unregister(*block.cleanup_id);
    block.cleanup_id.reset();
  }

  StatusOr<Block*> BlockFor(int64_t window_start) {
    if (auto it = blocks.find(window_start); it != blocks.end()) return it->second.get();
    auto block = std::make_unique<Block>();
    block->window_start = window_start;
    std::error_code ec;
    fs::create_directories(output_dir, ec);
    if (ec) return UnavailableError("cannot create TSDB dir " + output_dir.string() + ": " + ec.message());
    AcquisitionScope creating;   // the tmp dir exists only once its cleanup does
    // A ULID name: Prometheus deletes `<ULID>.tmp-for-creation` dirs a crash left, and loads none.
    static std::atomic<uint64_t> counter{0};
    const uint64_t unique = Mix64(static_cast<uint64_t>(::getpid()) << 32 ^ counter++ ^ std::random_device{}());
    uint8_t entropy[10] = {};
    for (int i = 0; i < 8; ++i) entropy[i] = static_cast<uint8_t>(unique >> (56 - 8 * i));
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    block->tmp_dir = output_dir / (FormatUlid(static_cast<uint64_t>(now_ms), entropy) + ".tmp-for-creation");
    fs::create_directories(block->tmp_dir / "chunks", ec);
    if (ec) {
      fs::remove_all(block->tmp_dir, ec);
      return UnavailableError("cannot create " + block->tmp_dir.string() + ": " + ec.message());
    }
    block->cleanup_id = CleanupRegistry::Instance().Register("unfinished block " + block->tmp_dir.string(),
                                                             [dir = block->tmp_dir] {
      std::error_code removed;
      fs::remove_all(dir, removed);
    });
    if (Status opened = OpenSegment(*block); !opened.ok()) {
      Discard(*block);
      return opened;
    }
    return blocks.emplace(window_start, std::move(block)).first->second.get();
  }

  Status OpenSegment(Block& block) {
    char name[16];
    std::snprintf(name, sizeof name, "%06u", block.segment + 1);
    RETURN_IF_ERROR(block.chunks.Open(block.tmp_dir / "chunks" / name, 256 * 1024));
    ByteBuffer header;
    header.Be32(kChunksMagic);
    header.Byte(1);   // format version
    header.Byte(0);
    header.Byte(0);
    header.Byte(0);
    return block.chunks.Write(header);
  }

  // Appends one chunk (uvarint length, encoding, data, CRC-32C of encoding and data) to the block's
  // open segment, starting a new segment when it would pass 512 MiB.
  StatusOr<ChunkMeta> WriteChunk(Block& block, const XorChunkEncoder& chunk, int64_t min_t, int64_t max_t) {
    const std::vector<uint8_t>& data = chunk.bytes();
    ByteBuffer framed;
    framed.Uvarint(data.size());
    const size_t encoded_from = framed.size();
    framed.Byte(kXorEncoding);
    framed.Append(data);
    const uint32_t crc = Crc32c(framed.bytes().data() + encoded_from, framed.size() - encoded_from);
    framed.Be32(crc);
    if (block.chunks.pos() > kChunkSegmentHeaderBytes && block.chunks.pos() + framed.size() > segment_bytes) {
      RETURN_IF_ERROR(block.chunks.Close());
      ++block.segment;
      RETURN_IF_ERROR(OpenSegment(block));
    }
    const ChunkMeta meta{min_t, max_t, uint64_t{block.segment} << 32 | block.chunks.pos()};
    RETURN_IF_ERROR(block.chunks.Write(framed));
    block.content_hash += Mix64(crc ^ static_cast<uint64_t>(min_t) << 32);
    return meta;
  }

  // One series' samples inside one block window, cut into chunks as the promtool path's head cuts
  // them: its chunk range is two windows, and past 30 samples the chunk's end is predicted so the
  // window's samples spread evenly over chunks of about 120.
  Status AddToBlock(Block& block, uint32_t series, std::span<const TimedSample> samples) {
    const int64_t chunk_range = 2 * window_ms;
    Block::Entry entry{series, static_cast<uint32_t>(block.chunk_metas.size()), 0};
    std::optional<XorChunkEncoder> chunk;
    int64_t chunk_min = 0, chunk_max = 0, next_at = 0;
    for (const TimedSample& s : samples) {
      if (chunk) {
        const int n = chunk->samples();
        if (n == kSamplesPerChunk / 4) next_at = ChunkEndTime(chunk_min, chunk_max, next_at);
        if (s.ms >= next_at || n >= kSamplesPerChunk * 2) {
          ASSIGN_OR_RETURN(ChunkMeta meta, WriteChunk(block, *chunk, chunk_min, chunk_max));
          block.chunk_metas.push_back(meta);
          chunk.reset();
        }
      }
      if (!chunk) {
        chunk.emplace();
        chunk_min = s.ms;
        next_at = RangeEnd(s.ms, chunk_range);
      }
      chunk->Append(s.ms, s.v);
      chunk_max = s.ms;
    }
    ASSIGN_OR_RETURN(ChunkMeta meta, WriteChunk(block, *chunk, chunk_min, chunk_max));
    block.chunk_metas.push_back(meta);
    entry.chunk_count = static_cast<uint32_t>(block.chunk_metas.size() - entry.first_chunk);
    block.entries.push_back(entry);
    block.min_t = std::min(block.min_t, samples.front().ms);
    block.max_t = std::max(block.max_t, samples.back().ms);
    block.samples += static_cast<int64_t>(samples.size());
    uint64_t labels_hash = 0;
    for (uint32_t sym : Pairs(series)) labels_hash = Mix64(labels_hash ^ Fnv1a64(symbols[sym]));
    block.content_hash += Mix64(labels_hash);
    return Status::Ok();
  }

  Status Add(const Labels& labels, std::span<const TimedSample> samples) {
    if (finished) return FailedPreconditionError("NativeBlockWriter::Add after Finish");
    if (!error.ok()) return error;
    if (auto name = labels.find("__name__"); name == labels.end() || name->second.empty())
      return InvalidArgumentError("series without a __name__ label");
    if (labels.count("")) return InvalidArgumentError("series with an empty label name");
    if (samples.empty()) return Status::Ok();
    for (size_t i = 1; i < samples.size(); ++i)
      if (samples[i].ms <= samples[i - 1].ms)
        return InvalidArgumentError("series " + labels.at("__name__") + ": timestamps must increase strictly (" +
                                    std::to_string(samples[i - 1].ms) + " then " + std::to_string(samples[i].ms) + ")");
    const uint64_t offset = label_pool.size();
    uint32_t pairs = 0;
    for (const auto& [name, value] : labels) {
      if (value.empty()) continue;
      label_pool.push_back(Intern(name));
      label_pool.push_back(Intern(value));
      ++pairs;
    }
    const uint32_t series = static_cast<uint32_t>(label_sets.size());
    label_sets.push_back({offset, pairs});
    if (!seen.insert(series).second) {
      label_sets.pop_back();
      label_pool.resize(offset);
      return InvalidArgumentError("was added twice (empty-valued labels dropped); merge its samples into one Add");
    }
    for (size_t begin = 0; begin < samples.size();) {
      const int64_t start = FloorDiv(samples[begin].ms, window_ms) * window_ms;
      size_t end = begin;
      while (end < samples.size() && samples[end].ms < start + window_ms) ++end;
      auto block = BlockFor(start);
      Status added = block.ok() ? AddToBlock(**block, series, samples.subspan(begin, end - begin)) : block.status();
      if (!added.ok()) {
        error = added;
        return error;
      }
      begin = end;
    }
    return Status::Ok();
  }

  static int64_t FloorDiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0 ? 1 : 0); }

  StatusOr<NativeBlockStats> Finish();
  Status WriteIndex(Block& block, const std::vector<uint32_t>& rank);
  Status WriteIndexTail(OutFile& out, uint64_t (&toc)[6], const std::vector<Posting>& postings,
                        const std::vector<uint32_t>& all_series, const std::vector<uint32_t>& used,
                        const std::vector<uint32_t>& sorted_symbols);
  Status Seal(Block& block, const std::vector<uint32_t>& rank);
  Status Publish(Block& block, NativeBlockStats& stats);
};


// index format v2 (tsdb/docs/format/index.md), laid out as tsdb/index.Writer lays it out.
Status NativeBlockWriter::Impl::WriteIndex(Block& block, const std::vector<uint32_t>& rank) {
  // Prometheus' symbol table always holds "", the all-postings key's name and value.
  std::vector<uint32_t> used = {rank[Intern("")]};
  for (const auto& entry : block.entries) {
    for (uint32_t sym : Pairs(entry.series)) used.push_back(rank[sym]);
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  auto local = [&](uint32_t sym) {
    return static_cast<uint32_t>(std::lower_bound(used.begin(), used.end(), rank[sym]) - used.begin());
  };
  std::sort(block.entries.begin(), block.entries.end(), [&](const Block::Entry& a, const Block::Entry& b) {
    auto pa = Pairs(a.series), pb = Pairs(b.series);
    return std::lexicographical_compare(pa.begin(), pa.end(), pb.begin(), pb.end(),
                                        [&](uint32_t x, uint32_t y) { return rank[x] < rank[y]; });
  });
  std::vector<uint32_t> sorted_symbols(symbols.size());
  for (uint32_t id = 0; id < symbols.size(); ++id) sorted_symbols[rank[id]] = id;

  OutFile out;
  RETURN_IF_ERROR(out.Open(block.tmp_dir / "index", 1 << 20));
  ByteBuffer header;
  header.Be32(kIndexMagic);
  header.Byte(kIndexVersion);
  RETURN_IF_ERROR(out.Write(header));
  uint64_t toc[6] = {};   // symbols, series, label indices, label offset table, postings, postings offset table
  toc[0] = out.pos();
  {
    LengthPrefixedSection section;
    section.buffer.Be32(static_cast<uint32_t>(used.size()));
    for (uint32_t r : used) section.buffer.String(symbols[sorted_symbols[r]]);
    RETURN_IF_ERROR(section.WriteTo(out));
  }
  toc[1] = out.pos();
  std::vector<Posting> postings;
  std::vector<uint32_t> all_series;
  ByteBuffer content, framed;
  for (const auto& entry : block.entries) {
    RETURN_IF_ERROR(out.PadTo(16));
    const uint32_t ref = static_cast<uint32_t>(out.pos() / 16);
    all_series.push_back(ref);
    auto pairs = Pairs(entry.series);
    content.Clear();
    content.Uvarint(pairs.size() / 2);
    for (size_t i = 0; i < pairs.size(); i += 2) {
      const uint32_t name = local(pairs[i]), value = local(pairs[i + 1]);
      content.Uvarint(name);
      content.Uvarint(value);
      postings.push_back({name, value, ref});
    }
    content.Uvarint(entry.chunk_count);
    const ChunkMeta* chunks = block.chunk_metas.data() + entry.first_chunk;
    for (uint32_t c = 0; c < entry.chunk_count; ++c) {
      if (c == 0) {
        content.Varint(chunks[0].min_t);
        content.Uvarint(static_cast<uint64_t>(chunks[0].max_t - chunks[0].min_t));
        content.Uvarint(chunks[0].ref);
      } else {
        content.Uvarint(static_cast<uint64_t>(chunks[c].min_t - chunks[c - 1].max_t));
        content.Uvarint(static_cast<uint64_t>(chunks[c].max_t - chunks[c].min_t));
        content.Varint(static_cast<int64_t>(chunks[c].ref - chunks[c - 1].ref));
      }
    }
    framed.Clear();
    framed.Uvarint(content.size());
    const size_t from = framed.size();
    framed.Append(content.bytes());
    framed.Crc32cFrom(from);
    RETURN_IF_ERROR(out.Write(framed));
  }
  std::sort(postings.begin(), postings.end());
  return WriteIndexTail(out, toc, postings, all_series, used, sorted_symbols);
}

// The label indices, postings, their offset tables and the TOC, after the series.
Status NativeBlockWriter::Impl::WriteIndexTail(OutFile& out, uint64_t (&toc)[6], const std::vector<Posting>& postings,
                                               const std::vector<uint32_t>& all_series,
                                               const std::vector<uint32_t>& used,
                                               const std::vector<uint32_t>& sorted_symbols) {
  auto symbol = [&](uint32_t local) -> const std::string& { return symbols[sorted_symbols[used[local]]]; };
  toc[2] = out.pos();
  ByteBuffer label_offsets;   // the label offset table's entries
  uint32_t label_names = 0;
  for (size_t begin = 0; begin < postings.size();) {
    size_t end = begin;
    while (end < postings.size() && postings[end].name == postings[begin].name) ++end;
    RETURN_IF_ERROR(out.PadTo(4));
    label_offsets.Uvarint(1);
    label_offsets.String(symbol(postings[begin].name));
    label_offsets.Uvarint(out.pos());
    ++label_names;
    LengthPrefixedSection index;
    index.buffer.Be32(1);   // one label name per index
    const size_t count_at = index.buffer.size();
    index.buffer.Be32(0);
    uint32_t values = 0;
    for (size_t i = begin; i < end; ++i) {
      if (i > begin && postings[i].value == postings[i - 1].value) continue;
      index.buffer.Be32(postings[i].value);
      ++values;
    }
    index.buffer.SetBe32(count_at, values);
    RETURN_IF_ERROR(index.WriteTo(out));
    begin = end;
  }
  toc[4] = out.pos();
  LengthPrefixedSection postings_offsets;
  postings_offsets.buffer.Be32(0);
  uint32_t lists = 1;
  {
    std::vector<Posting> all;
    all.reserve(all_series.size());
    for (uint32_t ref : all_series) all.push_back({0, 0, ref});
    RETURN_IF_ERROR(WritePostingsList(out, all, "", "", postings_offsets.buffer));   // every series
  }
  for (size_t begin = 0; begin < postings.size(); ++lists) {
    size_t end = begin;
    while (end < postings.size() && postings[end].name == postings[begin].name &&
           postings[end].value == postings[begin].value) {
      ++end;
    }
    RETURN_IF_ERROR(WritePostingsList(out, std::span(postings).subspan(begin, end - begin),
                                      symbol(postings[begin].name), symbol(postings[begin].value),
                                      postings_offsets.buffer));
    begin = end;
  }
  postings_offsets.buffer.SetBe32(4, lists);
  toc[3] = out.pos();
  {
    LengthPrefixedSection table;
    table.buffer.Be32(label_names);
    table.buffer.Append(label_offsets.bytes());
    RETURN_IF_ERROR(table.WriteTo(out));
  }
  toc[5] = out.pos();
  RETURN_IF_ERROR(postings_offsets.WriteTo(out));
  ByteBuffer toc_bytes;
  for (uint64_t ref : toc) toc_bytes.Be64(ref);
  toc_bytes.Crc32cFrom(0);
  RETURN_IF_ERROR(out.Write(toc_bytes));
  return out.Close();
}

// Completes a block in its tmp dir (index, empty tombstones, meta.json) and names it: its ULID is
// deterministic from the block's content, so a fixture regenerated from the same input gets the same
// directory names. Publish renames it once every block of the set is sealed.
Status NativeBlockWriter::Impl::Seal(Block& block, const std::vector<uint32_t>& rank) {
  RETURN_IF_ERROR(block.chunks.Close());
  RETURN_IF_ERROR(WriteIndex(block, rank));
  ByteBuffer tombstones;
  tombstones.Be32(kTombstonesMagic);
  tombstones.Byte(1);   // format version; the CRC covers the (no) stones after it
  tombstones.Crc32cFrom(tombstones.size());
  RETURN_IF_ERROR(WriteWholeFile(block.tmp_dir / "tombstones", tombstones.bytes()));
  const uint64_t time_ms = static_cast<uint64_t>(std::clamp<int64_t>(block.min_t, 0, (int64_t{1} << 48) - 1));
  uint8_t entropy[10];
  uint64_t hash = Mix64(block.content_hash ^ block.entries.size());
  std::error_code ec;
  fs::path final_dir;
  for (;; ++hash) {
    for (int i = 0; i < 8; ++i) entropy[i] = static_cast<uint8_t>(hash >> (56 - 8 * i));
    entropy[8] = static_cast<uint8_t>(block.entries.size() >> 8);
    entropy[9] = static_cast<uint8_t>(block.entries.size());
    final_dir = output_dir / FormatUlid(time_ms, entropy);
    if (!fs::exists(final_dir, ec)) break;
  }
  const std::string ulid = final_dir.filename().string();
  const std::string meta = MetaJson(ulid, block.min_t, block.max_t, block.samples, block.entries.size(),
                                    block.chunk_metas.size());
  RETURN_IF_ERROR(WriteWholeFile(block.tmp_dir / "meta.json", std::vector<uint8_t>(meta.begin(), meta.end())));
  block.final_dir = final_dir;
  return Status::Ok();
}

Status NativeBlockWriter::Impl::Publish(Block& block, NativeBlockStats& stats) {
  std::error_code ec;
  const fs::path& final_dir = block.final_dir;
  {
    AcquisitionScope publishing;
    fs::rename(block.tmp_dir, final_dir, ec);
    if (ec) return UnavailableError("cannot rename " + block.tmp_dir.string() + " to " + final_dir.string() + ": " +
                                    ec.message());
    if (block.cleanup_id) CleanupRegistry::Instance().Unregister(*block.cleanup_id);
    block.cleanup_id.reset();
  }
  if (const int dir = ::open(output_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  ++stats.blocks;
  stats.samples += block.samples;
  stats.chunks += static_cast<int64_t>(block.chunk_metas.size());
  // increment(ec), not a range-for: the range-for's increment throws on an unreadable entry.
  for (fs::recursive_directory_iterator it(final_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) stats.bytes += static_cast<int64_t>(it->file_size(size_ec));
  }
  return Status::Ok();
}

StatusOr<NativeBlockStats> NativeBlockWriter::Impl::Finish() {
  if (finished) return FailedPreconditionError("NativeBlockWriter::Finish called twice");
  finished = true;
  if (!error.ok()) return error;
  Intern("");   // every index's symbol table holds it
  std::vector<uint32_t> by_string(symbols.size());
  for (uint32_t i = 0; i < by_string.size(); ++i) by_string[i] = i;
  std::sort(by_string.begin(), by_string.end(), [&](uint32_t a, uint32_t b) { return symbols[a] < symbols[b]; });
  std::vector<uint32_t> rank(symbols.size());
  for (uint32_t r = 0; r < by_string.size(); ++r) rank[by_string[r]] = r;
  NativeBlockStats stats;
  for (auto& [start, block] : blocks) RETURN_IF_ERROR(Seal(*block, rank));
  while (!blocks.empty()) {
    RETURN_IF_ERROR(Publish(*blocks.begin()->second, stats));
    blocks.erase(blocks.begin());
  }
  return stats;
}

NativeBlockWriter::NativeBlockWriter(std::string output_dir, int64_t window_ms, uint64_t segment_bytes)
    : impl_(std::make_unique<Impl>()) {
  impl_->output_dir = std::move(output_dir);
  impl_->window_ms = window_ms;
  impl_->segment_bytes = segment_bytes;
  if (window_ms <= 0) impl_->error = InvalidArgumentError("block window must be positive");
}

NativeBlockWriter::~NativeBlockWriter() = default;

Status NativeBlockWriter::Add(const Labels& labels, std::span<const TimedSample> samples) {
  return impl_->Add(labels, samples);
}

StatusOr<NativeBlockStats> NativeBlockWriter::Finish() { return impl_->Finish(); }

}  // namespace diagnose
