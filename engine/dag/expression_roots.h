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

// A playbook's params evaluated (literals and expressions); `problems` says why one is missing.
nlohmann::json ResolveParams(const playbook::PlaybookSpec& playbook, const EvaluationContext& ctx,
                             const nlohmann::json& thresholds, std::map<std::string, std::string>* problems);

// `job`, `baseline_job` and the shared windows (rules/common): {name: {start, end}} or a list of
// them; a window that cannot be computed is missing and `problems` says why.
nlohmann::json ResolveSharedWindows(const playbook::Library& library, const EvaluationContext& ctx,
                                    const nlohmann::json& thresholds, std::map<std::string, std::string>* problems);

// The shared windows plus a playbook's own, resolved with its params.
nlohmann::json ResolvePlaybookWindows(const playbook::PlaybookSpec& playbook, const EvaluationContext& ctx,
                                      const nlohmann::json& params, const nlohmann::json& thresholds,
                                      const nlohmann::json& shared_windows,
                                      std::map<std::string, std::string>* problems);

}  // namespace diagnose::dag
