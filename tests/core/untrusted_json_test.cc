#include "engine/core/untrusted_json.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

using Clock = std::chrono::steady_clock;

// A label-values answer of `n` values, as an endpoint holding many series sends it.
std::string LabelValues(int n) {
  std::string body = R"({"status":"success","data":[)";
  for (int i = 0; i < n; ++i) body += (i ? ",\"host-" : "\"host-") + std::to_string(i) + "\"";
  return body + "]}";
}

TEST(UntrustedJsonTest, ABoundedParseReadsWhatAnUnboundedOneReads) {
  for (const std::string text : {LabelValues(3), std::string(R"({"a":[1,2.5,1e300,{"b":null}],"c":"d"})"),
                                 std::string("{broken")}) {
    SCOPED_TRACE(text);
    auto bounded = ParseUntrustedJsonBounded(text, JsonParseBounds{Clock::now() + std::chrono::hours(1),
                                                                   LimitId::kHttpSeriesPerQuery, "test"});
    ASSERT_TRUE(bounded.ok()) << bounded.status().ToString();
    const nlohmann::json unbounded = ParseUntrustedJson(text);
    EXPECT_EQ(bounded->is_discarded(), unbounded.is_discarded());   // discarded values never compare equal
    if (!unbounded.is_discarded()) EXPECT_EQ(*bounded, unbounded);
  }
}

// An answer parsed after the run's deadline would hold an epilog for as long as the parse takes.
TEST(UntrustedJsonTest, AParseStopsAtTheDeadline) {
  const std::string body = LabelValues(200000);
  auto late = ParseUntrustedJsonBounded(body, JsonParseBounds{Clock::now() - std::chrono::seconds(1), std::nullopt,
                                                              "the answer to label values of `host`"});
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(late.status().message().find("label values of `host`"), std::string::npos) << late.status().message();
}

// An array longer than the limit is refused as it is read, not once all of it is in memory.
TEST(UntrustedJsonTest, AnArrayPastItsLimitIsRefusedNamingTheLimit) {
  ScopedLimit limit(LimitId::kHttpSeriesPerQuery, 100);
  auto refused = ParseUntrustedJsonBounded(LabelValues(101), JsonParseBounds{std::nullopt, LimitId::kHttpSeriesPerQuery,
                                                                             "the answer"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("--limit http.series_per_query="), std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(ParseUntrustedJsonBounded(LabelValues(100), JsonParseBounds{std::nullopt, LimitId::kHttpSeriesPerQuery,
                                                                          "the answer"}).ok());
}

// nlohmann parses any depth, but dump() and copies recurse per level: an answer whose `warnings`
// nested 100,000 deep overflowed the stack in AsText's dump().
TEST(UntrustedJsonTest, NestingPastTheDepthLimitIsRefused) {
  const auto nested = [](size_t depth) {
    return "{\"status\":\"success\",\"warnings\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  };
  auto deep = ParseUntrustedJsonBounded(nested(200000), JsonParseBounds{std::nullopt, std::nullopt, "the answer to up"});
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), StatusCode::kParse);
  EXPECT_EQ(deep.status().message(), "the answer to up nests deeper than 512 levels");
  EXPECT_TRUE(ParseUntrustedJson(nested(200000)).is_discarded());
  EXPECT_TRUE(ParseUntrustedJson(std::string(200000, '{')).is_discarded());
  auto at_limit = ParseUntrustedJsonBounded(nested(kMaxJsonDepth - 1), JsonParseBounds{});
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().message();
  EXPECT_FALSE(at_limit->is_discarded());
  EXPECT_FALSE(ParseUntrustedJson(nested(kMaxJsonDepth - 1)).dump().empty());
  EXPECT_TRUE(ParseUntrustedJson(nested(kMaxJsonDepth)).is_discarded());
}

}  // namespace
}  // namespace diagnose
