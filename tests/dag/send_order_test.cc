#include "engine/dag/send_order.h"

#include <gtest/gtest.h>

namespace diagnose::dag {
namespace {

TEST(SendOrder, AWindowCostsItsSecondsAndARangeItsStepsOfThem) {
  EXPECT_DOUBLE_EQ(EstimatedReadCost(Query::Instant("max_over_time(x[600s])", 1000)), 600);
  EXPECT_DOUBLE_EQ(EstimatedReadCost(Query::Instant("max_over_time(x[1h30m])", 1000)), 5400);
  // Two windows of the same question both count; an instant selector is one look-back.
  EXPECT_DOUBLE_EQ(EstimatedReadCost(Query::Instant("max_over_time(x[10m]) / max_over_time(y[10m])", 1000)), 1200);
  EXPECT_DOUBLE_EQ(EstimatedReadCost(Query::Instant("count by (host) (x)", 1000)), 60);
  // 11 steps of a 2-minute window each.
  EXPECT_DOUBLE_EQ(EstimatedReadCost(Query::Range("sum(rate(x[2m]))", 0, 300, 30)), 11 * 120);
  // A subquery: 60 steps of 1 minute, each a look-back; no resolution steps at 1 minute.
  EXPECT_DOUBLE_EQ(EstimatedReadCost(Query::Instant("quantile_over_time(0.5, (avg(x))[1h:1m])", 1000)), 3600);
  EXPECT_DOUBLE_EQ(EstimatedReadCost(Query::Instant("min_over_time((avg(x))[1h:])", 1000)), 3600);
}

TEST(SendOrder, BracketsInsideStringsAndUnreadableOnesCountNothing) {
  EXPECT_DOUBLE_EQ(EstimatedReadCost(Query::Instant("count(x{path=\"[3600s]\"})", 1000)), 60);
  EXPECT_DOUBLE_EQ(EstimatedReadCost(Query::Instant("max_over_time(x[$w])", 1000)), 60);
  EXPECT_DOUBLE_EQ(EstimatedReadCost(Query::Instant("max_over_time(x[10m", 1000)), 60);   // never closed
}

TEST(SendOrder, CostliestGoFirstAndTiesKeepTheirOrder) {
  std::vector<Query> round = {Query::Instant("count(a)", 1000, "a"),
                              Query::Instant("max_over_time(b[600s])", 1000, "b"),
                              Query::Range("sum(rate(c[2m]))", 0, 3600, 30, "c"),
                              Query::Instant("count(d)", 1000, "d"),
                              Query::Instant("quantile_over_time(0.5, e[1h])", 1000, "e")};
  SortCostliestFirst(&round);
  std::vector<std::string> ids;
  for (const Query& q : round) ids.push_back(q.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"c", "e", "b", "a", "d"}));
}

}  // namespace
}  // namespace diagnose::dag
