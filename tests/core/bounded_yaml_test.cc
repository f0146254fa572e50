#include "engine/core/bounded_yaml.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/core/limits.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

// Nine levels of ten aliases each: 10^9 nodes when expanded, 300 bytes on disk.
std::string AliasBomb() {
  std::string yaml = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  const std::string names = "abcdefghi";
  for (size_t i = 1; i < names.size(); ++i) {
    yaml += std::string(1, names[i]) + ": &" + names[i] + " [";
    for (int k = 0; k < 10; ++k) yaml += std::string(k ? ", " : "") + "*" + names[i - 1];
    yaml += "]\n";
  }
  return yaml;
}

TEST(BoundedYaml, AnAliasBombIsRefusedFastNamingTheNodeLimit) {
  const auto started = std::chrono::steady_clock::now();
  auto root = LoadBoundedYaml(AliasBomb(), "bomb.yaml");
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(root.status().message().find("bomb.yaml:"), std::string::npos) << root.status().message();
  EXPECT_NE(root.status().message().find("exceeds the limit yaml.nodes"), std::string::npos);
  EXPECT_NE(root.status().message().find("--limit yaml.nodes=N"), std::string::npos);
  // Refused after a bounded walk, not after expanding 10^9 nodes (a minute or more).
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
}

TEST(BoundedYaml, DeepNestingIsRefusedNamingTheDepthLimit) {
  const int depth = static_cast<int>(GetLimit(LimitId::kYamlDepth)) + 5;
  std::string yaml;
  for (int i = 0; i < depth; ++i) yaml += "[";
  for (int i = 0; i < depth; ++i) yaml += "]";
  auto root = LoadBoundedYaml(yaml, "deep.yaml");
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.status().message().find("exceeds the limit yaml.depth"), std::string::npos) << root.status().message();
}

TEST(BoundedYaml, ADocumentWithinTheLimitsLoads) {
  auto root = LoadBoundedYaml("a: [1, 2, {b: c}]\nd: *x\n", "bad.yaml");
  ASSERT_FALSE(root.ok()) << "an unknown alias is a syntax error";
  EXPECT_EQ(root.status().code(), StatusCode::kParse);
  EXPECT_EQ(root.status().message().rfind("bad.yaml:2:", 0), 0u) << root.status().message();
  auto ok = LoadBoundedYaml("a: &x [1, 2, {b: c}]\nd: *x\n", "ok.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)["d"][2]["b"].as<std::string>(), "c");
}

TEST(BoundedYaml, AFileLargerThanTheLimitIsNotReadWhole) {
  ScopedLimit small(LimitId::kYamlFileBytes, 4096);
  const fs::path file = fs::temp_directory_path() / ("bounded-yaml-" + std::to_string(getpid()) + ".yaml");
  {
    std::ofstream out(file);
    for (int i = 0; i < 1000; ++i) out << "key" << i << ": value\n";
  }
  auto text = ReadYamlFile(file.string());
  fs::remove(file);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(text.status().message().find("yaml.file_bytes (4 KiB"), std::string::npos) << text.status().message();
  EXPECT_EQ(ReadYamlFile("/nonexistent/x.yaml").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace diagnose
