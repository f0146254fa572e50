#include "engine/profile/trace_reader.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <charconv>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <isa-l/igzip_lib.h>
#include <simdjson.h>

#include "engine/core/limits.h"
#include "engine/core/regular_file.h"
#include "engine/core/untrusted_json.h"
#include "engine/core/utf8.h"

namespace diagnose::profile {

namespace {

constexpr size_t kReadChunk = 1 << 20;

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  ASSIGN_OR_RETURN(const int fd, OpenRegularFileForReading(path));
  std::string bytes;
  const int64_t limit = GetLimit(LimitId::kProfileTraceBytes);
  for (;;) {
    const size_t old = bytes.size();
    bytes.resize(old + kReadChunk);
    const ssize_t got = ::read(fd, bytes.data() + old, kReadChunk);
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      return UnavailableError(path + ": read failed: " + std::strerror(err));
    }
    bytes.resize(old + static_cast<size_t>(got));
    if (got == 0) break;
    if (static_cast<int64_t>(bytes.size()) > limit) {
      ::close(fd);
      return LimitExceeded(LimitId::kProfileTraceBytes, path);
    }
  }
  ::close(fd);
  return bytes;
}

bool IsGzipMagic(const std::string& bytes, size_t at) {
  return at + 1 < bytes.size() && static_cast<uint8_t>(bytes[at]) == 0x1f && static_cast<uint8_t>(bytes[at + 1]) == 0x8b;
}

std::string InflateErrorText(int code) {
  switch (code) {
    case ISAL_INVALID_BLOCK: return "an invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "an invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK: return "an invalid back-reference distance";
    case ISAL_INVALID_WRAPPER: return "an invalid gzip header";
    case ISAL_INCORRECT_CHECKSUM: return "a CRC mismatch in the gzip trailer";
    default: return "inflate error " + std::to_string(code);
  }
}

// simdjson's SIMD validator answers yes or no; only a bad file pays for the byte walk that finds where.
size_t FirstInvalidUtf8(std::string_view text) {
  if (simdjson::validate_utf8(text.data(), text.size())) return text.size();
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) return i;
    i += n;
  }
  return text.size();
}

// Kernel names repeat millions of times over a few thousand distinct values.
class NameTable {
 public:
  uint32_t Intern(std::string_view name) {
    if (auto it = index_.find(name); it != index_.end()) return it->second;
    storage_.emplace_back(name);
    const auto id = static_cast<uint32_t>(storage_.size() - 1);
    index_.emplace(storage_.back(), id);
    return id;
  }
  const std::string& Name(uint32_t id) const { return storage_[id]; }
  size_t size() const { return storage_.size(); }

 private:
  std::deque<std::string> storage_;
  std::unordered_map<std::string_view, uint32_t> index_;
};

struct ParseState {
  NameTable names;
  // X events by (pid, tid), kept as they will be used: a kernel is 24 bytes, the JSON text 130.
  std::map<std::pair<int64_t, int64_t>, std::vector<TraceKernel>> lines;
  std::pair<int64_t, int64_t> last_line{-1, -1};
  std::vector<TraceKernel>* last = nullptr;
  std::map<int64_t, std::string> process_names;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  std::vector<std::pair<int64_t, TraceStep>> step_events;   // pid, step
  int64_t x_events = 0;
};

