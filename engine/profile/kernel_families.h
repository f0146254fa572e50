// The kernel families of the profile drill as data (rules/profile/kernel-families.yaml): which
// family a kernel name belongs to, whether its time is compute or communication, and what the
// runbook does about it when it blocks the main stream.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace diagnose::profile {

enum class KernelKind { kCompute, kCommunication };

struct KernelFamily {
  std::string id;
  std::string label;
  KernelKind kind = KernelKind::kCompute;
  bool itemise = false;
  std::string remedy;
  std::string match_text;
  std::regex match;
  std::optional<std::regex> exclude;
};

struct KernelFamilies {
  std::vector<KernelFamily> families;   // in the file's order; the first match wins
  std::string source;

  // Index into families, or families.size() for "other".
  size_t Classify(std::string_view kernel) const;
  const std::string& LabelOf(size_t family) const;
  KernelKind KindOf(size_t family) const;
};

inline constexpr const char* kOtherFamilyId = "other";

// Errors name the file and line:col of the entry at fault (a bad regex, a missing key).
StatusOr<KernelFamilies> LoadKernelFamilies(const std::string& path);
StatusOr<KernelFamilies> ParseKernelFamilies(const std::string& yaml_text, const std::string& source);

// <data_dir>/rules/profile/kernel-families.yaml
std::string KernelFamiliesPath(const std::string& data_dir);

}  // namespace diagnose::profile
