// What discovery reads from a job's TSDB directory without a server: entry names (ULID block dirs,
// wal/, chunks_head/, lock, stray files) and each block's meta.json.
// Mode 0: "<dir name>\n<meta.json bytes>" straight into the meta.json parser.
// Otherwise a directory tree is made from lines "<relative path>\t<file content>" (a path ending in
// '/' is a directory) in a private temp dir and inspected as a job's prometheus/ dir would be.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/discovery/discovery.h"
#include "engine/tsdb/private_prometheus.h"
#include "engine/tsdb/tsdb_dir.h"
#include "fuzz/fuzz_input.h"

namespace {

namespace fs = std::filesystem;

const fs::path& Root() {
  static const fs::path root = [] {
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path dir = base / ("diagnose-fuzz-tsdb-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    return dir;
  }();
  return root;
}

// Entry names stay inside the root: no absolute paths, no "..", at most two levels.
bool SafeRelative(const std::string& path) {
  if (path.empty() || path.size() > 64 || path.front() == '/') return false;
  if (path.find('\0') != std::string::npos) return false;
  int depth = 0;
  for (const auto& part : fs::path(path)) {
    if (part == ".." || part == ".") return false;
    ++depth;
  }
  return depth <= 2;
}

void BuildTree(std::string_view text, const fs::path& root) {
  int entries = 0;
  for (std::string_view line : diagnose::fuzz::Lines(text)) {
    if (++entries > 16) break;
    const size_t tab = line.find('\t');
    const std::string path(line.substr(0, tab));
    if (!SafeRelative(path)) continue;
    std::error_code ec;
    if (path.back() == '/') {
      fs::create_directories(root / path, ec);
      continue;
    }
    fs::create_directories((root / path).parent_path(), ec);
    std::ofstream out(root / path, std::ios::binary);
    if (tab != std::string_view::npos) out << line.substr(tab + 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace diagnose;
  std::string_view text = fuzz::AsText(data, size);
  if (fuzz::TakeMode(&text) % 2 == 0) {
    const size_t nl = text.find('\n');
    const std::string name(text.substr(0, nl));
    (void)IsUlid(name);
    (void)ParseBlockMeta(nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1), name,
                         name + "/meta.json");
    return 0;
  }
  const fs::path dir = Root() / "prometheus";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  BuildTree(text, dir);
  auto inventory = InspectTsdbDir(dir.string());
  if (inventory.ok()) {
    (void)CheckNotLive(*inventory, 120);
    (void)InputsForSnapshot(*inventory);
  }
  fs::remove_all(dir, ec);
  return 0;
}
