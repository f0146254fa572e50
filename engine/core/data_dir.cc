#include "engine/core/data_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace diagnose {

std::string DefaultDataDir() {
  if (const char* env = std::getenv("DIAGNOSE_DATA_DIR"); env != nullptr && *env != '\0') return env;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path share = exe.parent_path().parent_path() / "share" / "diagnose";
    if (fs::is_directory(share / "rules", ec) && fs::is_directory(share / "playbooks", ec)) return share.string();
  }
  return DIAGNOSE_CONFIGURED_DATA_DIR;
}

}  // namespace diagnose
