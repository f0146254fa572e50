#include "engine/core/limits.h"

#include <set>

#include <gtest/gtest.h>

namespace diagnose {
namespace {

TEST(Limits, EveryLimitHasAUniqueDottedNameAPositiveDefaultAndItsOwnSlot) {
  std::set<std::string> names;
  for (size_t i = 0; i < AllLimits().size(); ++i) {
    const LimitInfo& info = AllLimits()[i];
    EXPECT_EQ(static_cast<size_t>(info.id), i) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_NE(std::string(info.name).find('.'), std::string::npos) << info.name;
    EXPECT_GT(info.default_value, 0) << info.name;
    EXPECT_EQ(GetLimit(info.id), info.default_value) << info.name;
  }
}

TEST(Limits, SetParsesIntegersAndByteSuffixes) {
  const int64_t before = GetLimit(LimitId::kHttpResponseBytes);
  ASSERT_TRUE(SetLimitFromText("http.response_bytes=1GiB").ok());
  EXPECT_EQ(GetLimit(LimitId::kHttpResponseBytes), int64_t{1} << 30);
  ASSERT_TRUE(SetLimitFromText("http.response_bytes=300KiB").ok());
  EXPECT_EQ(GetLimit(LimitId::kHttpResponseBytes), 300 * 1024);
  ASSERT_TRUE(SetLimitFromText("http.response_bytes=" + std::to_string(before)).ok());
  EXPECT_EQ(GetLimit(LimitId::kHttpResponseBytes), before);
  const int64_t files = GetLimit(LimitId::kLogFiles);
  ASSERT_TRUE(SetLimitFromText("log.files=50000").ok());
  EXPECT_EQ(GetLimit(LimitId::kLogFiles), 50000);
  ASSERT_TRUE(SetLimitFromText("log.files=" + std::to_string(files)).ok());
}

TEST(Limits, BadAssignmentsAreRefusedWithWhatIsAccepted) {
  const int64_t before = GetLimit(LimitId::kYamlDepth);
  for (const char* bad : {"yaml.depth", "yaml.depth=", "yaml.depth=0", "yaml.depth=-3", "yaml.depth=12x",
                          "yaml.depth=1MiB", "yaml.depth=99999999999999999999"}) {
    Status s = SetLimitFromText(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(GetLimit(LimitId::kYamlDepth), before);
  Status unknown = SetLimitFromText("http.respons_bytes=5");
  EXPECT_NE(unknown.message().find("unknown limit 'http.respons_bytes'"), std::string::npos) << unknown.message();
  EXPECT_NE(unknown.message().find("http.response_bytes"), std::string::npos) << "the known names are listed";
}

TEST(Limits, ExceededNamesTheLimitItsValueAndHowToRaiseIt) {
  ScopedLimit scoped(LimitId::kHttpSeriesPerQuery, 10);
  Status s = LimitExceeded(LimitId::kHttpSeriesPerQuery, "an answer of 11 series");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "an answer of 11 series exceeds the limit http.series_per_query (10, series (or label values) in one "
            "query answer); raise it with --limit http.series_per_query=N");
  EXPECT_EQ(FormatLimitValue(LimitId::kLogLineBytes, 64 * 1024), "64 KiB");
  EXPECT_EQ(FormatLimitValue(LimitId::kHttpResponseBytes, 1000), "1000 bytes");
}

TEST(Limits, ScopedLimitRestoresThePreviousValue) {
  const int64_t before = GetLimit(LimitId::kYamlNodes);
  {
    ScopedLimit scoped(LimitId::kYamlNodes, 7);
    EXPECT_EQ(GetLimit(LimitId::kYamlNodes), 7);
  }
  EXPECT_EQ(GetLimit(LimitId::kYamlNodes), before);
}

}  // namespace
}  // namespace diagnose
