// Count questions answered from per-series sample counts (count_answer.h): which are planned that
// way, and their answers once the counts are back.
#include <algorithm>
#include <iterator>
#include <map>
#include <optional>

#include "engine/dag/evaluator.h"

namespace diagnose::dag::internal {

void Evaluator::SetCountedAside(QueryClient* client, std::vector<Query>* unique, Wave* wave) {
  struct Candidate {
    std::optional<CountExpression> expression;
    std::vector<QuestionKey> leaves;
  };
  auto leaf_key = [client](const Query& q, const std::string& leaf) {
    Query asked = q;
    asked.promql = leaf;
    return KeyOf(client, asked);
  };
  // How often each leaf range would be read: by the wave's count questions, plus once if an earlier
  // wave (or a rule of this one) already asks it.
  std::vector<Candidate> candidates(unique->size());
  std::map<QuestionKey, int> reads;
  for (size_t u = 0; u < unique->size(); ++u) {
    Candidate& c = candidates[u];
    c.expression = CountExpressionOf((*unique)[u].promql);
    if (!c.expression) continue;
    for (size_t l = 0; l < c.expression->leaves.size(); ++l) {
      c.leaves.push_back(leaf_key((*unique)[u], c.expression->leaves[l]));
      auto [it, fresh] = reads.try_emplace(c.leaves.back(), answers_.count(c.leaves.back()) ? 1 : 0);
      it->second += c.expression->leaf_reads[l];
    }
  }
  // A question whose every range is read once is sent as it is: its counts per series would only
  // be a longer answer to the same reads.
  std::vector<Query> sent;
  std::vector<Query> leaves_to_send;
  for (size_t u = 0; u < unique->size(); ++u) {
    Candidate& c = candidates[u];
    Query& q = (*unique)[u];
    const bool pays = c.expression && std::any_of(c.leaves.begin(), c.leaves.end(), [&](const QuestionKey& k) { return reads[k] > 1; });
    if (!pays) {
      sent.push_back(std::move(q));
      continue;
    }
    const std::string question_template = answers_.at(KeyOf(client, q)).templates.front();
    for (size_t l = 0; l < c.leaves.size(); ++l) {
      auto [it, fresh] = answers_.try_emplace(c.leaves[l]);
      // Kept as long as the questions it answers could still be asked.
      it->second.templates.push_back(question_template);
      if (!fresh) continue;
      Query leaf = q;
      leaf.promql = c.expression->leaves[l];
      leaves_to_send.push_back(std::move(leaf));
    }
    ++result_.queries_derived;
    wave->counted.push_back({client, std::move(q), std::move(c.leaves), std::move(*c.expression)});
  }
  sent.insert(sent.end(), std::make_move_iterator(leaves_to_send.begin()), std::make_move_iterator(leaves_to_send.end()));
  *unique = std::move(sent);
}

void Evaluator::AnswerCounted(const Wave& wave) {
  std::map<QueryClient*, std::vector<Query>> ask;
  for (const auto& c : wave.counted) {
    std::vector<const QueryResult*> leaves;
    for (const auto& key : c.leaves) {
      const auto& result = answers_.at(key).result;
      leaves.push_back(result && result->ok() ? &**result : nullptr);
    }
    std::optional<QueryResult> answer = AnswerFromCounts(c.expression, leaves, c.query.kind);
    if (answer) answers_[KeyOf(c.client, c.query)].result = std::make_shared<const StatusOr<QueryResult>>(std::move(*answer));
    else ask[c.client].push_back(c.query);
  }
  AskInstead(ask);
}

}  // namespace diagnose::dag::internal
