#include "tests/decision/decision_test_support.h"

#include <cstdlib>
#include <stdexcept>

namespace diagnose::testing {

const DecisionRules& SweepRules() {
  static const DecisionRules rules = [] {
    StatusOr<DecisionRules> loaded = LoadDecisionRules(DIAGNOSE_SOURCE_DIR);
    if (!loaded.ok()) throw std::runtime_error(loaded.status().ToString());
    return std::move(loaded).value();
  }();
  return rules;
}

JobFacts MakeFacts(const std::string& id, const std::vector<std::string>& hosts, const std::string& model,
                   const std::map<std::string, std::string>& args) {
  JobFacts f;
  f.id = id;
  f.status = JobStatus::kFailed;
  f.header.job_id = id;
  f.header.model_name = model;
  f.header.nnodes = static_cast<int>(hosts.size());
  f.header.hosts = hosts;
  f.header.passthrough = args;
  return f;
}

namespace {
int TaskOf(const JobFacts& f, const std::string& host) {
  for (size_t i = 0; i < f.header.hosts.size(); ++i)
    if (f.header.hosts[i] == host) return static_cast<int>(i);
  return -1;
}
}  // namespace

void AddClass(JobFacts* f, const std::string& failure_class, const std::string& host, const std::string& text) {
  ClassMatch m;
  m.failure_class = failure_class;
  m.host = host;
  m.task = TaskOf(*f, host);
  m.where = {f->id + ".log", 100, text};
  if (f->failure_class.empty()) f->failure_class = failure_class;
  f->classes.push_back(m);
}

void AddEvent(JobFacts* f, const std::string& kind, const std::string& host, const std::string& text) {
  LogEvent e;
  e.kind = kind;
  e.task = TaskOf(*f, host);   // the host left empty: the engine must map task -> host itself
  e.where = {f->id + ".log", 50, text};
  f->events.push_back(e);
}

JobFacts MakeHungFacts(const std::string& id, const std::vector<std::string>& hosts, int last_step,
                       const std::string& model, const std::map<std::string, std::string>& args) {
  JobFacts f = MakeFacts(id, hosts, model, args);
  f.status = JobStatus::kHanging;
  AddSteps(&f, 0, last_step);
  return f;
}

void AddSteps(JobFacts* f, int first, int last, double tgs) {
  for (int s = first; s <= last; ++s) {
    StepRecord r;
    r.step = s;
    r.tokens_per_sec_per_device = tgs;
    r.task = 0;
    f->steps.push_back(r);
  }
  f->progress.first_step = first;
  f->progress.last_step = last;
}

void AddNodeExit(JobFacts* f, const std::string& host, int code) {
  NodeExit x;
  x.host = host;
  x.task = TaskOf(*f, host);
  x.exit_code = code;
  f->node_exits.push_back(x);
}

void SetSummary(JobFacts* f, const std::string& status, int exit_code, const std::string& reason) {
  f->summary.present = true;
  f->summary.status = status;
  f->summary.exit_code = exit_code;
  f->summary.reason = reason;
}

Diagnosis MakeDiagnosis(const std::string& root_cause, DecisionAction action) {
  Diagnosis r;
  r.verdict.root_cause = root_cause;
  r.verdict.domain = DomainOfRootCause(root_cause);
  r.decision.action = action;
  return r;
}

SweepDecision Refine(const JobFacts& facts, const SweepHistory& history, const Diagnosis& diagnosis, bool stalled,
                     const std::string& variant) {
  SweepContext context{"s1", variant, 1700000000, stalled, /*in_sweep=*/true};
  return RefineDecision(diagnosis, facts, history, SweepRules(), context);
}

SweepDecision DecideAndRecord(const JobFacts& facts, SweepHistory* history, const Diagnosis& diagnosis, bool stalled,
                              const std::string& variant) {
  SweepContext context{"s1", variant, 1700000000 + static_cast<int64_t>(history->entries.size()), stalled,
                       /*in_sweep=*/true};
  SweepDecision d = RefineDecision(diagnosis, facts, *history, SweepRules(), context);
  history->entries.push_back(MakeHistoryEntry(facts, d, context));
  return d;
}

}  // namespace diagnose::testing
