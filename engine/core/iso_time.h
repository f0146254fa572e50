// ISO-8601 UTC rendering of epoch seconds, the one time format reports print: a reader at 3 a.m.
// compares times across logs, TSDB windows and hosts, so every time says its zone and year.
#pragma once

#include <string>

namespace diagnose {

// "2026-02-24T19:21:00Z"; fractional seconds are dropped. Non-finite or negative input gives "".
std::string IsoUtc(double epoch_seconds);

}  // namespace diagnose