std::optional<int64_t> ParseInteger(std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The fields of one event that matter; every other field is skipped unread. The views point into
// the document or simdjson's string buffer, both alive until the run of events is parsed.
struct EventFields {
  std::string_view ph;
  std::string_view name;
  int64_t pid = 0;
  int64_t tid = 0;
  double ts = 0;
  double dur = 0;
  std::string_view arg_name;
  std::optional<int64_t> step_num;

  void Reset() { *this = EventFields(); }
};

// Numbers may be written as integers or fractions; simdjson's get_double takes both.
simdjson::error_code ReadNumber(simdjson::ondemand::value value, double* out) {
  return value.get_double().get(*out);
}

// A pid, tid or step number beyond int64 (or not finite) is refused: converting it would be
// undefined behaviour (found by fuzz/trace_reader).
simdjson::error_code ReadInteger(simdjson::ondemand::value value, int64_t* out) {
  // Integers are the common case and parse without the floating-point path.
  if (value.get_int64().get(*out) == simdjson::SUCCESS) return simdjson::SUCCESS;
  double d = 0;
  if (auto error = value.get_double().get(d)) return error;
  if (!(std::fabs(d) < 9.2e18)) return simdjson::NUMBER_OUT_OF_RANGE;
  *out = static_cast<int64_t>(d);
  return simdjson::SUCCESS;
}

// The exporter writes keys without escapes: such a key is compared where it lies, and only a key
// holding a backslash is unescaped (a copy into simdjson's string buffer, once per key, was the
// largest share of the parse). Stage 1 found the key's closing quote, so the walk ends there.
simdjson::error_code KeyOf(simdjson::simdjson_result<simdjson::ondemand::field>& field, std::string_view* key) {
  simdjson::ondemand::raw_json_string raw_key;
  if (auto error = field.key().get(raw_key)) return error;
  const char* raw = raw_key.raw();
  size_t length = 0;
  while (raw[length] != '"' && raw[length] != '\\') ++length;
  if (raw[length] == '"') {
    *key = std::string_view(raw, length);
    return simdjson::SUCCESS;
  }
  return field.unescaped_key().get(*key);
}

simdjson::error_code ReadArgs(simdjson::ondemand::object args, EventFields* fields) {
  for (auto field : args) {
    std::string_view key;
    if (auto error = KeyOf(field, &key)) return error;
    if (key != "name" && key != "step_num") continue;
    simdjson::ondemand::value value;
    if (auto error = field.value().get(value)) return error;
    simdjson::ondemand::json_type type;
    if (auto error = value.type().get(type)) return error;
    if (type != simdjson::ondemand::json_type::string) continue;   // the exporter writes strings only
    std::string_view text;
    if (auto error = value.get_string().get(text)) return error;
    if (key == "name") fields->arg_name = text;
    else fields->step_num = ParseInteger(text);
  }
  return simdjson::SUCCESS;
}

simdjson::error_code ReadEvent(simdjson::ondemand::object event, EventFields* fields) {
  for (auto field : event) {
    std::string_view key;
    if (auto error = KeyOf(field, &key)) return error;
    simdjson::ondemand::value value;
    if (auto error = field.value().get(value)) return error;
    if (key == "ph") {
      if (auto error = value.get_string().get(fields->ph)) return error;
    } else if (key == "name") {
      if (auto error = value.get_string().get(fields->name)) return error;
    } else if (key == "pid") {
      if (auto error = ReadInteger(value, &fields->pid)) return error;
    } else if (key == "tid") {
      if (auto error = ReadInteger(value, &fields->tid)) return error;
    } else if (key == "ts") {
      if (auto error = ReadNumber(value, &fields->ts)) return error;
    } else if (key == "dur") {
      if (auto error = ReadNumber(value, &fields->dur)) return error;
    } else if (key == "args") {
      simdjson::ondemand::object args;
      if (value.get_object().get(args) == simdjson::SUCCESS) {
        if (auto error = ReadArgs(args, fields)) return error;
      }
    }
  }
  return simdjson::SUCCESS;
}

void Record(EventFields& fields, ParseState* state) {
  if (fields.ph == "M") {
    if (fields.name == "process_name") state->process_names[fields.pid] = std::string(fields.arg_name);
    else if (fields.name == "thread_name") state->thread_names[{fields.pid, fields.tid}] = std::string(fields.arg_name);
    return;
  }
  if (fields.ph != "X") return;
  ++state->x_events;
  if (fields.step_num) {
    state->step_events.push_back({fields.pid, TraceStep{*fields.step_num, fields.ts, fields.dur}});
  }
  // Events of one line come in runs: the last line found is tried first.
  const std::pair<int64_t, int64_t> line{fields.pid, fields.tid};
  if (state->last == nullptr || state->last_line != line) {
    state->last = &state->lines[line];
    state->last_line = line;
  }
  state->last->push_back(
      TraceKernel{fields.ts, fields.ts + std::max(0.0, fields.dur), state->names.Intern(fields.name), 0});
}

std::optional<int> DeviceOfProcessName(const std::string& name) {
  static constexpr std::string_view kPrefix = "/device:GPU:";
  if (name.rfind(kPrefix, 0) != 0) return std::nullopt;
  auto number = ParseInteger(std::string_view(name).substr(kPrefix.size()));
  if (!number || *number < 0) return std::nullopt;
  return static_cast<int>(*number);
}

// xprof's own pid for a device: 1 + plane id in the raw export, 1001 + plane id once remapped.
constexpr int64_t kRemappedPidBase = 1001;
constexpr int64_t kRawPidMax = 100;
// ts and dur are written from picoseconds; back-to-back slices may overlap by a rounding error.
constexpr double kTouchingUs = 1e-3;

// Builds each GPU's streams and kernels from the raw events; clips overrunning slices.
void AssembleGpus(ParseState& state, TraceFile* file) {
  std::map<int64_t, int> device_of_pid;
  for (const auto& [pid, name] : state.process_names)
    if (auto device = DeviceOfProcessName(name)) device_of_pid[pid] = *device;
  if (device_of_pid.empty()) {
    // No process names: the pid ranges xprof uses still identify the devices.
    std::set<int64_t> seen;
    for (const auto& [line, unused] : state.lines) seen.insert(line.first);
    for (const int64_t pid : seen) {
      if (pid >= 1 && pid <= kRawPidMax) device_of_pid[pid] = static_cast<int>(pid - 1);
      else if (pid >= kRemappedPidBase && pid < kRemappedPidBase + kRawPidMax)
        device_of_pid[pid] = static_cast<int>(pid - kRemappedPidBase);
    }
    if (!device_of_pid.empty())
      file->warnings.push_back(file->path + ": no process_name metadata; " + std::to_string(device_of_pid.size()) +
                               " GPU(s) taken from their pid numbers");
  }
  bool raw = false, remapped = false;
  for (const auto& [pid, device] : device_of_pid) (pid >= kRemappedPidBase ? remapped : raw) = true;
  file->numbering = raw && remapped ? PidNumbering::kMixed
                    : remapped      ? PidNumbering::kRemapped
                    : raw           ? PidNumbering::kRaw
                                    : PidNumbering::kUnknown;

  std::map<int64_t, size_t> gpu_index;
  for (const auto& [pid, device] : device_of_pid) {
    gpu_index[pid] = file->gpus.size();
    TraceGpu gpu;
    gpu.pid = pid;
    gpu.device = device;
    file->gpus.push_back(std::move(gpu));
  }
  int64_t unnamed_streams = 0;
  for (auto& [line, kernels] : state.lines) {
    auto g = gpu_index.find(line.first);
    if (g == gpu_index.end()) continue;
    TraceGpu& gpu = file->gpus[g->second];
    auto name = state.thread_names.find(line);
    TraceStream stream;
    stream.tid = line.second;
    stream.named = name != state.thread_names.end();
    if (stream.named) stream.name = name->second;
    else ++unnamed_streams;
    // Lines that are not streams (xprof's derived "XLA Ops"/"XLA Modules"/"Steps") repeat the
    // kernels' time; only "Stream #N" lines (and unnamed ones) hold kernels.
    if (stream.named && stream.name.rfind("Stream", 0) != 0) continue;
    const auto index = static_cast<uint32_t>(gpu.streams.size());
    gpu.streams.push_back(std::move(stream));
    for (auto& k : kernels) k.stream = index;
    gpu.kernels.insert(gpu.kernels.end(), kernels.begin(), kernels.end());
    std::vector<TraceKernel>().swap(kernels);   // one line's copy at a time, not the file's
  }
  if (unnamed_streams > 0)
    file->warnings.push_back(file->path + ": " + std::to_string(unnamed_streams) +
                             " device thread(s) without thread_name metadata; their slices are counted as "
                             "kernels on a stream named by its tid");

  const auto by_stream_then_start = [](const TraceKernel& a, const TraceKernel& b) {
    return a.stream != b.stream ? a.stream < b.stream : a.start_us < b.start_us;
  };
  for (auto& gpu : file->gpus) {
    // The exporter writes each stream's slices in time order: the check is one pass, the sort n log n.
    if (!std::is_sorted(gpu.kernels.begin(), gpu.kernels.end(), by_stream_then_start))
      std::sort(gpu.kernels.begin(), gpu.kernels.end(), by_stream_then_start);
    // One stream runs one kernel at a time: a slice that overruns the next one's start is clipped
    // there, as Perfetto draws it (TraceLens #669 sums them raw and over-counts).
    for (size_t i = 0; i + 1 < gpu.kernels.size(); ++i) {
      TraceKernel& k = gpu.kernels[i];
      const TraceKernel& next = gpu.kernels[i + 1];
      if (next.stream != k.stream || k.end_us <= next.start_us + kTouchingUs) continue;
      ++file->clipped_slices;
      file->clipped_us += k.end_us - std::max(next.start_us, k.start_us);
      k.end_us = std::max(next.start_us, k.start_us);
    }
  }
  if (file->clipped_slices > 0) {
    char text[64];
    std::snprintf(text, sizeof text, "%.6f", file->clipped_us / 1e6);
    file->warnings.push_back(file->path + ": " + std::to_string(file->clipped_slices) +
                             " slice(s) ran past the next slice on the same stream; clipped at its start (" +
                             text + " s not counted)");
  }

  // The host's step annotations: the process that is no device.
  std::map<int64_t, TraceStep> steps;
  for (const auto& [pid, step] : state.step_events) {
    if (device_of_pid.count(pid) > 0) continue;
    auto [it, inserted] = steps.try_emplace(step.step, step);
    if (!inserted) it->second.dur_us = std::max(it->second.dur_us, step.dur_us);
  }
  for (const auto& [number, step] : steps) file->steps.push_back(step);
}

constexpr std::array<bool, 256> kStructural = [] {
  std::array<bool, 256> table{};
  for (const char c : std::string_view("\"{}[]")) table[static_cast<uint8_t>(c)] = true;
  return table;
}();

constexpr size_t kBlock = 64;

// Bits of 64 bytes: quotes, backslashes, and the brackets {}[] (strings not yet masked out).
struct BlockBits {
  uint64_t quote = 0, backslash = 0, bracket = 0;
};

BlockBits ClassifyBlock(const char* block) {
  BlockBits bits;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  // '[' | 0x20 is '{' and ']' | 0x20 is '}': one compare finds both of a pair.
  const __m128i lower = _mm_set1_epi8(0x20), open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
  for (size_t i = 0; i < kBlock / 16; ++i) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * i));
    const __m128i folded = _mm_or_si128(bytes, lower);
    const auto mask = [](__m128i m) { return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(m))); };
    bits.quote |= mask(_mm_cmpeq_epi8(bytes, quote)) << (16 * i);
    bits.backslash |= mask(_mm_cmpeq_epi8(bytes, backslash)) << (16 * i);
    bits.bracket |= mask(_mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close))) << (16 * i);
  }
