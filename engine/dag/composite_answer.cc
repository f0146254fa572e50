#include "engine/dag/composite_answer.h"
#include "engine/dag/promql_lexis.h"
#include "engine/dag/range_split.h"

#include <algorithm>
#include <numeric>

namespace diagnose::dag {
namespace {

// Prometheus' series order, value for value: sums folded in series order, scalar() asked of the
// TSDB (the instant answers hold one sample per series).
constexpr SubsetRules kCompositeRules{/*scalar_is_part=*/true, /*any_order=*/false};
// A range: the series order within a step is unknown (only results it cannot change), parts are the
// aggregations the plan asks anyway.
constexpr SubsetRules kRangeRules{/*scalar_is_part=*/false, /*any_order=*/true, /*aggregations_of_parts_are_parts=*/true};

SubsetRules RulesFor(Query::Kind kind) { return kind == Query::Kind::kRange ? kRangeRules : kCompositeRules; }

bool IsScalarPart(const PromqlNode& node) {
  return node.kind == PromqlNode::Kind::kPart && (node.function == "time" || node.function == "pi");
}

// Around a subquery chain: Prometheus 2.42 returns a subquery's series in Go map order.
constexpr SubsetRules kAroundChainRules{/*scalar_is_part=*/false, /*any_order=*/true};

// `avg by (host) (P)`, `max(P)`: an aggregation whose argument is a part, nothing around it.
bool IsAggregationOfAPart(std::string_view promql) {
  const PromqlNodePtr root = ParsePromqlSubset(promql);
  if (!root) return false;
  if (root->kind == PromqlNode::Kind::kAggregate) return root->children.size() == 1 && root->children[0]->kind == PromqlNode::Kind::kPart;
  if (root->kind != PromqlNode::Kind::kPart || !root->function.empty()) return false;
  static constexpr std::string_view kAggregations[] = {"avg", "sum", "min", "max", "count", "group", "stddev", "stdvar"};
  size_t word = 0;
  while (word < root->text.size() && IsPromqlNameChar(root->text[word])) ++word;
  return std::find(std::begin(kAggregations), std::end(kAggregations), std::string_view(root->text).substr(0, word)) !=
         std::end(kAggregations);
}

// An instant question whose one part, under kAroundChainRules, is a chain over a range composite,
// or over an aggregation asked whole.
std::optional<CompositeQuestion> ChainQuestionOf(std::string_view promql) {
  PromqlNodePtr root = ParsePromqlSubset(promql);
  if (!root) return std::nullopt;
  PromqlParts parts = PartsOf(*root, kAroundChainRules);
  if (parts.texts.size() != 1) return std::nullopt;
  auto chain = SubqueryChainOf(parts.texts[0]);
  if (!chain) return std::nullopt;
  CompositeQuestion q;
  if (auto inner = CompositeOf(chain->inner, Query::Kind::kRange)) {
    q.parts = inner->parts;
    q.part_occurrences = inner->part_occurrences;
    q.inner = std::make_shared<const CompositeQuestion>(std::move(*inner));
  } else {
    // An aggregation the engine does not compose (`avg by (host) (P)`) is the chain's one part, asked
    // whole as a range over the innermost grid, where 2.42 evaluates it step by step exactly as
    // inside the subquery; not when it names the query's own range (`@ start()`). Only an
    // aggregation: Prometheus' costliest evaluation at each step (a `sum by` over 192 series at 473
    // steps: 0.16 s, the bare selector 0.005 s), answered in one series per group; a selector's
    // range would be a longer answer to read than the subquery's work it saves.
    if (!IsAggregationOfAPart(chain->inner) || !EvaluatesStepByStep(chain->inner)) return std::nullopt;
    q.parts = {chain->inner};
    q.part_occurrences = 1;
  }
  q.root = std::move(root);
  q.chain = std::make_shared<const SubqueryChain>(std::move(*chain));
  q.chain_text = parts.texts[0];
  return q;
}

std::optional<QueryResult> AnswerChain(const CompositeQuestion& question, const std::vector<const QueryResult*>& part_answers,
                                       double time) {
  std::optional<QueryResult> composed;
  if (question.inner) {
    composed = AnswerComposite(*question.inner, part_answers);
    if (!composed) return std::nullopt;
  } else if (part_answers.size() != 1 || part_answers[0] == nullptr) {
    return std::nullopt;
  }
  const QueryResult* inner = question.inner ? &*composed : part_answers[0];
  const int64_t time_ms = PrometheusMillis(time);
  auto chain = EvaluateChain(*question.chain, *inner, time_ms);
  if (!chain) return std::nullopt;
  InstantVector vector;
  vector.reserve(chain->size());
  for (const auto& series : *chain)
    vector.push_back({std::shared_ptr<const Labels>(std::shared_ptr<const Labels>(), &series.labels), series.samples[0].t,
                      series.samples[0].v});
  auto value = EvaluateInstant(*question.root, {question.chain_text}, {vector}, kAroundChainRules);
  if (!value) return std::nullopt;
  QueryResult answer;
  answer.result_type = "vector";
  answer.warnings = inner->warnings;
  for (auto& e : *value) answer.series.push_back({*e.labels, {{static_cast<double>(time_ms) / 1000, e.v}}});
  return answer;
}

std::optional<QueryResult> AnswerRange(const CompositeQuestion& question, const std::vector<const QueryResult*>& part_answers) {
  QueryResult answer;
  answer.result_type = "matrix";
  for (const QueryResult* part : part_answers) {
    if (part == nullptr || part->result_type != "matrix") return std::nullopt;
    MergeWarnings(part->warnings, &answer.warnings);
  }
  auto series = EvaluateAtEachTime(*question.root, question.parts, part_answers, kRangeRules);
  if (!series) return std::nullopt;
  answer.series = std::move(*series);
  return answer;
}

}  // namespace

Query CompositeQuestion::PartQuery(const Query& whole, size_t i) const {
  const std::string& part = parts.at(i);
  if (kind == Query::Kind::kRange) return Query::Range(part, whole.start, whole.end, whole.step, whole.id);
  if (!chain) return Query::Instant(part, whole.time, whole.id);
  const ChainGrid grid = InnerGrid(*chain, PrometheusMillis(whole.time));
  return Query::Range(part, static_cast<double>(grid.first_ms) / 1000, whole.time, static_cast<double>(grid.step_ms) / 1000, whole.id);
}

std::optional<CompositeQuestion> CompositeOf(std::string_view promql, Query::Kind kind) {
  if (kind == Query::Kind::kInstant)
    if (auto chained = ChainQuestionOf(promql)) return chained;
  const SubsetRules rules = RulesFor(kind);
  PromqlNodePtr root = ParsePromqlSubset(promql);
  // A part or a number alone is asked as it is.
  if (!root || root->kind == PromqlNode::Kind::kPart || root->kind == PromqlNode::Kind::kNumber ||
      root->kind == PromqlNode::Kind::kScalar)
    return std::nullopt;
  // Set operations on chosen labels are count_answer.h's: this reader's bit-for-bit comparison with
  // Prometheus (tests/tsdb) covers matching on every label only.
  if (AnyNode(*root, rules, [](const PromqlNode& node) { return node.on || IsScalarPart(node); })) return std::nullopt;
  PromqlParts parts = PartsOf(*root, rules);
  // An aggregation of a selector alone is a range question's part: asked as it stands.
  if (rules.aggregations_of_parts_are_parts && root->kind == PromqlNode::Kind::kAggregate &&
      root->children[0]->kind == PromqlNode::Kind::kPart)
    return std::nullopt;
  CompositeQuestion q;
  q.kind = kind;
  q.root = std::move(root);
  q.parts = std::move(parts.texts);
  q.part_occurrences = std::accumulate(parts.reads.begin(), parts.reads.end(), 0);
  return q;
}

std::optional<QueryResult> AnswerComposite(const CompositeQuestion& question,
                                           const std::vector<const QueryResult*>& part_answers, double time) {
  if (!question.root || part_answers.size() != question.parts.size()) return std::nullopt;
  if (question.kind == Query::Kind::kRange) return AnswerRange(question, part_answers);
  if (question.chain) return AnswerChain(question, part_answers, time);
  std::vector<InstantVector> parts;
  parts.reserve(part_answers.size());
  QueryResult answer;
  answer.result_type = "vector";
  for (const QueryResult* part : part_answers) {
    if (part == nullptr || part->result_type != "vector") return std::nullopt;
    InstantVector vector;
    vector.reserve(part->series.size());
    for (const auto& series : part->series) {
      if (series.samples.size() != 1) return std::nullopt;
      // Not owned: the parts' answers outlive this call, and copying ~50 k label sets cost more than the rest.
      vector.push_back({std::shared_ptr<const Labels>(std::shared_ptr<const Labels>(), &series.labels), series.samples[0].t,
                        series.samples[0].v});
    }
    parts.push_back(std::move(vector));
    MergeWarnings(part->warnings, &answer.warnings);
  }
  auto value = EvaluateInstant(*question.root, question.parts, parts, kCompositeRules);
  if (!value) return std::nullopt;
  answer.series.reserve(value->size());
  for (auto& e : *value) answer.series.push_back({*e.labels, {{e.t, e.v}}});
  return answer;
}

}  // namespace diagnose::dag
