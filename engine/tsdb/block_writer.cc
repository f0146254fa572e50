#include "engine/tsdb/block_writer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <unordered_set>

#include "engine/core/cleanup_registry.h"
#include "engine/core/subprocess.h"
#include "engine/tsdb/native_block_writer.h"
#include "engine/tsdb/tsdb_dir.h"

namespace diagnose {
namespace fs = std::filesystem;
namespace {

bool IsMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
              (i > 0 && std::isdigit(static_cast<unsigned char>(c)));
    if (!ok) return false;
  }
  return true;
}

bool IsLabelName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
              (i > 0 && std::isdigit(static_cast<unsigned char>(c)));
    if (!ok) return false;
  }
  return true;
}

// OpenMetrics label-value escaping: only backslash, double quote and newline are escaped.
void AppendEscapedLabelValue(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

void AppendValue(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
    out.append(buf, res.ptr);
  }
}

// Seconds with millisecond precision: promtool reads the field as seconds, and the TSDB keeps ms.
void AppendTimestampMs(std::string& out, int64_t ms) {
  if (ms < 0) {
    out += '-';
    ms = -ms;
  }
  char buf[32];
  char* end = std::to_chars(buf, buf + sizeof buf, ms / 1000).ptr;
  const int64_t millis = ms % 1000;
  *end++ = '.';
  *end++ = static_cast<char>('0' + millis / 100);
  *end++ = static_cast<char>('0' + millis / 10 % 10);
  *end++ = static_cast<char>('0' + millis % 10);
  out.append(buf, end);
}

// `name{a="x",b="y"}`; __name__ is the metric name, never a label in the braces.
StatusOr<std::string> SeriesPrefix(const Labels& labels) {
  auto name_it = labels.find("__name__");
  if (name_it == labels.end() || name_it->second.empty()) {
    return InvalidArgumentError("series without a __name__ label cannot be written to a block");
  }
  if (!IsMetricName(name_it->second)) {
    return InvalidArgumentError("metric name '" + name_it->second +
                                "' is not valid in OpenMetrics ([a-zA-Z_:][a-zA-Z0-9_:]*)");
  }
  std::string out = name_it->second;
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (name == "__name__") continue;
    if (!IsLabelName(name) || name.rfind("__", 0) == 0) {
      return InvalidArgumentError("label name '" + name + "' of metric '" + name_it->second +
                                  "' is not valid in OpenMetrics ([a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)");
    }
    out += first ? '{' : ',';
    first = false;
    out += name;
    out += "=\"";
    AppendEscapedLabelValue(out, value);
    out += '"';
  }
  if (!first) out += '}';
  return out;
}

std::string TempRoot() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir && *tmpdir ? tmpdir : "/tmp";
}

int64_t DirectoryBytes(const fs::path& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

// What promtool stores for the seconds text AppendTimestampMs writes: its OpenMetrics parser keeps
// int64(seconds * 1000), truncated. The text is exactly ms/1000, which parses to the double nearest
// it, as the division here gives.
int64_t PromtoolStoredMs(int64_t ms) { return static_cast<int64_t>(static_cast<double>(ms) / 1000.0 * 1000.0); }

// A series' samples in ms, sorted (stable: of samples with the same millisecond, the first one
// given wins) and de-duplicated; `duplicates` counts the ones dropped.
StatusOr<std::vector<TimedSample>> SortedUniqueSamples(std::vector<Sample>& given, const std::string& series_name,
                                                       int64_t& duplicates) {
  std::vector<TimedSample> samples;
  samples.reserve(given.size());
  for (const auto& s : given) {
    if (!std::isfinite(s.t)) return InvalidArgumentError("series " + series_name + " has a non-finite timestamp");
    samples.push_back({static_cast<int64_t>(std::llround(s.t * 1000.0)), s.v});
  }
  given.clear();
  given.shrink_to_fit();
  auto earlier = [](const TimedSample& a, const TimedSample& b) { return a.ms < b.ms; };
  if (!std::is_sorted(samples.begin(), samples.end(), earlier)) std::stable_sort(samples.begin(), samples.end(), earlier);
  size_t kept = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (kept > 0 && samples[i].ms == samples[kept - 1].ms) {
      ++duplicates;
      continue;
    }
    samples[kept++] = samples[i];
  }
  samples.resize(kept);
  return samples;
}

}  // namespace