#else
  for (size_t i = 0; i < kBlock; ++i) {
    const char c = block[i];
    bits.quote |= static_cast<uint64_t>(c == '"') << i;
    bits.backslash |= static_cast<uint64_t>(c == '\\') << i;
    bits.bracket |= static_cast<uint64_t>(c == '{' || c == '}' || c == '[' || c == ']') << i;
  }
#endif
  return bits;
}

// The brackets outside strings, 64 bytes at a time, as simdjson's stage 1 finds its structurals:
// a quote is escaped when an odd run of backslashes precedes it, and a prefix XOR of the unescaped
// quotes marks the inside of every string. Both states carry into the next block.
class StructuralScanner {
 public:
  uint64_t Brackets(const char* block) {
    const BlockBits bits = ClassifyBlock(block);
    const uint64_t quotes = bits.quote & ~Escaped(bits.backslash);
    const uint64_t in_string = PrefixXor(quotes) ^ in_string_;
    in_string_ = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
    return bits.bracket & ~in_string;
  }

 private:
  static uint64_t PrefixXor(uint64_t bits) {
    for (int shift = 1; shift < 64; shift *= 2) bits ^= bits << shift;
    return bits;
  }

  // The characters that follow an odd run of backslashes (simdjson's find_escaped_branchless).
  uint64_t Escaped(uint64_t backslash) {
    constexpr uint64_t kEvenBits = 0x5555555555555555ULL;
    backslash &= ~escaped_;
    const uint64_t follows_escape = backslash << 1 | escaped_;
    const uint64_t odd_starts = backslash & ~kEvenBits & ~follows_escape;
    uint64_t even_starts = 0;
    escaped_ = __builtin_add_overflow(odd_starts, backslash, &even_starts) ? 1 : 0;
    const uint64_t invert = even_starts << 1;
    return (kEvenBits ^ invert) & follows_escape;
  }

