#include "engine/tsdb/block_writer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
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
#include <unordered_set>

#include "engine/core/cleanup_registry.h"
#include "engine/core/subprocess.h"
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
  int n = std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ms / 1000),
                        static_cast<long long>(ms % 1000));
  out.append(buf, static_cast<size_t>(n));
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

}  // namespace

struct BlockWriter::Impl {
  BlockWriteOptions options;
  std::string scratch_dir;      // created by us when options.scratch_dir is empty
  std::string scratch_parent;   // the dir holding scratch_file
  std::string scratch_file;
  std::shared_ptr<std::string> current_scratch_file = std::make_shared<std::string>();  // for the cleanup
  std::FILE* out = nullptr;
  int64_t samples_in_file = 0;  // written to scratch_file since the last promtool run
  // Label sets already written: a second Add of the same series would interleave its samples with
  // the first and make promtool drop or reject them, so it is refused. Keys are small next to samples.
  std::unordered_set<std::string> seen_series;
  BlockWriteStats stats;
  Status error;                 // first write error; sticky
  std::optional<CleanupRegistry::Id> cleanup_id;   // removes the scratch files on SIGINT/SIGTERM
  bool finished = false;

  Status Open() {
    if (options.output_dir.empty()) return InvalidArgumentError("BlockWriter needs an output_dir");
    AcquisitionScope acquiring;   // the scratch dir and file exist only once their cleanup does
    std::string dir = options.scratch_dir;
    if (dir.empty()) {
      std::string pattern = TempRoot() + "/diagnose-blocks-XXXXXX";
      std::vector<char> buf(pattern.begin(), pattern.end());
      buf.push_back('\0');
      if (!mkdtemp(buf.data())) {
        return UnavailableError("cannot create a scratch dir under " + TempRoot() + ": " + std::strerror(errno));
      }
      scratch_dir = buf.data();
      dir = scratch_dir;
    }
    scratch_parent = dir;
    // The file rotates after each promtool run; the cleanup reads the current name when it runs.
    const std::string own_dir = scratch_dir;
    cleanup_id = CleanupRegistry::Instance().Register("block writer scratch in " + dir,
                                                      [current = current_scratch_file, own_dir] {
      std::error_code ec;
      if (!current->empty()) fs::remove(*current, ec);
      if (!own_dir.empty()) fs::remove_all(own_dir, ec);
    });
    return OpenScratchFileLocked();
  }

  // Caller holds an AcquisitionScope.
  Status OpenScratchFileLocked() {
    std::string pattern = scratch_parent + "/series-XXXXXX.om";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    int fd = mkostemps(buf.data(), 3, O_CLOEXEC);
    if (fd < 0) {
      return UnavailableError("cannot create the OpenMetrics scratch file in " + scratch_parent + ": " +
                              std::strerror(errno));
    }
    scratch_file = buf.data();
    *current_scratch_file = scratch_file;
    samples_in_file = 0;
    out = fdopen(fd, "w");
    if (!out) {
      close(fd);
      return InternalError("fdopen failed for " + scratch_file);
    }
    static constexpr size_t kBuffer = 1 << 20;
    std::setvbuf(out, nullptr, _IOFBF, kBuffer);
    return Status::Ok();
  }

