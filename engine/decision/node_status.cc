#include "engine/decision/node_status.h"

#include <ostream>
#include <string>

#include "engine/core/vocabulary.h"

namespace diagnose {

namespace {

constexpr Vocabulary<NodeStatus, 6> kNodeStatusWords{{{
    {NodeStatus::kUnjudged, ""},
    {NodeStatus::kHealthy, "healthy"},
    {NodeStatus::kMarginal, "marginal"},
    {NodeStatus::kDegraded, "degraded"},
    {NodeStatus::kUnhealthy, "unhealthy"},
    {NodeStatus::kInsufficientData, "insufficient-data"},
}}};

constexpr Vocabulary<GroupStatus, 3> kGroupStatusWords{{{
    {GroupStatus::kHealthy, "healthy"},
    {GroupStatus::kDegraded, "degraded"},
    {GroupStatus::kFailed, "failed"},
}}};

}  // namespace

std::string_view ToString(NodeStatus status) { return kNodeStatusWords.Word(status); }
std::string_view ToString(GroupStatus status) { return kGroupStatusWords.Word(status); }
std::optional<NodeStatus> ParseNodeStatus(std::string_view word) { return kNodeStatusWords.Parse(word); }

std::ostream& operator<<(std::ostream& out, NodeStatus status) { return out << ToString(status); }
std::ostream& operator<<(std::ostream& out, GroupStatus status) { return out << ToString(status); }

void to_json(nlohmann::json& j, NodeStatus status) { j = std::string(ToString(status)); }
void from_json(const nlohmann::json& j, NodeStatus& status) { status = kNodeStatusWords.FromJson(j, "node status"); }
void to_json(nlohmann::json& j, GroupStatus status) { j = std::string(ToString(status)); }
void from_json(const nlohmann::json& j, GroupStatus& status) { status = kGroupStatusWords.FromJson(j, "group status"); }

}  // namespace diagnose
