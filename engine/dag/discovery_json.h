// Discovery (engine/discovery) in the shape playbooks read as `discovery` (playbooks/README.md §7).
#pragma once

#include <nlohmann/json.hpp>

#include "engine/discovery/discovery.h"

namespace diagnose::dag {

// {metrics, hosts, range {start, end}, instance_hosts, step_times [[step, epoch], ...], gaps}.
nlohmann::json PlaybookDiscoveryJson(const Discovery& discovery);

}  // namespace diagnose::dag
