// Renders a query rule's PromQL template: every `{{ name }}` is replaced by its typed value,
// escaped for PromQL (engine/tsdb/promql_escape.h). Values of the wrong type are errors naming the
// rule and the parameter.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/playbook/playbook.h"

namespace diagnose::playbook {

// Formats one value for PromQL according to its declared type.
StatusOr<std::string> FormatParam(ParamType type, const nlohmann::json& value, const std::string& name);

// `value_of(name)` yields the value of an arg or param (already evaluated).
StatusOr<std::string> RenderPromql(const RuleSpec& rule,
                                   const std::function<StatusOr<nlohmann::json>(const std::string&)>& value_of,
                                   const std::function<ParamType(const std::string&)>& type_of);

}  // namespace diagnose::playbook
