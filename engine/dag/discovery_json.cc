#include "engine/dag/discovery_json.h"

namespace diagnose::dag {

nlohmann::json PlaybookDiscoveryJson(const Discovery& d) {
  nlohmann::json out;
  out["metrics"] = d.metric_names;
  out["hosts"] = d.hosts;
  out["range"] = {{"start", d.range.start}, {"end", d.range.end}};
  out["instance_hosts"] = d.instance_to_host;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : d.step_times) steps.push_back({s.step, s.time});
  out["step_times"] = steps;
  out["gaps"] = d.gaps;
  return out;
}

}  // namespace diagnose::dag