  uint64_t in_string_ = 0;   // all ones when the last block ended inside a string
  uint64_t escaped_ = 0;     // 1 when it ended in an odd run of backslashes
};

// The traceEvents array of a document inflated into this parser's buffer a piece at a time. The
// bracket scan (above) finds where complete events end, and each run of complete events is parsed
// by simdjson in place: the byte before the run and the one after it become '[' and ']' for the
// parse, and the buffer keeps simdjson's padding after its end. Memory is a piece, the unfinished
// event carried to the next, and the events kept, never the whole document, so a file's cost does
// not grow with its JSON text and several files can be read at once.
class TraceStreamParser {
 public:
  TraceStreamParser(std::string path, const TraceReadOptions& options) : path_(std::move(path)), options_(options) {}

  // Where the next `bytes` decompressed bytes are written, then handed over with Commit.
  char* Reserve(size_t bytes) {
    if (capacity_ - size_ < bytes) {
      // A quarter over what is asked, so the carried tail of an event does not force a copy of
      // the buffer at every piece.
      const size_t capacity = std::max(size_ + bytes + bytes / 4, capacity_ + capacity_ / 2 + kBlock);
      auto data = std::make_unique_for_overwrite<char[]>(capacity + kSlack);
      if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
      data_ = std::move(data);
      capacity_ = capacity;
    }
    return data_.get() + size_;
  }

