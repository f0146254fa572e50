// Slurm hostlist expression expansion (`scontrol show hostnames` semantics): `chi[2822-2835,2853]`,
// several bracket groups (`rack[1-2]-n[01-03]`), zero padding (`node[001-010]`) and comma lists
// outside brackets (`a1,b[2-3],c`).
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"

namespace diagnose {

// Expands `expr`; kInvalidArgument naming the column on malformed input. `limit` bounds the result
// so a hostile `x[0-999999999]` cannot exhaust memory.
StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& expr, size_t limit = 100000);

}  // namespace diagnose
