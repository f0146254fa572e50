// The diagnose/v1 report (docs/contract.md). Contract fields are required and keep their meaning;
// extensions are additive (tsdb, causal_chain, not_evaluated, facts, timings, incomplete, and the
// decision's slurm_exclude, changes_typed and overrides).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/json.h"
#include "engine/core/vocabulary.h"
#include "engine/report/confidence.h"
#include "engine/report/decision_action.h"
#include "engine/report/evidence_kind.h"
#include "engine/report/finding_status.h"
#include "engine/report/job_role.h"
#include "engine/report/job_facts.h"
#include "engine/report/job_status.h"

namespace diagnose {

struct TimeWindow {
  double start = 0;
  double end = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TimeWindow, start, end)

struct Evidence {
  EvidenceKind kind = EvidenceKind::kDerived;   // a profile's query is the trace file's path
  std::string query;                  // PromQL text as run (promql), or "file:line" (log)
  std::optional<TimeWindow> window;   // the range or instant ([t, t]) it was evaluated over
  nlohmann::json value;               // number, per-host object, or table
  std::string text;                   // human sentence or the quoted log line
  // Which job's TSDB answered (promql). In JSON only for the baseline (extension).
  JobRole role = JobRole::kSubject;
  // The range query's series keyed like `value` ("host" or "host/device" -> [[t, v], ...]), moved
  // here from the rule that asked once the evaluation is over (empty until then); findings citing
  // it share it. Drawn by the HTML report; never in JSON (a 1,000-host job's series would dwarf the
  // report).
  std::shared_ptr<const nlohmann::json> series;
};

struct Finding {
  std::string id;          // "<playbook>/<rule>"
  std::string playbook;
  FindingStatus status = FindingStatus::kClear;
  std::vector<std::string> hosts;
  std::vector<Evidence> evidence;
  std::string summary;     // one sentence (extension)
  std::optional<double> onset;   // earliest anomaly time, when known (extension)
};

struct JobEntry {
  std::string id;
  JobRole role = JobRole::kSubject;
  std::string dir;
  JobStatus status = JobStatus::kUnknownDeath;
  std::string failure_class;
  std::vector<std::string> hosts;
  std::optional<int64_t> first_step, last_step, total_steps;
};

struct Verdict {
  std::string root_cause = "unknown";
  std::string domain = "none";
  Confidence confidence = Confidence::kInsufficientEvidence;
  std::string summary;
  // Extension: "logs" when the log signatures alone decided, "playbooks" when a playbook's
  // metric-backed verdict did. Sweep rules defer to the latter.
  std::string source = "logs";
  // Extension: failure classes the playbooks showed to be false alarms (e.g. a log-inferred hang
  // while every GPU kept training). Sweep rules keyed on them stand down.
  std::vector<std::string> refuted;
  // Extension: the best-ranked explanation naming another cause, and why it lost.
  std::string runner_up;
  // Extension: the finding ("<playbook>/<rule>") whose verdict this is, when a playbook decided.
  std::string finding;
};

struct Exclusion {
  std::string host;
  int priority = 0;
  std::string reason;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Exclusion, host, priority, reason)

// A step of the sweep policy that replaced the action before it (extension `overrides`): a sweep
// rule taking over from the diagnosis, a sweep limit, an escalation. Scripts read `reason` here
// instead of parsing notes.
struct ActionOverride {
  DecisionAction from = DecisionAction::kNone;
  DecisionAction to = DecisionAction::kNone;
  std::string reason;
  std::string rule;   // the rules/sweep/decisions.yaml rule in charge, "" when none was
  // The rules/sweep/decisions.yaml limit that made this step ("limits.max_excluded_nodes_per_sweep",
  // "<rule>.limits.consecutive"); "" when a rule took over or the contract required the step.
  std::string limit;
};

struct Decision {
  DecisionAction action = DecisionAction::kNone;
  std::vector<Exclusion> exclude;
  std::map<std::string, std::string> changes;
  std::vector<std::string> notes;
  std::vector<ActionOverride> overrides;   // in the order they applied
  // The cause the sweep policy acted on where a sweep rule named one and the verdict did not
  // (verdict.root_cause `unknown`); "" otherwise. The verdict stays the diagnosis's own (extension
  // `decision.root_cause`, in JSON only when set).
  std::string root_cause;
  // A diagnosis made outside a sweep skips the sweep-wide limits; this is the step the sweep policy
  // (rules/sweep/decisions.yaml, no history yet) would take on this decision inside a sweep, where
  // it changes the action (extension `decision.in_sweep`, in JSON only when set).
  std::optional<ActionOverride> in_sweep;
};

// The limit step that set the decision's final action, or nullptr when none did (the diagnosis's
// action stood, or a rule took over: the cause shown names that rule's reading).
const ActionOverride* DecidingLimit(const Decision& decision);
// One sentence for a policy step, the same wherever it is shown: "<reason> [<limit>]".
std::string PolicyStepText(const ActionOverride& step);
// The sweep policy's part in the decision, for every report format: what a sweep would do with a
// standalone decision (`in_sweep`), or which limit set the action; "" when the policy changed nothing.
std::string PolicyLine(const Decision& decision);

// The diagnosis's own reading of the subject before the sweep policy acts on it: the logs' verdict,
// refined by the playbooks, and the action that reading alone suggests.
struct Diagnosis {
  Verdict verdict;
  Decision decision;
  std::vector<std::string> causal_chain;   // root cause -> intermediate effects -> symptoms
};

// `exclude` as Slurm's --exclude takes it ("chi2822,chi2834"), priority order. A host name with
// anything but letters, digits, `-`, `_` and `.` (it came from a metric label: `,[]` or a space mean
// something to Slurm's hostlist syntax, a quote, `\` or `|` to the shell a driver pastes it into)
// is left out rather than passed on to mean something else.
std::string SlurmExcludeList(const Decision& decision);
std::string SlurmExcludeList(const std::vector<Exclusion>& exclude);
// The note naming the excluded hosts SlurmExcludeList leaves out, and why; empty when it keeps all.
std::string SlurmExcludeOmissionNote(const std::vector<Exclusion>& exclude);

// `changes` with each value as JSON would type it: a decimal number, true/false, else the string.
// `changes` itself stays string-valued (contract).
nlohmann::json TypedChanges(const std::map<std::string, std::string>& changes);

// How a job's metrics were sought (JSON `tsdb[].mode`): a private Prometheus on a copy of the
// snapshot, a --prometheus endpoint, or not at all.
#define DIAGNOSE_TSDB_MODE_WORDS(WORD) WORD(kNone, "none") WORD(kPrivateCopy, "private-copy") WORD(kRemote, "remote")
DIAGNOSE_VOCABULARY(TsdbMode, "tsdb mode", DIAGNOSE_TSDB_MODE_WORDS);

// What came of it (JSON `tsdb[].state`): served (private copy) | remote | unavailable (the job has
// none we can read: a fact about the job) | failed (diagnose could not reach or serve it: a fact
// about the tool) | not-requested (--logs-only).
#define DIAGNOSE_TSDB_AVAILABILITY_WORDS(WORD) \
  WORD(kServed, "served")                      \
  WORD(kRemote, "remote")                      \
  WORD(kUnavailable, "unavailable")            \
  WORD(kFailed, "failed")                      \
  WORD(kNotRequested, "not-requested")
DIAGNOSE_VOCABULARY(TsdbAvailability, "tsdb state", DIAGNOSE_TSDB_AVAILABILITY_WORDS);

// Where the metrics came from and what could not be asked (extension "tsdb").
struct TsdbState {
  TsdbMode mode = TsdbMode::kNone;
  std::string source;             // dir or URL
  TsdbAvailability state = TsdbAvailability::kUnavailable;
  std::string reason;             // why unavailable or failed, when it is
  nlohmann::json discovery;       // metric families, hosts, range, step map summary, guard
  std::vector<std::string> gaps;  // observability gaps found
  // A remote endpoint: the time range it was asked about and where that came from (JSON `window`).
  std::string window;
  // --job-label: the matcher every selector sent to the endpoint carried (JSON `scope`).
  std::string scope;
  // How far the job's files (TSDB or log) lie in the future of this host's clock; 0 when the
  // clocks agree. Additive JSON field `clock_skew_seconds`, with `notes` saying what it changed.
  double clock_skew_seconds = 0;
  std::vector<std::string> notes;
};

struct Report {
  std::vector<JobEntry> jobs;
  Verdict verdict;
  std::vector<Finding> findings;
  Decision decision;
  // Extensions.
  std::vector<TsdbState> tsdb;                 // one per job, in jobs[] order (state says whether it had one)
  std::vector<std::string> causal_chain;       // root cause -> intermediate effects -> symptoms
  std::vector<std::string> not_evaluated;      // rules/playbooks that could not run, with why
  std::map<std::string, JobFacts> facts;       // per-job triage facts, keyed by job id (JSON `facts`)
  nlohmann::json timings;                      // stage timings in seconds
  // Set when diagnose itself failed to read metrics it needed (a tsdb entry is "failed"): the
  // verdict then rests on the logs alone, the decision is `none`, and the exit status says so.
  std::optional<std::string> incomplete;
  // Where each job's training steps lie in time (step -> unix seconds, from the TSDB's step
  // counter), keyed by job id; lets charts place TGS phases on the metrics' time axis. Not in JSON.
  std::map<std::string, std::vector<std::pair<int64_t, double>>> step_times;
  // The PromQL endpoint's base URL when it outlives this run (--prometheus): reports link each
  // query to its graph page. Empty for a private snapshot server, which is gone after the run.
  std::string graph_endpoint;
  // The subject's profile drill when its job directory holds a profiler window (JSON `profile`),
  // and its first-screen lines (TGS, MFU, decomposition, kernel table, blocker).
  nlohmann::json profile;
  std::vector<std::string> profile_lines;
  // Its per-GPU decomposition rows (label, file, gpu, compute, exposed_communication, overlap,
  // idle, busy, kernel: seconds per step), drawn as the HTML report's stacked bars. Not in JSON.
  nlohmann::json profile_gpus;
};

// The cause the report's decision acts on: the sweep policy's (decision.root_cause) where it named
// one the verdict did not, else the verdict's.
const std::string& ActedOnRootCause(const Report& report);

// The triage facts of job `id`, or nullptr when the report has none for it.
const JobFacts* FactsOf(const Report& report, const std::string& id);
// The triage facts of the subject job (the first job when none is marked), or nullptr.
const JobFacts* SubjectFacts(const Report& report);

nlohmann::json ToJson(const Evidence& e);
nlohmann::json ToJson(const Finding& f);
nlohmann::json ToJson(const Decision& d);
nlohmann::json ToJson(const Report& r);

// Contract vocabulary checks, used by tests and by the report writer before it prints.
bool IsKnownRootCause(const std::string& id);
bool IsKnownDomain(const std::string& id);
bool IsKnownConfidence(const std::string& id);
bool IsKnownJobStatus(const std::string& id);
// The domain a root cause belongs to (rdma-link-degradation -> network, ...).
std::string DomainOfRootCause(const std::string& root_cause);

}  // namespace diagnose
