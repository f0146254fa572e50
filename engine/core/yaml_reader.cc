#include "engine/core/yaml_reader.h"

namespace diagnose {

namespace {

std::string Position(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

}  // namespace

std::string YamlReader::Where(const YAML::Node& node) const { return Position(source_, node.Mark()); }

Status YamlReader::Error(const YAML::Node& node, const std::string& message) const {
  return InvalidArgumentError(Where(node) + ": " + message);
}

Status YamlReader::PositionedError(const YAML::Exception& e) const {
  return InvalidArgumentError(Position(source_, e.mark) + ": " + e.msg);
}

StatusOr<std::string> YamlReader::String(const YAML::Node& node, const std::string& what) const {
  if (!node.IsScalar()) return Error(node, what + " must be a string");
  return node.Scalar();
}

StatusOr<int> YamlReader::Int(const YAML::Node& node, const std::string& what) const {
  const std::optional<int> value = ScalarAs<int>(node);
  if (!value) return Error(node, what + " must be an integer");
  return *value;
}

StatusOr<double> YamlReader::Double(const YAML::Node& node, const std::string& what) const {
  const std::optional<double> value = ScalarAs<double>(node);
  if (!value) return Error(node, what + " must be a number");
  return *value;
}

StatusOr<bool> YamlReader::Bool(const YAML::Node& node, const std::string& what) const {
  const std::optional<bool> value = ScalarAs<bool>(node);
  if (!value) return Error(node, what + " must be true or false");
  return *value;
}

StatusOr<std::vector<std::string>> YamlReader::Strings(const YAML::Node& node, const std::string& what) const {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    out.push_back(node.Scalar());
    return out;
  }
  if (!node.IsSequence()) return Error(node, what + " must be a list of strings");
  for (const auto& item : node) {
    ASSIGN_OR_RETURN(std::string s, String(item, what + " item"));
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<std::vector<int>> YamlReader::Ints(const YAML::Node& node, const std::string& what) const {
  std::vector<int> out;
  if (!node.IsSequence()) return Error(node, what + " must be a list of integers");
  for (const auto& item : node) {
    ASSIGN_OR_RETURN(int v, Int(item, what + " item"));
    out.push_back(v);
  }
  return out;
}

Status YamlReader::OnlyKeys(const YAML::Node& map, const std::set<std::string>& known, const std::string& what) const {
  if (!map.IsMap()) return Error(map, what + " must be a mapping");
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) return Error(kv.first, what + " has a key that is not a string");
    const std::string& key = kv.first.Scalar();
    if (known.count(key)) continue;
    std::string allowed;
    for (const auto& k : known) allowed += (allowed.empty() ? "" : ", ") + k;
    return Error(kv.first, "unknown key '" + key + "' in " + what + " (allowed: " + allowed + ")");
  }
  return Status::Ok();
}

Status YamlReader::Finish(StatusCode code) const {
  if (errors_.empty()) return Status::Ok();
  std::string all;
  for (const auto& e : errors_) all += (all.empty() ? "" : "\n") + e;
  return Status(code, std::move(all));
}

}  // namespace diagnose
