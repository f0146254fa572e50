// Typed, positioned reading of a YAML data file others write (rules, scenarios), collecting every
// error rather than stopping at the first: each error names source:line:col, and no yaml-cpp
// exception leaves this layer. A reader of one file format derives from it and adds the readers of
// its own vocabulary (a contract action, a root cause), built on Error() and the typed getters.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/core/status.h"

namespace diagnose {

// A scalar node's value as T (yaml-cpp's own conversion), or nullopt for a node that is absent, not a
// scalar or not a T: the conversion without the exception `as<T>()` throws, for every reader here.
template <typename T>
std::optional<T> ScalarAs(const YAML::Node& node) {
  T value{};
  if (!node.IsDefined() || !node.IsScalar() || !YAML::convert<T>::decode(node, value)) return std::nullopt;
  return value;
}

class YamlReader {
 public:
  explicit YamlReader(std::string source) : source_(std::move(source)) {}
  virtual ~YamlReader() = default;

  const std::string& source() const { return source_; }
  // source:line:col of `node`; the source alone for a node without a position.
  std::string Where(const YAML::Node& node) const;
  // kInvalidArgument "source:line:col: message".
  Status Error(const YAML::Node& node, const std::string& message) const;

  // `what` names the field in the error.
  StatusOr<std::string> String(const YAML::Node& node, const std::string& what) const;
  StatusOr<int> Int(const YAML::Node& node, const std::string& what) const;
  StatusOr<double> Double(const YAML::Node& node, const std::string& what) const;
  StatusOr<bool> Bool(const YAML::Node& node, const std::string& what) const;
  // A list of strings, or one string standing for a list of one.
  StatusOr<std::vector<std::string>> Strings(const YAML::Node& node, const std::string& what) const;
  StatusOr<std::vector<int>> Ints(const YAML::Node& node, const std::string& what) const;
  // Rejects keys a section does not know, so a typo is an error instead of a silently ignored rule.
  Status OnlyKeys(const YAML::Node& map, const std::set<std::string>& known, const std::string& what) const;

  // Reads one independent part of the file (a section, an entry of a list): its first error is
  // kept and reading goes on with the next part, so a file with mistakes in several places reports
  // them all. A yaml-cpp exception thrown inside becomes an error at the position it names.
  template <typename ReadPart>
  void Part(ReadPart&& read) {
    Status status = Status::Ok();
    try {
      status = read();
    } catch (const YAML::Exception& e) {
      status = PositionedError(e);
    }
    if (!status.ok()) errors_.push_back(status.message());
  }
  // Each entry of a node of `kind` (a sequence, a mapping) as a part of its own; a node of another
  // kind is the one error `wrong_kind`. A mapping's entry has its key in .first, its value in .second.
  template <typename ReadEntry>
  void Each(const YAML::Node& node, YAML::NodeType::value kind, const std::string& wrong_kind, ReadEntry&& read) {
    if (node.Type() != kind) {
      errors_.push_back(Error(node, wrong_kind).message());
      return;
    }
    for (const auto& entry : node) Part([&] { return read(entry); });
  }
  bool failed() const { return !errors_.empty(); }
  // Ok when no part failed; else a `code` error naming every error, one a line, in reading order.
  Status Finish(StatusCode code = StatusCode::kInvalidArgument) const;

 private:
  Status PositionedError(const YAML::Exception& e) const;

  std::string source_;
  std::vector<std::string> errors_;
};

// Reads map[key] with the getter `get` of `reader` (its own, or one of its base's) into `out` when
// the key is there; `out` keeps what it held otherwise. The key names the field in an error.
template <typename Reader, typename Owner, typename T, typename Value>
Status ReadOptional(const Reader& reader, const YAML::Node& map, const std::string& key, T& out,
                    StatusOr<Value> (Owner::*get)(const YAML::Node&, const std::string&) const) {
  static_assert(std::is_base_of_v<Owner, Reader>, "the getter must be the reader's own or its base's");
  const YAML::Node node = map[key];
  if (!node) return Status::Ok();
  ASSIGN_OR_RETURN(out, (reader.*get)(node, key));
  return Status::Ok();
}

// ReadOptional of a key the map must have: its absence is an error at the map naming the key.
template <typename Reader, typename Owner, typename T, typename Value>
Status ReadRequired(const Reader& reader, const YAML::Node& map, const std::string& key, T& out,
                    StatusOr<Value> (Owner::*get)(const YAML::Node&, const std::string&) const) {
  if (!map[key]) return reader.Error(map, "missing key '" + key + "'");
  return ReadOptional(reader, map, key, out, get);
}

}  // namespace diagnose