  Status Commit(size_t bytes) {
    size_ += bytes;
    Scan(/*at_end=*/false);
    if (failed_) return UnbalancedError();
    if (last_event_end_ > first_event_start_) RETURN_IF_ERROR(ParseEvents());
    // Keep only what is not parsed yet (the tail of an unfinished event), and the byte before it.
    size_t keep_from = std::min({scan_, pending_start_.value_or(scan_), key_start_.value_or(scan_)});
    if (keep_from > 0) --keep_from;
    std::memmove(data_.get(), data_.get() + keep_from, size_ - keep_from);
    size_ -= keep_from;
    base_ += static_cast<int64_t>(keep_from);
    scan_ -= keep_from;
    if (pending_start_) *pending_start_ -= keep_from;
    if (key_start_) *key_start_ -= keep_from;
    first_event_start_ = last_event_end_ = 0;
    return Status::Ok();
  }

  Status Feed(std::string_view piece) {
    if (piece.empty()) return Status::Ok();
    std::memcpy(Reserve(piece.size()), piece.data(), piece.size());
    return Commit(piece.size());
  }

  StatusOr<TraceFile> Finish() {
    Scan(/*at_end=*/true);
    if (failed_) return UnbalancedError();
    if (last_event_end_ > first_event_start_) RETURN_IF_ERROR(ParseEvents());
    if (phase_ == Phase::kBeforeArray)
      return ParseError(path_ + ": no traceEvents array: not a Chrome trace-event file");
    if (phase_ == Phase::kInArray || depth_ != 0)
      return ParseError(path_ + ": not a trace-event JSON file: the document ends at byte " +
                        std::to_string(base_ + static_cast<int64_t>(size_)) + " inside " +
                        (phase_ == Phase::kInArray ? "traceEvents" : "the top-level object"));
    TraceFile file;
    file.path = path_;
    file.host = HostOfTraceFile(path_);
    file.window_dir = std::filesystem::path(path_).parent_path().filename().string();
    file.uncompressed_bytes = base_ + static_cast<int64_t>(size_);
    file.events = state_.x_events;
    file.truncated = options_.event_cap > 0 && state_.x_events >= options_.event_cap;
    if (file.truncated)
      file.warnings.push_back(path_ + ": " + std::to_string(state_.x_events) +
                              " events, the exporter's cap: the window is truncated (later steps are missing); "
                              "raise TF_PROFILER_TRACE_VIEWER_MAX_EVENTS and profile again");
    AssembleGpus(state_, &file);
    file.names.reserve(state_.names.size());
    for (size_t i = 0; i < state_.names.size(); ++i) file.names.push_back(state_.names.Name(static_cast<uint32_t>(i)));
    return file;
  }

 private:
  enum class Phase { kBeforeArray, kInArray, kAfterArray };
  // The ']' written after a run of events, then simdjson's padding.
  static constexpr size_t kSlack = 1 + simdjson::SIMDJSON_PADDING;

  Status UnbalancedError() const {
    if (!refusal_.empty()) return ParseError(path_ + ": not a trace-event JSON file: " + refusal_);
    return ParseError(path_ + ": not a trace-event JSON file: unbalanced brackets at byte " +
                      std::to_string(base_ + static_cast<int64_t>(scan_)));
  }

