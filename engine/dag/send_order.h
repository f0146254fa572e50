// The order a round's questions are sent in (issue 36). The client keeps a bounded number of
// requests in flight and starts them in the order given, and Prometheus evaluates each question on
// one core: a costly question sent last runs alone at the end of the round while the other core
// idles (1,024 nodes x 1 h: the composed clock range, 0.27 s of the server's CPU, went out after
// the 32 counter edges and finished 0.3 s after every other answer). Sent costliest first, the
// round's short questions fill in beside the long ones and the round ends together.
#pragma once

#include <vector>

#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

// How long a question keeps the server busy, relative to the others of its round, from its text and
// times alone (no look-up): over its evaluation steps (1 for an instant question), the seconds of
// samples each step reads per series: a range selector's window, a subquery's steps times the
// 60 s a step reads at most, an instant selector 60 s (its look-back). Series counts are not
// known before the answers, so the metric's breadth is not weighed.
double EstimatedReadCost(const Query& question);

// `questions` reordered costliest first (EstimatedReadCost); equal estimates keep their order.
void SortCostliestFirst(std::vector<Query>* questions);

}  // namespace diagnose::dag
