// The names an expression sees before any rule has run (playbooks/README §6), and the params and
// windows built from them. One resolver for every place an expression is evaluated: which roots
// exist depends on the place (a trigger has no params or windows, a window sees the windows
// resolved before it, a rule's expression sees all and `host` inside an exclusion reason).
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/dag/context.h"
#include "engine/playbook/playbook.h"

namespace diagnose::dag {

struct ExpressionRoots {
  const EvaluationContext* context = nullptr;
  const nlohmann::json* thresholds = nullptr;
  const nlohmann::json* params = nullptr;
  const nlohmann::json* windows = nullptr;
  const nlohmann::json* host = nullptr;

  // nullopt: `root` is not one of these names (a rule id, a binding, ...). nullptr: it is, and
  // this job or this place has no value for it (no baseline, no TSDB, no host).
  std::optional<const nlohmann::json*> Find(const std::string& root) const;
};

// Names that could be computed, and for each one that could not, why: a missing param or window
// is not an error, the rules that need it are skipped with that reason.
struct Resolved {
  nlohmann::json values = nlohmann::json::object();
  std::map<std::string, std::string> missing;   // name ("params.x", "job", a window) -> why
};

// A playbook's params evaluated (literals and expressions).
Resolved ResolveParams(const playbook::PlaybookSpec& playbook, const EvaluationContext& ctx,
                       const nlohmann::json& thresholds);

// `job`, `baseline_job` and the shared windows (rules/common): {name: {start, end}} or a list of
// them.
Resolved ResolveSharedWindows(const playbook::Library& library, const EvaluationContext& ctx,
                              const nlohmann::json& thresholds);

// The shared windows plus a playbook's own, resolved with its params.
Resolved ResolvePlaybookWindows(const playbook::PlaybookSpec& playbook, const EvaluationContext& ctx,
                                const nlohmann::json& params, const nlohmann::json& thresholds,
                                const Resolved& shared_windows);

}  // namespace diagnose::dag
