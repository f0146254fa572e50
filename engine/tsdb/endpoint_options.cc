#include "engine/tsdb/endpoint_options.h"

#include <cctype>
#include <string_view>

#include "engine/core/utf8.h"

namespace diagnose {

namespace {

bool IsTokenChar(unsigned char c) {
  return std::isalnum(c) != 0 || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool HasControlCharacter(std::string_view value) {
  for (char ch : value) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return true;
  }
  return false;
}

Status CheckHeader(const std::string& name, const std::string& value, const std::string& given_as) {
  bool token = !name.empty();
  for (char c : name) token = token && IsTokenChar(static_cast<unsigned char>(c));
  if (!token)
    return InvalidArgumentError(given_as + " '" + OneLine(name) +
                                "': not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)");
  // The value is never echoed: it is often a credential (Authorization, a tenant token).
  if (HasControlCharacter(value))
    return InvalidArgumentError(given_as + " '" + OneLine(name) +
                                "': a control character in its value (a CR or LF would start another header)");
  return Status::Ok();
}

}  // namespace

Status CheckRequestHeaders(const RemoteEndpointOptions& options) {
  for (const auto& [name, value] : options.headers) RETURN_IF_ERROR(CheckHeader(name, value, "--header"));
  if (!options.tenant.empty()) RETURN_IF_ERROR(CheckHeader("X-Scope-OrgID", options.tenant, "--tenant, sent as"));
  return Status::Ok();
}

UrlCredentials SplitUrlCredentials(const std::string& url) {
  UrlCredentials out{url, "", "", false};
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return out;
  const size_t authority = scheme + 3;
  const size_t authority_end = std::min(url.find_first_of("/?#", authority), url.size());
  const size_t at = url.rfind('@', authority_end == 0 ? 0 : authority_end - 1);
  if (at == std::string::npos || at < authority) return out;
  const std::string userinfo = url.substr(authority, at - authority);
  const size_t colon = userinfo.find(':');
  out.user = userinfo.substr(0, colon);
  if (colon != std::string::npos) {
    out.password = userinfo.substr(colon + 1);
    out.has_password = true;
  }
  out.url = url.substr(0, authority) + url.substr(at + 1);
  return out;
}

// Any userinfo is hidden, not only a password: a bare token in the user part (`http://TOKEN@host`)
// is as much a credential.
std::string ShownUrl(const std::string& url) {
  const UrlCredentials split = SplitUrlCredentials(url);
  if (split.url == url) return url;
  const size_t authority = url.find("://") + 3;
  return url.substr(0, authority) + (split.has_password ? split.user + ":" : "") + "***@" +
         split.url.substr(authority);
}

}  // namespace diagnose
