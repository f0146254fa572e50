#include "engine/tsdb/endpoint_options.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

TEST(EndpointOptionsTest, AShownUrlNeverCarriesThePassword) {
  EXPECT_EQ(ShownUrl("http://user:s3cret@127.0.0.1:9090/prometheus"), "http://user:***@127.0.0.1:9090/prometheus");
  EXPECT_EQ(ShownUrl("https://:tok%40en@host/"), "https://:***@host/");
  // Only the authority's '@' ends the userinfo: one in the path or query is the URL's own.
  EXPECT_EQ(ShownUrl("http://a:b@host/p@q?x=@"), "http://a:***@host/p@q?x=@");
  EXPECT_EQ(ShownUrl("http://a:b:c@d@host"), "http://a:***@host");
  // A bare token in the user part is a credential too.
  EXPECT_EQ(ShownUrl("http://ghp_TOKENs3cret@127.0.0.1:1/x"), "http://***@127.0.0.1:1/x");
  for (const char* unchanged : {"http://host:9090", "http://host/a:b@c", "host:9090"})
    EXPECT_EQ(ShownUrl(unchanged), unchanged);
}

TEST(EndpointOptionsTest, CredentialsAreSplitOffTheUrlAsWritten) {
  const UrlCredentials split = SplitUrlCredentials("http://us%40er:s3cr%3At@127.0.0.1:1/x?q=a@b");
  EXPECT_EQ(split.url, "http://127.0.0.1:1/x?q=a@b");
  EXPECT_EQ(split.user, "us%40er");
  EXPECT_EQ(split.password, "s3cr%3At");
  EXPECT_TRUE(split.has_password);
  const UrlCredentials none = SplitUrlCredentials("http://127.0.0.1:1/x@y");
  EXPECT_EQ(none.url, "http://127.0.0.1:1/x@y");
  EXPECT_EQ(none.user, "");
  EXPECT_FALSE(none.has_password);
}

TEST(EndpointOptionsTest, HeaderNamesAreTokensAndValuesHoldNoControlCharacter) {
  RemoteEndpointOptions options;
  options.headers["Authorization"] = "Bearer a.b-c_d~e+f/g=";
  options.headers["X-Scope-OrgID"] = "team-a|team-b";
  options.tenant = "team-a";
  EXPECT_TRUE(CheckRequestHeaders(options).ok());
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"", "v"}, {"X:A", "v"}, {"X A", "v"}, {"X-A", "a\r\nB: c"}, {"X-A", std::string("a\0b", 3)}, {"X-A", "a\x7f"}}) {
    RemoteEndpointOptions bad;
    bad.headers[name] = value;
    const Status status = CheckRequestHeaders(bad);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(status.message().find("--header"), std::string::npos) << status.message();
  }
  RemoteEndpointOptions tenant;
  tenant.tenant = "t1\r\nInjected: yes";
  EXPECT_EQ(CheckRequestHeaders(tenant).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(CheckRequestHeaders(tenant).message().find("--tenant"), std::string::npos)
      << CheckRequestHeaders(tenant).message();
  RemoteEndpointOptions secret;
  secret.headers["Authorization"] = "Bearer s3cretTOKEN\x01";
  EXPECT_EQ(CheckRequestHeaders(secret).message().find("s3cret"), std::string::npos)
      << "a refused value is never echoed: " << CheckRequestHeaders(secret).message();
}

}  // namespace
}  // namespace diagnose
