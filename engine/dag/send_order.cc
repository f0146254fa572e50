#include "engine/dag/send_order.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "engine/analysis/analysis.h"
#include "engine/dag/promql_lexis.h"
#include "engine/dag/range_split.h"

namespace diagnose::dag {
namespace {

// What one step reads at most of a series for an instant selector: Prometheus' 5-minute look-back
// finds the latest sample, and a scrape interval of 60 s or less keeps that within the last minute.
constexpr double kInstantSelectorSeconds = 60;

// The seconds a bracket's contents stand for: `W` (a range selector's window) or `W:R` (a
// subquery's W/R steps, each reading about one look-back); 0 when unreadable.
double BracketSeconds(std::string_view inside) {
  const size_t colon = inside.find(':');
  double window = 0;
  if (!analysis::ParseDurationSeconds(std::string(inside.substr(0, colon)), &window) || !(window > 0)) return 0;
  if (colon == std::string_view::npos) return window;
  double resolution = 60;   // a subquery without a resolution steps at the global evaluation interval
  const std::string_view after = inside.substr(colon + 1);
  if (!after.empty() && (!analysis::ParseDurationSeconds(std::string(after), &resolution) || !(resolution > 0))) return 0;
  return window / resolution * kInstantSelectorSeconds;
}

// Seconds of samples one evaluation step reads per series, summed over the text's brackets (string
// literals skipped); an instant selector's look-back where the text has none.
double StepReadSeconds(std::string_view promql) {
  double seconds = 0;
  for (size_t i = 0; i < promql.size(); ++i) {
    const char c = promql[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = EndOfPromqlString(promql, i);
    } else if (c == '[') {
      const size_t close = ClosingPromqlBracket(promql, i);
      if (close == std::string_view::npos) break;
      seconds += BracketSeconds(promql.substr(i + 1, close - i - 1));
      i = close;
    }
  }
  return std::max(seconds, kInstantSelectorSeconds);
}

}  // namespace

double EstimatedReadCost(const Query& question) {
  double steps = 1;
  if (question.kind == Query::Kind::kRange) {
    const std::optional<StepGrid> grid = StepGridOf(question);
    steps = grid ? static_cast<double>(grid->steps) : 1;
  }
  return steps * StepReadSeconds(question.promql);
}

void SortCostliestFirst(std::vector<Query>* questions) {
  std::vector<std::pair<double, size_t>> order;
  order.reserve(questions->size());
  for (size_t i = 0; i < questions->size(); ++i) order.emplace_back(EstimatedReadCost((*questions)[i]), i);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Query> sorted;
  sorted.reserve(questions->size());
  for (const auto& [cost, i] : order) sorted.push_back(std::move((*questions)[i]));
  *questions = std::move(sorted);
}

}  // namespace diagnose::dag
