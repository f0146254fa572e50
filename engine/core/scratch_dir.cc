#include "engine/core/scratch_dir.h"

#include <stdlib.h>

#include <system_error>
#include <utility>

namespace diagnose {

namespace fs = std::filesystem;

StatusOr<ScratchDir> ScratchDir::Create(const std::string& prefix, const std::string& purpose) {
  // Held from mkdtemp to the registration, so a signal in between cannot leak the directory.
  AcquisitionScope scope;
  std::string pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) return UnavailableError("cannot create a temp dir for " + purpose);
  fs::path path = pattern;
  const CleanupRegistry::Id cleanup = CleanupRegistry::Instance().Register("temp dir for " + purpose + " " + path.string(), [path] {
    std::error_code ec;
    fs::remove_all(path, ec);
  });
  return ScratchDir(std::move(path), cleanup);
}

ScratchDir::ScratchDir(ScratchDir&& other) noexcept
    : path_(std::move(other.path_)), cleanup_(std::exchange(other.cleanup_, 0)) {}

ScratchDir::~ScratchDir() {
  if (cleanup_ == 0) return;
  // Held across the removal, so the termination handler never races a removal under way.
  AcquisitionScope scope;
  std::error_code ec;
  fs::remove_all(path_, ec);
  CleanupRegistry::Instance().Unregister(cleanup_);
}

}  // namespace diagnose
