// The node perf sweep's vocabularies (`diagnose nodes`): what a node's throughput says about it,
// and what a group's (a bisection's) says. Parsed where rules name them (exclude_statuses),
// written only where a table, line or JSON leaves.
#pragma once

#include <iosfwd>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace diagnose {

// kUnjudged: measured, but there is no positive median of its model to compare it with.
enum class NodeStatus { kUnjudged, kHealthy, kMarginal, kDegraded, kUnhealthy, kInsufficientData };
enum class GroupStatus { kHealthy, kDegraded, kFailed };

std::string_view ToString(NodeStatus status);
std::string_view ToString(GroupStatus status);
std::optional<NodeStatus> ParseNodeStatus(std::string_view word);

// For test failure messages and logs: the word.
std::ostream& operator<<(std::ostream& out, NodeStatus status);
std::ostream& operator<<(std::ostream& out, GroupStatus status);

// JSON carries the word; an unknown word throws like any other malformed field.
void to_json(nlohmann::json& j, NodeStatus status);
void from_json(const nlohmann::json& j, NodeStatus& status);
void to_json(nlohmann::json& j, GroupStatus status);
void from_json(const nlohmann::json& j, GroupStatus& status);

}  // namespace diagnose
