// Builders for synthetic JobFacts / Report / history values used by the decision tests.
#pragma once

#include <string>
#include <vector>

#include "engine/decision/decision_rules.h"
#include "engine/decision/refine.h"
#include "engine/decision/sweep_history.h"
#include "engine/report/report.h"
#include "engine/report/job_facts.h"

namespace diagnose::testing {

// The project's real rules file.
const DecisionRules& SweepRules();

// A job on `hosts` running `model` with the given passthrough args; status "failed" by default.
JobFacts MakeFacts(const std::string& id, const std::vector<std::string>& hosts, const std::string& model = "grok-1",
                   const std::map<std::string, std::string>& args = {{"per_device_batch_size", "8"}, {"steps", "15"}});

// A job that hung after running steps 0..last_step.
JobFacts MakeHungFacts(const std::string& id, const std::vector<std::string>& hosts, int last_step,
                       const std::string& model = "grok-1",
                       const std::map<std::string, std::string>& args = {{"per_device_batch_size", "8"}, {"steps", "15"}});

void AddClass(JobFacts* facts, const std::string& failure_class, const std::string& host, const std::string& text);
void AddEvent(JobFacts* facts, const std::string& kind, const std::string& host, const std::string& text);
void AddSteps(JobFacts* facts, int first, int last, double tgs = 1000);
void AddNodeExit(JobFacts* facts, const std::string& host, int code);
void SetSummary(JobFacts* facts, const std::string& status, int exit_code, const std::string& reason = "");

Diagnosis MakeDiagnosis(const std::string& root_cause = "unknown", DecisionAction action = DecisionAction::kNone);

// Runs RefineDecision with a context for sweep "s1".
SweepDecision Refine(const JobFacts& facts, const SweepHistory& history = {}, const Diagnosis& diagnosis = MakeDiagnosis(),
                     bool stalled = false, const std::string& variant = "");

// Appends the decision for `facts` to `history` as the engine would.
SweepDecision DecideAndRecord(const JobFacts& facts, SweepHistory* history, const Diagnosis& diagnosis = MakeDiagnosis(),
                              bool stalled = false, const std::string& variant = "");

}  // namespace diagnose::testing