  static std::string NestingTooDeep() { return "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels"; }

  void Refuse(size_t at, const std::string& what) {
    failed_ = true;
    refusal_ = what + " at byte " + std::to_string(base_ + static_cast<int64_t>(at));
  }

  void Scan(bool at_end) {
    if (phase_ == Phase::kBeforeArray) ScanHeader();
    if (phase_ != Phase::kBeforeArray) ScanBlocks(at_end);
  }

  // The top-level object up to the traceEvents array, a byte at a time: it is a few dozen bytes,
  // and finding the array needs the text of each top-level key.
  void ScanHeader() {
    const char* data = data_.get();
    while (scan_ < size_ && !failed_ && phase_ == Phase::kBeforeArray) {
      if (in_string_) {
        const void* quote = std::memchr(data + scan_, '"', size_ - scan_);
        if (quote == nullptr) {
          scan_ = size_;
          break;
        }
        size_t at = static_cast<const char*>(quote) - data;
        // An escaped quote has an odd number of backslashes before it.
        size_t slashes = 0;
        while (at > slashes && data[at - 1 - slashes] == '\\') ++slashes;
        scan_ = at + 1;
        if (slashes % 2 == 1) continue;
        in_string_ = false;
        if (depth_ == 1 && key_start_) last_key_ = std::string_view(data + *key_start_, at - *key_start_) == "traceEvents";
        key_start_.reset();
        continue;
      }
      while (scan_ < size_ && !kStructural[static_cast<uint8_t>(data[scan_])]) ++scan_;
      if (scan_ == size_) break;
      const char c = data[scan_];
      if (c == '"') {
        in_string_ = true;
        if (depth_ == 1) key_start_ = scan_ + 1;
      } else if (c == '{' || c == '[') {
        ++depth_;
        if (c == '[' && depth_ == 2 && last_key_) phase_ = Phase::kInArray;
        if (static_cast<size_t>(depth_) > kMaxJsonDepth) Refuse(scan_, NestingTooDeep());
      } else {
        if (depth_ == 0) failed_ = true;
        --depth_;
      }
      ++scan_;
    }
  }

  // From the array on, whole 64-byte blocks; at the end of the document the last part block too,
  // padded with spaces.
  void ScanBlocks(bool at_end) {
    while (!failed_) {
      const char* block = data_.get() + scan_;
      char last[kBlock];
      if (size_ - scan_ < kBlock) {
        if (!at_end || scan_ == size_) return;
        std::memset(last, ' ', kBlock);
        std::memcpy(last, block, size_ - scan_);
        block = last;
      }
      for (uint64_t brackets = blocks_.Brackets(block); brackets != 0; brackets &= brackets - 1) {
        const size_t at = scan_ + static_cast<size_t>(__builtin_ctzll(brackets));
        OnBracket(at, data_[at]);
        if (failed_) {
          scan_ = at;
          return;
        }
      }
      scan_ = std::min(scan_ + kBlock, size_);
    }
  }

  void OnBracket(size_t at, char c) {
    if (c == '{' || c == '[') {
      ++depth_;
      if (c == '{' && depth_ == 3 && phase_ == Phase::kInArray && !pending_start_) pending_start_ = at;
      // An array where an event belongs was skipped unread, so 200,000 nested ones read as a
      // trace of no events; and no trace nests anywhere near kMaxJsonDepth.
      if (c == '[' && depth_ == 3 && phase_ == Phase::kInArray) Refuse(at, "an array where an event (an object) belongs");
      if (static_cast<size_t>(depth_) > kMaxJsonDepth) Refuse(at, NestingTooDeep());
      return;
    }
    if (depth_ == 0) {
      failed_ = true;
      return;
    }
    --depth_;
    if (phase_ != Phase::kInArray) return;
    if (c == '}' && depth_ == 2 && pending_start_) {
      if (last_event_end_ <= first_event_start_) first_event_start_ = *pending_start_;
      last_event_end_ = at + 1;
      pending_start_.reset();
    } else if (c == ']' && depth_ == 1) {
      phase_ = Phase::kAfterArray;
    }
  }

