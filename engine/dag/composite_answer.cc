#include "engine/dag/composite_answer.h"

#include <algorithm>
#include <numeric>

namespace diagnose::dag {
namespace {

// Prometheus' series order, value for value: sums folded in series order, scalar() asked of the
// TSDB (the instant answers hold one sample per series).
constexpr SubsetRules kCompositeRules{/*scalar_is_part=*/true, /*any_order=*/false};

}  // namespace

std::optional<CompositeQuestion> CompositeOf(std::string_view promql) {
  PromqlNodePtr root = ParsePromqlSubset(promql);
  // A part or a number alone is asked as it is.
  if (!root || root->kind == PromqlNode::Kind::kPart || root->kind == PromqlNode::Kind::kNumber ||
      root->kind == PromqlNode::Kind::kScalar)
    return std::nullopt;
  // Set operations on chosen labels are count_answer.h's: this reader's bit-for-bit comparison with
  // Prometheus (tests/tsdb) covers matching on every label only.
  if (AnyNode(*root, kCompositeRules, [](const PromqlNode& node) { return node.on; })) return std::nullopt;
  PromqlParts parts = PartsOf(*root, kCompositeRules);
  CompositeQuestion q;
  q.root = std::move(root);
  q.parts = std::move(parts.texts);
  q.part_occurrences = std::accumulate(parts.reads.begin(), parts.reads.end(), 0);
  return q;
}

std::optional<QueryResult> AnswerComposite(const CompositeQuestion& question,
                                           const std::vector<const QueryResult*>& part_answers) {
  if (!question.root || part_answers.size() != question.parts.size()) return std::nullopt;
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
    for (const auto& w : part->warnings)
      if (std::find(answer.warnings.begin(), answer.warnings.end(), w) == answer.warnings.end()) answer.warnings.push_back(w);
  }
  auto value = EvaluateInstant(*question.root, question.parts, parts, kCompositeRules);
  if (!value) return std::nullopt;
  answer.series.reserve(value->size());
  for (auto& e : *value) answer.series.push_back({*e.labels, {{e.t, e.v}}});
  return answer;
}

}  // namespace diagnose::dag