std::optional<BlockEncoder> BlockEncoderNamed(std::string_view name) {
  if (name == "native") return BlockEncoder::kNative;
  if (name == "promtool") return BlockEncoder::kPromtool;
  return std::nullopt;
}

StatusOr<int64_t> PromtoolBlockWindowMs(std::string_view max_block_duration) {
  // Prometheus duration syntax: units concatenated from largest to smallest, e.g. "6h", "1h30m".
  static constexpr std::pair<std::string_view, int64_t> kUnits[] = {
      {"ms", 1},           {"s", 1000},          {"m", 60'000},           {"h", 3'600'000},
      {"d", 86'400'000},   {"w", 604'800'000},   {"y", 31'536'000'000}};
  std::string_view rest = max_block_duration;
  int64_t total = 0;
  if (rest.empty()) return InvalidArgumentError("empty --max-block-duration");
  while (!rest.empty()) {
    int64_t number = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), number);
    if (ec != std::errc() || end == rest.data()) {
      return InvalidArgumentError("--max-block-duration '" + std::string(max_block_duration) + "' is not a duration");
    }
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    int64_t unit = 0;
    for (const auto& [suffix, ms] : kUnits) {   // "ms" is tried before "m"
      if (rest.substr(0, suffix.size()) == suffix) {
        unit = ms;
        rest.remove_prefix(suffix.size());
        break;
      }
    }
    if (unit == 0) {
      return InvalidArgumentError("--max-block-duration '" + std::string(max_block_duration) + "' has no valid unit");
    }
    total += number * unit;
  }
  // promtool's getCompatibleBlockDuration: the largest of TSDB's ranges 2h x 3^k (k < 10) not above
  // the maximum, and 2h when the maximum is not above 2h.
  constexpr int64_t kDefaultBlockMs = 2 * 3'600'000;
  int64_t window = kDefaultBlockMs;
  for (int k = 1, range = 3; k < 10 && kDefaultBlockMs * range <= total; ++k, range *= 3) {
    window = kDefaultBlockMs * range;
  }
  return window;
}

struct BlockWriter::Impl {
  // One scratch file per block window of a batch; promtool reads it once, as a whole.
  struct WindowFile {
    int64_t window_start = 0;   // ms, a multiple of the window
    std::string path;
    std::FILE* out = nullptr;
    int64_t samples = 0;
  };

  // Has promtool turn each window file of a batch into blocks in output_dir (one run per file, two
  // at a time: promtool is single-threaded and a window's run holds only that window's samples;
  // each file removed once promtool consumed it), checking that the new blocks of each window hold
  // exactly the samples its file got. Runs on the promtool thread: only it writes to output_dir.
  static StatusOr<BlockWriteStats> BuildBlocksFromBatch(const std::vector<WindowFile>& files, int64_t window_ms,
                                                       const BlockWriteOptions& options) {
    std::error_code ec;
    fs::create_directories(options.output_dir, ec);
    if (ec) return UnavailableError("cannot create TSDB dir " + options.output_dir + ": " + ec.message());
    const std::string promtool = FindExecutable("promtool");
    if (promtool.empty()) return NotFoundError("promtool not found in PATH (Debian package 'prometheus')");
    std::set<std::string> existing;
    if (auto before = ListBlockDirs(options.output_dir); before.ok()) {
      for (const auto& b : *before) existing.insert(b.ulid);
    }
    std::vector<Status> runs(files.size());
    std::atomic<size_t> next{0};
    auto run_files = [&] {
      for (size_t i; (i = next++) < files.size();) {
        std::vector<std::string> argv = {promtool, "tsdb", "create-blocks-from", "openmetrics", "-q",
                                         "--max-block-duration=" + options.max_block_duration, files[i].path,
                                         options.output_dir};
        auto run = RunCommand(argv, std::chrono::milliseconds(
                                        static_cast<int64_t>(options.promtool_timeout_seconds * 1000)));
        if (!run.ok()) {
          runs[i] = run.status();
        } else if (run->exit_code != 0) {
          runs[i] = InternalError("promtool failed (exit " + std::to_string(run->exit_code) + ") building blocks in " +
                                  options.output_dir + ": " + run->output);
        }
        std::error_code removed;
        fs::remove(files[i].path, removed);
      }
    };
    {
      std::thread second(run_files);
      run_files();
      second.join();
    }
    for (const auto& run : runs) RETURN_IF_ERROR(run);
    auto after = ListBlockDirs(options.output_dir);
    if (!after.ok()) return after.status();
    BlockWriteStats result;   // what this batch added: blocks, bytes, samples_in_blocks, promtool_runs
    result.promtool_runs = static_cast<int>(files.size());
    std::map<int64_t, std::pair<int64_t, int>> stored_by_window;   // samples, blocks
    for (const auto& block : *after) {
      if (existing.count(block.ulid)) continue;
      auto& [stored, blocks] = stored_by_window[FloorToWindow(block.min_time_ms, window_ms)];
      stored += block.num_samples;
      ++blocks;
      ++result.blocks;
      result.samples_in_blocks += block.num_samples;
      result.bytes += DirectoryBytes(fs::path(options.output_dir) / block.ulid);
    }
    for (const auto& file : files) {
      const auto [stored, blocks] = stored_by_window[file.window_start];
      if (stored != file.samples) {
        int64_t diff = file.samples - stored;
        return DataLossError("promtool stored " + std::to_string(stored) + " samples in " + std::to_string(blocks) +
                             " new block(s) under " + options.output_dir + " but " + std::to_string(file.samples) +
                             " were written (" +
                             (diff > 0 ? std::to_string(diff) + " missing" : std::to_string(-diff) + " extra") + ")");
      }
    }
    return result;
  }

  static int64_t FloorToWindow(int64_t ms, int64_t window_ms) {
    int64_t q = ms / window_ms;
    if (ms % window_ms != 0 && ms < 0) --q;
    return q * window_ms;
  }

  BlockWriteOptions options;
  int64_t window_ms = 0;        // promtool's block window: each scratch file holds one
  std::string scratch_dir;      // ours (mkdtemp); every scratch file lives in it
  // The batch being written: its window files by window start, and the samples they hold.
  std::map<int64_t, WindowFile> window_files;
  int64_t samples_in_batch = 0;
  // promtool builds the previous batch while this one is written (its text is already complete).
  std::thread promtool_thread;
  StatusOr<BlockWriteStats> promtool_result = BlockWriteStats{};
  // Label sets already written: a second Add of the same series would interleave its samples with
  // the first and make promtool drop or reject them, so it is refused. Keys are small next to samples.
  std::unordered_set<std::string> seen_series;
  BlockWriteStats stats;
  Status error;                 // first write error; sticky
  std::optional<CleanupRegistry::Id> cleanup_id;   // removes the scratch dir on SIGINT/SIGTERM
  bool finished = false;
  std::unique_ptr<NativeBlockWriter> native;       // set for the native encoder; the rest is promtool's

  Status Open() {
    if (options.output_dir.empty()) return InvalidArgumentError("BlockWriter needs an output_dir");
    ASSIGN_OR_RETURN(window_ms, PromtoolBlockWindowMs(options.max_block_duration));
    if (options.encoder == BlockEncoder::kNative) {
      native = std::make_unique<NativeBlockWriter>(options.output_dir, window_ms);
      return Status::Ok();
    }
    AcquisitionScope acquiring;   // the scratch dir exists only once its cleanup does
    const std::string parent = options.scratch_dir.empty() ? TempRoot() : options.scratch_dir;
    std::string pattern = parent + "/diagnose-blocks-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) {
      return UnavailableError("cannot create a scratch dir under " + parent + ": " + std::strerror(errno));
    }
    scratch_dir = buf.data();
    cleanup_id = CleanupRegistry::Instance().Register("block writer scratch in " + scratch_dir,
                                                      [dir = scratch_dir] {
      std::error_code ec;
      fs::remove_all(dir, ec);
    });
    return Status::Ok();
  }

  StatusOr<WindowFile*> WindowFileFor(int64_t window_start) {
    WindowFile& file = window_files[window_start];
    if (file.out) return &file;
    file.window_start = window_start;
    AcquisitionScope creating;   // a signal's removal of the scratch dir never races a file's creation
    file.path = scratch_dir + "/window-" + std::to_string(window_start) + "-XXXXXX.om";
    std::vector<char> buf(file.path.begin(), file.path.end());
    buf.push_back('\0');
    int fd = mkostemps(buf.data(), 3, O_CLOEXEC);
    if (fd < 0) {
      return UnavailableError("cannot create an OpenMetrics scratch file in " + scratch_dir + ": " +
                              std::strerror(errno));
    }
    file.path = buf.data();
    file.out = fdopen(fd, "w");
    if (!file.out) {
      close(fd);
      return InternalError("fdopen failed for " + file.path);
    }
    static constexpr size_t kBuffer = 1 << 20;
    std::setvbuf(file.out, nullptr, _IOFBF, kBuffer);
    return &file;
  }

  // Waits for the promtool thread and adds what its batch built to the stats.
  Status JoinPromtool() {
    if (!promtool_thread.joinable()) return Status::Ok();
    promtool_thread.join();
    if (!promtool_result.ok()) return promtool_result.status();
    stats.blocks += promtool_result->blocks;
    stats.bytes += promtool_result->bytes;
    stats.samples_in_blocks += promtool_result->samples_in_blocks;
    stats.promtool_runs += promtool_result->promtool_runs;
    promtool_result = BlockWriteStats{};
    return Status::Ok();
  }

  // Ends the batch's window files and hands them to the promtool thread once the previous batch
  // is built, so at most two batches' text is in the scratch dir.
  Status StartBatch() {
    RETURN_IF_ERROR(JoinPromtool());
    std::vector<WindowFile> batch;
    Status closed;
    for (auto& [start, file] : window_files) {
      if (std::fputs("# EOF\n", file.out) < 0 || std::fflush(file.out) != 0) {
        if (closed.ok()) closed = UnavailableError("writing " + file.path + " failed: " + std::strerror(errno));
      }
      std::fclose(file.out);
      file.out = nullptr;
      batch.push_back(file);
    }
    window_files.clear();
    samples_in_batch = 0;
    RETURN_IF_ERROR(closed);
    promtool_thread = std::thread([this, batch = std::move(batch)] {
      promtool_result = BuildBlocksFromBatch(batch, window_ms, options);
    });
    return Status::Ok();
  }

  void CloseAndRemoveScratch() {
    if (promtool_thread.joinable()) promtool_thread.join();
    AcquisitionScope releasing;   // a signal now waits, instead of racing this removal
    for (auto& [start, file] : window_files) {
      if (file.out) std::fclose(file.out);
    }
    window_files.clear();
    std::error_code ec;
    if (!scratch_dir.empty()) fs::remove_all(scratch_dir, ec);
    scratch_dir.clear();
    if (cleanup_id) CleanupRegistry::Instance().Unregister(*cleanup_id);
    cleanup_id.reset();
  }

  Status Add(Series series) {
    if (finished) return FailedPreconditionError("BlockWriter::Add after Finish");
    if (!error.ok()) return error;
    auto prefix = SeriesPrefix(series.labels);
    if (!prefix.ok()) return prefix.status();
    if (series.samples.empty()) return Status::Ok();
    int64_t duplicates = 0;
    auto samples = SortedUniqueSamples(series.samples, *prefix, duplicates);
    if (!samples.ok()) return samples.status();
    Status added = native ? AddNative(*prefix, series.labels, *samples, duplicates) : AddPromtool(*prefix, *samples);
    if (!added.ok()) return added;
    ++stats.series;
    stats.samples_written += static_cast<int64_t>(samples->size());
    stats.duplicates_dropped += duplicates;
    return Status::Ok();
  }

  Status AddNative(const std::string& prefix, const Labels& labels, std::vector<TimedSample>& samples,
                   int64_t& duplicates) {
    size_t kept = 0;   // promtool's truncation can map two close milliseconds to one
    for (size_t i = 0; i < samples.size(); ++i) {
      const int64_t ms = PromtoolStoredMs(samples[i].ms);
      if (kept > 0 && ms == samples[kept - 1].ms) {
        ++duplicates;
        continue;
      }
      samples[kept++] = {ms, samples[i].v};
    }
    samples.resize(kept);
    Status added = native->Add(labels, samples);
    if (added.code() == StatusCode::kInvalidArgument) return InvalidArgumentError("series " + prefix + ": " + added.message());
    if (!added.ok()) error = added;
    return added;
  }

  Status AddPromtool(const std::string& prefix, const std::vector<TimedSample>& samples) {
    if (samples_in_batch > 0 &&
        samples_in_batch + static_cast<int64_t>(samples.size()) > options.max_samples_per_promtool_run) {
      if (auto started = StartBatch(); !started.ok()) {
        error = started;
        return error;
      }
    }
    if (!seen_series.insert(prefix).second) {
      return InvalidArgumentError("series " + prefix +
                                  " was added twice; merge its samples into one Add (promtool would drop "
                                  "or reject the interleaved samples)");
    }
    std::string line;
    line.reserve(prefix.size() + 48);
    WindowFile* file = nullptr;
    int64_t file_window_end = 0;   // samples are sorted, so the window only moves forward
    for (const TimedSample& sample : samples) {
      if (!file || sample.ms >= file_window_end) {
        const int64_t start = FloorToWindow(sample.ms, window_ms);
        auto opened = WindowFileFor(start);
        if (!opened.ok()) {
          error = opened.status();
          return error;
        }
        file = *opened;
        file_window_end = start + window_ms;
      }
      line.assign(prefix);
      line += ' ';
      AppendValue(line, sample.v);
      line += ' ';
      AppendTimestampMs(line, sample.ms);
      line += '\n';
      if (std::fwrite(line.data(), 1, line.size(), file->out) != line.size()) {
        error = UnavailableError("writing " + file->path + " failed: " + std::strerror(errno));
        return error;
      }
      ++file->samples;
    }
    samples_in_batch += static_cast<int64_t>(samples.size());
    return Status::Ok();
  }

  StatusOr<BlockWriteStats> Finish() {
    if (finished) return FailedPreconditionError("BlockWriter::Finish called twice");
    finished = true;
    if (!error.ok()) return error;
    if (stats.samples_written == 0) {
      return InvalidArgumentError("no samples to write into " + options.output_dir);
    }
    if (native) {
      ASSIGN_OR_RETURN(NativeBlockStats built, native->Finish());
      stats.blocks = built.blocks;
      stats.bytes = built.bytes;
      stats.samples_in_blocks = built.samples;
      if (built.samples != stats.samples_written) {
        return InternalError("the native block writer stored " + std::to_string(built.samples) + " samples of " +
                             std::to_string(stats.samples_written));
      }
      return stats;
    }
    if (samples_in_batch > 0) RETURN_IF_ERROR(StartBatch());
    RETURN_IF_ERROR(JoinPromtool());
    return stats;
  }
};

