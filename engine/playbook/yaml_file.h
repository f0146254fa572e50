// Positioned reading of a file in the playbook language (playbooks, rules/common, alert books):
// every problem becomes a LoadDiagnostic with its code and file:line:col in the file's LoadResult,
// reading goes on past it, and no yaml-cpp exception leaves these readers. `diagnose lint` prints
// what they collect.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/core/yaml_reader.h"
#include "engine/playbook/loader.h"

namespace diagnose::playbook {

std::string JoinSet(const std::set<std::string>& s);

// Where a file's diagnostics go and where its nodes were written.
struct FileCtx {
  std::string file;
  std::shared_ptr<const std::string> text;
  LoadResult* result = nullptr;
  std::string playbook;
  std::string rule;

  // Where nodes without a position of their own (copies made by `for_each`) were written.
  YAML::Mark expanded_from = YAML::Mark::null_mark();

  SourcePos Pos(const YAML::Node& n) const;
  std::function<SourcePos(size_t)> Locator(const YAML::Node& n) const;
  void Add(LoadCode code, const SourcePos& pos, const std::string& field, std::string message) const;
  void Add(LoadCode code, const YAML::Node& n, const std::string& field, std::string message) const;
  // The same file's diagnostics about another rule (an alert book names the alert each is about).
  FileCtx ForRule(std::string rule_id) const;
};

void CheckKeys(const FileCtx& ctx, const YAML::Node& map, const std::set<std::string>& allowed);
bool GetScalar(const FileCtx& ctx, const YAML::Node& parent, const std::string& key, bool required, std::string* out);
bool GetStringList(const FileCtx& ctx, const YAML::Node& n, const std::string& key, std::vector<std::string>* out);
bool GetBool(const FileCtx& ctx, const YAML::Node& n, const std::string& key, bool* out);
bool GetNumber(const FileCtx& ctx, const YAML::Node& n, const std::string& key, double* out);
// Parses ctx.text within the size and node limits; false (and reported) otherwise.
bool ParseYaml(FileCtx& ctx, YAML::Node* root);

}  // namespace diagnose::playbook
