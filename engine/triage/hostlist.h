// Slurm hostlist expressions, read and written the way Slurm 22.05 does (`scontrol show hostnames`,
// `sbatch --exclude=`): tests/slurm/ checks both directions against a real scontrol. The one
// hostlist parser of the repository (fixturegen and the campaign planner use it too).
//
// Reading: hosts are separated by commas or whitespace outside brackets; `pfx[1-3,7]` expands
// ranges; the width of a range's low end pads every number of the range (`n[001-3]` -> n001..n003,
// `n[1-010]` -> n1..n10); several groups multiply (`rack[1-2]-n[01-02]`) in Slurm's order (the
// last group fastest, then the first, second, ... one before last); text after the last group is
// refused, as Slurm refuses it (`n[1-2]x`), and so is a range of more than 65,536 hosts.
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"

namespace diagnose {

// Expands `expr`; kInvalidArgument naming the problem on malformed input (also where Slurm would
// read a stray bracket as part of a host name: no real host has one). `limit` bounds the result so
// a hostile `x[0-60000],y[0-60000],...` cannot exhaust memory.
StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& expr, size_t limit = 100000);

// "chi[2822-2825,2830]" from {"chi2822", ..., "chi2830"}: hosts are grouped by the text before
// their trailing number (zero-padded numbers by their width, `n08,n09,n10` -> `n[08-10]`),
// consecutive numbers merge into ranges of at most 65,536 hosts, duplicates collapse; hosts without
// a trailing number stay as they are. Groups follow the hosts' first appearance. Slurm expands the
// result back to the same set of hosts.
std::string CompressHostlist(const std::vector<std::string>& hosts);

}  // namespace diagnose
