// The node perf sweep's vocabularies (`diagnose nodes`): what a node's throughput says about it,
// and what a group's (a bisection's) says. Parsed where rules name them (exclude_statuses),
// written only where a table, line or JSON leaves.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

// kUnjudged: measured, but there is no positive median of its model to compare it with.
enum class NodeStatus { kUnjudged, kHealthy, kMarginal, kDegraded, kUnhealthy, kInsufficientData };
enum class GroupStatus { kHealthy, kDegraded, kFailed };

template <>
struct VocabularyOf<NodeStatus> {
  static constexpr Vocabulary<NodeStatus, 6> kWords{{{
      {NodeStatus::kUnjudged, ""},
      {NodeStatus::kHealthy, "healthy"},
      {NodeStatus::kMarginal, "marginal"},
      {NodeStatus::kDegraded, "degraded"},
      {NodeStatus::kUnhealthy, "unhealthy"},
      {NodeStatus::kInsufficientData, "insufficient-data"},
  }}};
  static constexpr std::string_view kWhat = "node status";
};

inline std::optional<NodeStatus> ParseNodeStatus(std::string_view word) { return ParseWord<NodeStatus>(word); }

template <>
struct VocabularyOf<GroupStatus> {
  static constexpr Vocabulary<GroupStatus, 3> kWords{{{
      {GroupStatus::kHealthy, "healthy"},
      {GroupStatus::kDegraded, "degraded"},
      {GroupStatus::kFailed, "failed"},
  }}};
  static constexpr std::string_view kWhat = "group status";
};

}  // namespace diagnose