  void CloseAndRemoveScratch() {
    AcquisitionScope releasing;   // a signal now waits, instead of racing this removal
    if (out) {
      std::fclose(out);
      out = nullptr;
    }
    std::error_code ec;
    if (!scratch_file.empty()) fs::remove(scratch_file, ec);
    if (!scratch_dir.empty()) fs::remove_all(scratch_dir, ec);
    scratch_file.clear();
    current_scratch_file->clear();
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
    if (samples_in_file > 0 &&
        samples_in_file + static_cast<int64_t>(series.samples.size()) > options.max_samples_per_promtool_run) {
      if (auto built = BuildBlocksFromScratch(); !built.ok()) {
        error = built;
        return error;
      }
      AcquisitionScope rotating;
      std::error_code ec;
      fs::remove(scratch_file, ec);
      if (auto opened = OpenScratchFileLocked(); !opened.ok()) {
        error = opened;
        return error;
      }
    }
    if (!seen_series.insert(*prefix).second) {
      return InvalidArgumentError("series " + *prefix +
                                  " was added twice; merge its samples into one Add (promtool would drop "
                                  "or reject the interleaved samples)");
    }
    struct TimedSample {
      int64_t ms;
      double v;
    };
    std::vector<TimedSample> samples;
    samples.reserve(series.samples.size());
    for (const auto& s : series.samples) {
      if (!std::isfinite(s.t)) {
        return InvalidArgumentError("series " + *prefix + " has a non-finite timestamp");
      }
      samples.push_back({static_cast<int64_t>(std::llround(s.t * 1000.0)), s.v});
    }
    series.samples.clear();
    series.samples.shrink_to_fit();
    // Stable: of samples with the same millisecond, the first one given wins.
    std::stable_sort(samples.begin(), samples.end(),
                     [](const TimedSample& a, const TimedSample& b) { return a.ms < b.ms; });
    std::string line;
    line.reserve(prefix->size() + 48);
    int64_t written = 0;
    int64_t last_ms = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      if (i > 0 && samples[i].ms == last_ms) {
        ++stats.duplicates_dropped;
        continue;
      }
      last_ms = samples[i].ms;
      line.assign(*prefix);
      line += ' ';
      AppendValue(line, samples[i].v);
      line += ' ';
      AppendTimestampMs(line, samples[i].ms);
      line += '\n';
      if (std::fwrite(line.data(), 1, line.size(), out) != line.size()) {
        error = UnavailableError("writing " + scratch_file + " failed: " + std::strerror(errno));
        return error;
      }
      ++written;
    }
    ++stats.series;
    stats.samples_written += written;
    samples_in_file += written;
    return Status::Ok();
  }

  // Ends the scratch file and has promtool turn it into blocks in output_dir, checking that the new
  // blocks hold exactly the samples this file got.
  Status BuildBlocksFromScratch() {
    if (std::fputs("# EOF\n", out) < 0 || std::fflush(out) != 0) {
      return UnavailableError("writing " + scratch_file + " failed: " + std::strerror(errno));
    }
    std::fclose(out);
    out = nullptr;

    std::error_code ec;
    fs::create_directories(options.output_dir, ec);
    if (ec) return UnavailableError("cannot create TSDB dir " + options.output_dir + ": " + ec.message());
    auto before = ListBlockDirs(options.output_dir);
    std::set<std::string> existing;
    if (before.ok()) {
      for (const auto& b : *before) existing.insert(b.ulid);
    }

    const std::string promtool = FindExecutable("promtool");
    if (promtool.empty()) return NotFoundError("promtool not found in PATH (Debian package 'prometheus')");
    std::vector<std::string> argv = {promtool, "tsdb", "create-blocks-from", "openmetrics", "-q",
                                     "--max-block-duration=" + options.max_block_duration, scratch_file,
                                     options.output_dir};
    auto run = RunCommand(argv, std::chrono::milliseconds(
                                    static_cast<int64_t>(options.promtool_timeout_seconds * 1000)));
    if (!run.ok()) return run.status();
    if (run->exit_code != 0) {
      return InternalError("promtool failed (exit " + std::to_string(run->exit_code) + ") building blocks in " +
                           options.output_dir + ": " + run->output);
    }
    ++stats.promtool_runs;

    auto after = ListBlockDirs(options.output_dir);
    if (!after.ok()) return after.status();
    int64_t stored = 0;
    int blocks = 0;
    for (const auto& block : *after) {
      if (existing.count(block.ulid)) continue;
      ++blocks;
      stored += block.num_samples;
      stats.bytes += DirectoryBytes(fs::path(options.output_dir) / block.ulid);
    }
    stats.blocks += blocks;
    stats.samples_in_blocks += stored;
    if (stored != samples_in_file) {
      int64_t diff = samples_in_file - stored;
      return DataLossError("promtool stored " + std::to_string(stored) + " samples in " + std::to_string(blocks) +
                           " new block(s) under " + options.output_dir + " but " + std::to_string(samples_in_file) +
                           " were written (" +
                           (diff > 0 ? std::to_string(diff) + " missing" : std::to_string(-diff) + " extra") + ")");
    }
    return Status::Ok();
  }

  StatusOr<BlockWriteStats> Finish() {
    if (finished) return FailedPreconditionError("BlockWriter::Finish called twice");
    finished = true;
    if (!error.ok()) return error;
    if (stats.samples_written == 0) {
      return InvalidArgumentError("no samples to write into " + options.output_dir);
    }
    if (samples_in_file > 0) RETURN_IF_ERROR(BuildBlocksFromScratch());
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
