// The evaluator's state and steps, shared by the files that implement them: evaluate.cc runs the
// graph by readiness (names, queries, facts, analyses) and evaluate_verdicts.cc judges verdicts
// and builds findings. Internal to engine/dag.
#pragma once

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/dag/composite_answer.h"
#include "engine/dag/count_answer.h"
#include "engine/dag/derived_answer.h"
#include "engine/dag/evaluate.h"
#include "engine/playbook/expr.h"

namespace diagnose::dag::internal {

using nlohmann::json;
using playbook::CompiledExpr;
using playbook::RuleKind;
using playbook::RuleSpec;
using playbook::Value;

class Evaluator {
 public:
  Evaluator(const CompiledGraph& graph, const EvaluationContext& ctx) : graph_(graph), ctx_(ctx) {}
  EvaluationResult Run();

 private:
  const std::string PlaybookOf(int idx) const;

  bool DepsOk(int idx);

  // Which client a query rule asks and its PromQL template: rules that can ask the same question.
  std::string TemplateOf(int idx) const;

  // One expression's view of names: node `idx`, `host` inside exclusion reasons, and the values of
  // the bindings (let, macros) it has used so far. Bindings are evaluated on first use, in this
  // scope, so a macro that reads `host` sees the host being excused.
  struct NameScope {
    int idx = -1;
    const json* host = nullptr;
    // A binding's value: where its expression's value is (a rule's value it names is not copied),
    // or `held` when the expression computed it. `at` is never null once bound.
    struct Bound {
      json held;
      const json* at = nullptr;
    };
    std::map<std::string, Bound> bound;
    std::set<std::string> evaluating;
    std::string error;   // the first binding that failed: the expression using it fails too
  };

  const playbook::Binding* FindBinding(int idx, const std::string& name) const;

  const Value* Lookup(const std::shared_ptr<NameScope>& scope, const std::string& root);

  // Name resolution for one expression of node `idx` (and `host` inside exclusion reasons).
  std::pair<std::shared_ptr<NameScope>, playbook::NameResolver> Resolver(int idx, const json* host);

  const Value* RootValue(int idx, const json* host, const std::string& root);

  // `common.X` asked as one name: shared rule X's own value when node `idx` depends on it and no
  // binding hides `common`, so reading a member does not build CommonView's copy; else nullptr.
  const Value* SharedRuleValue(const std::shared_ptr<NameScope>& scope, const std::string& dotted);

  // `common.X` for node `idx`: the shared rules it depends on, built the first time one of its
  // expressions asks (its dependencies are final by then) and kept, because copying every shared
  // per-host series for each of a node's expressions cost more than all of its queries.
  const json* CommonView(int idx);

  StatusOr<json> Eval(int idx, const CompiledExpr& e, const json* host = nullptr);
  // The value without copying a rule's value the expression only names (playbook::EvalExprInPlace):
  // valid while `*scope` (which may hold a binding's value it points into) and the rules' values are.
  StatusOr<const json*> EvalInPlace(int idx, const CompiledExpr& e, json* held, std::shared_ptr<NameScope>* scope,
                                    const json* host = nullptr);

  StatusOr<std::string> Render(int idx, const playbook::Template& t, const json* host = nullptr,
                               bool* rendered_empty = nullptr);

  // What a finding that did not fire says: the rule's description, its placeholders rendered.
  std::string DescriptionOf(int idx, const playbook::RuleSpec& rule);

  void Fail(int idx, NodeHealth health, const std::string& reason);
  bool DeadlinePassed() const;

  bool PrepareQuery(int idx, Query* q, QueryClient** client);
  // A query whose host or string list is empty: its answer, no series, set without a request.
  void AnswerWithoutAsking(int idx, const std::string& promql_template, double start, double end, const std::string& why);

  // The playbooks' params and windows (and the shared windows), from the context alone.
  void ResolveWindowsAndParams();