  Status ParseEvents() {
    // The byte before the first event (a comma, space or the array's '['): Commit keeps it.
    if (first_event_start_ == 0) return InternalError(path_ + ": trace reader lost the byte before an event");
    char* const data = data_.get();
    const std::string_view events(data + first_event_start_, last_event_end_ - first_event_start_);
    const int64_t offset = base_ + static_cast<int64_t>(first_event_start_);
    if (!simdjson::validate_utf8(events.data(), events.size())) {
      const size_t bad = FirstInvalidUtf8(events);
      return DataLossError(path_ + ": invalid UTF-8 at byte " + std::to_string(offset + static_cast<int64_t>(bad)) +
                           " of the decompressed JSON");
    }
    char* const open = data + first_event_start_ - 1;
    char* const close = data + last_event_end_;
    const char saved_open = *open, saved_close = *close;
    *open = '[';
    *close = ']';
    const size_t length = static_cast<size_t>(close - open) + 1;
    Status status = ParseEventArray(open, length, offset);
    *open = saved_open;
    *close = saved_close;
    return status;
  }

  // `array` is "[event,...,event]" with kSlack - 1 padding bytes allocated after it.
  Status ParseEventArray(const char* array, size_t length, int64_t offset) {
    simdjson::ondemand::document doc;
    const auto where = [&](simdjson::error_code error) {
      const char* at = nullptr;
      std::string text = path_;
      if (doc.current_location().get(at) == simdjson::SUCCESS && at != nullptr)
        text += " (byte " + std::to_string(offset + (at - array) - 1) + " of the decompressed JSON)";
      return ParseError(text + ": not a trace-event JSON file: " + simdjson::error_message(error));
    };
    if (auto error = parser_.iterate(array, length, length + simdjson::SIMDJSON_PADDING).get(doc))
      return ParseError(path_ + ": not a trace-event JSON file: " + simdjson::error_message(error));
    simdjson::ondemand::array events;
    if (auto error = doc.get_array().get(events)) return where(error);
    EventFields fields;
    for (auto element : events) {
      simdjson::ondemand::object event;
      if (auto error = element.get_object().get(event)) return where(error);
      fields.Reset();
      if (auto error = ReadEvent(event, &fields)) return where(error);
      Record(fields, &state_);
    }
    return Status::Ok();
  }

  std::string path_;
  TraceReadOptions options_;
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;         // data_ holds capacity_ + kSlack bytes
  simdjson::ondemand::parser parser_;
  ParseState state_;
  StructuralScanner blocks_;
  int64_t base_ = 0;            // offset of data_[0] in the document
  size_t scan_ = 0;
  int depth_ = 0;
  bool in_string_ = false;      // ScanHeader's
  bool failed_ = false;
  std::string refusal_;   // why the scan stopped, when not on an unbalanced bracket
  bool last_key_ = false;       // the last key of the top-level object was traceEvents
  std::optional<size_t> key_start_;
  std::optional<size_t> pending_start_;   // where the event being scanned began
  size_t first_event_start_ = 0, last_event_end_ = 0;
  Phase phase_ = Phase::kBeforeArray;
};

}  // namespace

const char* PidNumberingName(PidNumbering numbering) {
  switch (numbering) {
    case PidNumbering::kRaw: return "raw (1 + plane id)";
    case PidNumbering::kRemapped: return "remapped (1001 + plane id)";
    case PidNumbering::kMixed: return "mixed raw and remapped";
    case PidNumbering::kUnknown: break;
  }
  return "no device pids";
}

std::string TraceFileStem(std::string_view path) {
  const std::string name = std::filesystem::path(std::string(path)).filename().string();
  for (std::string_view suffix : {".trace.json.gz", ".trace.json"})
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return name.substr(0, name.size() - suffix.size());
  return "";
}