BlockWriter::BlockWriter(BlockWriteOptions options) : impl_(new Impl) {
  impl_->options = std::move(options);
  impl_->error = impl_->Open();
}

BlockWriter::~BlockWriter() {
  impl_->CloseAndRemoveScratch();
  delete impl_;
}

Status BlockWriter::Add(Series series) { return impl_->Add(std::move(series)); }

StatusOr<BlockWriteStats> BlockWriter::Finish() {
  auto result = impl_->Finish();
  impl_->CloseAndRemoveScratch();
  return result;
}

StatusOr<BlockWriteStats> WriteBlocks(std::vector<Series> series, const BlockWriteOptions& options) {
  // Callers may hand the same label set in several pieces; merge them so each series is written once.
  std::map<Labels, size_t> index;
  std::vector<Series> merged;
  merged.reserve(series.size());
  for (auto& s : series) {
    auto [it, inserted] = index.emplace(s.labels, merged.size());
    if (inserted) {
      merged.push_back(std::move(s));
    } else {
      auto& target = merged[it->second].samples;
      target.insert(target.end(), s.samples.begin(), s.samples.end());
    }
  }
  series.clear();
  BlockWriter writer(options);
  for (auto& s : merged) {
    RETURN_IF_ERROR(writer.Add(std::move(s)));
  }
  return writer.Finish();
}

}  // namespace diagnose
