// Count questions answered from per-series sample counts (count_answer.h): which are planned that
// way, and their answers once the counts are back.
#include <algorithm>
#include <deque>
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
  auto asking = [](const Query& q, const std::string& promql) {
    Query asked = q;
    asked.promql = promql;
    return asked;
  };
  // How often each leaf range would be read: by the wave's count questions, plus once if an earlier
  // wave (or a rule of this one) already asks it.
  std::vector<Candidate> candidates(unique->size());
  std::map<QuestionKey, int> reads;
  // A composed question's part is sent: parts are answered before what is counted.
  const std::set<QuestionKey> composed_parts = PartsOfComposed(*wave);
  for (size_t u = 0; u < unique->size(); ++u) {
    Candidate& c = candidates[u];
    if (composed_parts.count(KeyOf(client, (*unique)[u]))) continue;
    c.expression = CountExpressionOf((*unique)[u].promql);
    if (!c.expression) continue;
    for (size_t l = 0; l < c.expression->leaves.size(); ++l) {
      c.leaves.push_back(KeyOf(client, asking((*unique)[u], c.expression->leaves[l])));
      auto [it, fresh] = reads.try_emplace(c.leaves.back(), answers_.count(c.leaves.back()) ? 1 : 0);
      it->second += c.expression->leaf_reads[l];
    }
  }
  // A question whose every range is read once is sent as it is: its counts per series would only
  // be a longer answer to the same reads.
  auto pays = [&](const Candidate& c) {
    return c.expression && std::any_of(c.leaves.begin(), c.leaves.end(), [&](const QuestionKey& k) { return reads[k] > 1; });
  };
  // A leaf is asked for its presence only when every planned question using it needs no more, on
  // one label at most, in an instant query, and nobody asks (or asked) for its counts.
  std::map<QuestionKey, std::optional<std::vector<std::string>>> presence;
  for (size_t u = 0; u < unique->size(); ++u) {
    const Candidate& c = candidates[u];
    if (!pays(c)) continue;
    for (size_t l = 0; l < c.leaves.size(); ++l) {
      const auto& use = c.expression->presence_on[l];
      auto [it, fresh] = presence.try_emplace(c.leaves[l], use);
      if (!use || !it->second || (*unique)[u].kind != Query::Kind::kInstant || answers_.count(c.leaves[l])) {
        it->second = std::nullopt;
        continue;
      }
      if (!fresh && *it->second != *use) {
        std::vector<std::string> both = *it->second;
        both.insert(both.end(), use->begin(), use->end());
        std::sort(both.begin(), both.end());
        both.erase(std::unique(both.begin(), both.end()), both.end());
        it->second = both;
      }
      if (!PresenceNowQuery(c.expression->leaves[l], *it->second)) it->second = std::nullopt;
    }
  }
  std::vector<Query> sent;
  std::vector<Query> leaves_to_send;
  for (size_t u = 0; u < unique->size(); ++u) {
    Candidate& c = candidates[u];
    Query& q = (*unique)[u];
    if (!pays(c)) {
      sent.push_back(std::move(q));
      continue;
    }
    const std::string question_template = answers_.at(KeyOf(client, q)).templates.front();
    CountedQuestion counted{client, {}, {}, {}, {}};
    for (size_t l = 0; l < c.leaves.size(); ++l) {
      const auto& on = presence.at(c.leaves[l]);
      Query leaf = asking(q, on ? *PresenceNowQuery(c.expression->leaves[l], *on) : c.expression->leaves[l]);
      counted.leaves.push_back(KeyOf(client, leaf));
      counted.presence_on.push_back(on);
      auto [it, fresh] = answers_.try_emplace(counted.leaves.back());
      // Kept as long as the questions it answers could still be asked.
      it->second.templates.push_back(question_template);
      if (fresh) leaves_to_send.push_back(std::move(leaf));
    }
    ++result_.queries_derived;
    counted.query = std::move(q);
    counted.expression = std::move(*c.expression);
    wave->counted.push_back(std::move(counted));
  }
  sent.insert(sent.end(), std::make_move_iterator(leaves_to_send.begin()), std::make_move_iterator(leaves_to_send.end()));
  *unique = std::move(sent);
}

void Evaluator::AnswerCounted(const Wave& wave) {
  auto answer_of = [&](const QuestionKey& key) -> const QueryResult* {
    auto it = answers_.find(key);
    if (it == answers_.end() || !it->second.result || !it->second.result->ok()) return nullptr;
    return &**it->second.result;
  };
  // Where a presence leaf's series are that were not there at the evaluation time: one request per
  // leaf, all of the wave's together.
  std::map<QueryClient*, std::vector<Query>> elsewhere;
  std::map<std::pair<size_t, size_t>, QuestionKey> elsewhere_of;   // (question, leaf) -> request
  for (size_t i = 0; i < wave.counted.size(); ++i) {
    const CountedQuestion& c = wave.counted[i];
    for (size_t l = 0; l < c.leaves.size(); ++l) {
      const QueryResult* now = c.presence_on[l] ? answer_of(c.leaves[l]) : nullptr;
      if (now == nullptr) continue;
      auto promql = PresenceElsewhereQuery(c.expression.leaves[l], *c.presence_on[l], *now);
      if (!promql) continue;
      Query asked = c.query;
      asked.promql = *promql;
      const QuestionKey key = KeyOf(c.client, asked);
      elsewhere_of.emplace(std::pair{i, l}, key);
      if (answers_.try_emplace(key).second) elsewhere[c.client].push_back(std::move(asked));
    }
  }
  for (const auto& [client, queries] : elsewhere) {
    ++result_.batches;
    result_.queries_run += static_cast<int>(queries.size());
    std::vector<StatusOr<QueryResult>> fetched = client->RunBatch(queries);
    for (size_t u = 0; u < queries.size(); ++u)
      KeepAnswer(KeyOf(client, queries[u]), u < fetched.size() ? std::move(fetched[u]) : StatusOr<QueryResult>(InternalError("no result")));
  }
  std::map<QueryClient*, std::vector<Query>> ask;
  for (size_t i = 0; i < wave.counted.size(); ++i) {
    const CountedQuestion& c = wave.counted[i];
    std::deque<QueryResult> presence_answers;
    std::vector<const QueryResult*> leaves;
    for (size_t l = 0; l < c.leaves.size(); ++l) {
      const QueryResult* fetched = answer_of(c.leaves[l]);
      if (fetched && c.presence_on[l]) {
        auto key = elsewhere_of.find({i, l});
        const QueryResult* outside = key == elsewhere_of.end() ? nullptr : answer_of(key->second);
        if (key != elsewhere_of.end() && outside == nullptr) fetched = nullptr;   // that request failed
        else fetched = &presence_answers.emplace_back(PresenceAnswer(*c.presence_on[l], *fetched, outside));
      }
      leaves.push_back(fetched);
    }
    std::optional<QueryResult> answer = AnswerFromCounts(c.expression, leaves, c.query.kind);
    if (answer) answers_[KeyOf(c.client, c.query)].result = std::make_shared<const StatusOr<QueryResult>>(std::move(*answer));
    else ask[c.client].push_back(c.query);
  }
  AskInstead(ask);
}

}  // namespace diagnose::dag::internal