std::string HostOfTraceFile(std::string_view path) {
  std::string name = TraceFileStem(path);
  if (name.empty()) name = std::filesystem::path(std::string(path)).filename().string();
  if (const size_t proc = name.rfind(".proc"); proc != std::string::npos && proc > 0) {
    const std::string_view digits = std::string_view(name).substr(proc + 5);
    if (!digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      name.resize(proc);
  }
  return name;
}

namespace {

// Every gzip member of `path` inflated into room the caller gives: `room(bytes)` says where up to
// `bytes` bytes may be written, `took(count)` is told how many were. A trace parser gives room in
// its own buffer, so the decompressed bytes are never copied on their way to simdjson.
template <typename Room, typename Took>
Status InflateGzipInto(const std::string& path, size_t piece_bytes, Room&& room, Took&& took) {
  ASSIGN_OR_RETURN(std::string compressed, ReadWholeFile(path));
  const int64_t limit = GetLimit(LimitId::kProfileTraceBytes);
  if (!IsGzipMagic(compressed, 0)) return DataLossError(path + ": not a gzip file (no gzip magic at byte 0)");
  // A small file needs no full piece: JSON this regular inflates about 15-fold.
  const size_t piece = std::clamp<size_t>(compressed.size() * 16, 1, std::max<size_t>(piece_bytes, 1));
  int64_t produced = 0;
  size_t member_start = 0;
  inflate_state state;
  while (member_start < compressed.size()) {
    isal_inflate_init(&state);
    state.crc_flag = ISAL_GZIP;
    state.next_in = reinterpret_cast<uint8_t*>(compressed.data() + member_start);
    state.avail_in = static_cast<uint32_t>(compressed.size() - member_start);
    for (;;) {
      state.next_out = reinterpret_cast<uint8_t*>(room(piece));
      state.avail_out = static_cast<uint32_t>(piece);
      const int rc = isal_inflate(&state);
      const size_t got = piece - state.avail_out;
      produced += static_cast<int64_t>(got);
      const size_t consumed = compressed.size() - member_start - state.avail_in;
      if (rc < 0)
        return DataLossError(path + ": corrupt gzip stream: " + InflateErrorText(rc) + " near compressed byte " +
                             std::to_string(member_start + consumed));
      if (produced > limit) return LimitExceeded(LimitId::kProfileTraceBytes, path + " decompressed");
      if (got > 0) RETURN_IF_ERROR(took(got));
      if (state.block_state == ISAL_BLOCK_FINISH) {
        member_start += consumed;
        break;
      }
      if (state.avail_in == 0 && state.avail_out > 0)
        return DataLossError(path + ": truncated gzip: the compressed stream ends at byte " +
                             std::to_string(compressed.size()) + " before the end of its member (" +
                             std::to_string(produced) + " bytes decompressed)");
    }
    if (!IsGzipMagic(compressed, member_start)) break;   // trailing padding after the last member
  }
  return Status::Ok();
}

}  // namespace

Status InflateGzipStream(const std::string& path, const std::function<Status(std::string_view)>& sink,
                         size_t piece_bytes) {
  std::string out;
  return InflateGzipInto(
      path, piece_bytes,
      [&](size_t bytes) {
        out.resize(bytes);
        return out.data();
      },
      [&](size_t got) { return sink(std::string_view(out.data(), got)); });
}

StatusOr<std::string> InflateGzipFile(const std::string& path) {
  std::string out;
  RETURN_IF_ERROR(InflateGzipStream(path, [&](std::string_view piece) {
    out.append(piece);
    return Status::Ok();
  }));
  return out;
}

StatusOr<TraceFile> ParseTraceJson(std::string json, const std::string& path, const TraceReadOptions& options) {
  TraceStreamParser parser(path, options);
  const size_t piece = std::max<size_t>(options.piece_bytes, 1);
  for (size_t at = 0; at < json.size(); at += piece)
    RETURN_IF_ERROR(parser.Feed(std::string_view(json).substr(at, piece)));
  json.clear();
  json.shrink_to_fit();
  return parser.Finish();
}

StatusOr<TraceFile> ReadTraceFile(const std::string& path, const TraceReadOptions& options) {
  const bool gzipped = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (!gzipped) {
    ASSIGN_OR_RETURN(std::string json, ReadWholeFile(path));
    return ParseTraceJson(std::move(json), path, options);
  }
  TraceStreamParser parser(path, options);
  int64_t decompressed = 0;
  RETURN_IF_ERROR(InflateGzipInto(
      path, options.piece_bytes, [&](size_t bytes) { return parser.Reserve(bytes); },
      [&](size_t got) -> Status {
        decompressed += static_cast<int64_t>(got);
        if (options.deadline && std::chrono::steady_clock::now() >= *options.deadline)
          return DeadlineExceededError("the run's deadline passed while reading " + path + " (after " +
                                       std::to_string(decompressed) + " decompressed bytes)");
        return parser.Commit(got);
      }));
  return parser.Finish();
}

}  // namespace diagnose::profile
