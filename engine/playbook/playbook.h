// The loaded, validated form of playbooks and shared rules (playbooks/README.md). Holds no YAML:
// every expression is parsed, every position is a SourcePos, references are resolved to
// qualified rule ids ("<playbook>/<rule>", "common/<rule>").
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/playbook/expr.h"
#include "engine/playbook/query_at.h"
#include "engine/playbook/reduction.h"
#include "engine/report/confidence.h"
#include "engine/report/decision_action.h"
#include "engine/report/job_role.h"

namespace diagnose::playbook {

struct SourcePos {
  std::string file;
  int line = 0;   // 1-based; 0 = unknown
  int col = 0;    // 1-based
  std::string ToString() const;   // "file:line:col"
};

// A parsed expression with where it was written.
struct CompiledExpr {
  std::string source;
  std::shared_ptr<const Expr> ast;
  SourcePos pos;
  // Maps a byte offset inside `source` to its file:line:col (set by the loader).
  std::function<SourcePos(size_t)> locate;
  SourcePos At(size_t offset) const { return locate ? locate(offset) : pos; }
  bool present() const { return ast != nullptr; }
};

struct Template {
  std::string source;
  std::vector<TemplatePiece> pieces;
  SourcePos pos;
  std::function<SourcePos(size_t)> locate;
  SourcePos At(size_t offset) const { return locate ? locate(offset) : pos; }
  bool present() const { return !source.empty(); }
};

enum class ParamType { kNumber, kDuration, kString, kHosts, kStrings, kRegex, kBool };
const char* ParamTypeName(ParamType t);
std::optional<ParamType> ParseParamType(const std::string& name);

// A typed parameter (playbook `params` or a query's `args`): a literal or an expression.
struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kString;
  nlohmann::json literal;           // set when the value is a literal (checked at load)
  CompiledExpr expr;                // set when the value is an expression
  std::string doc;
  SourcePos pos;
};

enum class RuleKind { kQuery, kFact, kAnalysis, kVerdict };
const char* RuleKindName(RuleKind k);

// A named expression (README §6.4): a rule's `let:`, a playbook's or rules/common's `macros:`.
// Evaluated where it is used, on first use, in the user's scope (so `host` inside an exclusion
// reason is that host); the rules it reads become dependencies of every rule that uses it.
struct Binding {
  std::string name;
  CompiledExpr expr;
  std::string static_type;          // "" = unknown until run time
  std::vector<std::string> needs;   // qualified rule ids it reads (set by the reference pass)
};

// A query template may use `{{ window_length }}` without declaring it: the length of its window.
inline constexpr const char* kWindowLengthPlaceholder = "window_length";

struct QuerySpec {
  std::string promql_template;
  SourcePos template_pos;
  // Maps a byte offset inside the template to its file:line:col (set by the loader).
  std::function<SourcePos(size_t)> template_locate;
  SourcePos TemplateAt(size_t offset) const { return template_locate ? template_locate(offset) : template_pos; }
  bool range = false;
  std::string window = "job";
  QueryAt at = QueryAt::kEnd;       // instant only
  CompiledExpr at_expr;             // when `at` is kExpression
  double step_seconds = 30;
  JobRole tsdb = JobRole::kSubject;
  std::vector<std::string> by;
  Reduction reduce = Reduction::kMax;
  // More than one reduction of the same range query (`reduce: [last, max]`): `values` holds the
  // first, `reduced.<how>` each of them.
  std::vector<Reduction> reductions;
  std::map<std::string, ParamSpec> args;
  std::vector<std::string> placeholders;   // in template order, unique
};

struct FactSpec {
  CompiledExpr value;
  CompiledExpr evidence;
};

struct AnalysisSpec {
  std::string name;
  CompiledExpr input;
  CompiledExpr baseline_input;
  CompiledExpr phases;
  CompiledExpr windows;
  nlohmann::json args = nlohmann::json::object();   // defaults filled in, types checked
};

struct ConfidenceLevel {
  Confidence level = Confidence::kLikely;
  CompiledExpr when;                // absent = always
};

struct ExcludeSpec {
  CompiledExpr hosts;
  int priority = 0;
  Template reason;
};

