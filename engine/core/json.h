// nlohmann::json glue shared by every module that serialises plain data.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace nlohmann {
template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& value) {
    if (value) j = *value; else j = nullptr;
  }
  static void from_json(const json& j, std::optional<T>& value) {
    if (j.is_null()) value.reset(); else value = j.get<T>();
  }
};
}  // namespace nlohmann

namespace diagnose {
// Serialises for output. Strings from outside are made valid UTF-8 where they enter (core/utf8.h);
// this is the last line of defence, so a byte that slipped through becomes U+FFFD, not an abort.
inline std::string DumpJson(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}
}  // namespace diagnose
