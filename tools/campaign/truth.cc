#include "tools/campaign/truth.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace diagnose::campaign {

using nlohmann::ordered_json;

bool RootCauseMatches(const std::string& truth, const std::string& answer) {
  size_t from = 0;
  while (from <= truth.size()) {
    const size_t bar = std::min(truth.find('|', from), truth.size());
    if (truth.compare(from, bar - from, answer) == 0) return true;
    from = bar + 1;
  }
  return false;
}


std::string TruthToJson(const std::vector<JobTruth>& truths) {
  ordered_json jobs = ordered_json::array();
  for (const JobTruth& t : truths) {
    ordered_json exclude = ordered_json::array();
    for (const auto& e : t.exclude)
      exclude.push_back({{"host", e.host}, {"priority", e.priority ? ordered_json(*e.priority) : ordered_json()}});
    jobs.push_back({{"job_id", t.job_id},
                    {"kind", t.kind},
                    {"scored", t.scored},
                    {"root_cause", t.root_cause},
                    {"action", t.action},
                    {"exclude", exclude},
                    {"must_not_exclude", t.must_not_exclude},
                    {"baseline", t.baseline ? ordered_json(*t.baseline) : ordered_json()},
                    // whole seconds: the text must be identical for identical seeds on every platform
                    {"now", t.now ? ordered_json(static_cast<int64_t>(*t.now)) : ordered_json()},
                    {"notes", t.notes}});
  }
  return ordered_json({{"schema", "campaign-truth/v1"}, {"jobs", jobs}}).dump(2) + "\n";
}

StatusOr<std::vector<JobTruth>> TruthFromJson(const std::string& text, const std::string& path) {
  ordered_json root = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object() || !root.contains("jobs") || !root["jobs"].is_array())
    return InvalidArgumentError(path + ": not a campaign truth file (no \"jobs\" array)");
  std::vector<JobTruth> truths;
  try {
    for (const auto& j : root["jobs"]) {
      JobTruth t;
      t.job_id = j.at("job_id").get<std::string>();
      t.kind = j.at("kind").get<std::string>();
      t.scored = j.value("scored", true);
      t.root_cause = j.at("root_cause").get<std::string>();
      t.action = j.at("action").get<std::string>();
      for (const auto& e : j.at("exclude")) {
        ExpectedExclusion x{e.at("host").get<std::string>(), std::nullopt};
        if (e.contains("priority") && e["priority"].is_number_integer()) x.priority = e["priority"].get<int>();
        t.exclude.push_back(x);
      }
      t.must_not_exclude = j.value("must_not_exclude", std::vector<std::string>{});
      if (j.contains("baseline") && j["baseline"].is_string()) t.baseline = j["baseline"].get<std::string>();
      if (j.contains("now") && j["now"].is_number()) t.now = j["now"].get<double>();
      t.notes = j.value("notes", "");
      truths.push_back(std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(path + ": malformed job entry: " + e.what());
  }
  return truths;
}

}  // namespace diagnose::campaign
