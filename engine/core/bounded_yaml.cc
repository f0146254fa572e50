#include "engine/core/bounded_yaml.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "engine/core/limits.h"
#include "engine/core/regular_file.h"

namespace diagnose {
namespace {

struct Walk {
  int64_t nodes_left;
  int64_t max_depth;
  const YAML::Node* stopped_at = nullptr;
  bool too_deep = false;
};

// False as soon as a limit is hit; `walk.stopped_at` is the node where it happened.
bool Visit(const YAML::Node& node, int64_t depth, Walk& walk) {
  if (--walk.nodes_left < 0 || depth > walk.max_depth) {
    walk.too_deep = depth > walk.max_depth;
    walk.stopped_at = &node;
    return false;
  }
  if (node.IsSequence()) {
    for (const auto& child : node)
      if (!Visit(child, depth + 1, walk)) return false;
  } else if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!Visit(it->first, depth + 1, walk) || !Visit(it->second, depth + 1, walk)) return false;
    }
  }
  return true;
}

std::string Position(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

}  // namespace

StatusOr<std::string> ReadYamlFile(const std::string& path) {
  RETURN_IF_ERROR(RequireRegularFile(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string why = std::strerror(err);
    if (err == EACCES) return PermissionDeniedError(path + ": " + why);
    return NotFoundError(path + ": " + why);
  }
  const int64_t limit = GetLimit(LimitId::kYamlFileBytes);
  std::string text;
  char buf[64 * 1024];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > limit) return LimitExceeded(LimitId::kYamlFileBytes, path);
  }
  return text;
}

Status CheckYamlBounds(const YAML::Node& root, const std::string& source) {
  Walk walk{GetLimit(LimitId::kYamlNodes), GetLimit(LimitId::kYamlDepth)};
  if (Visit(root, 0, walk)) return Status::Ok();
  const std::string where = Position(source, walk.stopped_at->Mark());
  if (walk.too_deep) return LimitExceeded(LimitId::kYamlDepth, where + ": nesting");
  return LimitExceeded(LimitId::kYamlNodes, where + ": the document, aliases expanded,");
}

StatusOr<YAML::Node> LoadBoundedYaml(const std::string& text, const std::string& source) {
  if (static_cast<int64_t>(text.size()) > GetLimit(LimitId::kYamlFileBytes)) {
    return LimitExceeded(LimitId::kYamlFileBytes, source);
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return ParseError(Position(source, e.mark) + ": " + e.msg);
  }
  RETURN_IF_ERROR(CheckYamlBounds(root, source));
  return root;
}

StatusOr<YAML::Node> LoadBoundedYamlFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadYamlFile(path));
  return LoadBoundedYaml(text, path);
}

}  // namespace diagnose
