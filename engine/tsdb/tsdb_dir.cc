#include "engine/tsdb/tsdb_dir.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "engine/core/untrusted_json.h"

namespace diagnose {
namespace fs = std::filesystem;

// A real meta.json is a few hundred bytes (a compacted block lists its parents: a few KiB).
constexpr size_t kMaxMetaBytes = 1 << 20;

LoggedRunSpan AnchoredRun(const std::vector<BlockMeta>& blocks, const LoggedRunSpan& run) {
  if (!run.length_seconds) return run;
  std::optional<double> newest_end;
  for (const auto& block : blocks) {
    const double last = (block.max_time_ms - 1) / 1000.0;
    if (block.min_time_ms / 1000.0 > run.end + kRunWindowToleranceSeconds) continue;   // after the run
    newest_end = std::max(newest_end.value_or(last), std::min(last, run.end));
  }
  LoggedRunSpan anchored = run;
  if (newest_end) anchored.start = std::max(run.start, *newest_end - *run.length_seconds);
  return anchored;
}

bool BlockOutsideRun(const BlockMeta& block, const LoggedRunSpan& run) {
  const double first = block.min_time_ms / 1000.0, last = (block.max_time_ms - 1) / 1000.0;
  return first > run.end + kRunWindowToleranceSeconds || last < run.start - kRunWindowToleranceSeconds;
}

std::vector<std::string> BlocksOutsideLoggedRun(const std::vector<BlockMeta>& blocks, const LoggedRunSpan& logged_run) {
  const LoggedRunSpan run = AnchoredRun(blocks, logged_run);
  const bool any_in_run =
      std::any_of(blocks.begin(), blocks.end(), [&](const BlockMeta& b) { return !BlockOutsideRun(b, run); });
  std::vector<std::string> outside;
  if (!any_in_run) return outside;
  for (const auto& block : blocks)
    if (BlockOutsideRun(block, run)) outside.push_back(block.ulid);
  return outside;
}

bool IsUlid(const std::string& name) {
  if (name.size() != 26) return false;
  static const std::string kAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  return std::all_of(name.begin(), name.end(), [](char c) { return kAlphabet.find(c) != std::string::npos; });
}

double UlidSeconds(const std::string& ulid) {
  static const std::string kAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  uint64_t ms = 0;
  for (size_t i = 0; i < 10 && i < ulid.size(); ++i) ms = ms * 32 + kAlphabet.find(ulid[i]);
  return static_cast<double>(ms) / 1000.0;
}

StatusOr<BlockMeta> ParseBlockMeta(std::string_view text, const std::string& ulid, const std::string& file) {
  nlohmann::json meta = ParseUntrustedJson(text);
  if (meta.is_discarded() || !meta.is_object()) return DataLossError(file + ": not valid JSON");
  BlockMeta block;
  block.ulid = ulid;
  try {
    block.min_time_ms = meta.at("minTime").get<int64_t>();
    block.max_time_ms = meta.at("maxTime").get<int64_t>();
    const auto& stats = meta.value("stats", nlohmann::json::object());
    block.num_samples = stats.value("numSamples", int64_t{0});
    block.num_series = stats.value("numSeries", int64_t{0});
  } catch (const nlohmann::json::exception& e) {
    return DataLossError(file + ": " + e.what());
  }
  return block;
}

namespace {

StatusOr<BlockMeta> ReadBlockMeta(const fs::path& meta_path, const std::string& ulid) {
  std::ifstream in(meta_path, std::ios::binary);
  std::string text;
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxMetaBytes) return DataLossError(meta_path.string() + ": larger than any block's meta.json");
  }
  return ParseBlockMeta(text, ulid, meta_path.string());
}

}  // namespace

StatusOr<std::vector<BlockMeta>> ListBlockDirs(const std::string& tsdb_dir, std::vector<DamagedBlock>* damaged) {
  std::error_code ec;
  fs::directory_iterator it(tsdb_dir, ec);
  if (ec) return NotFoundError("cannot list TSDB dir " + tsdb_dir + ": " + ec.message());
  std::vector<BlockMeta> blocks;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return UnavailableError("listing " + tsdb_dir + " failed: " + ec.message());
    const std::string name = it->path().filename().string();
    if (!IsUlid(name) || it->is_symlink(ec) || !it->is_directory(ec)) continue;
    const fs::path meta_path = it->path() / "meta.json";
    if (fs::is_symlink(meta_path, ec) || !fs::is_regular_file(meta_path, ec)) continue;
    StatusOr<BlockMeta> block = ReadBlockMeta(meta_path, name);
    if (block.ok()) blocks.push_back(*block);
    else if (damaged != nullptr && block.status().code() == StatusCode::kDataLoss)
      damaged->push_back({name, block.status().message()});
    else return block.status();
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const BlockMeta& a, const BlockMeta& b) { return a.min_time_ms < b.min_time_ms; });
  return blocks;
}

}  // namespace diagnose
