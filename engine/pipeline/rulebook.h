// Everything a diagnosis reads from the data directory (rules/ and playbooks/), parsed once. A
// sweep summary or a watcher diagnoses dozens of jobs with one rulebook instead of parsing ~40
// YAML files per job, which was most of a logs-only diagnosis's time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/decision/decision_rules.h"
#include "engine/discovery/discovery.h"
#include "engine/playbook/playbook.h"
#include "engine/triage/signature_table.h"

namespace diagnose {

struct Rulebook {
  std::string data_dir;
  SignatureTable signatures;         // rules/triage/failure-signatures.yaml
  DiscoveryRules discovery;          // rules/discovery.yaml
  DecisionRules decisions;           // rules/sweep/decisions.yaml
  playbook::Library library;         // rules/common/*.yaml, playbooks/*.yaml
};

// What a diagnosis reads before the playbooks: the failure signatures (triage) and the discovery
// rules. Each pointer keeps the whole rulebook alive, whether its load then fails or not.
struct RulesBeforePlaybooks {
  std::shared_ptr<const SignatureTable> signatures;
  std::shared_ptr<const DiscoveryRules> discovery;
};

// Fails on the first file that does not load, naming it; playbook warnings are not failures.
// `playbook_dirs` add playbooks of one's own to the data dir's (`--playbooks DIR`).
// `parsed_before_playbooks`, when given, receives the rules parsed before the playbooks as soon as
// they are: a job's triage and discovery can run while the playbooks load.
StatusOr<std::shared_ptr<const Rulebook>> LoadRulebook(
    const std::string& data_dir, const std::vector<std::string>& playbook_dirs = {},
    const std::function<void(const RulesBeforePlaybooks&)>& parsed_before_playbooks = nullptr);

}  // namespace diagnose
