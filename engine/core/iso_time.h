// ISO-8601 UTC rendering of epoch seconds, the one time format reports print: a reader at 3 a.m.
// compares times across logs, TSDB windows and hosts, so every time says its zone and year.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace diagnose {

// "2026-02-24T19:21:00Z"; fractional seconds are dropped. Non-finite or negative input gives "".
std::string IsoUtc(double epoch_seconds);

// "2026-02-24", "2026-02-24T19:21Z", "2026-02-24 19:21:07.5+01:00": UTC unless an offset is given.
// kInvalidArgument (message without the input: callers name their flag) when it is not one.
StatusOr<int64_t> ParseIsoTime(const std::string& text);

}  // namespace diagnose
