// The node perf sweep's vocabularies (`diagnose nodes`): what a node's throughput says about it,
// and what a group's (a bisection's) says. Parsed where rules name them (exclude_statuses),
// written only where a table, line or JSON leaves.
#pragma once

#include <optional>
#include <string_view>

#include "engine/core/vocabulary.h"

namespace diagnose {

// kUnjudged: measured, but there is no positive median of its model to compare it with.
#define DIAGNOSE_NODE_STATUS_WORDS(WORD) \
  WORD(kUnjudged, "")                    \
  WORD(kHealthy, "healthy")              \
  WORD(kMarginal, "marginal")            \
  WORD(kDegraded, "degraded")            \
  WORD(kUnhealthy, "unhealthy")          \
  WORD(kInsufficientData, "insufficient-data")
DIAGNOSE_VOCABULARY(NodeStatus, "node status", DIAGNOSE_NODE_STATUS_WORDS);

inline std::optional<NodeStatus> ParseNodeStatus(std::string_view word) { return ParseWord<NodeStatus>(word); }

#define DIAGNOSE_GROUP_STATUS_WORDS(WORD) WORD(kHealthy, "healthy") WORD(kDegraded, "degraded") WORD(kFailed, "failed")
DIAGNOSE_VOCABULARY(GroupStatus, "group status", DIAGNOSE_GROUP_STATUS_WORDS);

}  // namespace diagnose