  // Readiness, not levels: a query rule is sent as soon as every rule it needs is final, all ready
  // queries of a pass together (a wave); while the wave is in flight the rules no query waits for
  // are judged.
  void EvaluateByReadiness();

  using QuestionKey = std::tuple<const QueryClient*, int, std::string, double, double, double, double>;
  static QuestionKey KeyOf(const QueryClient* client, const Query& q);
  // A question of the wave answered from another question's answer (derived_answer.h), not sent.
  struct DerivedQuestion {
    QueryClient* client = nullptr;
    Query query;
    QuestionKey source;
    Derivation derivation;
  };
  // A question of the wave answered from its parts' answers (composite_answer.h), not sent.
  // Its parts are sent: they are answered before what is derived or counted.
  struct ComposedQuestion {
    QueryClient* client = nullptr;
    Query query;
    std::vector<QuestionKey> parts;
    CompositeQuestion composite;
  };
  // A question of the wave computed from per-series sample counts (count_answer.h), not sent.
  struct CountedQuestion {
    QueryClient* client = nullptr;
    Query query;
    // What was asked for each of expression.leaves, with the question's kind and times: the leaf,
    // or where only its presence matters, PresenceNowQuery (and presence_on[l] its labels).
    std::vector<QuestionKey> leaves;
    std::vector<std::optional<std::vector<std::string>>> presence_on;
    CountExpression expression;
  };
  // The query rules of one pass and what they ask.
  struct Wave {
    std::vector<int> nodes;
    std::vector<Query> queries;
    std::vector<QueryClient*> clients;
    std::vector<DerivedQuestion> derived;
    std::vector<ComposedQuestion> composed;
    std::vector<CountedQuestion> counted;
  };
  using WaveAnswers = std::vector<std::pair<QuestionKey, StatusOr<QueryResult>>>;

  // Adds the query rule to the wave; false when it is final without a request (skipped, failed).
  bool StartQuery(int idx, Wave* wave);
  // A rule that is not a query: judged unless the deadline passed or a rule it needs is not ok.
  void Judge(int idx);
  // The wave's questions not yet answered in this run, one request each, sent off this thread.
  std::future<WaveAnswers> SendInBackground(Wave* wave);
  // The wave's new questions of `client` that are answered from another question of the run, which
  // is sent (in this wave or an earlier one) rather than derived itself; the rest in `unique`.
  void SetDerivedAside(QueryClient* client, std::vector<Query>* unique, Wave* wave);
  // The wave's new questions of `client` whose operators the engine applies to their parts'
  // answers: those that read a part twice, or whose parts the run asks anyway (a range or a subquery
  // chain: one of them). Their parts replace them in `unique` (once each, and not when asked already).
  void SetComposedAside(QueryClient* client, std::vector<Query>* unique, Wave* wave);
  static std::set<QuestionKey> PartsOfComposed(const Wave& wave);
  // The composed questions' answers; one the engine cannot give exactly is asked of the TSDB.
  void AnswerComposed(const Wave& wave);
  // The wave's new count questions of `client` (count_answer.h) some range of which is read twice
  // (by them, by another question of the wave, or already): their `count_over_time` leaves are sent
  // in their place, each once, unless an earlier wave fetched it.
  void SetCountedAside(QueryClient* client, std::vector<Query>* unique, Wave* wave);
  // The count questions' answers (after asking where the presence leaves' series are, when not all
  // are at the evaluation time); one the leaves cannot give exactly is asked of the TSDB.
  void AnswerCounted(const Wave& wave);
  void ApplyAnswers(const Wave& wave, WaveAnswers fetched);
  // The derived questions' answers; one the derivation cannot give exactly is asked of the TSDB.
  void AnswerDerived(const Wave& wave);
  // Questions computed in the engine whose answer could not be computed exactly, asked of the TSDB.
  void AskInstead(const std::map<QueryClient*, std::vector<Query>>& ask);
  // A sent question's answer, kept for the rules asking it (and counted in points_returned).
  void KeepAnswer(const QuestionKey& key, StatusOr<QueryResult> answer);

