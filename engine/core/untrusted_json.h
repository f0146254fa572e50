// JSON that others wrote: a sweep history, a block's meta.json, an endpoint's answer.
#pragma once

#include <cmath>
#include <string_view>

#include <nlohmann/json.hpp>

namespace diagnose {

// Parses JSON written by others (sweep history, meta.json, HTTP answers); is_discarded() on a
// syntax error. A float beyond int64's range becomes null: nlohmann's get<int64_t> of one is
// undefined behaviour (found by fuzz/sweep_history and fuzz/tsdb_meta), and no field we read means
// such a number, so the reader then refuses it as a wrong type instead.
inline nlohmann::json ParseUntrustedJson(std::string_view text) {
  auto tame = [](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::value && parsed.is_number_float() &&
        !(std::fabs(parsed.get<double>()) < 9.2e18))
      parsed = nullptr;
    return true;
  };
  return nlohmann::json::parse(text.begin(), text.end(), tame, /*allow_exceptions=*/false);
}

}  // namespace diagnose