// Evidence that lies only inside expected-disturbance windows (e.g. checkpoint saves) does not make
// a finding: when `times` (epoch seconds of the evidence: a number, a list, or a map of either) is
// non-empty and every time lies inside one of the `during` windows (a list of {start, end}), a
// finding or verdict that would fire is reported `suppressed` with `reason` instead.
struct SuppressSpec {
  CompiledExpr times;
  CompiledExpr during;
  Template reason;
};

// A verdict note, said only when its condition holds (absent = always).
struct NoteSpec {
  Template text;
  CompiledExpr when;
};

struct VerdictSpec {
  CompiledExpr when;
  // Local ids of verdicts this one stands in for: it is considered only when none of them could be
  // evaluated (skipped or failed for lack of data), never when one of them was judged false.
  std::vector<std::string> fallback_for;
  std::string root_cause;
  std::vector<ConfidenceLevel> confidence;
  Template summary;
  CompiledExpr hosts;
  CompiledExpr onset;
  std::vector<std::string> explains;
  DecisionAction action = DecisionAction::kNone;
  std::vector<ExcludeSpec> exclude;
  std::map<std::string, Template> changes;
  std::vector<NoteSpec> notes;
  std::optional<SuppressSpec> suppress;
  bool yields = false;              // README §3.4: ranks below any verdict naming a mechanism
};

struct FindingSpec {
  CompiledExpr when;
  CompiledExpr hosts;
  Template summary;
  std::optional<SuppressSpec> suppress;
};

struct RuleSpec {
  std::string id;                   // local id
  std::string qualified_id;         // "<playbook>/<id>" or "common/<id>"
  std::string playbook;             // "" for shared rules
  RuleKind kind = RuleKind::kFact;
  std::string description;
  // The description as a template when it has placeholders (`{params.margin_c}`): shown for a
  // finding that did not fire, rendered, never with its placeholders as they were written.
  Template description_text;
  SourcePos pos;
  std::vector<std::string> needs;   // qualified ids, explicit and from references
  std::vector<Binding> lets;        // in definition order; a binding sees the ones before it
  // Qualified ids evaluated first without being needed: the verdicts a fallback stands in for, and
  // what only a verdict's onset reads.
  std::vector<std::string> after;
  std::vector<std::string> fallback_primaries;   // qualified ids of the verdicts it stands in for
  QuerySpec query;
  FactSpec fact;
  AnalysisSpec analysis;
  VerdictSpec verdict;
  std::optional<FindingSpec> finding;
};

struct TriggerSpec {
  std::vector<std::string> failure_class;
  std::vector<std::string> tgs_pattern;
  std::vector<std::string> status;
  std::optional<bool> baseline;
  std::optional<bool> tsdb;
  CompiledExpr when;
  bool always = false;
  SourcePos pos;
};

// A named time window (README §5): `start`/`end` epoch expressions, or `list`, an expression giving a
// list of {start, end} (usable in expressions, not as a query's window). `unavailable` says why
// when the inputs are missing for a job.
struct WindowSpec {
  std::string name;
  CompiledExpr start;
  CompiledExpr end;
  CompiledExpr list;
  std::string unavailable;
  SourcePos pos;
  bool is_list() const { return list.present(); }
};

struct PlaybookSpec {
  std::string id;
  std::string description;
  std::string file;
  SourcePos pos;
  std::vector<TriggerSpec> triggers;
  std::map<std::string, ParamSpec> params;
  std::map<std::string, WindowSpec> windows;
  std::vector<Binding> macros;
  std::vector<RuleSpec> rules;
  std::vector<std::string> precedence;   // local verdict rule ids, highest first
  const RuleSpec* FindRule(const std::string& local_id) const;
};

// Everything loaded from rules/ and playbooks/.
struct Library {
  std::vector<PlaybookSpec> playbooks;
  std::vector<RuleSpec> common_rules;
  std::vector<Binding> common_macros;   // rules/common `macros:`, visible to every playbook
  std::vector<WindowSpec> shared_windows;   // rules/common `windows:`, in load order
  const WindowSpec* FindSharedWindow(const std::string& name) const;
  nlohmann::json thresholds = nlohmann::json::object();
  const PlaybookSpec* FindPlaybook(const std::string& id) const;
  const RuleSpec* FindCommonRule(const std::string& local_id) const;
};

// Windows every job has, from its TSDB's range (README §5): `job`, `baseline_job`.
bool IsBuiltinWindow(const std::string& name);

}  // namespace diagnose::playbook
