#include "engine/core/scratch_dir.h"

#include <filesystem>
#include <fstream>
#include <optional>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

namespace fs = std::filesystem;

TEST(ScratchDir, IsRegisteredWhileItLivesAndGoneWithEverythingInItAfter) {
  const size_t registered_before = CleanupRegistry::Instance().size();
  fs::path path;
  {
    auto dir = ScratchDir::Create("scratch-dir-test", "the test");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    path = dir->path();
    EXPECT_TRUE(fs::is_directory(path));
    EXPECT_EQ(path.parent_path(), fs::temp_directory_path());
    EXPECT_EQ(path.filename().string().rfind("scratch-dir-test-", 0), 0u) << path;
    EXPECT_EQ(CleanupRegistry::Instance().size(), registered_before + 1);
    fs::create_directories(path / "nested");
    std::ofstream(path / "nested" / "file.txt") << "x";
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(CleanupRegistry::Instance().size(), registered_before);
}

TEST(ScratchDir, AMovedDirIsRemovedOnceByItsNewOwner) {
  const size_t registered_before = CleanupRegistry::Instance().size();
  std::optional<ScratchDir> owner;
  fs::path path;
  {
    auto dir = ScratchDir::Create("scratch-dir-test", "the test");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    path = dir->path();
    owner.emplace(std::move(*dir));
  }
  EXPECT_TRUE(fs::is_directory(path)) << "the moved-from dir removed what it no longer owns";
  EXPECT_EQ(owner->path(), path);
  owner.reset();
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(CleanupRegistry::Instance().size(), registered_before);
}

}  // namespace
}  // namespace diagnose
