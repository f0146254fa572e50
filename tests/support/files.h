// Files for tests: a file's bytes, and a scratch directory that is gone when the test is.
#pragma once

#include <filesystem>
#include <string>

namespace diagnose::testing {

// A file's bytes ("" when it cannot be read: the comparison that follows then fails and says so).
std::string ReadFileOrEmpty(const std::filesystem::path& path);

// Writes `content` to `path`, creating its parent directories; returns the path.
std::string WriteFile(const std::filesystem::path& path, const std::string& content);

// A fresh directory under the system temp dir (mkdtemp), removed with everything in it on
// destruction. `prefix` names the test in the directory's name.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "diagnose-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // path() / relative, as a string.
  std::string operator/(const std::string& relative) const { return (path_ / relative).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace diagnose::testing