  void EvaluateNonQuery(int idx);

  void EvaluateVerdict(int idx);

  // Suppression (README §3.6): the keys of `times` (a map key -> time(s); a plain number or list is
  // one key "") whose evidence times all lie inside one of the `during` windows, and the reason.
  struct Suppression {
    std::set<std::string> keys;            // the keys whose evidence is inside the windows
    std::set<std::string> loud_keys;       // the keys with evidence outside them
    std::string reason;

    // Every key with evidence has all of it inside the windows.
    bool All() const { return !keys.empty() && loud_keys.empty(); }

    // Hosts (the part of a key before "/", e.g. host/gpu3) all of whose evidence is inside.
    std::set<std::string> QuietHosts() const {
      auto host_of = [](const std::string& k) { return k.substr(0, k.find('/')); };
      std::set<std::string> loud, quiet;
      for (const auto& k : loud_keys) loud.insert(host_of(k));
      for (const auto& k : keys)
        if (!loud.count(host_of(k))) quiet.insert(host_of(k));
      return quiet;
    }
  };

  StatusOr<Suppression> Suppressed(int idx, const playbook::SuppressSpec& spec);

  // Evidence of a finding: its own, then that of the rules it directly references.
  // Two dependencies citing the same log line or query add nothing the second time.
  std::vector<Evidence> FindingEvidence(int idx);

  void BuildFindings();

  // A range rule's series, charted from its evidence (and the findings' copies of it), is moved
  // there once no expression reads the rule's value any more: at 1,024 nodes a copy taken when
  // the answer arrived doubled the largest values the run holds.
  void HandSeriesToEvidence();

  const CompiledGraph& graph_;
  const EvaluationContext& ctx_;
  EvaluationResult result_;
  json thresholds_;
  std::map<std::string, json> params_;
  std::map<std::string, json> windows_;
  std::map<std::string, std::map<std::string, std::string>> window_problems_;
  std::map<int, verdict::Candidate> fired_;
  std::map<int, std::string> suppressed_;   // verdict node -> why it did not fire
  // `common` views by the shared rules they hold (sorted node indices), and each node's view.
  std::map<std::vector<int>, json> common_views_;
  std::map<int, const json*> common_view_of_node_;
  // Query rules' evidence series, empty until HandSeriesToEvidence fills them from the rules' values.
  std::vector<std::pair<int, std::shared_ptr<json>>> evidence_series_;
  // The answers of this run by client and question (kind, PromQL, times): a rule of a later wave
  // asking what an earlier one asked shares its request. Kept while a query rule with one of the
  // templates that asked it (only such a rule can ask it again) is still to be started.
  struct Answer {
    std::shared_ptr<const StatusOr<QueryResult>> result;
    std::vector<std::string> templates;
  };
  std::map<QuestionKey, Answer> answers_;
  std::map<std::string, int> unstarted_queries_of_template_;
  // The pseudo-template of composed questions' parts: a part is kept while a query rule whose
  // template is composite is still to be started (another composite may share it).
  static constexpr const char* kCompositePartTemplate = "\ncomposite part";
  std::vector<bool> composite_template_;   // by node: its query template is composite
  // Endpoint warnings written into evidence texts so far: each answer's are capped where it is read
  // (CapWarnings), and the report's here, past kMaxWarningsInReport.
  static constexpr int64_t kMaxWarningsInReport = 100;
  int64_t warnings_in_evidence_ = 0;
  void AppendWarnings(const std::vector<std::string>& warnings, std::string* text);
  // Requests sent beyond one per question: range pieces and their estimates' look-ups (off this thread).
  std::atomic<int> extra_requests_{0};
};

}  // namespace diagnose::dag::internal
