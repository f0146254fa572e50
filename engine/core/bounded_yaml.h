// YAML from files others write (playbooks, rules, tests, signature tables), inside the named
// limits yaml.file_bytes, yaml.depth and yaml.nodes (engine/core/limits.h). yaml-cpp shares an
// aliased node rather than copying it, so a bomb of a few hundred bytes parses instantly and only
// explodes when walked: the walk here counts nodes as a reader would see them, aliases expanded,
// and stops at the limit, so nothing after it ever walks one.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "engine/core/status.h"

namespace diagnose {

// The file's bytes, or kResourceExhausted past yaml.file_bytes, kNotFound/kPermissionDenied naming
// the file when it cannot be read.
StatusOr<std::string> ReadYamlFile(const std::string& path);

// Parses and checks. Errors name `source`:line:col: a syntax error as yaml-cpp reports it, a limit
// with its name and how to raise it.
StatusOr<YAML::Node> LoadBoundedYaml(const std::string& text, const std::string& source);

// ReadYamlFile then LoadBoundedYaml.
StatusOr<YAML::Node> LoadBoundedYamlFile(const std::string& path);

// The depth and expanded-node check alone, for a document already parsed.
Status CheckYamlBounds(const YAML::Node& root, const std::string& source);

}  // namespace diagnose
