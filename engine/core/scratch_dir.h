// A private directory under the system temp dir for one step's scratch files (a promtool input,
// its output), removed however the process ends: by the destructor on a normal return, by the
// termination handler (CleanupRegistry) when a signal comes first.
#pragma once

#include <filesystem>
#include <string>

#include "engine/core/cleanup_registry.h"
#include "engine/core/status.h"

namespace diagnose {

class ScratchDir {
 public:
  // <temp>/<prefix>-XXXXXX; `purpose` ("promtool") says in an error what it was for.
  static StatusOr<ScratchDir> Create(const std::string& prefix, const std::string& purpose);

  ScratchDir(ScratchDir&& other) noexcept;
  ScratchDir& operator=(ScratchDir&&) = delete;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();

  const std::filesystem::path& path() const { return path_; }

 private:
  ScratchDir(std::filesystem::path path, CleanupRegistry::Id cleanup) : path_(std::move(path)), cleanup_(cleanup) {}

  std::filesystem::path path_;
  CleanupRegistry::Id cleanup_ = 0;  // 0: moved from, nothing to remove
};

}  // namespace diagnose
