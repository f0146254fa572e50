// The PromQL subsets the engine reads to answer a playbook's question itself (engine/dag:
// derived_answer, and composite_answer and count_answer, which read promql_subset.h's one
// recursive-descent grammar under their own rules). A playbook's query text is untrusted: every
// input must parse or be declined, never crash. What
// parses is then evaluated on small made-up answers of the right shape, so the evaluators meet
// every structure the parsers accept.
#include <string>
#include <vector>

#include "engine/dag/composite_answer.h"
#include "engine/dag/count_answer.h"
#include "engine/dag/derived_answer.h"
#include "fuzz/fuzz_input.h"

namespace {

using diagnose::Query;
using diagnose::QueryResult;

// Two series per answer (host a and b, one sample each), values taken from the input's length so
// that comparisons and sums meet equal, different and zero values.
QueryResult SmallAnswer(size_t seed, bool range) {
  QueryResult r;
  r.result_type = range ? "matrix" : "vector";
  for (int h = 0; h < 2; ++h) {
    diagnose::Series s;
    s.labels = {{"host", h == 0 ? "a" : "b"}, {"instance", h == 0 ? "a:9400" : "b:9400"}};
    const double v = static_cast<double>((seed + static_cast<size_t>(h)) % 4);
    s.samples.push_back({1'700'000'000.0, v});
    if (range) s.samples.push_back({1'700'000'060.0, v + 1});
    r.series.push_back(std::move(s));
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace diagnose::dag;
  std::string_view text = diagnose::fuzz::AsText(data, size);
  const uint8_t mode = diagnose::fuzz::TakeMode(&text);
  switch (mode % 3) {
    case 0:
      if (auto composite = CompositeOf(text)) {
        std::vector<QueryResult> answers;
        for (size_t i = 0; i < composite->parts.size(); ++i) answers.push_back(SmallAnswer(size + i, false));
        std::vector<const QueryResult*> parts;
        for (const auto& a : answers) parts.push_back(&a);
        (void)AnswerComposite(*composite, parts);
      }
      break;
    case 1:
      if (auto counted = CountExpressionOf(text)) {
        for (const bool range : {false, true}) {
          std::vector<QueryResult> answers;
          for (size_t i = 0; i < counted->leaves.size(); ++i) answers.push_back(SmallAnswer(size + i, range));
          std::vector<const QueryResult*> leaves;
          for (const auto& a : answers) leaves.push_back(&a);
          (void)AnswerFromCounts(*counted, leaves, range ? Query::Kind::kRange : Query::Kind::kInstant);
        }
        for (const auto& leaf : counted->leaves) {
          const std::vector<std::string> on = {"host"};
          if (auto now = PresenceNowQuery(leaf, on)) {
            const QueryResult present = SmallAnswer(size, false);
            (void)PresenceElsewhereQuery(leaf, on, present);
            (void)PresenceAnswer(on, present, nullptr);
          }
        }
      }
      break;
    default:
      if (auto derivation = DerivationOf(text)) {
        const QueryResult source = SmallAnswer(size, false);
        (void)DeriveAnswer(*derivation, source, Query::Kind::kInstant);
      }
      break;
  }
  return 0;
}
