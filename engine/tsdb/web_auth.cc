#include "engine/tsdb/web_auth.h"

#include <crypt.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace diagnose {

namespace {

// The password carries 256 random bits, so the hash's work factor protects nothing; the lowest
// cost bcrypt allows keeps Prometheus's check of every request (uncached ones) under a millisecond.
constexpr int kBcryptCost = 4;

Status RandomBytes(unsigned char* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(out + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return UnavailableError(std::string("no randomness for the private Prometheus's password: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(r);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<WebCredentials> NewWebCredentials() {
  unsigned char secret[32];
  RETURN_IF_ERROR(RandomBytes(secret, sizeof secret));
  static constexpr char kHex[] = "0123456789abcdef";
  WebCredentials c;
  c.user = "diagnose";
  for (unsigned char b : secret) {
    c.password.push_back(kHex[b >> 4]);
    c.password.push_back(kHex[b & 15]);
  }
  unsigned char salt_bytes[16];
  RETURN_IF_ERROR(RandomBytes(salt_bytes, sizeof salt_bytes));
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2b$", kBcryptCost, reinterpret_cast<const char*>(salt_bytes), sizeof salt_bytes, setting,
                        sizeof setting)) {
    return UnavailableError("crypt(3) has no bcrypt ($2b$) to protect the private Prometheus");
  }
  crypt_data data{};
  const char* hash = crypt_r(c.password.c_str(), setting, &data);
  if (!hash || hash[0] != '$') return UnavailableError("bcrypt hashing failed for the private Prometheus's password");
  c.bcrypt_hash = hash;
  return c;
}

std::string BasicAuthorization(const std::string& user, const std::string& password) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string in = user + ":" + password;
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return "Basic " + out;
}

std::string WebConfigYaml(const WebCredentials& c) {
  // The hash holds only [./0-9A-Za-z$]: safe inside double quotes.
  return "basic_auth_users:\n  " + c.user + ": \"" + c.bcrypt_hash + "\"\n";
}

}  // namespace diagnose
