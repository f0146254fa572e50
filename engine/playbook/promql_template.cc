#include "engine/playbook/promql_template.h"

#include <cstdio>
#include <regex>

#include "engine/core/bounded_regex.h"
#include "engine/tsdb/promql_escape.h"

namespace diagnose::playbook {

StatusOr<std::string> FormatParam(ParamType type, const nlohmann::json& value, const std::string& name) {
  auto bad = [&](const std::string& want) {
    return InvalidArgumentError("parameter '" + name + "' must be " + want + ", got " + value.dump());
  };
  switch (type) {
    case ParamType::kNumber: {
      if (!value.is_number()) return bad("a number");
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.10g", value.get<double>());
      return std::string(buf);
    }
    case ParamType::kDuration: {
      static const std::regex re("^([0-9]+(ms|s|m|h|d|w|y))+$");
      // Up to ~31 million years: past long long's range the conversion is undefined behaviour.
      if (value.is_number() && value.get<double>() > 0 && value.get<double>() < 1e15)
        return std::to_string(static_cast<long long>(value.get<double>() + 0.5)) + "s";
      if (value.is_string() && BoundedRegexMatch(value.get<std::string>(), re)) return value.get<std::string>();
      return bad("a duration such as 30s or 5m");
    }
    case ParamType::kString:
      if (value.is_string()) return EscapePromqlString(value.get<std::string>());
      if (value.is_number()) return EscapePromqlString(value.dump());
      return bad("a string");
    case ParamType::kRegex:
      if (!value.is_string()) return bad("a regex string");
      return value.get<std::string>();
    case ParamType::kBool:
      if (!value.is_boolean()) return bad("true or false");
      return std::string(value.get<bool>() ? "1" : "0");
    case ParamType::kHosts:
    case ParamType::kStrings: {
      if (!value.is_array()) return bad("a list of strings");
      std::vector<std::string> items;
      for (const auto& v : value) {
        if (!v.is_string()) return bad("a list of strings");
        items.push_back(v.get<std::string>());
      }
      if (items.empty()) return FailedPreconditionError("parameter '" + name + "' is an empty list");
      return PromqlAlternation(items);
    }
  }
  return bad("a known type");
}

StatusOr<std::string> RenderPromql(const RuleSpec& rule,
                                   const std::function<StatusOr<nlohmann::json>(const std::string&)>& value_of,
                                   const std::function<ParamType(const std::string&)>& type_of) {
  const std::string& tpl = rule.query.promql_template;
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = tpl.find("{{", pos);
    if (open == std::string::npos) {
      out += tpl.substr(pos);
      break;
    }
    size_t close = tpl.find("}}", open + 2);
    if (close == std::string::npos) return InvalidArgumentError("unterminated '{{' in query template");
    out += tpl.substr(pos, open - pos);
    std::string inner = tpl.substr(open + 2, close - open - 2);
    size_t b = inner.find_first_not_of(' '), e = inner.find_last_not_of(' ');
    std::string name = b == std::string::npos ? "" : inner.substr(b, e - b + 1);
    auto value = value_of(name);
    if (!value.ok()) return value.status();
    auto text = FormatParam(type_of(name), *value, name);
    if (!text.ok()) return text.status();
    out += *text;
    pos = close + 2;
  }
  return out;
}

}  // namespace diagnose::playbook
