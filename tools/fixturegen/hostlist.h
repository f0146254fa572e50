// Slurm hostlist expressions, e.g. "chi[2822-2835,2853]" <-> {"chi2822", ..., "chi2853"}.
// Fixtures write the compressed form into JOB_NODELIST and the expanded form into NODELIST_EXPANDED,
// so both directions must agree with Slurm's own rules (zero padding kept, ranges merged).
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"

namespace diagnose::fixturegen {

// Accepts "a,b", "pfx[1-3,7]", "pfx[001-010]suffix", and combinations separated by commas.
StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& expression);

// Groups hosts by prefix/suffix and width of their numeric part, merging consecutive numbers into
// ranges; hosts without a number are kept verbatim. Order of groups follows first appearance.
std::string CompressHostlist(const std::vector<std::string>& hosts);

}  // namespace diagnose::fixturegen
