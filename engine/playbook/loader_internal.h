// Internal to the playbook loader, shared by its stages: reading YAML (yaml_file.h, rule_reader.cc),
// checking what needs more than one rule (rule_checker.cc) and collecting files (loader.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/playbook/loader.h"
#include "engine/playbook/yaml_file.h"

namespace diagnose::playbook::internal {

// YAML access, shared with the alert book (yaml_file.h, yaml_read.cc).
using playbook::CheckKeys;
using playbook::FileCtx;
using playbook::GetBool;
using playbook::GetNumber;
using playbook::GetScalar;
using playbook::GetStringList;
using playbook::JoinSet;
using playbook::ParseYaml;

// ---- read: YAML -> RuleSpec, one rule at a time (rule_reader.cc) ----

CompiledExpr ParseExprNode(const FileCtx& ctx, const YAML::Node& n, const std::string& field);
ParamSpec ParseParam(const FileCtx& ctx, const std::string& name, const YAML::Node& n, const std::string& value_key,
                     const std::set<std::string>& keys, const std::string& field_prefix);
std::optional<WindowSpec> ParseWindow(const FileCtx& ctx, const std::string& name, const YAML::Node& n);
// A playbook's `params:` map and `triggers:` list (README §2, §4).
std::map<std::string, ParamSpec> ParseParams(const FileCtx& ctx, const YAML::Node& n);
std::vector<TriggerSpec> ParseTriggers(const FileCtx& ctx, const YAML::Node& n);

// `for_each` (README §3.7): a rule written once for several items. Each item (a scalar, or a map
// of scalars) gives one copy of the rule, id `<id>_<key>`, with `${key}` and `${field}` replaced
// in every scalar of it. Copies carry no position of their own; errors point at the template.
struct RuleNode {
  YAML::Node node;
  YAML::Mark expanded_from = YAML::Mark::null_mark();   // set for a for_each copy
};

std::vector<RuleNode> ExpandForEach(FileCtx& ctx, const YAML::Node& rules);
std::vector<Binding> ParseBindings(const FileCtx& ctx, const YAML::Node& n, const std::string& field);
bool ParseRule(FileCtx& ctx, const YAML::Node& n, const std::string& playbook_id, RuleSpec* rule);

// ---- check: references, types and cycles across rules (rule_checker.cc) ----

struct Scope {
  const Library* library = nullptr;
  const PlaybookSpec* playbook = nullptr;      // null for shared rules and common files
  const std::vector<RuleSpec>* local_rules = nullptr;
  bool allow_rules = true;                     // false in triggers and windows
  bool allow_host = false;                     // exclude reasons
  // Named expressions in reach, innermost first: the rule's `let:`, the playbook's `macros:`,
  // rules/common `macros:`. While a binding list is being checked only its earlier entries count.
  const std::vector<Binding>* lets = nullptr;
  size_t lets_visible = SIZE_MAX;
  std::set<std::string>* lets_used = nullptr;   // names of `lets` read so far (unused ones are warned of)
  size_t playbook_macros_visible = SIZE_MAX;
  size_t common_macros_visible = SIZE_MAX;
};

// Checks one expression: names resolve, fields exist, statically known types agree. Adds the
// qualified ids of referenced rules to `deps`.
std::string CheckExpr(const FileCtx& ctx, const Scope& scope, const CompiledExpr& e, const std::string& field,
                      std::set<std::string>* deps, size_t base_offset = 0,
                      const std::function<SourcePos(size_t)>& locate = nullptr);
// Checks each binding of `list` against the ones before it (`visible` counts them while it runs).
void CheckBindings(const FileCtx& ctx, const Scope& scope, std::vector<Binding>* list, size_t* visible,
                   const std::string& field);
void CheckRuleRefs(FileCtx& ctx, const Scope& outer_scope, RuleSpec* rule);
// PromQL placeholders: each must name an arg or a playbook param; literal args already type-checked.
void CheckQueryTemplate(const FileCtx& ctx, const Scope& scope, RuleSpec* rule, const YAML::Node& query_node);
// Cycles among `rules` (qualified ids in needs), reported once each with the path.
void CheckCycles(FileCtx& ctx, const std::vector<RuleSpec>& rules);

}  // namespace diagnose::playbook::internal
